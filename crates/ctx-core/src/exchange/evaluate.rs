//! Policy evaluation (local-core profile §3): one request, one policy
//! snapshot, one clock → one finalized `policy_decision`. Pure and
//! deterministic: the same recorded inputs give the same bytes.

use chrono::Duration;
use serde_json::{json, Map, Value};

use super::canon;
use super::error::ClResult;
use super::policy::{is_valid_purpose_code, Policy};
use super::wire::{self, SpecVersion};
use crate::time::Instant;

/// Id prefix of decisions.
pub const DECISION_PREFIX: &str = "urn:cl:decision:";

/// The four decision states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Allow,
    AllowWithReductions,
    Deny,
    NeedsApproval,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Allow => "allow",
            State::AllowWithReductions => "allow_with_reductions",
            State::Deny => "deny",
            State::NeedsApproval => "needs_approval",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        [
            State::Allow,
            State::AllowWithReductions,
            State::Deny,
            State::NeedsApproval,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    /// Does this state authorize a bundle?
    pub fn grants(self) -> bool {
        matches!(self, State::Allow | State::AllowWithReductions)
    }
}

/// Whether the receipt store answered its preflight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preflight {
    /// There is no store to ask.
    Absent,
    Available,
    Unavailable,
}

/// The host's attestation that an approval is a genuine, still-usable user
/// approval of exactly these request and policy digests.
pub trait ApprovalVerifier {
    fn verify(&self, approval: &Value, request_digest: &str, policy_digest: &str) -> bool;
}

impl<F: Fn(&Value, &str, &str) -> bool> ApprovalVerifier for F {
    fn verify(&self, approval: &Value, request_digest: &str, policy_digest: &str) -> bool {
        self(approval, request_digest, policy_digest)
    }
}

/// Everything a decision depends on.
pub struct EvaluateInput<'a> {
    /// The request exactly as supplied (its digest binds the decision).
    pub request: &'a Value,
    pub policy: &'a Policy,
    pub at: Instant,
    pub approval: Option<&'a Value>,
    /// None: no verifier is configured (gated scope then stays pending).
    pub verifier: Option<&'a dyn ApprovalVerifier>,
    pub preflight: Preflight,
    /// Wire form of the decision.
    pub version: SpecVersion,
}

/// A decision and what the caller may need beyond its wire form.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The finalized decision (wire form).
    pub decision: Value,
    pub state: State,
    pub request_digest: String,
    /// Selectors (predicates) and actions that need approval.
    pub gated_selectors: Vec<String>,
    pub gated_actions: Vec<String>,
    /// The approval that was verified and used, if any.
    pub approval_used: Option<String>,
}

struct ApprovalCheck {
    valid: bool,
    reason: Option<&'static str>,
    verification: &'static str,
    expires: Option<Instant>,
}

