//! The meaning-level rewrites `ctx fmt` makes: timestamps into RFC 3339. Every
//! other change (key order, quoting) leaves the parsed document equal, so the
//! formatted file must parse to exactly [`normalize`] of the original.

use serde_json::Value;

use crate::time;

/// Where an instant is expected: a top-level field, or a field of every element
/// of a top-level list (`sources[].retrieved_at`, `approval.approved_by[].at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstantField {
    Top(&'static str),
    EachOf(&'static [&'static str], &'static str),
}

/// Every field whose schema type is an RFC 3339 date-time.
pub const INSTANT_FIELDS: [InstantField; 6] = [
    InstantField::Top("created"),
    InstantField::Top("updated"),
    InstantField::Top("valid_from"),
    InstantField::Top("expires"),
    InstantField::EachOf(&["sources"], "retrieved_at"),
    InstantField::EachOf(&["approval", "approved_by"], "at"),
];

/// Is the value at `path` (keys and indices from the document root) an instant field?
pub fn is_instant_path(path: &[PathStep<'_>]) -> bool {
    INSTANT_FIELDS.iter().any(|f| match f {
        InstantField::Top(k) => matches!(path, [PathStep::Key(p)] if p == k),
        InstantField::EachOf(list, k) => {
            path.len() == list.len() + 2
                && list
                    .iter()
                    .zip(path)
                    .all(|(want, got)| matches!(got, PathStep::Key(g) if g == want))
                && matches!(path[list.len()], PathStep::Index(_))
                && matches!(path[list.len() + 1], PathStep::Key(g) if g == *k)
        }
    })
}

/// One step into a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep<'a> {
    Key(&'a str),
    Index(usize),
}

/// The RFC 3339 spelling of a timestamp ctx can read without guessing, or None
/// when `text` is already canonical or is not a timestamp at all (validation
/// reports those). Accepted and rewritten:
/// - a date alone (`2026-08-01`) → the start of that day, UTC (`2026-08-01T00:00:00Z`);
/// - a space or lowercase `t` between date and time, lowercase `z` → `T`, `Z`;
/// - minutes without seconds (`2026-08-01T09:30Z`) → `:00` seconds added.
///
/// An offset is kept as written: `+02:00` is valid RFC 3339 and says something.
pub fn canonical_timestamp(text: &str) -> Option<String> {
    if !text.is_ascii() {
        return None;
    }
    let b = text.as_bytes();
    if b.len() == 10 && time::parse_date(text).is_some() && text.trim() == text {
        return Some(format!("{text}T00:00:00Z"));
    }
    if b.len() < 16 || time::parse_date(&text[..10]).is_none() {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 3);
    out.push_str(&text[..10]);
    out.push('T');
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let rest = &text[11..];
    // `HH:MM` followed directly by an offset or `Z`: add the seconds.
    let rb = rest.as_bytes();
    if rb.len() >= 6 && rb[2] == b':' && matches!(rb[5], b'Z' | b'z' | b'+' | b'-') {
        out.push_str(&rest[..5]);
        out.push_str(":00");
        out.push_str(&rest[5..]);
    } else {
        out.push_str(rest);
    }
    if out.ends_with('z') {
        out.pop();
        out.push('Z');
    }
    if out == text || time::parse_timestamp(&out).is_none() {
        return None;
    }
    // Only a spelling change: the instant must be the one the text names.
    if let Some(before) = time::parse_timestamp(text) {
        if Some(before) != time::parse_timestamp(&out) {
            return None;
        }
    }
    Some(out)
}

/// The document `ctx fmt` intends to produce from `doc`, as a value: instants
/// rewritten by [`canonical_timestamp`], everything else as it is.
pub fn normalize(doc: &Value) -> Value {
    let mut out = doc.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    for f in INSTANT_FIELDS {
        match f {
            InstantField::Top(k) => fix(map.get_mut(k)),
            InstantField::EachOf(list, k) => {
                let mut node: Option<&mut Value> = None;
                for (n, step) in list.iter().enumerate() {
                    node = if n == 0 {
                        map.get_mut(*step)
                    } else {
                        node.and_then(|v| v.get_mut(*step))
                    };
                }
                if let Some(Value::Array(items)) = node {
                    for item in items {
                        fix(item.get_mut(k));
                    }
                }
            }
        }
    }
    out
}

fn fix(v: Option<&mut Value>) {
    if let Some(v @ Value::String(_)) = v {
        if let Some(new) = v.as_str().and_then(canonical_timestamp) {
            *v = Value::String(new);
        }
    }
}

/// Words YAML 1.1 readers (PyYAML, many CI tools) take as booleans while ctx,
/// reading YAML 1.2, takes them as strings. Quoting them keeps every reader in
/// agreement without changing what ctx reads.
pub fn yaml11_bool_word(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps() {
        let c = canonical_timestamp;
        assert_eq!(c("2026-08-01").as_deref(), Some("2026-08-01T00:00:00Z"));
        assert_eq!(
            c("2026-08-01 10:00:00Z").as_deref(),
            Some("2026-08-01T10:00:00Z")
        );
        assert_eq!(
            c("2026-08-01t10:00:00z").as_deref(),
            Some("2026-08-01T10:00:00Z")
        );
        assert_eq!(
            c("2026-08-01T09:30+02:00").as_deref(),
            Some("2026-08-01T09:30:00+02:00")
        );
        assert_eq!(c("2026-08-01T10:00:00Z"), None, "already canonical");
        assert_eq!(c("2026-08-01T10:00:00.5+01:00"), None);
        assert_eq!(c("2026-13-01"), None, "not a date");
        assert_eq!(c("2026-08-01T10:00:00"), None, "no offset: never guessed");
        assert_eq!(c("soon"), None);
        assert_eq!(c(" 2026-08-01"), None);
    }

    #[test]
    fn normalize_touches_instant_fields_only() {
        let doc = json!({
            "id": "a", "type": "note", "title": "2026-08-01",
            "updated": "2026-08-01", "expires": null,
            "sources": [{"uri": "x", "retrieved_at": "2026-07-01 08:00:00Z"}, {"uri": "y"}],
            "approval": {"approved_by": [{"role": "lead", "at": "2026-07-02"}]},
            "review": {"next_review": "2026-09-01"}
        });
        let n = normalize(&doc);
        assert_eq!(n["updated"], "2026-08-01T00:00:00Z");
        assert_eq!(n["title"], "2026-08-01");
        assert_eq!(n["expires"], Value::Null);
        assert_eq!(n["sources"][0]["retrieved_at"], "2026-07-01T08:00:00Z");
        assert_eq!(
            n["approval"]["approved_by"][0]["at"],
            "2026-07-02T00:00:00Z"
        );
        assert_eq!(
            n["review"]["next_review"], "2026-09-01",
            "a date field stays a date"
        );
    }

    #[test]
    fn instant_paths() {
        use PathStep::{Index, Key};
        assert!(is_instant_path(&[Key("updated")]));
        assert!(is_instant_path(&[
            Key("sources"),
            Index(2),
            Key("retrieved_at")
        ]));
        assert!(is_instant_path(&[
            Key("approval"),
            Key("approved_by"),
            Index(0),
            Key("at")
        ]));
        assert!(!is_instant_path(&[Key("review"), Key("next_review")]));
        assert!(!is_instant_path(&[Key("extensions"), Key("updated")]));
    }
}
