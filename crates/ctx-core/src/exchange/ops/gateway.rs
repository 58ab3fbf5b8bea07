//! The exchange as a network gateway sees it (seed 000 §10): an authenticated
//! principal submits a request, a trusted decision role approves or refuses
//! it, the recipient retrieves its bundle once, reports what it did, and
//! proposes memory. Each function composes the operations the CLI runs
//! (`request`, `decide`, `bundles`, `proposals`, `ledger`) and adds only what
//! a remote caller needs on top: that the caller is who the object names, and
//! that it may read what it asks for. Transports (HTTP now) map the
//! [`ClError`] codes to their statuses and render; they decide nothing.

use chrono::Duration;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::bundles::{self, ConsumerOptions, IssueOptions, IssuedBundle};
use super::decide::{self, Decided, EvaluateOptions};
use super::{ledger, meta, proposals, request, Exchange};
use crate::exchange::canon;
use crate::exchange::config::{self, KeyPurpose, LOCAL_AUTH};
use crate::exchange::consumer::{ActionResult, ExecOutcome};
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::receipts::ReceiptDraft;
use crate::exchange::state::Kind;
use crate::exchange::wire::{self, SpecVersion, V01_EXTENSION};
use crate::time::Instant;

pub use super::credentials::{Credentials, IssuedTokens, TOKEN_PREFIX};

/// The experimental media type of seed 000 §6.2 (not IANA registered).
pub const MEDIA_TYPE: &str = "application/vnd.context-layer+json";

/// Who a caller proved to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A requester of the policy (`urn:ctx:agent:x` or `urn:ctx:role:x`).
    Principal(String),
    /// The trusted decision role: the person running the gateway.
    Operator,
}

/// A submitted or decided request and what followed from it.
pub struct Outcome {
    pub decided: Decided,
    /// The bundle issued when the decision grants.
    pub bundle: Option<IssuedBundle>,
}

/// Id prefix of the request-state records the gateway answers with.
pub const REQUEST_STATE_PREFIX: &str = "urn:cl:request-state:";

/// Who writes the gateway's own records.
#[derive(Debug, Clone, Serialize)]
pub struct Issuer {
    pub id: &'static str,
}

/// The gateway's issuer (the one its `error` objects name).
pub const GATEWAY_ISSUER: Issuer = Issuer {
    id: "urn:cl:gateway:ctx",
};

/// What a submission or a decision leads to, as a top-level record (seed 000
/// §6.1: every top-level object names its version, type, id, creation time
/// and issuer). `id` and `integrity` are added by [`canon::finalize`].
#[derive(Debug, Clone, Serialize)]
pub struct RequestState<'a> {
    pub spec_version: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub created_at: String,
    pub issuer: Issuer,
    pub request_ref: &'a str,
    pub state: &'a str,
    pub decision: Option<&'a Value>,
    pub bundle_ref: Option<&'a str>,
}

impl RequestState<'_> {
    /// The finalized record.
    pub fn record(&self) -> Value {
        let Ok(Value::Object(m)) = serde_json::to_value(self) else {
            unreachable!("a struct serializes to an object")
        };
        canon::finalize(m, REQUEST_STATE_PREFIX)
    }
}

impl Outcome {
    /// The response body: the decision, and where the bundle is when there is
    /// one, as a `request_state` record in the wire form `version`.
    pub fn body(&self, request_id: &str, version: SpecVersion, at: Instant) -> Value {
        RequestState {
            spec_version: version.id(),
            kind: "request_state",
            created_at: canon::iso_ms(&canon::to_ms(at)),
            issuer: GATEWAY_ISSUER,
            request_ref: request_id,
            state: self.decided.evaluation.state.as_str(),
            decision: Some(&self.decided.evaluation.decision),
            bundle_ref: self.bundle.as_ref().map(|b| b.bundle_id.as_str()),
        }
        .record()
    }
}

