//! Memory proposals on the repository side: submit through a bundle, review
//! (approve, reject, expire) and commit. Status lives in the receipt log
//! (each transition is a receipt), so it is rebuilt from the log alone; the
//! submitted record itself never changes.

use std::path::PathBuf;

use serde_json::Value;

use super::bundles::{with_consumer, ConsumerOptions};
use super::{meta, Exchange};
use crate::exchange::canon;
use crate::exchange::error::{fail, ClResult};
use crate::exchange::proposal::{self, PROPOSAL_PREFIX};
use crate::exchange::receipts::ReceiptDraft;
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::{self, SpecVersion};
use crate::time::Instant;

pub use super::commit::{commit, CommitOptions, Committed};

/// How long a submitted proposal stays open for review: two weeks from its
/// submission. The record's own `expires_at` is the profile's (its bundle's
/// expiry, after which nothing more is submitted through that bundle); a person
/// reviewing is not held to an agent's five-minute session.
pub const REVIEW_WINDOW: chrono::TimeDelta = chrono::TimeDelta::days(14);

/// Submit a candidate through an open bundle session; the proposal is stored.
pub fn submit(
    ex: &Exchange<'_>,
    o: &ConsumerOptions,
    candidate: &Value,
) -> ClResult<(Value, PathBuf)> {
    let p = with_consumer(ex, o, |c, log| {
        let session = c.resume(&o.envelope, o.at)?;
        if !super::bundles::pending_for(ex, &session.bundle_id)?.is_empty() {
            return fail(
                "INDETERMINATE_OUTCOME_PENDING",
                "an earlier action on this bundle has an indeterminate outcome; run `ctx receipts retry` first",
            );
        }
        check_authority(ex, &session.principal, candidate, o.at)?;
        proposal::propose(&session, log, candidate, o.at, c.revocation)
    })?;
    let _lock = ex.state.lock()?;
    let path = ex.state.store(
        Kind::Proposal,
        &state::name_of(p["id"].as_str().unwrap_or("")),
        &p,
    )?;
    Ok((p, path))
}

/// Seed 000 §8.4 step 2, the submitter's authority: every claim must target an
/// id its submitter may read, or one that would be in its read scope. An id
/// outside that scope is refused with one answer, whether an object has it or
/// not. Checked at submission and again at commit (the policy may change
/// between the two).
pub fn check_authority(
    ex: &Exchange<'_>,
    principal: &str,
    proposal: &Value,
    at: Instant,
) -> ClResult<()> {
    let claims = proposal
        .get("proposed_claims")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let who = ex
        .config
        .requester_for(principal)
        .map(|r| crate::exchange::view::who_for(&r.name));
    for claim in &claims {
        let id = claim["predicate"].as_str().unwrap_or("");
        let allowed = match &who {
            Some(w) => !matches!(
                crate::disclose::target(ex.repo, w, at, id),
                Ok(crate::disclose::Target::Forbidden) | Err(_)
            ),
            None => false,
        };
        if !allowed {
            return fail(
                "PROPOSAL_TARGET_NOT_PERMITTED",
                format!("{principal} may not read or write `{id}`, so it cannot propose a change to it; nothing was recorded"),
            );
        }
    }
    Ok(())
}

/// [`check_authority`] at commit, for the reviewer: the submitter must still be
/// allowed to name every target, and an existing target must be one it may read
/// now (a proposal never writes what its author could not see).
pub fn check_commit_authority(ex: &Exchange<'_>, core: &Value, at: Instant) -> ClResult<()> {
    let principal = core["submitted_by"].as_str().unwrap_or("");
    check_authority(ex, principal, core, at)?;
    let Some(r) = ex.config.requester_for(principal) else {
        return Ok(());
    };
    let who = crate::exchange::view::who_for(&r.name);
    for claim in core["proposed_claims"].as_array().into_iter().flatten() {
        let id = claim["predicate"].as_str().unwrap_or("");
        let unseen = matches!(
            crate::disclose::target(ex.repo, &who, at, id),
            Ok(crate::disclose::Target::Unseen)
        );
        if unseen && ex.repo.objects.iter().any(|o| o.id == id) {
            return fail(
                "PROPOSAL_TARGET_NOT_PERMITTED",
                format!("`{id}` exists, and its proposer {principal} may not read it: a proposal never changes what its author cannot see; reject it"),
            );
        }
    }
    Ok(())
}

/// A proposal with its current status and history.
#[derive(Debug, Clone)]
pub struct Reviewed {
    pub proposal: Value,
    pub path: PathBuf,
    /// Derived from the receipt log (and the clock, for `expired`).
    pub status: String,
    /// The receipts about this proposal, in log order.
    pub history: Vec<Value>,
    /// Why the stored record cannot be trusted (changed after submission), if so.
    pub problem: Option<crate::exchange::ClError>,
}

impl Reviewed {
    /// The proposal's listing entry: id, status, who submitted it, what it asks,
    /// its approval requirement, expiry and stored file.
    pub fn summary(&self) -> Value {
        let p = &self.proposal;
        serde_json::json!({"id": p["id"], "status": self.status, "submitted_by": p["submitted_by"],
            "operation": p["operation"], "approval_requirement": p["approval_requirement"],
            "expires_at": p["expires_at"], "path": self.path})
    }
}

/// The principal a reviewer name is recorded as.
pub fn reviewer_urn(name: &str) -> String {
    format!("urn:ctx:reviewer:{name}")
}

