//! Evaluation of a stored or supplied request, and the approval surface.

use std::path::PathBuf;

use chrono::Duration;
use serde_json::{json, Map, Value};

use super::{alias_of, meta, Exchange, Prepared};
use crate::exchange::canon;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::evaluate::{
    self, ApprovalVerifier, EvaluateInput, Evaluation, Preflight, State,
};
use crate::exchange::receipts::{ReceiptDraft, ReceiptLog};
use crate::exchange::schema::{self, ClKind};
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::{self, SpecVersion};
use crate::time::Instant;

/// Id prefix of approvals.
pub const APPROVAL_PREFIX: &str = "urn:cl:approval:";
/// Who writes approvals: the local approval surface (`ctx approve`, or the
/// operator of `ctx serve`; `approved_by` names the person).
pub const APPROVAL_ISSUER: &str = "urn:cl:approval-surface:local";

/// What `ctx request evaluate` runs.
pub struct EvaluateOptions {
    pub request: Value,
    pub approval: Option<Value>,
    pub at: Instant,
    /// Wire form of the decision (default: the request's own version).
    pub version: Option<SpecVersion>,
}

/// A stored decision.
pub struct Decided {
    pub evaluation: Evaluation,
    pub path: PathBuf,
    pub receipt: Option<Value>,
}

/// Refuse a request that does not have the closed shape: it is never evaluated.
pub fn check_shape(request: &Value) -> ClResult<()> {
    let core = wire::to_core(request)?;
    if let Some(why) = schema::summary(ClKind::ContextRequest, &core) {
        return fail(
            "INVALID_REQUEST",
            format!("the request does not have the context_request shape: {why}"),
        );
    }
    Ok(())
}

/// The host's approval verifier: the approval must be one `ctx approve` wrote
/// (byte-identical record in the state folder, with its `approval.grant`
/// receipt) and not used before (no `approval.consume` receipt): single use.
struct StoredApprovals<'a> {
    ex: &'a Exchange<'a>,
    log: Option<&'a ReceiptLog>,
}

impl ApprovalVerifier for StoredApprovals<'_> {
    fn verify(&self, approval: &Value, request_digest: &str, policy_digest: &str) -> bool {
        let Some(log) = self.log else {
            return false;
        };
        let Some(id) = approval["id"].as_str() else {
            return false;
        };
        let stored = self.ex.state.find(Kind::Approval, id).ok().flatten();
        let Some((_, stored)) = stored else {
            return false;
        };
        if &stored != approval
            || canon::verify_record(&stored, APPROVAL_PREFIX, "approval").is_err()
            || stored["request_digest"] != request_digest
            || stored["policy_digest"] != policy_digest
        {
            return false;
        }
        let Ok(state) = log.verify() else {
            return false;
        };
        let used = |op: &str| {
            state.receipts().any(|r| {
                r["operation"] == op
                    && r["outcome"] == "success"
                    && r["metadata"]["approval_ref"] == id
            })
        };
        used("approval.grant") && !used("approval.consume")
    }
}

/// Evaluate with an already prepared view and policy (no reload).
pub fn evaluate_prepared(
    ex: &Exchange<'_>,
    prepared: &Prepared,
    o: &EvaluateOptions,
    log: Option<&ReceiptLog>,
) -> ClResult<Evaluation> {
    let preflight = match log {
        None => Preflight::Absent,
        Some(l) => match l.preflight() {
            Ok(()) => Preflight::Available,
            Err(_) => Preflight::Unavailable,
        },
    };
    let verifier = StoredApprovals { ex, log };
    let version = match o.version {
        Some(v) => v,
        None => SpecVersion::of(&o.request, "request")?,
    };
    evaluate::evaluate(&EvaluateInput {
        request: &o.request,
        policy: &prepared.policy.policy,
        at: o.at,
        approval: o.approval.as_ref(),
        verifier: Some(&verifier),
        preflight,
        version,
    })
}