fn check_approval(
    input: &EvaluateInput<'_>,
    gated_selectors: &[String],
    gated_actions: &[String],
    request_digest: &str,
) -> ApprovalCheck {
    let no = |reason, verification| ApprovalCheck {
        valid: false,
        reason: Some(reason),
        verification,
        expires: None,
    };
    if gated_selectors.is_empty() && gated_actions.is_empty() {
        return ApprovalCheck {
            valid: true,
            reason: None,
            verification: "not_required",
            expires: None,
        };
    }
    let Some(a) = input.approval.filter(|a| a.is_object()) else {
        return no("APPROVAL_REQUIRED", "not_provided");
    };
    let bound = a.get("id").is_some_and(Value::is_string)
        && a.get("request_digest").and_then(Value::as_str) == Some(request_digest)
        && a.get("policy_digest").and_then(Value::as_str) == Some(input.policy.digest.as_str());
    if !bound {
        return no("APPROVAL_BINDING_INVALID", "binding_invalid");
    }
    let expires = a
        .get("expires_at")
        .and_then(Value::as_str)
        .and_then(canon::parse_time);
    let Some(expires) = expires.filter(|t| *t > input.at) else {
        return no("APPROVAL_EXPIRED", "expired");
    };
    let granted = |key: &str, wanted: &[String]| {
        let list: Vec<&str> = a
            .get(key)
            .and_then(Value::as_array)
            .map(|x| x.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        wanted.iter().all(|w| list.contains(&w.as_str()))
    };
    if !granted("granted_selectors", gated_selectors) || !granted("granted_actions", gated_actions)
    {
        return no("APPROVAL_SCOPE_INCOMPLETE", "scope_incomplete");
    }
    let Some(verifier) = input.verifier else {
        return no("APPROVAL_UNVERIFIED", "verifier_missing");
    };
    if !verifier.verify(a, request_digest, &input.policy.digest) {
        return no("APPROVAL_UNVERIFIED", "rejected");
    }
    ApprovalCheck {
        valid: true,
        reason: None,
        verification: "verified",
        expires: Some(expires),
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str()
}

/// The request's receipt requirement, upgraded by a policy that requires receipts.
pub fn receipt_requirement(request: &Value, policy_requires: bool) -> (Value, bool) {
    let rr = request.get("receipt_requirement");
    let level = rr.and_then(|r| r.get("level")).and_then(Value::as_str);
    let required = rr.and_then(|r| r.get("required")).and_then(Value::as_bool);
    let exact = rr
        .and_then(Value::as_object)
        .is_some_and(|m| m.len() == 2 && m.contains_key("level") && m.contains_key("required"));
    let valid = exact
        && matches!(
            (level, required),
            (Some("none"), Some(false))
                | (Some("decision"), Some(true))
                | (Some("operation"), Some(true))
        );
    let (level, required) = if !valid || (policy_requires && level == Some("none")) {
        ("operation", true)
    } else {
        (level.unwrap_or("operation"), required.unwrap_or(true))
    };
    (json!({"level": level, "required": required}), valid)
}

/// Evaluate a request. Errors only for input that is not a request at all;
/// every policy outcome, denial included, is a decision.
pub fn evaluate(input: &EvaluateInput<'_>) -> ClResult<Evaluation> {
    let p = input.policy;
    let request_digest = canon::digest(input.request);
    let core = wire::to_core(input.request)?;
    let req = &core;
    let at = canon::to_ms(input.at);
    let mut hard: Vec<&'static str> = Vec::new();

    if req.get("spec_version").and_then(Value::as_str) != Some(SpecVersion::V02.id())
        || req.get("type").and_then(Value::as_str) != Some("context_request")
    {
        hard.push("UNSUPPORTED_REQUEST");
    }
    let request_id = req
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if request_id.is_none() {
        hard.push("REQUEST_ID_MISSING");
    }
    let subject = req
        .get("subject_ref")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if subject.is_none() {
        hard.push("SUBJECT_MISSING");
    }
    match str_at(req, &["requester", "principal"]).filter(|s| !s.is_empty()) {
        None => hard.push("REQUESTER_UNAUTHENTICATED"),
        Some(principal) => {
            let method = str_at(req, &["requester", "authenticated_by"]).unwrap_or("");
            if method.is_empty()
                || method.eq_ignore_ascii_case("none")
                || method.eq_ignore_ascii_case("anonymous")
            {
                hard.push("REQUESTER_UNAUTHENTICATED");
            }
            if !subject.is_some_and(|s| p.allowed_subjects.contains(s)) {
                hard.push("SUBJECT_NOT_AUTHORIZED");
            }
            if !p.allowed_requesters.contains(principal) {
                hard.push("REQUESTER_NOT_AUTHORIZED");
            }
            if !str_at(req, &["requester", "client_instance"])
                .is_some_and(|c| p.allowed_clients.contains(c))
            {
                hard.push("CLIENT_NOT_AUTHORIZED");
            }
            if let Some(methods) = &p.allowed_authentication_methods {
                if !methods.contains(method) {
                    hard.push("AUTHENTICATION_METHOD_NOT_ALLOWED");
                }
            }
        }
    }
    let recipient = str_at(req, &["recipient", "principal"]).filter(|s| !s.is_empty());
    let onward = str_at(req, &["recipient", "onward_disclosure"]);
    match recipient {
        None => hard.push("RECIPIENT_AMBIGUOUS"),
        Some(r) => {
            if !p.allowed_recipients.contains(r) {
                hard.push("RECIPIENT_NOT_AUTHORIZED");
            }
            if !onward.is_some_and(|o| p.allowed_onward_disclosure.contains(o)) {
                hard.push("ONWARD_DISCLOSURE_NOT_ALLOWED");
            }
        }
    }
    match req
        .get("purpose_code")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        None => hard.push("PURPOSE_CODE_MISSING"),
        Some(c) if !is_valid_purpose_code(c) => hard.push("PURPOSE_CODE_INVALID"),
        Some(c) if !p.allowed_purpose_codes.contains(c) => hard.push("PURPOSE_CODE_NOT_ALLOWED"),
        Some(_) => {}
    }
    // Seed 000 §7.3: a 0.1-draft request has no purpose code of its own, so
    // its stated purpose is required (the 0.2 profile makes it optional).
    let v01 =
        input.request.get("spec_version").and_then(Value::as_str) == Some(SpecVersion::V01.id());
    if v01 && req.get("purpose").is_none() {
        hard.push("PURPOSE_MISSING");
    }
    if let Some(purpose) = req.get("purpose") {
        let n = purpose.as_str().map(|s| s.encode_utf16().count());
        if !n.is_some_and(|n| (3..=240).contains(&n)) {
            hard.push("PURPOSE_INVALID");
        }
    }
    if !str_at(req, &["task", "kind"]).is_some_and(|k| p.allowed_tasks.contains(k)) {
        hard.push("TASK_NOT_ALLOWED");
    }
    let request_expiry = req
        .get("expires_at")
        .and_then(Value::as_str)
        .and_then(canon::parse_time);
    match request_expiry {
        None => hard.push("REQUEST_EXPIRY_INVALID"),
        Some(e) if e <= at => hard.push("REQUEST_EXPIRED"),
        Some(_) => {}
    }
    let requested_mode = str_at(req, &["retention", "mode"]);
    let requested_seconds = req
        .get("retention")
        .and_then(|r| r.get("max_seconds"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0);
    if requested_mode != Some(p.retention_mode.as_str()) {
        hard.push("RETENTION_MODE_NOT_ALLOWED");
    }
    if requested_seconds.is_none() {
        hard.push("RETENTION_INVALID");
    }
    if !p.rate_limit_ok {
        hard.push("RATE_LIMIT_EXCEEDED");
    }
    if !p.anomaly_normal {
        hard.push("ANOMALY_STATE_BLOCKED");
    }
    let selectors: Vec<String> = req
        .get("selectors")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| {
                    s.get("predicate")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let bad_selector = req
        .get("selectors")
        .and_then(Value::as_array)
        .is_none_or(|a| {
            a.iter().any(|s| {
                s.as_object().is_none_or(|m| {
                    let predicate = m.get("predicate").and_then(Value::as_str);
                    m.len() != 1 || predicate.is_none_or(str::is_empty)
                })
            })
        });
    if bad_selector {
        hard.push("SELECTOR_UNSUPPORTED");
    }
    let mut actions: Vec<String> = Vec::new();
    for a in req
        .get("requested_actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match a.as_str().filter(|s| !s.is_empty()) {
            Some(s) if !actions.iter().any(|x| x == s) => actions.push(s.to_string()),
            Some(_) => {}
            None => hard.push("ACTION_INVALID"),
        }
    }
    if selectors.is_empty() {
        hard.push("SELECTORS_EMPTY");
    }
    if actions.is_empty() {
        hard.push("ACTIONS_EMPTY");
    }
    if selectors.iter().any(|s| s == "*") && !p.wildcard_selectors {
        hard.push("SELECTOR_WILDCARD_NOT_ALLOWED");
    }
    if actions.iter().any(|s| s == "*") && !p.wildcard_actions {
        hard.push("ACTION_WILDCARD_NOT_ALLOWED");
    }
    let (receipt_requirement, receipt_pair_valid) = receipt_requirement(req, p.require_receipts);
    if !receipt_pair_valid {
        hard.push("RECEIPT_REQUIREMENT_INVALID");
    }
    let receipt_required = receipt_requirement["required"] == json!(true);
    let preflight = if !receipt_required {
        json!({"required": false, "status": "not_required"})
    } else if input.preflight == Preflight::Available {
        json!({"required": true, "status": "available"})
    } else {
        hard.push("RECEIPT_PREFLIGHT_FAILED");
        json!({"required": true, "status": "unavailable"})
    };

    // Partition scope: ordinary, approval-gated, out of policy.
    let (mut ordinary_s, mut gated_s, mut denied_s) = (Vec::new(), Vec::new(), Vec::new());
    for s in &selectors {
        if p.allowed_selectors.contains(s) {
            ordinary_s.push(s.clone());
        } else if p.approval_required_selectors.contains(s) {
            gated_s.push(s.clone());
        } else {
            denied_s.push(s.clone());
        }
    }
    let (mut ordinary_a, mut gated_a, mut denied_a) = (Vec::new(), Vec::new(), Vec::new());
    for a in &actions {
        if p.allowed_actions.contains(a) {
            ordinary_a.push(a.clone());
        } else if p.approval_required_actions.contains(a) {
            gated_a.push(a.clone());
        } else {
            denied_a.push(a.clone());
        }
    }
    let approval = check_approval(input, &gated_s, &gated_a, &request_digest);
    let mut granted_s = ordinary_s.clone();
    let mut granted_a = ordinary_a.clone();
    if approval.valid {
        granted_s.extend(gated_s.iter().cloned());
        granted_a.extend(gated_a.iter().cloned());
    }
    let requested_seconds_n = requested_seconds.unwrap_or(0);
    let retention_reduced = requested_seconds_n > p.retention_seconds;
    let mut reasons: Vec<&'static str> = Vec::new();
    let state = if !hard.is_empty() {
        State::Deny
    } else if (!gated_s.is_empty() || !gated_a.is_empty()) && !approval.valid {
        reasons.push(approval.reason.unwrap_or("APPROVAL_REQUIRED"));
        State::NeedsApproval
    } else if granted_s.is_empty() || granted_a.is_empty() {
        if granted_s.is_empty() {
            hard.push("NO_SELECTOR_GRANTED");
        }
        if granted_a.is_empty() {
            hard.push("NO_ACTION_GRANTED");
        }
        State::Deny
    } else {
        let transformed = !p
            .transforms_for(granted_s.iter().map(String::as_str))
            .is_empty();
        if !denied_s.is_empty() || !denied_a.is_empty() || retention_reduced || transformed {
            State::AllowWithReductions
        } else {
            State::Allow
        }
    };
    if !state.grants() {
        granted_s.clear();
        granted_a.clear();
    }
    match state {
        State::Allow => reasons.push("REQUEST_ALLOWED"),
        State::AllowWithReductions => reasons.push("SCOPE_REDUCED"),
        _ => {}
    }
    if !denied_s.is_empty() {
        reasons.push("SELECTORS_WITHHELD");
    }
    if !denied_a.is_empty() {
        reasons.push("ACTIONS_WITHHELD");
    }
    if retention_reduced {
        reasons.push("RETENTION_REDUCED");
    }
    reasons.extend(hard.iter().copied());
    let mut unique: Vec<&str> = Vec::new();
    for r in reasons {
        if !unique.contains(&r) {
            unique.push(r);
        }
    }

    let ttl = Duration::seconds(p.decision_ttl_seconds.min(i64::MAX as u64 / 1000) as i64);
    let expires = match request_expiry {
        Some(e) => {
            let mut x = e.min(at + ttl);
            if let Some(a) = approval.expires {
                x = x.min(a);
            }
            x
        }
        None => at,
    };
    let selector_objs = |v: &[String]| -> Value {
        Value::Array(v.iter().map(|s| json!({"predicate": s})).collect())
    };
    let (denied_sel, denied_act) = if state == State::Deny {
        (selectors.clone(), actions.clone())
    } else {
        let mut s = denied_s.clone();
        let mut a = denied_a.clone();
        if !approval.valid {
            s.extend(gated_s.iter().cloned());
            a.extend(gated_a.iter().cloned());
        }
        (s, a)
    };
    let retention = json!({
        "mode": p.retention_mode,
        "max_seconds": if state.grants() { requested_seconds_n.min(p.retention_seconds) } else { 0 },
    });
    let transforms = if state.grants() {
        p.transforms_for(granted_s.iter().map(String::as_str))
    } else {
        Vec::new()
    };
    let binding = match (approval.verification, input.approval) {
        ("verified", Some(a)) => json!({
            "approval_ref": a.get("id").cloned().unwrap_or(Value::Null),
            "request_digest": request_digest,
            "policy_digest": p.digest,
            "expires_at": a.get("expires_at").cloned().unwrap_or(Value::Null),
        }),
        _ => Value::Null,
    };
    let onward_out = if state.grants() {
        onward.unwrap_or("forbidden")
    } else {
        "forbidden"
    };
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("policy_decision"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert("issuer".into(), p.issuer.clone());
    m.insert(
        "request_ref".into(),
        json!(request_id.unwrap_or("urn:cl:request:invalid")),
    );
    m.insert("request_digest".into(), json!(request_digest));
    m.insert("decision".into(), json!(state.as_str()));
    m.insert(
        "policy_snapshot".into(),
        json!({"version": p.version, "digest": p.digest}),
    );
    m.insert("granted_selectors".into(), selector_objs(&granted_s));
    m.insert("denied_selectors".into(), selector_objs(&denied_sel));
    m.insert("granted_actions".into(), json!(granted_a));
    m.insert("denied_actions".into(), json!(denied_act));
    m.insert("transform_requirements".into(), json!(transforms));
    m.insert("bundle_instructions".into(), json!(p.bundle_instructions));
    m.insert("retention".into(), retention);
    m.insert("onward_disclosure".into(), json!(onward_out));
    m.insert("receipt_requirement".into(), receipt_requirement);
    m.insert("receipt_preflight".into(), preflight);
    m.insert("approval_verification".into(), json!(approval.verification));
    m.insert("approval_binding".into(), binding);
    m.insert("expires_at".into(), json!(canon::iso_ms(&expires)));
    m.insert("reason_codes".into(), json!(unique));
    let decision = canon::finalize(wire::to_wire(m, input.version), DECISION_PREFIX);
    Ok(Evaluation {
        decision,
        state,
        request_digest,
        gated_selectors: gated_s,
        gated_actions: gated_a,
        approval_used: (approval.verification == "verified")
            .then(|| {
                input
                    .approval
                    .and_then(|a| a.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten(),
    })
}
