//! `ctx receipts`: list, show, verify the anchored log; retry receipts whose
//! outcome was indeterminate; correct a receipt by supersession.

use serde_json::{Map, Value};

use super::{meta, Exchange};
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::receipts::{self, LogState, ReceiptDraft, ReceiptLog};
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::SpecVersion;
use crate::time::Instant;

/// Filters for `ctx receipts list`.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub bundle: Option<String>,
    pub request: Option<String>,
    pub operation: Option<String>,
}

/// One listed receipt, with whether a later receipt supersedes it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub sequence: u64,
    pub receipt: Value,
    pub superseded_by: Option<String>,
}

/// `ctx receipts verify`: the whole log against its anchor, from the first
/// byte, with the anchor's declared public key; nothing is repaired. What an
/// interrupted append left is told apart from damage, with how to recover.
pub fn verify(ex: &Exchange<'_>) -> ClResult<LogState> {
    let Some(public) = ex
        .config
        .anchor_key
        .as_deref()
        .and_then(|id| ex.config.keys.get(id))
        .map(|(k, _)| *k)
    else {
        return ex.log()?.verify_full();
    };
    let (log, anchor) = (ex.state.log_path(), ex.state.anchor_path());
    if !log.exists() && !anchor.exists() {
        return ex.log()?.verify_full();
    }
    match ReceiptLog::inspect(&log, &anchor, public) {
        (Ok(state), _) => Ok(state),
        (Err(e), true) => Err(ClError::new(
            e.code,
            format!(
                "{}; an interrupted append (a kill or a full disk) left this: the next operation that writes a receipt rolls it back and records that in a receipt (or run `ctx audit verify --repair`)",
                e.message
            ),
        )),
        (Err(e), false) => Err(e),
    }
}

/// Receipts matching the filters, in log order.
pub fn list(ex: &Exchange<'_>, o: &ListOptions) -> ClResult<Vec<Listed>> {
    let state = ex.log()?.verify()?;
    let mut superseded: Map<String, Value> = Map::new();
    for r in state.receipts() {
        if let (Some(old), Some(new)) = (r["supersedes_ref"].as_str(), r["id"].as_str()) {
            superseded.insert(old.to_string(), Value::from(new));
        }
    }
    let want =
        |r: &Value, key: &str, v: &Option<String>| v.as_ref().is_none_or(|x| r[key] == x.as_str());
    Ok(state
        .entries
        .iter()
        .filter(|e| {
            let r = &e["receipt"];
            want(r, "bundle_ref", &o.bundle)
                && want(r, "request_ref", &o.request)
                && want(r, "operation", &o.operation)
        })
        .map(|e| Listed {
            sequence: e["sequence"].as_u64().unwrap_or(0),
            superseded_by: superseded
                .get(e["receipt"]["id"].as_str().unwrap_or(""))
                .and_then(Value::as_str)
                .map(str::to_string),
            receipt: e["receipt"].clone(),
        })
        .collect())
}

/// One receipt by id (or unique id prefix).
pub fn show(ex: &Exchange<'_>, id: &str) -> ClResult<Listed> {
    let all = list(ex, &ListOptions::default())?;
    let hits: Vec<Listed> = all
        .into_iter()
        .filter(|l| {
            let rid = l.receipt["id"].as_str().unwrap_or("");
            rid == id
                || (id.len() >= 8 && rid.rsplit(':').next().is_some_and(|h| h.starts_with(id)))
        })
        .collect();
    match hits.len() {
        1 => Ok(hits.into_iter().next().expect("one")),
        0 => fail("RECEIPT_NOT_FOUND", format!("no receipt {id} in the log")),
        n => fail(
            "USAGE",
            format!("{n} receipts start with {id}; give more of the id"),
        ),
    }
}

/// What `retry` did.
#[derive(Debug, Clone, Default)]
pub struct RetryReport {
    /// Receipts now durable in the log (appended, or found already there).
    pub completed: Vec<String>,
}

/// Store every pending completion receipt (idempotent: a receipt already in
/// the log is not added again), then clear its pending record.
pub fn retry(ex: &Exchange<'_>) -> ClResult<RetryReport> {
    let _lock = ex.state.lock()?;
    retry_locked(ex)
}

/// [`retry`] for a caller that holds the repository lock already (a commit
/// completes what a killed one left before it plans).
pub fn retry_locked(ex: &Exchange<'_>) -> ClResult<RetryReport> {
    let pending = ex.state.all(Kind::Pending)?;
    let mut report = RetryReport::default();
    if pending.is_empty() {
        return Ok(report);
    }
    let log = ex.log()?;
    for (_, r) in pending {
        receipts::validate(&r)?;
        log.append(&r)?;
        let id = r["id"].as_str().unwrap_or_default().to_string();
        ex.state.remove_pending(&state::name_of(&id))?;
        report.completed.push(id);
    }
    Ok(report)
}

/// Correct a receipt: a new receipt that supersedes it (the original stays).
pub fn supersede(
    ex: &Exchange<'_>,
    id: &str,
    outcome: &str,
    summary: &str,
    at: Instant,
) -> ClResult<Value> {
    let old = show(ex, id)?.receipt;
    if !["success", "failure", "indeterminate"].contains(&outcome) {
        return fail("USAGE", "outcome must be success, failure or indeterminate");
    }
    let log = ex.log()?;
    let _lock = ex.state.lock()?;
    let s = |k: &str| old[k].as_str().map(str::to_string);
    let r = ex.record(
        Some(&log),
        &ReceiptDraft {
            operation: s("operation").unwrap_or_default(),
            actor: s("actor").unwrap_or_default(),
            subject_ref: s("subject_ref").unwrap_or_default(),
            request_ref: s("request_ref"),
            decision_ref: s("decision_ref"),
            bundle_ref: s("bundle_ref"),
            outcome: outcome.into(),
            policy_snapshot: s("policy_snapshot"),
            input_digest: s("input_digest"),
            output_digest: s("output_digest"),
            user_summary: summary.into(),
            metadata: meta(&[("correction_of", old["id"].as_str().unwrap_or(""))]),
            supersedes_ref: s("id"),
            ..Default::default()
        },
        at,
        SpecVersion::of(&old, "receipt")?,
    )?;
    Ok(r.unwrap_or(Value::Null))
}
