//! The local policy object: the local-core profile's setup contract (§3),
//! plus two ctx members. The complete object is what a decision's policy
//! snapshot digest covers, so everything that can change an outcome is in it.
//!
//! ctx members: `wildcards` (`{selectors, actions}` booleans; a wildcard is
//! refused unless set) and `repository` (which repository state the policy was
//! derived from; see [`super::local`]). Unknown members are refused: a policy
//! that says more than the evaluator understands must not be half-applied.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use super::canon;
use super::error::{fail, ClResult};

/// The seven registered purpose codes of 0.2-draft §7.3.1.
pub const REGISTERED_PURPOSE_CODES: [&str; 7] = [
    "draft.response",
    "summarize.material",
    "retrieve.context",
    "plan.task",
    "execute.approved_action",
    "discover.minimum_reveal",
    "propose.memory_update",
];

/// A registered code, or one in the `x.` namespace (`x.example.review.contract`).
pub fn is_valid_purpose_code(code: &str) -> bool {
    if REGISTERED_PURPOSE_CODES.contains(&code) {
        return true;
    }
    let Some(rest) = code.strip_prefix("x.") else {
        return false;
    };
    // At least two dot-separated labels; each label is alphanumeric words joined by . _ -
    let labels: Vec<&str> = rest.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.split(['_', '-']).all(|w| {
                    !w.is_empty()
                        && w.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                })
        })
}

const KNOWN: [&str; 23] = [
    "version",
    "issuer",
    "allowed_subjects",
    "allowed_requesters",
    "allowed_clients",
    "allowed_authentication_methods",
    "allowed_recipients",
    "allowed_onward_disclosure",
    "allowed_purpose_codes",
    "allowed_tasks",
    "allowed_selectors",
    "approval_required_selectors",
    "allowed_actions",
    "approval_required_actions",
    "maximum_retention",
    "decision_ttl_seconds",
    "require_receipts",
    "transforms",
    "bundle_instructions",
    "rate_limit_ok",
    "anomaly_state",
    "wildcards",
    "repository",
];

/// A parsed, checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The complete object as supplied.
    pub raw: Value,
    /// D(raw): the snapshot digest.
    pub digest: String,
    pub version: String,
    pub issuer: Value,
    pub allowed_subjects: HashSet<String>,
    pub allowed_requesters: HashSet<String>,
    pub allowed_clients: HashSet<String>,
    pub allowed_authentication_methods: Option<HashSet<String>>,
    pub allowed_recipients: HashSet<String>,
    pub allowed_onward_disclosure: HashSet<String>,
    pub allowed_purpose_codes: HashSet<String>,
    pub allowed_tasks: HashSet<String>,
    pub allowed_selectors: HashSet<String>,
    pub approval_required_selectors: HashSet<String>,
    pub allowed_actions: HashSet<String>,
    pub approval_required_actions: HashSet<String>,
    pub retention_mode: String,
    pub retention_seconds: u64,
    pub decision_ttl_seconds: u64,
    pub require_receipts: bool,
    pub transforms: BTreeMap<String, Vec<String>>,
    pub bundle_instructions: Vec<String>,
    pub rate_limit_ok: bool,
    pub anomaly_normal: bool,
    pub wildcard_selectors: bool,
    pub wildcard_actions: bool,
}

fn invalid<T>(msg: String) -> ClResult<T> {
    fail("INVALID_POLICY", msg)
}

fn strings(m: &Map<String, Value>, key: &str, default: Option<&[&str]>) -> ClResult<Vec<String>> {
    let v = match (m.get(key), default) {
        (Some(v), _) => v,
        (None, Some(d)) => return Ok(d.iter().map(|s| s.to_string()).collect()),
        (None, None) => return invalid(format!("policy.{key} is required (an array of strings)")),
    };
    let Some(a) = v.as_array() else {
        return invalid(format!(
            "policy.{key}: expected an array of non-empty strings"
        ));
    };
    let mut out = Vec::with_capacity(a.len());
    let mut seen = HashSet::with_capacity(a.len());
    for (i, x) in a.iter().enumerate() {
        match x.as_str() {
            Some(s) if !s.is_empty() => {
                if seen.insert(s) {
                    out.push(s.to_string());
                }
            }
            _ => return invalid(format!("policy.{key}[{i}]: expected a non-empty string")),
        }
    }
    Ok(out)
}

