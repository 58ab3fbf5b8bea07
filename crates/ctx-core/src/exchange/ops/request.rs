//! `context_request`s: writing a new one, and checking one (schema, expiry,
//! creation time, purpose code, wildcards, receipt requirement, requester).

use chrono::Duration;
use serde_json::{json, Map, Value};

use super::{principal_arg, Exchange};
use crate::exchange::canon;
use crate::exchange::config::{self, LOCAL_AUTH, LOCAL_CLIENT};
use crate::exchange::error::{fail, ClResult};
use crate::exchange::policy::is_valid_purpose_code;
use crate::exchange::schema::{self, ClKind};
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::{self, SpecVersion};
use crate::time::Instant;

/// What `ctx request new` asks for.
#[derive(Debug, Clone)]
pub struct NewRequest {
    /// Agent name, `role:<name>`, or a principal URI.
    pub requester: String,
    /// Default: the requester itself.
    pub recipient: Option<String>,
    pub onward_disclosure: String,
    pub purpose_code: String,
    pub purpose: Option<String>,
    pub task_kind: String,
    pub user_visible: bool,
    /// Selector names: declared predicates or object ids.
    pub selectors: Vec<String>,
    pub actions: Vec<String>,
    pub retention_mode: String,
    pub retention_seconds: u64,
    /// `none`, `decision` or `operation`.
    pub receipts: String,
    pub expires_in: Duration,
    pub client: Option<String>,
    pub authenticated_by: Option<String>,
    pub at: Instant,
    pub version: SpecVersion,
}

/// One finding about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub code: &'static str,
    pub message: String,
}

/// The checks of `ctx request validate`, in their fixed order.
#[derive(Debug, Clone, Default)]
pub struct RequestReport {
    pub problems: Vec<Problem>,
}

impl RequestReport {
    /// `{"valid": bool, "problems": [{code, message}]}`.
    pub fn json(&self) -> Value {
        let problems: Vec<Value> = self
            .problems
            .iter()
            .map(|x| serde_json::json!({"code": x.code, "message": x.message}))
            .collect();
        serde_json::json!({"valid": self.ok(), "problems": problems})
    }

    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
    fn push(&mut self, code: &'static str, message: impl Into<String>) {
        self.problems.push(Problem {
            code,
            message: message.into(),
        });
    }
}

