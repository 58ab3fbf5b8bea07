//! Wire forms. The exchange works on one version-neutral core form (the
//! 0.2-draft shape); `context-layer/0.1-draft` is a translation at the edge.
//!
//! 0.1 differs where it matters here: decisions and discovery responses say
//! `valid_until` instead of `expires_at`, and a request's purpose code (a 0.2
//! field) travels under a namespaced extension, as 0.1 §6.3 requires for new
//! fields. Records are finalized over their wire form, so an 0.1 decision's id
//! covers the bytes an 0.1 consumer sees.

use serde_json::{Map, Value};

use super::error::{fail, ClResult};

/// The extension namespace carrying 0.2 fields inside 0.1 objects.
pub const V01_EXTENSION: &str = "https://ctx.dev/context-layer/0.1-compat";

/// A supported protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpecVersion {
    /// `context-layer/0.1-draft` (the seed).
    V01,
    /// `context-layer/0.2-draft` (default; the local-core profile's version).
    #[default]
    V02,
}

impl SpecVersion {
    /// The `spec_version` string objects carry.
    pub fn id(self) -> &'static str {
        match self {
            SpecVersion::V01 => "context-layer/0.1-draft",
            SpecVersion::V02 => "context-layer/0.2-draft",
        }
    }

    /// From a flag value (`0.1-draft`, `0.2-draft`) or a full identifier.
    pub fn parse(s: &str) -> Option<SpecVersion> {
        match s.trim_start_matches("context-layer/") {
            "0.1-draft" | "0.1" => Some(SpecVersion::V01),
            "0.2-draft" | "0.2" => Some(SpecVersion::V02),
            _ => None,
        }
    }

    /// The version an object declares; unsupported versions are refused.
    pub fn of(v: &Value, what: &str) -> ClResult<SpecVersion> {
        match v.get("spec_version").and_then(Value::as_str) {
            Some(s) => match SpecVersion::parse(s) {
                Some(x) if s.starts_with("context-layer/") => Ok(x),
                _ => fail(
                    "UNSUPPORTED_SPEC_VERSION",
                    format!("{what}: spec_version {s:?} is not supported (expected \"context-layer/0.2-draft\" or \"context-layer/0.1-draft\")"),
                ),
            },
            None => fail(
                "UNSUPPORTED_SPEC_VERSION",
                format!("{what}: `spec_version` is missing (expected \"context-layer/0.2-draft\")"),
            ),
        }
    }
}

/// Object types whose expiry member is renamed in 0.1.
fn renames_expiry(kind: &str) -> bool {
    matches!(kind, "policy_decision" | "minimum_reveal_response")
}

/// The core (0.2-shaped) form of a wire object. 0.2 objects come back unchanged.
pub fn to_core(v: &Value) -> ClResult<Value> {
    let what = v.get("type").and_then(Value::as_str).unwrap_or("object");
    if SpecVersion::of(v, what)? == SpecVersion::V02 {
        return Ok(v.clone());
    }
    let Some(map) = v.as_object() else {
        return fail("INVALID_OBJECT", format!("{what}: expected a JSON object"));
    };
    let mut m = map.clone();
    m.insert("spec_version".into(), Value::from(SpecVersion::V02.id()));
    if renames_expiry(what) {
        if let Some(x) = m.remove("valid_until") {
            if m.contains_key("expires_at") {
                return fail(
                    "INVALID_OBJECT",
                    format!(
                        "{what}: an 0.1-draft object carries `valid_until`, not also `expires_at`"
                    ),
                );
            }
            m.insert("expires_at".into(), x);
        }
    }
    if what == "context_request" {
        if let Some(ext) = m.remove("extensions") {
            let code = ext
                .get(V01_EXTENSION)
                .and_then(|e| e.get("purpose_code"))
                .cloned();
            if let (Some(code), false) = (code, m.contains_key("purpose_code")) {
                m.insert("purpose_code".into(), code);
            }
        }
    }
    Ok(Value::Object(m))
}

/// The wire form of a core (unfinalized) map for `version`.
pub fn to_wire(mut m: Map<String, Value>, version: SpecVersion) -> Map<String, Value> {
    if version == SpecVersion::V02 {
        return m;
    }
    let kind = m
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    m.insert("spec_version".into(), Value::from(version.id()));
    if renames_expiry(&kind) {
        if let Some(x) = m.remove("expires_at") {
            m.insert("valid_until".into(), x);
        }
    }
    if kind == "context_request" {
        if let Some(code) = m.remove("purpose_code") {
            m.insert(
                "extensions".into(),
                serde_json::json!({ V01_EXTENSION: { "purpose_code": code } }),
            );
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_of_an_01_decision_and_request() {
        let core = json!({"spec_version": "context-layer/0.2-draft", "type": "policy_decision", "expires_at": "x"});
        let wire = to_wire(core.as_object().unwrap().clone(), SpecVersion::V01);
        assert_eq!(wire["valid_until"], "x");
        assert!(!wire.contains_key("expires_at"));
        assert_eq!(to_core(&Value::Object(wire)).unwrap(), core);
        let req = json!({"spec_version": "context-layer/0.2-draft", "type": "context_request", "purpose_code": "plan.task"});
        let wire = to_wire(req.as_object().unwrap().clone(), SpecVersion::V01);
        assert_eq!(
            wire["extensions"][V01_EXTENSION]["purpose_code"],
            "plan.task"
        );
        assert_eq!(to_core(&Value::Object(wire)).unwrap(), req);
        assert!(to_core(&json!({"spec_version": "context-layer/9.0"})).is_err());
    }
}