/// Every stored proposal with its status at `at`.
pub fn list(ex: &Exchange<'_>, at: Instant) -> ClResult<Vec<Reviewed>> {
    let state = ex.log()?.verify()?;
    let mut out = Vec::new();
    for (path, p) in ex.state.all(Kind::Proposal)? {
        let id = p["id"].as_str().unwrap_or_default().to_string();
        let history: Vec<Value> = state
            .receipts()
            .filter(|r| r["metadata"]["proposal_ref"] == id.as_str())
            .cloned()
            .collect();
        let mut status = history
            .iter()
            .filter_map(|r| r["metadata"]["status"].as_str())
            .next_back()
            .unwrap_or("pending_validation")
            .to_string();
        let expired = wire::to_core(&p)
            .ok()
            .and_then(|c| c["created_at"].as_str().and_then(canon::parse_time))
            .is_some_and(|created| created + REVIEW_WINDOW <= canon::to_ms(at));
        if expired && !matches!(status.as_str(), "committed" | "rejected" | "expired") {
            status = "expired".into();
        }
        let problem = proposal::validate(&p).err();
        if problem.is_some() {
            status = "invalid".into();
        }
        out.push(Reviewed {
            proposal: p,
            path,
            status,
            history,
            problem,
        });
    }
    Ok(out)
}

/// One proposal by id (or a unique prefix of its hex).
pub fn show(ex: &Exchange<'_>, id: &str, at: Instant) -> ClResult<Reviewed> {
    let hits: Vec<Reviewed> = list(ex, at)?
        .into_iter()
        .filter(|r| {
            let pid = r.proposal["id"].as_str().unwrap_or("");
            pid == id
                || (id.len() >= 8
                    && pid
                        .strip_prefix(PROPOSAL_PREFIX)
                        .is_some_and(|h| h.starts_with(id)))
        })
        .collect();
    match hits.len() {
        1 => Ok(hits.into_iter().next().expect("one")),
        0 => fail(
            "PROPOSAL_NOT_FOUND",
            format!("no proposal {id} is stored here"),
        ),
        n => fail(
            "USAGE",
            format!("{n} proposals start with {id}; give more of the id"),
        ),
    }
}

/// A review transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Approve,
    Reject,
    Expire,
}

impl Transition {
    fn status(self) -> &'static str {
        match self {
            Transition::Approve => "approved",
            Transition::Reject => "rejected",
            Transition::Expire => "expired",
        }
    }
}

/// Record a review decision. Approving needs provenance: a proposal without
/// sources stays pending (`source_required`), whoever approves it.
pub fn transition(
    ex: &Exchange<'_>,
    id: &str,
    t: Transition,
    reviewer: &str,
    reason: &str,
    at: Instant,
) -> ClResult<Reviewed> {
    let current = show(ex, id, at)?;
    if let Some(e) = current.problem {
        return Err(e);
    }
    let pid = current.proposal["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let final_state = matches!(
        current.status.as_str(),
        "committed" | "rejected" | "expired"
    );
    if final_state {
        return fail(
            "PROPOSAL_STATE_INVALID",
            format!(
                "proposal {pid} is already {}; nothing changes it now",
                current.status
            ),
        );
    }
    let core = wire::to_core(&current.proposal)?;
    if t == Transition::Approve {
        let sources = core["provenance_refs"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
        if !sources {
            return fail(
                "PROPOSAL_SOURCE_REQUIRED",
                format!("proposal {pid} names no provenance, so it stays pending_validation (source_required); ask the submitter for a source"),
            );
        }
        if current.status == "approved" {
            return fail(
                "PROPOSAL_STATE_INVALID",
                format!("proposal {pid} is already approved"),
            );
        }
    }
    let log = ex.log()?;
    let _lock = ex.state.lock()?;
    ex.record(
        Some(&log),
        &ReceiptDraft {
            operation: format!(
                "memory.proposal.{}",
                match t {
                    Transition::Approve => "approve",
                    Transition::Reject => "reject",
                    Transition::Expire => "expire",
                }
            ),
            actor: reviewer.into(),
            subject_ref: core["subject_ref"].as_str().unwrap_or_default().into(),
            bundle_ref: core["bundle_ref"].as_str().map(str::to_string),
            outcome: "success".into(),
            policy_snapshot: snapshot_of(&current),
            input_digest: core["integrity"]["digest"].as_str().map(str::to_string),
            user_summary: format!("A reviewer marked a memory proposal {}.", t.status()),
            metadata: meta(&[
                ("proposal_ref", &pid),
                ("status", t.status()),
                ("reason", reason),
            ]),
            ..Default::default()
        },
        at,
        SpecVersion::of(&current.proposal, "proposal")?,
    )?;
    drop(_lock);
    show(ex, &pid, at)
}

/// The policy snapshot a proposal's review receipts name: the one its
/// submission was receipted under (the snapshot of the bundle it came through).
pub fn snapshot_of(r: &Reviewed) -> Option<String> {
    r.history
        .iter()
        .filter(|x| x["operation"] == "memory.propose")
        .find_map(|x| x["policy_snapshot"].as_str().map(str::to_string))
}

/// Check a stored proposal's record (the kit's `validate_proposal`).
pub fn validate(p: &Value) -> ClResult<()> {
    proposal::validate(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_name_the_proposal_and_its_status() {
        let r = Reviewed {
            proposal: serde_json::json!({"id": "urn:cl:proposal:1", "submitted_by": "a", "operation": "add", "extra": 1}),
            path: PathBuf::from("p.json"),
            status: "pending".into(),
            history: Vec::new(),
            problem: None,
        };
        let s = r.summary();
        assert_eq!(s["id"], "urn:cl:proposal:1");
        assert_eq!(s["status"], "pending");
        assert_eq!(s["path"], "p.json");
        assert_eq!(s["expires_at"], Value::Null);
        assert!(s.get("extra").is_none());
        assert_eq!(reviewer_urn("kim"), "urn:ctx:reviewer:kim");
    }
}