/// The body of a request a person refused (`state: denied`).
pub fn denied_body(request_id: &str, version: SpecVersion, at: Instant) -> Value {
    RequestState {
        spec_version: version.id(),
        kind: "request_state",
        created_at: canon::iso_ms(&canon::to_ms(at)),
        issuer: GATEWAY_ISSUER,
        request_ref: request_id,
        state: "denied",
        decision: None,
        bundle_ref: None,
    }
    .record()
}

fn requester_of(core: &Value) -> &str {
    core["requester"]["principal"].as_str().unwrap_or("")
}

/// Evaluate and, when the decision grants, issue the bundle.
fn decide_and_issue(
    ex: &Exchange<'_>,
    request: &Value,
    approval: Option<Value>,
    version: SpecVersion,
    at: Instant,
) -> ClResult<Outcome> {
    let decided = decide::evaluate(
        ex,
        &EvaluateOptions {
            request: request.clone(),
            approval,
            at,
            version: Some(version),
        },
    )?;
    let bundle = if decided.evaluation.state.grants() {
        Some(bundles::issue(
            ex,
            &IssueOptions {
                decision: decided.evaluation.decision.clone(),
                key: None,
                at,
            },
        )?)
    } else {
        None
    };
    Ok(Outcome { decided, bundle })
}

/// `POST /requests`: the request must name the caller as its requester and
/// the authentication it came with; it is checked as `ctx request validate`
/// checks, stored, evaluated, and a granted bundle is issued.
pub fn submit(
    ex: &Exchange<'_>,
    caller: &Caller,
    request: &Value,
    version: SpecVersion,
    at: Instant,
) -> ClResult<Outcome> {
    let Caller::Principal(principal) = caller else {
        return fail(
            "FORBIDDEN",
            "the operator token approves requests; a request is submitted with its requester's token",
        );
    };
    decide::check_shape(request)?;
    let core = wire::to_core(request)?;
    if requester_of(&core) != principal {
        return fail(
            "REQUESTER_MISMATCH",
            format!("the request names requester {:?}, but the bearer token is {principal}'s; a requester submits only its own requests", requester_of(&core)),
        );
    }
    if core["requester"]["authenticated_by"] != LOCAL_AUTH {
        return fail(
            "AUTHENTICATION_MISMATCH",
            format!("requester.authenticated_by must be {LOCAL_AUTH:?}: the per-launch token is a local-session credential"),
        );
    }
    let report = request::validate(ex, request, at);
    if let Some(p) = report.problems.first() {
        let all: Vec<String> = report
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.code, p.message))
            .collect();
        return fail(p.code, all.join("; "));
    }
    decide_and_issue(ex, request, None, version, at)
}

/// The current state of a stored request, as its requester or the operator sees it.
pub struct Status {
    pub request: Value,
    /// Decisions on it, oldest first.
    pub decisions: Vec<Value>,
    pub bundles: Vec<String>,
    /// `issued`, `denied` (by a person), or the latest decision's state.
    pub state: String,
}

impl Status {
    pub fn body(&self) -> Value {
        json!({
            "request_ref": self.request["id"],
            "state": self.state,
            "request": self.request,
            "decision": self.decisions.last(),
            "decisions": self.decisions.iter().map(|d| d["id"].clone()).collect::<Vec<_>>(),
            "bundle_ref": self.bundles.last(),
        })
    }
}

/// A stored request the caller may see (another requester's is "not found").
fn visible_request(ex: &Exchange<'_>, caller: &Caller, id: &str) -> ClResult<Value> {
    let not_found = || ClError::new("REQUEST_NOT_FOUND", format!("no request {id} here"));
    let (_, r) = ex.state.find(Kind::Request, id)?.ok_or_else(not_found)?;
    if let Caller::Principal(p) = caller {
        let core = wire::to_core(&r)?;
        if requester_of(&core) != p && core["recipient"]["principal"] != p.as_str() {
            return Err(not_found());
        }
    }
    Ok(r)
}