fn set(v: Vec<String>) -> HashSet<String> {
    v.into_iter().collect()
}

fn positive(v: Option<&Value>, what: &str, default: Option<u64>) -> ClResult<u64> {
    match v {
        None => default.map_or_else(|| invalid(format!("{what} is required")), Ok),
        Some(x) => match x.as_u64() {
            Some(n) if n > 0 && n < (1 << 53) => Ok(n),
            _ => invalid(format!(
                "{what}: expected a positive whole number of seconds"
            )),
        },
    }
}

impl Policy {
    /// Check and parse a policy object.
    pub fn from_value(raw: &Value) -> ClResult<Policy> {
        let Some(m) = raw.as_object() else {
            return invalid("policy: expected a JSON object".into());
        };
        if let Some(k) = m.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return invalid(format!(
                "policy: unknown member `{k}` (known: {})",
                KNOWN.join(", ")
            ));
        }
        let version = match m.get("version").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => return invalid("policy.version: expected a non-empty string".into()),
        };
        let issuer = match m.get("issuer") {
            None => serde_json::json!({"id": "urn:cl:policy-engine:local"}),
            Some(v)
                if v.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.len() >= 3) =>
            {
                v.clone()
            }
            Some(_) => {
                return invalid(
                    "policy.issuer: expected {\"id\": \"<at least 3 characters>\"}".into(),
                )
            }
        };
        let purposes = strings(m, "allowed_purpose_codes", None)?;
        if let Some(bad) = purposes.iter().find(|p| !is_valid_purpose_code(p)) {
            return fail(
                "INVALID_POLICY_PURPOSE_CODE",
                format!("policy.allowed_purpose_codes: {bad:?} is neither a registered purpose code nor an `x.` namespaced one"),
            );
        }
        let allowed_selectors = set(strings(m, "allowed_selectors", None)?);
        let approval_selectors = set(strings(m, "approval_required_selectors", Some(&[]))?);
        let allowed_actions = set(strings(m, "allowed_actions", None)?);
        let approval_actions = set(strings(m, "approval_required_actions", Some(&[]))?);
        if let Some(x) = allowed_selectors.intersection(&approval_selectors).next() {
            return fail(
                "AMBIGUOUS_POLICY_SCOPE",
                format!("policy lists selector {x:?} both as ordinary and as approval-required"),
            );
        }
        if let Some(x) = allowed_actions.intersection(&approval_actions).next() {
            return fail(
                "AMBIGUOUS_POLICY_SCOPE",
                format!("policy lists action {x:?} both as ordinary and as approval-required"),
            );
        }
        let retention = m.get("maximum_retention").and_then(Value::as_object);
        let Some(retention) = retention else {
            return invalid(
                "policy.maximum_retention: expected {\"mode\": ..., \"max_seconds\": ...}".into(),
            );
        };
        let retention_mode = match retention.get("mode").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => {
                return invalid("policy.maximum_retention.mode: expected a non-empty string".into())
            }
        };
        let retention_seconds = positive(
            retention.get("max_seconds"),
            "policy.maximum_retention.max_seconds",
            None,
        )?;
        let decision_ttl_seconds = positive(
            m.get("decision_ttl_seconds"),
            "policy.decision_ttl_seconds",
            Some(300),
        )?;
        let require_receipts = match m.get("require_receipts") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return invalid("policy.require_receipts: expected true or false".into()),
        };
        let mut transforms = BTreeMap::new();
        match m.get("transforms") {
            None => {}
            Some(Value::Object(t)) => {
                for (k, v) in t {
                    let list = strings(t, k, None).map_err(|_| {
                        super::error::ClError::new(
                            "INVALID_POLICY",
                            format!(
                                "policy.transforms.{k}: expected an array of transform identifiers"
                            ),
                        )
                    })?;
                    if let Some(bad) = list.iter().find(|x| !is_transform(x)) {
                        return fail(
                            "UNSUPPORTED_TRANSFORM",
                            format!("policy.transforms.{k}: {bad:?} is not redact:<predicate>, truncate:<predicate>:<n> or compress:task-facts"),
                        );
                    }
                    let _ = v;
                    transforms.insert(k.clone(), list);
                }
            }
            Some(_) => {
                return invalid(
                    "policy.transforms: expected an object of predicate -> [transform]".into(),
                )
            }
        }
        let bundle_instructions = strings(m, "bundle_instructions", Some(&[]))?;
        let rate_limit_ok = !matches!(m.get("rate_limit_ok"), Some(Value::Bool(false)));
        let anomaly_normal = match m.get("anomaly_state") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => true,
            Some(Value::String(s)) => s.is_empty() || s == "normal",
            Some(_) => false,
        };
        let (wildcard_selectors, wildcard_actions) = match m.get("wildcards") {
            None => (false, false),
            Some(Value::Object(w)) => {
                let flag = |k: &str| match w.get(k) {
                    None => Ok(false),
                    Some(Value::Bool(b)) => Ok(*b),
                    Some(_) => {
                        invalid::<bool>(format!("policy.wildcards.{k}: expected true or false"))
                    }
                };
                (flag("selectors")?, flag("actions")?)
            }
            Some(_) => {
                return invalid(
                    "policy.wildcards: expected {\"selectors\": bool, \"actions\": bool}".into(),
                )
            }
        };
        let auth = if m.contains_key("allowed_authentication_methods") {
            Some(set(strings(m, "allowed_authentication_methods", None)?))
        } else {
            None
        };
        Ok(Policy {
            digest: canon::digest(raw),
            raw: raw.clone(),
            version,
            issuer,
            allowed_subjects: set(strings(m, "allowed_subjects", None)?),
            allowed_requesters: set(strings(m, "allowed_requesters", None)?),
            allowed_clients: set(strings(m, "allowed_clients", None)?),
            allowed_authentication_methods: auth,
            allowed_recipients: set(strings(m, "allowed_recipients", None)?),
            allowed_onward_disclosure: set(strings(
                m,
                "allowed_onward_disclosure",
                Some(&["forbidden"]),
            )?),
            allowed_purpose_codes: set(purposes),
            allowed_tasks: set(strings(m, "allowed_tasks", None)?),
            allowed_selectors,
            approval_required_selectors: approval_selectors,
            allowed_actions,
            approval_required_actions: approval_actions,
            retention_mode,
            retention_seconds,
            decision_ttl_seconds,
            require_receipts,
            transforms,
            bundle_instructions,
            rate_limit_ok,
            anomaly_normal,
            wildcard_selectors,
            wildcard_actions,
        })
    }

    /// The transforms the granted predicates require: unique, sorted by UTF-16.
    pub fn transforms_for<'a>(&self, predicates: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in predicates {
            for t in self.transforms.get(p).into_iter().flatten() {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        out.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        out
    }
}

