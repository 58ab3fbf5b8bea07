//! Stage 3 — freshness: the lifecycle state of an object at an instant.
//! Computed, never stored.

use chrono::Duration;

use crate::model::Lifecycle;
use crate::object::{ContextObject, Expires};
use crate::time::Instant;

/// Lifecycle at `at` (supersession is applied by a later stage).
/// `default_ttl` is the manifest's `freshness.default_ttl`.
pub fn state(o: &ContextObject, at: Instant, default_ttl: Option<Duration>) -> Lifecycle {
    if let Some(from) = o.meta.valid_from {
        if at < from {
            return Lifecycle::Future;
        }
    }
    if let Expires::At(until) = o.meta.expires {
        if at >= until {
            return Lifecycle::Expired;
        }
    }
    if let (Some(updated), Some(ttl)) = (o.meta.updated, o.meta.ttl.or(default_ttl)) {
        if let Some(fresh_until) = updated.checked_add_signed(ttl) {
            if at > fresh_until {
                return Lifecycle::Stale;
            }
        }
    }
    Lifecycle::Current
}

/// Why default resolution leaves an object out at `state`, if it does: a bundle
/// exclusion reason and its detail. One rule for the resolver and for `get`, so a
/// bare id always names the version a bundle would carry.
pub fn gate(
    m: &crate::manifest::Manifest,
    o: &ContextObject,
    state: Lifecycle,
    historical: bool,
) -> Option<(&'static str, Option<String>)> {
    use crate::model::Status;
    match state {
        Lifecycle::Future => {
            let from = o
                .meta
                .valid_from
                .map(|t| crate::time::format(&t))
                .unwrap_or_default();
            return Some(("not-yet-valid", Some(format!("valid from {from}"))));
        }
        Lifecycle::Expired if !historical && m.exclude_expired => return Some(("expired", None)),
        Lifecycle::Superseded if !historical => return Some(("superseded", None)),
        _ => {}
    }
    if let Some(s @ (Status::Draft | Status::Pending | Status::Rejected | Status::Retired)) =
        o.meta.status
    {
        return Some(("unapproved", Some(format!("status {s}"))));
    }
    approval_shortfall(o).map(|(given, needed)| {
        (
            "unapproved",
            Some(format!(
                "{given} of the {needed} required approvals recorded"
            )),
        )
    })
}

/// An approval requirement the object does not meet: (approvals counted, needed).
///
/// `approval.required: true` (or a `minimum` without `required: false`) asks for `minimum` approvals (default 1);
/// each distinct approver in `approved_by` counts once, and when `roles` is given only
/// approvers holding one of those roles count. Fewer leaves the object unapproved,
/// whatever its `status` says.
pub fn approval_shortfall(o: &ContextObject) -> Option<(usize, usize)> {
    use serde_json::Value;
    // Few objects declare an approval block: skip the JSON parse for the rest.
    if !o.mentions("\"approval\"") {
        return None;
    }
    let a = o.field("approval")?;
    let minimum = a.get("minimum").and_then(Value::as_u64);
    // An explicit `required: false` wins; otherwise a `minimum` is a requirement.
    let required = a
        .get("required")
        .and_then(Value::as_bool)
        .unwrap_or(minimum.is_some());
    if !required {
        return None;
    }
    let needed = minimum.unwrap_or(1).max(1) as usize;
    let roles: Vec<&str> = a
        .get("roles")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut approvers: Vec<(Option<&str>, Option<&str>)> = a
        .get("approved_by")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|x| {
                    (
                        x.get("role").and_then(Value::as_str),
                        x.get("id").and_then(Value::as_str),
                    )
                })
                .filter(|(role, id)| {
                    (role.is_some() || id.is_some())
                        && (roles.is_empty() || role.is_some_and(|r| roles.contains(&r)))
                })
                .collect()
        })
        .unwrap_or_default();
    approvers.sort_unstable();
    approvers.dedup();
    (approvers.len() < needed).then_some((approvers.len(), needed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Faults, Format, Meta, Origin};

    fn with_approval(approval: serde_json::Value) -> ContextObject {
        let mut fields = serde_json::Map::new();
        fields.insert("id".into(), "p.legal".into());
        fields.insert("approval".into(), approval);
        let mut meta = Meta::from_fields(&fields);
        meta.faults = Faults::default();
        ContextObject {
            id: "p.legal".into(),
            version: None,
            doc: serde_json::to_string(&fields).unwrap().into_boxed_str(),
            content: None,
            supplied: Default::default(),
            origin: Origin {
                file: "p.md".into(),
                format: Format::Markdown,
                collection: None,
                line: 1,
                path_id: Default::default(),
            },
            meta,
        }
    }

    #[test]
    fn approvals_count_distinct_approvers_in_the_listed_roles() {
        use serde_json::json;
        let one = json!({"required": true, "minimum": 2, "roles": ["legal", "exec"],
            "approved_by": [{"role": "legal"}, {"role": "legal"}, {"role": "intern"}]});
        assert_eq!(approval_shortfall(&with_approval(one)), Some((1, 2)));
        let two = json!({"required": true, "minimum": 2, "roles": ["legal", "exec"],
            "approved_by": [{"role": "legal"}, {"role": "exec", "id": "ceo@acme"}]});
        assert_eq!(approval_shortfall(&with_approval(two)), None);
        let none = json!({"required": true});
        assert_eq!(approval_shortfall(&with_approval(none)), Some((0, 1)));
        let not_required = json!({"roles": ["legal"]});
        assert_eq!(approval_shortfall(&with_approval(not_required)), None);
        let off = json!({"required": false, "minimum": 2});
        assert_eq!(approval_shortfall(&with_approval(off)), None);
        let implied = json!({"minimum": 2, "approved_by": [{"id": "a"}]});
        assert_eq!(approval_shortfall(&with_approval(implied)), Some((1, 2)));
    }
}