/// `GET /requests/{id}`.
pub fn status(ex: &Exchange<'_>, caller: &Caller, id: &str) -> ClResult<Status> {
    let request = visible_request(ex, caller, id)?;
    let mut decisions: Vec<Value> = ex
        .state
        .all(Kind::Decision)?
        .into_iter()
        .map(|(_, d)| d)
        .filter(|d| d["request_ref"] == id)
        .collect();
    decisions.sort_by(|a, b| {
        (a["created_at"].as_str(), a["id"].as_str())
            .cmp(&(b["created_at"].as_str(), b["id"].as_str()))
    });
    let bundles: Vec<String> = ex
        .state
        .all(Kind::Bundle)?
        .into_iter()
        .filter(|(_, e)| e["bundle"]["request_ref"] == id)
        .filter_map(|(_, e)| e["bundle"]["id"].as_str().map(str::to_string))
        .collect();
    let refused = match ex.optional_log() {
        Some(Ok(log)) => log.verify()?.receipts().any(|r| {
            r["operation"] == "approval.deny" && r["request_ref"] == id && r["outcome"] == "success"
        }),
        _ => false,
    };
    let state = if !bundles.is_empty() {
        "issued".to_string()
    } else if refused {
        "denied".to_string()
    } else {
        decisions
            .last()
            .and_then(|d| d["decision"].as_str())
            .unwrap_or("submitted")
            .to_string()
    };
    Ok(Status {
        request,
        decisions,
        bundles,
        state,
    })
}

/// A person's answer to a `needs_approval` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Deny,
}

/// `POST /requests/{id}/decisions` (operator only). Approve: the single-use
/// approval `ctx approve` would write, then a new decision that uses it (and
/// the bundle when it grants). Deny: an `approval.deny` receipt; the request
/// stays undecided for good (`state: denied`).
pub fn decide_request(
    ex: &Exchange<'_>,
    caller: &Caller,
    id: &str,
    verdict: Verdict,
    reason: &str,
    version: SpecVersion,
    at: Instant,
) -> ClResult<Option<Outcome>> {
    if *caller != Caller::Operator {
        return fail(
            "FORBIDDEN",
            "decisions are recorded by the trusted decision role (the operator token), never by a requester",
        );
    }
    let st = status(ex, caller, id)?;
    if st.state == "issued" || st.state == "denied" {
        return fail(
            "REQUEST_STATE_CONFLICT",
            format!("request {id} is already {}; submit a new request", st.state),
        );
    }
    let approver = "urn:ctx:operator:serve";
    match verdict {
        Verdict::Approve => {
            let summary = decide::approval_summary(ex, &st.request, at, Duration::minutes(5))?;
            let (approval, _) = decide::approve(ex, &summary, approver, at)?;
            decide_and_issue(ex, &st.request, Some(approval), version, at).map(Some)
        }
        Verdict::Deny => {
            let log = ex.log()?;
            log.preflight()?;
            let _lock = ex.state.lock()?;
            ex.record(
                Some(&log),
                &ReceiptDraft {
                    operation: "approval.deny".into(),
                    actor: approver.into(),
                    subject_ref: super::alias_of(&st.request),
                    request_ref: Some(id.to_string()),
                    outcome: "success".into(),
                    input_digest: Some(canon::digest(&st.request)),
                    user_summary: "A person refused the gated scope of a context request.".into(),
                    metadata: meta(&[("reason", reason)]),
                    ..Default::default()
                },
                at,
                version,
            )?;
            Ok(None)
        }
    }
}

/// The stored envelope of a bundle, as bytes a consumer would have received.
fn envelope(ex: &Exchange<'_>, bundle_id: &str) -> ClResult<Value> {
    ex.state.bundle(bundle_id)?.map(|(_, e)| e).ok_or_else(|| {
        ClError::new(
            "BUNDLE_NOT_FOUND",
            format!("no bundle {bundle_id} was issued here"),
        )
    })
}