/// Check a request against the repository at `at`.
pub fn validate(ex: &Exchange<'_>, request: &Value, at: Instant) -> RequestReport {
    let mut r = RequestReport::default();
    let core = match wire::to_core(request) {
        Ok(c) => c,
        Err(e) => {
            r.push(e.code, e.message);
            return r;
        }
    };
    if !core.is_object() {
        r.push("INVALID_REQUEST", "a context_request is a JSON object");
        return r;
    }
    for p in schema::problems(ClKind::ContextRequest, &core) {
        r.push(
            "REQUEST_SCHEMA_INVALID",
            format!("{}: {}", p.pointer, p.message),
        );
    }
    let at = canon::to_ms(at);
    match core["expires_at"].as_str().and_then(canon::parse_time) {
        Some(t) if t <= at => r.push(
            "REQUEST_EXPIRED",
            format!(
                "expires_at {} is not after {}; make a new request",
                canon::iso_ms(&t),
                canon::iso_ms(&at)
            ),
        ),
        Some(_) => {}
        None => r.push(
            "REQUEST_EXPIRY_INVALID",
            "expires_at must be an RFC 3339 timestamp",
        ),
    }
    match core["created_at"].as_str().and_then(canon::parse_time) {
        Some(t) if t > at => r.push(
            "REQUEST_CREATED_IN_FUTURE",
            format!("created_at {} is after {}: the clock of whoever made it is wrong, or it was forged", canon::iso_ms(&t), canon::iso_ms(&at)),
        ),
        Some(_) => {}
        None => r.push("INVALID_DATE_TIME", "created_at must be an RFC 3339 timestamp"),
    }
    // The seed's 0.1-draft requires a stated purpose (§7.3); only the 0.2
    // profile lets a purpose code stand alone.
    let v01 = request["spec_version"] == SpecVersion::V01.id();
    if v01 && core["purpose"].as_str().is_none_or(|p| p.trim().is_empty()) {
        r.push(
            "PURPOSE_MISSING",
            "a context-layer/0.1-draft request must state its `purpose` (pass --purpose TEXT)",
        );
    }
    match core["purpose_code"].as_str() {
        None => r.push("PURPOSE_CODE_MISSING", "purpose_code is required; free-form purpose text never authorizes"),
        Some(c) if !is_valid_purpose_code(c) => r.push(
            "PURPOSE_CODE_INVALID",
            format!("{c:?} is not a registered purpose code (draft.response, summarize.material, retrieve.context, plan.task, execute.approved_action, discover.minimum_reveal, propose.memory_update) nor `x.`-namespaced"),
        ),
        Some(_) => {}
    }
    let principal = core["requester"]["principal"].as_str().unwrap_or("");
    let requester = ex.config.requester_for(principal);
    let wild_sel = core["selectors"].as_array().into_iter().flatten().any(|s| {
        let p = s["predicate"].as_str().unwrap_or("");
        p == "*" || ex.config.predicates.get(p).is_some_and(|d| d.is_wildcard())
    });
    if wild_sel && !requester.is_some_and(|q| q.wildcard_selectors) {
        r.push("SELECTOR_WILDCARD_NOT_ALLOWED", "a selector covers the whole repository; the policy does not allow wildcards for this requester");
    }
    let wild_act = core["requested_actions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| a == "*");
    if wild_act && !requester.is_some_and(|q| q.wildcard_actions) {
        r.push(
            "ACTION_WILDCARD_NOT_ALLOWED",
            "`*` as an action is not allowed for this requester",
        );
    }
    let (_, pair_ok) = crate::exchange::evaluate::receipt_requirement(&core, false);
    if !pair_ok {
        r.push(
            "RECEIPT_REQUIREMENT_INVALID",
            "receipt_requirement must be exactly {level, required}: none/false, decision/true or operation/true",
        );
    }
    let m = &ex.repo.manifest;
    let exists = match principal.strip_prefix("urn:ctx:agent:") {
        Some(a) => m.agents.contains_key(a),
        None => principal
            .strip_prefix("urn:ctx:role:")
            .is_some_and(|x| m.roles.contains_key(x)),
    };
    if !exists {
        let agents: Vec<String> = m.agents.keys().map(|a| config::principal(a)).collect();
        r.push(
            "REQUESTER_UNKNOWN",
            format!(
                "requester {principal:?} is not an agent or role of this repository (agents: {})",
                if agents.is_empty() {
                    "none".into()
                } else {
                    agents.join(", ")
                }
            ),
        );
    }
    r
}

/// Write a new request (checked first; nothing is written when it fails).
pub fn create(ex: &Exchange<'_>, o: &NewRequest) -> ClResult<(Value, std::path::PathBuf)> {
    let at = canon::to_ms(o.at);
    let requester = principal_arg(&o.requester);
    let recipient = o
        .recipient
        .as_deref()
        .map(principal_arg)
        .unwrap_or_else(|| requester.clone());
    let receipt_requirement = match o.receipts.as_str() {
        "none" => json!({"level": "none", "required": false}),
        "decision" => json!({"level": "decision", "required": true}),
        "operation" => json!({"level": "operation", "required": true}),
        other => {
            return fail(
                "USAGE",
                format!("receipts {other:?}: expected none, decision or operation"),
            )
        }
    };
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("context_request"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert("issuer".into(), json!({"id": requester}));
    m.insert(
        "subject_ref".into(),
        json!(config::subject(&ex.repo.manifest)),
    );
    m.insert(
        "requester".into(),
        json!({
            "principal": requester,
            "authenticated_by": o.authenticated_by.as_deref().unwrap_or(LOCAL_AUTH),
            "client_instance": o.client.as_deref().unwrap_or(LOCAL_CLIENT),
        }),
    );
    m.insert(
        "recipient".into(),
        json!({"principal": recipient, "onward_disclosure": o.onward_disclosure}),
    );
    m.insert("purpose_code".into(), json!(o.purpose_code));
    if let Some(p) = &o.purpose {
        m.insert("purpose".into(), json!(p));
    }
    m.insert(
        "task".into(),
        json!({"kind": o.task_kind, "user_visible": o.user_visible}),
    );
    m.insert(
        "selectors".into(),
        Value::Array(
            o.selectors
                .iter()
                .map(|s| json!({"predicate": s}))
                .collect(),
        ),
    );
    m.insert("requested_actions".into(), json!(o.actions));
    m.insert(
        "retention".into(),
        json!({"mode": o.retention_mode, "max_seconds": o.retention_seconds}),
    );
    m.insert("receipt_requirement".into(), receipt_requirement);
    m.insert(
        "expires_at".into(),
        json!(canon::iso_ms(&(at + o.expires_in))),
    );
    let wire = wire::to_wire(m, o.version);
    let id = format!(
        "urn:cl:request:{}",
        &canon::hex_part(&canon::digest(&Value::Object(wire.clone())))[..32]
    );
    let mut wire = wire;
    wire.insert("id".into(), json!(id));
    let request = Value::Object(wire);
    let report = validate(ex, &request, at);
    if let Some(p) = report.problems.first() {
        let all: Vec<String> = report
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.code, p.message))
            .collect();
        return fail(
            p.code,
            format!(
                "the request would be invalid; nothing was written:\n  {}",
                all.join("\n  ")
            ),
        );
    }
    let _lock = ex.state.lock()?;
    let path = ex
        .state
        .store(Kind::Request, &state::name_of(&id), &request)?;
    Ok((request, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_document_lists_problems_in_order() {
        let mut r = RequestReport::default();
        assert_eq!(r.json(), json!({"valid": true, "problems": []}));
        r.push("REQUEST_EXPIRED", "expired");
        r.push("PURPOSE_UNKNOWN", "unknown");
        let d = r.json();
        assert_eq!(d["valid"], false);
        assert_eq!(d["problems"][1]["code"], "PURPOSE_UNKNOWN");
    }
}