/// `redact:<name>`, `truncate:<name>:<positive integer>` or `compress:task-facts`.
pub fn is_transform(t: &str) -> bool {
    if t == "compress:task-facts" {
        return true;
    }
    if let Some(p) = t.strip_prefix("redact:") {
        return canon::is_name(p);
    }
    if let Some(rest) = t.strip_prefix("truncate:") {
        if let Some((p, n)) = rest.rsplit_once(':') {
            return canon::is_name(p)
                && !n.is_empty()
                && !n.starts_with('0')
                && n.bytes().all(|b| b.is_ascii_digit());
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purpose_codes() {
        for ok in [
            "draft.response",
            "propose.memory_update",
            "x.example.review.contract",
            "x.a-b.c_d",
        ] {
            assert!(is_valid_purpose_code(ok), "{ok}");
        }
        for bad in [
            "draft.anything",
            "Draft.Response",
            "x.single",
            "x..a",
            "x.a.",
            "y.a.b",
            "",
        ] {
            assert!(!is_valid_purpose_code(bad), "{bad}");
        }
    }

    #[test]
    fn transforms() {
        assert!(is_transform("truncate:file.text:40") && is_transform("redact:a"));
        assert!(!is_transform("truncate:a:0") && !is_transform("summarise:a"));
    }
}