fn consumer(
    ex: &Exchange<'_>,
    caller: &Caller,
    bundle_id: &str,
    at: Instant,
) -> ClResult<(Value, ConsumerOptions)> {
    let Caller::Principal(p) = caller else {
        return fail(
            "FORBIDDEN",
            "only a bundle's recipient retrieves it, reports on it or proposes through it",
        );
    };
    // Retention runs first: what may no longer be used is purged, and
    // a purged bundle answers with why (its recipient only).
    super::retention::purge(ex, at)?;
    let env = envelope(ex, bundle_id)?;
    let stored = super::retention::StoredBundle::parse(&env)?;
    if stored.bundle.recipient != *p {
        // Concealed: another requester learns nothing about the bundle.
        return fail(
            "BUNDLE_NOT_FOUND",
            format!("no bundle {bundle_id} was issued here"),
        );
    }
    if let Some(p) = stored.purged {
        return Err(p.reason.error(bundle_id));
    }
    let o = ConsumerOptions {
        envelope: serde_json::to_vec(&env).expect("JSON"),
        recipient: p.clone(),
        at,
        trust: None,
    };
    Ok((env, o))
}

/// `GET /bundles/{id}`: the recipient retrieves its bundle once. The checks of
/// `ctx exchange open` run and `bundle.consume` is durable before the
/// envelope is returned; a second retrieval is `BUNDLE_REPLAY`.
pub fn retrieve(
    ex: &Exchange<'_>,
    caller: &Caller,
    bundle_id: &str,
    at: Instant,
) -> ClResult<Value> {
    let (env, o) = consumer(ex, caller, bundle_id, at)?;
    bundles::open(ex, &o)?;
    Ok(env)
}

/// `POST /bundles/{id}/receipts`: the recipient reports a granted action it
/// performed; the gateway checks the capability, expiry and revocation as
/// `ctx exchange exec` does and records the receipts.
pub fn report(
    ex: &Exchange<'_>,
    caller: &Caller,
    bundle_id: &str,
    action: &str,
    success: bool,
    output_digest: &str,
    at: Instant,
) -> ClResult<(&'static str, Value)> {
    if !canon::is_digest(output_digest) {
        return fail(
            "INVALID_DIGEST",
            "output_digest must be sha256:<64 lowercase hex> of what the action produced",
        );
    }
    let (_, o) = consumer(ex, caller, bundle_id, at)?;
    let r = bundles::exec(ex, &o, action, |_| ActionResult {
        success,
        output_digest: output_digest.to_string(),
    })?;
    Ok(match r.outcome {
        ExecOutcome::Success { receipt } => ("success", receipt),
        ExecOutcome::Failure { receipt } => ("failure", receipt),
        ExecOutcome::Indeterminate { error, .. } => {
            return Err(ClError::new(
                "INDETERMINATE_OUTCOME",
                format!(
                    "the receipt could not be stored ({}); it waits to be retried",
                    error.code
                ),
            ))
        }
    })
}

/// `POST /memory-proposals`: a candidate through a bundle its recipient opened.
pub fn propose(
    ex: &Exchange<'_>,
    caller: &Caller,
    bundle_id: &str,
    candidate: &Value,
    at: Instant,
) -> ClResult<Value> {
    let (_, o) = consumer(ex, caller, bundle_id, at)?;
    proposals::submit(ex, &o, candidate).map(|(p, _)| p)
}