fn principal_of(request: &Value) -> String {
    wire::to_core(request)
        .ok()
        .and_then(|c| c["requester"]["principal"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Evaluate, record and store a decision.
pub fn evaluate(ex: &Exchange<'_>, o: &EvaluateOptions) -> ClResult<Decided> {
    check_shape(&o.request)?;
    let prepared = ex.prepare(&principal_of(&o.request), o.at)?;
    let log = match ex.optional_log() {
        Some(Ok(l)) => Some(l),
        Some(Err(e)) if e.code == "RECEIPT_ANCHOR_REQUIRED" || e.code.starts_with("KEY_") => {
            return Err(e)
        }
        _ => None,
    };
    let evaluation = evaluate_prepared(ex, &prepared, o, log.as_ref())?;
    store_decision(ex, &o.request, evaluation, log.as_ref(), o.at)
}

/// Record receipts and store the decision (and the request it binds).
pub fn store_decision(
    ex: &Exchange<'_>,
    request: &Value,
    evaluation: Evaluation,
    log: Option<&ReceiptLog>,
    at: Instant,
) -> ClResult<Decided> {
    let d = &evaluation.decision;
    let version = SpecVersion::of(d, "decision")?;
    let _lock = ex.state.lock()?;
    let usable_log = log.filter(|_| d["receipt_preflight"]["status"] != "unavailable");
    let draft = |op: &str, summary: &str, m: Map<String, Value>| ReceiptDraft {
        operation: op.into(),
        actor: d["issuer"]["id"]
            .as_str()
            .unwrap_or("urn:cl:policy-engine:local")
            .into(),
        subject_ref: alias_of(request),
        request_ref: d["request_ref"].as_str().map(str::to_string),
        decision_ref: d["id"].as_str().map(str::to_string),
        outcome: "success".into(),
        policy_snapshot: d["policy_snapshot"]["digest"].as_str().map(str::to_string),
        input_digest: Some(evaluation.request_digest.clone()),
        output_digest: d["integrity"]["digest"].as_str().map(str::to_string),
        user_summary: summary.into(),
        metadata: m,
        ..Default::default()
    };
    if let (Some(approval), true) = (&evaluation.approval_used, evaluation.state.grants()) {
        ex.record(
            usable_log,
            &draft(
                "approval.consume",
                "Used a single-use approval for this decision.",
                meta(&[("approval_ref", approval)]),
            ),
            at,
            version,
        )?;
    }
    let receipt = ex.record(
        usable_log,
        &draft(
            "policy.evaluate",
            "Evaluated a context request against the repository's exchange policy.",
            meta(&[("decision", evaluation.state.as_str())]),
        ),
        at,
        version,
    )?;
    let request_id = d["request_ref"].as_str().unwrap_or_default();
    ex.state
        .store(Kind::Request, &state::name_of(request_id), request)
        .or_else(|e| {
            // The same id with other content is a different request: keep both apart.
            if e.code == "STATE_CONFLICT" {
                ex.state.store(
                    Kind::Request,
                    &state::name_of(&canon::digest(request)),
                    request,
                )
            } else {
                Err(e)
            }
        })?;
    let path = ex.state.store(
        Kind::Decision,
        &state::name_of(d["id"].as_str().unwrap_or("")),
        d,
    )?;
    Ok(Decided {
        evaluation,
        path,
        receipt,
    })
}

/// What one selector would disclose, for the approver.
#[derive(Debug, Clone)]
pub struct SelectorSummary {
    pub name: String,
    pub objects: usize,
    pub types: Vec<String>,
    pub highest: Option<String>,
}

/// Everything the approval surface shows (0.2-draft §9.3).
#[derive(Debug, Clone)]
pub struct ApprovalSummary {
    pub request: Value,
    pub request_digest: String,
    pub policy_digest: String,
    pub requester: String,
    pub client: String,
    pub authenticated_by: String,
    pub purpose_code: String,
    pub purpose: Option<String>,
    pub recipient: String,
    pub onward_disclosure: String,
    pub gated_selectors: Vec<SelectorSummary>,
    pub other_selectors: Vec<SelectorSummary>,
    pub gated_actions: Vec<String>,
    pub other_actions: Vec<String>,
    pub retention_seconds: u64,
    pub request_expires_at: String,
    pub approval_expires_at: String,
    pub evidence: Vec<String>,
}

/// Prepare the approval of a request: what is gated and why.
pub fn approval_summary(
    ex: &Exchange<'_>,
    request: &Value,
    at: Instant,
    valid_for: Duration,
) -> ClResult<ApprovalSummary> {
    check_shape(request)?;
    let prepared = ex.prepare(&principal_of(request), at)?;
    let e = evaluate::evaluate(&EvaluateInput {
        request,
        policy: &prepared.policy.policy,
        at,
        approval: None,
        verifier: None,
        preflight: Preflight::Available,
        version: SpecVersion::V02,
    })?;
    if e.state == State::Deny {
        return fail(
            "REQUEST_DENIED",
            format!(
                "approval cannot help: the request is denied ({})",
                e.decision["reason_codes"]
                    .as_array()
                    .map(|a| a
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            ),
        );
    }
    if e.gated_selectors.is_empty() && e.gated_actions.is_empty() {
        return fail(
            "NOTHING_TO_APPROVE",
            "nothing in this request needs approval; evaluate it directly",
        );
    }
    let core = wire::to_core(request)?;
    let summarize = |name: &str| {
        let hits = prepared
            .policy
            .selectors
            .get(name)
            .cloned()
            .unwrap_or_default();
        let view = prepared.view.as_ref();
        let mut types: Vec<String> = hits
            .iter()
            .filter_map(|&i| view.map(|v| v.objects[i].kind.clone()))
            .collect();
        types.sort();
        types.dedup();
        SelectorSummary {
            name: name.to_string(),
            objects: hits.len(),
            types,
            highest: hits
                .iter()
                .filter_map(|&i| view.map(|v| v.objects[i].classification))
                .max()
                .map(|c| c.as_str().to_string()),
        }
    };
    let requested: Vec<String> = core["selectors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["predicate"].as_str().map(str::to_string))
        .collect();
    let granted_or_gated = |s: &String| {
        prepared.policy.policy.allowed_selectors.contains(s) && !e.gated_selectors.contains(s)
    };
    let actions: Vec<String> = core["requested_actions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    let expiry = core["expires_at"]
        .as_str()
        .and_then(canon::parse_time)
        .unwrap_or(at);
    let approval_expires = (canon::to_ms(at) + valid_for).min(expiry);
    let log_path = ex.state.log_path();
    Ok(ApprovalSummary {
        request_digest: e.request_digest.clone(),
        policy_digest: prepared.policy.policy.digest.clone(),
        requester: core["requester"]["principal"].as_str().unwrap_or("").into(),
        client: core["requester"]["client_instance"]
            .as_str()
            .unwrap_or("")
            .into(),
        authenticated_by: core["requester"]["authenticated_by"]
            .as_str()
            .unwrap_or("")
            .into(),
        purpose_code: core["purpose_code"].as_str().unwrap_or("").into(),
        purpose: core["purpose"].as_str().map(str::to_string),
        recipient: core["recipient"]["principal"].as_str().unwrap_or("").into(),
        onward_disclosure: core["recipient"]["onward_disclosure"]
            .as_str()
            .unwrap_or("")
            .into(),
        gated_selectors: e.gated_selectors.iter().map(|s| summarize(s)).collect(),
        other_selectors: requested
            .iter()
            .filter(|s| granted_or_gated(s))
            .map(|s| summarize(s))
            .collect(),
        gated_actions: e.gated_actions.clone(),
        other_actions: actions
            .iter()
            .filter(|a| prepared.policy.policy.allowed_actions.contains(*a))
            .cloned()
            .collect(),
        retention_seconds: core["retention"]["max_seconds"]
            .as_u64()
            .unwrap_or(0)
            .min(prepared.policy.policy.retention_seconds),
        request_expires_at: canon::iso_ms(&expiry),
        approval_expires_at: canon::iso_ms(&approval_expires),
        evidence: vec![
            format!(
                "approval.grant now, approval.consume when a decision uses it, in {}",
                log_path.display()
            ),
            "policy.evaluate, bundle.issue, bundle.consume and one receipt per action afterwards"
                .into(),
            "receipts hold references and SHA-256 digests only, never the context itself".into(),
        ],
        request: request.clone(),
    })
}

/// Quote a value as inert text: control and bidirectional-formatting
/// characters are escaped, so nothing in it can move the cursor, recolour the
/// terminal, reorder the display or pass for part of the surrounding text.
pub fn inert(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::diag::render::moves_the_terminal(c) => {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The approval surface as plain text. Every requester-supplied value is quoted inert.
pub fn render_summary(s: &ApprovalSummary) -> String {
    let sel = |x: &SelectorSummary| {
        format!(
            "{} — {} object(s){}{}",
            inert(&x.name),
            x.objects,
            if x.types.is_empty() {
                String::new()
            } else {
                format!(", types {}", x.types.join(", "))
            },
            x.highest
                .as_ref()
                .map(|h| format!(", up to {h}"))
                .unwrap_or_default()
        )
    };
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|a| inert(a)).collect::<Vec<_>>().join(", ")
        }
    };
    let mut t = String::new();
    t.push_str("Approval requested. Quoted values come from the request: read them as data, not as instructions.\n\n");
    t.push_str(&format!(
        "  Who is asking     {} (client {}, authenticated by {})\n",
        inert(&s.requester),
        inert(&s.client),
        inert(&s.authenticated_by)
    ));
    t.push_str(&format!(
        "  Why               purpose code {}{}\n",
        inert(&s.purpose_code),
        s.purpose
            .as_ref()
            .map(|p| format!("; stated purpose {}", inert(p)))
            .unwrap_or_default()
    ));
    t.push_str(&format!("  Recipient         {}\n", inert(&s.recipient)));
    t.push_str("  What (needs your approval)\n");
    for x in &s.gated_selectors {
        t.push_str(&format!("    {}\n", sel(x)));
    }
    if s.gated_selectors.is_empty() {
        t.push_str("    no context beyond what policy already allows\n");
    }
    if !s.other_selectors.is_empty() {
        t.push_str("  Also disclosed (allowed by policy without approval)\n");
        for x in &s.other_selectors {
            t.push_str(&format!("    {}\n", sel(x)));
        }
    }
    t.push_str(&format!(
        "  Actions           needing approval: {}; allowed: {}\n",
        list(&s.gated_actions),
        list(&s.other_actions)
    ));
    t.push_str(&format!(
        "  How long          bundle retention at most {} s; the request expires {}\n",
        s.retention_seconds, s.request_expires_at
    ));
    t.push_str(&format!(
        "  Onward disclosure {}\n",
        inert(&s.onward_disclosure)
    ));
    t.push_str("  Evidence written\n");
    for e in &s.evidence {
        t.push_str(&format!("    {e}\n"));
    }
    t.push_str(&format!(
        "  This approval     is bound to request {} and policy {}, is single-use, and expires {}\n",
        s.request_digest, s.policy_digest, s.approval_expires_at
    ));
    t
}

/// Record an approval of exactly the gated scope of `s`.
pub fn approve(
    ex: &Exchange<'_>,
    s: &ApprovalSummary,
    approver: &str,
    at: Instant,
) -> ClResult<(Value, PathBuf)> {
    let log = ex.log()?;
    log.preflight()?;
    let at = canon::to_ms(at);
    let mut m = Map::new();
    // A top-level record like any other (seed 000 §6.1): version and issuer
    // (the approval surface), then ctx's own approval members.
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("ctx_exchange_approval"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert("issuer".into(), json!({"id": APPROVAL_ISSUER}));
    m.insert("approved_by".into(), json!(approver));
    m.insert("request_ref".into(), s.request["id"].clone());
    m.insert("request_digest".into(), json!(s.request_digest));
    m.insert("policy_digest".into(), json!(s.policy_digest));
    m.insert(
        "granted_selectors".into(),
        json!(s
            .gated_selectors
            .iter()
            .map(|x| x.name.clone())
            .collect::<Vec<_>>()),
    );
    m.insert("granted_actions".into(), json!(s.gated_actions));
    m.insert("expires_at".into(), json!(s.approval_expires_at));
    m.insert("single_use".into(), json!(true));
    let approval = canon::finalize(m, APPROVAL_PREFIX);
    let id = approval["id"].as_str().unwrap_or_default().to_string();
    let _lock = ex.state.lock()?;
    ex.record(
        Some(&log),
        &ReceiptDraft {
            operation: "approval.grant".into(),
            actor: approver.into(),
            subject_ref: alias_of(&s.request),
            request_ref: s.request["id"].as_str().map(str::to_string),
            outcome: "success".into(),
            policy_snapshot: Some(s.policy_digest.clone()),
            input_digest: Some(s.request_digest.clone()),
            output_digest: approval["integrity"]["digest"].as_str().map(str::to_string),
            user_summary: "A person approved the gated scope of a context request.".into(),
            metadata: meta(&[("approval_ref", &id)]),
            ..Default::default()
        },
        at,
        SpecVersion::V02,
    )?;
    let path = ex
        .state
        .store(Kind::Approval, &state::name_of(&id), &approval)?;
    Ok((approval, path))
}

/// Load the request a `ctx approve` argument names: a request, or a decision (its request).
pub fn request_for_approval(ex: &Exchange<'_>, doc: &Value) -> ClResult<Value> {
    match doc["type"].as_str() {
        Some("context_request") => Ok(doc.clone()),
        Some("policy_decision") => {
            canon::verify_record(doc, evaluate::DECISION_PREFIX, "decision")?;
            let r = super::stored_request(ex, doc["request_ref"].as_str().unwrap_or(""))?;
            if canon::digest(&r) != doc["request_digest"].as_str().unwrap_or("") {
                return Err(ClError::new(
                    "DECISION_REQUEST_MISMATCH",
                    "the stored request differs from the one the decision was made on",
                ));
            }
            Ok(r)
        }
        _ => fail(
            "USAGE",
            "give a context_request or a policy_decision file to approve",
        ),
    }
}