/// `GET /receipts/{id}`: the operator reads any receipt; a requester only
/// those about its own requests and bundles (seed 000 §11.8: receipts are a
/// sensitive dataset of their own). Ids are matched exactly, never by prefix.
pub fn receipt(ex: &Exchange<'_>, caller: &Caller, id: &str) -> ClResult<Value> {
    let not_found = || ClError::new("RECEIPT_NOT_FOUND", format!("no receipt {id} here"));
    let listed = ledger::show(ex, id).map_err(|_| not_found())?;
    if listed.receipt["id"] != id {
        return Err(not_found());
    }
    if let Caller::Principal(p) = caller {
        let r = &listed.receipt;
        let by_request = r["request_ref"]
            .as_str()
            .is_some_and(|q| visible_request(ex, caller, q).is_ok());
        let by_bundle = r["bundle_ref"]
            .as_str()
            .is_some_and(|b| envelope(ex, b).is_ok_and(|e| e["bundle"]["recipient"] == p.as_str()));
        if !by_request && !by_bundle {
            return Err(not_found());
        }
    }
    Ok(listed.receipt)
}

/// The conformance profiles (seed 000 §13) the capability document claims:
/// only those whose every "must implement" item ctx implements. Not claimed:
/// `CL-Memory` (no `source_event` records, ingestion or capture adapters,
/// nor `context_claim` objects with their status), `CL-Discovery` (probe
/// correlation is by normalised words, not semantic similarity),
/// `CL-Core-Consumer` and `CL-Adapter` (ctx's own consumer and no protocol
/// adapters are offered for others to rely on).
pub const CLAIMED_PROFILES: [&str; 2] = ["CL-Core-Issuer", "CL-Receipt-Store"];

/// `POST /discovery`: the caller's query through the same operation as `ctx
/// discover`, with the caller (the bearer token's principal) as requester.
pub fn discover(
    ex: &Exchange<'_>,
    caller: &Caller,
    query: &str,
    version: SpecVersion,
    at: Instant,
) -> ClResult<Value> {
    let Caller::Principal(principal) = caller else {
        return fail(
            "FORBIDDEN",
            "discovery is asked by a requester with its own token, not by the operator",
        );
    };
    super::discover::discover(
        ex,
        &super::discover::DiscoverOptions {
            query: query.to_string(),
            requester: principal.clone(),
            at,
            version,
        },
    )
}

/// The capability document of `GET /.well-known/context-layer` (seed 000
/// §10.2): versions, roles, endpoints, object types, authentication, the
/// bundle-signing and anchor keys (public halves with their kids), receipt
/// capabilities and limits. Policy internals (requesters, selectors) stay out.
pub fn capabilities(ex: &Exchange<'_>) -> Value {
    let keys: Vec<Value> = ex
        .config
        .keys
        .iter()
        .map(|(id, (k, purpose))| {
            json!({
                "kid": bundles::kid_of(id),
                "alg": "Ed25519",
                "public_key": k.to_base64(),
                "use": purpose.as_str(),
            })
        })
        .collect();
    let max_lifetime = ex
        .config
        .requesters
        .values()
        .map(|r| r.max_retention_seconds)
        .max()
        .unwrap_or(0);
    let p = "/context/v1";
    json!({
        "spec_versions": [SpecVersion::V02.id(), SpecVersion::V01.id()],
        "default_version": SpecVersion::V02.id(),
        "version_header": "Context-Layer-Version",
        "media_type": MEDIA_TYPE,
        "issuer": {"id": crate::exchange::bundle::DEFAULT_ISSUER},
        "subject": config::subject(&ex.repo.manifest),
        "roles": CLAIMED_PROFILES,
        "endpoints": {
            "requests": format!("{p}/requests"),
            "request": format!("{p}/requests/{{id}}"),
            "decisions": format!("{p}/requests/{{id}}/decisions"),
            "bundle": format!("{p}/bundles/{{id}}"),
            "bundle_receipts": format!("{p}/bundles/{{id}}/receipts"),
            "memory_proposals": format!("{p}/memory-proposals"),
            "discovery": format!("{p}/discovery"),
            "receipt": format!("{p}/receipts/{{id}}"),
        },
        "object_types": ["context_request", "policy_decision", "scoped_context_bundle", "minimum_reveal_response", "memory_update_proposal", "receipt", "request_state", "error"],
        "authentication": {
            "scheme": "bearer",
            "token_prefix": TOKEN_PREFIX,
            "issued": "per launch, one token per configured requester and one for the decision role, in a 0600 file under the user's config folder",
            "requester_authenticated_by": LOCAL_AUTH,
        },
        "idempotency": {"header": "Idempotency-Key", "methods": ["POST"], "conflict_status": 409},
        "signing": {
            "suite": "Ed25519 over the local-core canonical JSON",
            "keys": keys,
            "issuer_key": ex.config.issuer_key.as_ref().map(|k| bundles::kid_of(k)),
        },
        "receipts": {
            "store": if ex.config.anchor_key.is_some() { "anchored-hash-chain" } else { "unavailable" },
            "payload_included": false,
            "anchor_kid": ex.config.anchor_key.as_ref().map(|k| bundles::kid_of(k)),
        },
        "bundles": {"single_use": true, "maximum_lifetime_seconds": max_lifetime, "max_context_items": bundles::MAX_CONTEXT_ITEMS},
        "extensions": [V01_EXTENSION],
        "conformance": "ctx conformance conformance/context-layer",
        "key_purposes": [KeyPurpose::Bundle.as_str(), KeyPurpose::Anchor.as_str()],
    })
}

/// A protocol `error` object (seed 000 §10.4) in the negotiated wire form.
pub fn error_object(e: &ClError, at: Instant, version: SpecVersion) -> Value {
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(version.id()));
    m.insert("type".into(), json!("error"));
    m.insert("created_at".into(), json!(canon::iso_ms(&canon::to_ms(at))));
    m.insert("issuer".into(), json!({"id": "urn:cl:gateway:ctx"}));
    m.insert("code".into(), json!(e.code));
    m.insert("message".into(), json!(e.message));
    m.insert("retryable".into(), json!(e.retryable()));
    canon::finalize(m, "urn:cl:error:")
}

/// The message a network caller gets for `e`. A refusal about the request is
/// told as it is; a failure on the server's side (a key, the policy, the state
/// or receipt store) is told only by its kind: its detail (file paths, key ids,
/// the underlying error) is for the operator's log, never for the caller (seed
/// 000 §10.4: safe messages, no internals).
pub fn caller_message(e: &ClError, server_side: bool) -> String {
    if !server_side {
        return e.message.clone();
    }
    let code = e.code;
    let kind = if code.starts_with("KEY_") {
        "a key this server signs with is unavailable"
    } else if code.starts_with("RECEIPT_") {
        "the receipt store is unavailable"
    } else {
        match code {
            "POLICY_UNAVAILABLE" | "INVALID_EXCHANGE_POLICY" => {
                "the exchange policy cannot be loaded"
            }
            "STATE_UNAVAILABLE" => "the exchange's state cannot be read or written",
            "AUDIT_UNAVAILABLE" => "the audit log cannot be written",
            "REVOCATION_CHECK_FAILED" => "revocation cannot be checked",
            "CREDENTIALS_UNAVAILABLE" => "credentials cannot be issued",
            "INDETERMINATE_OUTCOME" => {
                "the action's receipt could not be stored yet; the outcome stays indeterminate until it is retried"
            }
            _ => "the server cannot complete this call",
        }
    };
    format!("{kind}; the server's operator has the details")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_side_failures_reach_the_caller_without_their_detail() {
        let e = ClError::new(
            "KEY_UNAVAILABLE",
            "cannot read /home/op/.config/ctx/keys/t-bundle.key: No such file",
        );
        let m = caller_message(&e, true);
        assert!(!m.contains("/home") && !m.contains("t-bundle"), "{m}");
        assert!(m.contains("key"), "{m}");
        let refusal = ClError::new("REQUESTER_MISMATCH", "the request names another requester");
        assert_eq!(caller_message(&refusal, false), refusal.message);
    }
}
