//! **The review queue**: every proposal, whatever door it came through, is
//! listed, shown, approved, rejected, expired and committed by these
//! functions, which `ctx proposals` calls.
//!
//! - `context_set` over MCP (and any door without a Context Layer session)
//!   stores its proposals in the queue's own store, `.ctx/proposals/`
//!   ([`local`]): this works in every repository, with or without an exchange.
//! - A Context Layer proposal (`ctx propose`, `POST /memory-proposals`) is a
//!   signed `memory_update_proposal` whose status is kept as receipts in the
//!   exchange's anchored log, byte for byte as the profile fixes it; the queue
//!   reads those through [`crate::exchange::ops::proposals`] when the manifest
//!   configures an exchange with a receipt anchor, and only then.
//!
//! Both kinds share one id space (`prop_…`, `urn:cl:proposal:…`, or a unique
//! prefix of either's hex), one status model (`pending_validation`,
//! `approved`, `rejected`, `expired`, `committed`, `invalid`) and one commit
//! rule: the objects are written through the library's write operation
//! ([`crate::write::plan`]) by the person committing, keep the proposer's
//! provenance (`extensions.ctx.proposal`), are `observed` unless that person
//! promotes them, and the submitter must still be allowed to name every
//! target (`PROPOSAL_TARGET_NOT_PERMITTED`).

mod commit;
pub mod local;

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::ops::proposals::{self as cl, Reviewed, Transition, REVIEW_WINDOW};
use crate::exchange::ops::Exchange;
use crate::exchange::view::ViewOptions;
use crate::load::Repo;
use crate::time::Instant;

pub use crate::exchange::ops::commit::Committed;

/// The door a proposal came through.
pub const DOOR_CONTEXT_LAYER: &str = "context-layer";

/// The person reviewing or committing: named by `--as`, else the documented
/// local identity (`$USER`, as the audit log and sign-offs name people).
#[derive(Debug, Clone)]
pub struct Reviewer {
    pub name: String,
}

impl Reviewer {
    pub fn new(named: Option<&str>) -> Reviewer {
        Reviewer {
            name: named
                .map(str::to_string)
                .unwrap_or_else(|| crate::audit::Actor::local_user().id),
        }
    }

    /// As receipts record a reviewer.
    pub fn urn(&self) -> String {
        cl::reviewer_urn(&self.name)
    }

    /// As sign-offs and objects name a person.
    pub fn actor(&self) -> String {
        format!("human:{}", self.name)
    }
}

/// One proposal in the queue, whichever store holds it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: String,
    /// `mcp`, `context-layer`.
    pub door: String,
    pub status: String,
    pub submitted_by: String,
    pub operation: String,
    /// The object ids it would write.
    pub targets: Vec<String>,
    pub created_at: String,
    pub path: PathBuf,
    /// The stored record, as stored.
    pub record: Value,
    /// Review steps (receipts for a Context Layer proposal), oldest first.
    pub history: Vec<Value>,
    /// Why the stored record cannot be trusted, if so.
    pub problem: Option<ClError>,
}

impl Entry {
    /// The listing entry: ids, door, status and who; never the proposed value.
    pub fn summary(&self) -> Value {
        json!({"id": self.id, "door": self.door, "status": self.status,
            "submitted_by": self.submitted_by, "operation": self.operation,
            "targets": self.targets, "created_at": self.created_at,
            "approval_requirement": self.record.get("approval_requirement"),
            "expires_at": self.record.get("expires_at"), "path": self.path})
    }

    fn final_state(&self) -> bool {
        matches!(self.status.as_str(), "committed" | "rejected" | "expired")
    }
}

/// What a commit is asked to do.
#[derive(Debug, Clone)]
pub struct CommitOptions {
    pub id: String,
    pub reviewer: Reviewer,
    /// Type of objects the proposal adds (default: the collection's, else `memory`/`knowledge`).
    pub kind: Option<String>,
    /// Authority of the written versions (default `observed`).
    pub authority: Option<String>,
    /// A person's promotion to canonical or approved.
    pub promote: bool,
    pub dry_run: bool,
    pub at: Instant,
}

/// The queue over one loaded repository.
pub struct Queue<'r> {
    repo: &'r Repo,
    exchange: Option<Exchange<'r>>,
}

impl<'r> Queue<'r> {
    /// Open the queue. A configured exchange is opened too, and refused whole
    /// when its configuration is invalid (fail closed); none is needed.
    pub fn open(repo: &'r Repo, view_options: ViewOptions) -> ClResult<Queue<'r>> {
        crate::manifest::roles::require_sound(&repo.manifest)
            .map_err(|e| ClError::new("POLICY_UNAVAILABLE", e.to_string()))?;
        let exchange = match repo.manifest.extension(crate::exchange::config::EXTENSION) {
            Some(_) => Some(Exchange::new(repo, view_options)?),
            None => None,
        };
        Ok(Queue { repo, exchange })
    }

    /// The exchange, when it keeps receipts (its proposals exist only then).
    fn anchored(&self) -> Option<&Exchange<'r>> {
        self.exchange
            .as_ref()
            .filter(|e| e.config.anchor_key.is_some())
    }

    /// Every proposal with its status at `at`: the queue's store, then the exchange's.
    pub fn list(&self, at: Instant) -> ClResult<Vec<Entry>> {
        let mut out = Vec::new();
        let root = &self.repo.manifest.root;
        for (path, record) in local::records(root)? {
            out.push(local_entry(root, path, record, at)?);
        }
        if let Some(ex) = self.anchored() {
            out.extend(cl::list(ex, at)?.into_iter().map(exchange_entry));
        }
        Ok(out)
    }

    /// One proposal by id, or a unique prefix (8 or more) of its hex.
    pub fn show(&self, id: &str, at: Instant) -> ClResult<Entry> {
        let hits: Vec<Entry> = self
            .list(at)?
            .into_iter()
            .filter(|e| matches_id(&e.id, id))
            .collect();
        match hits.len() {
            1 => Ok(hits.into_iter().next().expect("one")),
            0 => fail(
                "PROPOSAL_NOT_FOUND",
                format!("no proposal {id} is stored here; `ctx proposals list` shows them"),
            ),
            n => fail(
                "USAGE",
                format!("{n} proposals start with {id}; give more of the id"),
            ),
        }
    }

    /// Approve, reject or let lapse. A Context Layer proposal's step is a
    /// receipt in the anchored log; the store's is its history file, under the
    /// repository lock, with an audit event when the manifest asks.
    pub fn transition(
        &self,
        id: &str,
        t: Transition,
        reviewer: &Reviewer,
        reason: &str,
        at: Instant,
    ) -> ClResult<Entry> {
        let current = self.show(id, at)?;
        if current.door == DOOR_CONTEXT_LAYER {
            let ex = self.anchored().expect("listed only when anchored");
            cl::transition(ex, &current.id, t, &reviewer.urn(), reason, at)?;
            return self.show(&current.id, at);
        }
        let root = &self.repo.manifest.root;
        let lock = crate::fs::RepoLock::acquire(root)
            .map_err(|e| ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", root.display())))?;
        // Read again under the lock: two reviewers never both decide.
        let current = self.show(&current.id, at)?;
        check_open(&current, t)?;
        let status = status_of(t);
        let (steps, old) = local::history(root, &current.id)?;
        let bytes = local::with_step(
            &current.id,
            &steps,
            json!({"status": status, "by": reviewer.actor(), "reason": reason, "at": crate::time::format(&at)}),
        );
        local::record_step(root, &current.id, old.as_deref(), &bytes).map_err(write_failed)?;
        crate::evidence::record(
            &self.repo.manifest,
            crate::evidence::Record::Access {
                actor: crate::audit::Actor {
                    kind: "human",
                    id: reviewer.name.clone(),
                    roles: Vec::new(),
                },
                access: crate::evidence::Access::Write,
                objects: current.targets.clone(),
                outcome: if t == Transition::Approve {
                    "allowed"
                } else {
                    "denied"
                },
                reason: Some(format!("proposal {} {status}", current.id)),
                details: Some((
                    "ctx.proposal",
                    json!({"proposal": current.id, "status": status}),
                )),
            },
        )
        .map_err(write_failed)?;
        drop(lock);
        self.show(&current.id, at)
    }

    /// Commit an approved proposal (see the module comment).
    pub fn commit(&self, o: &CommitOptions) -> ClResult<Committed> {
        let current = self.show(&o.id, o.at)?;
        if current.door == DOOR_CONTEXT_LAYER {
            let ex = self.anchored().expect("listed only when anchored");
            return crate::exchange::ops::commit::commit(
                ex,
                &crate::exchange::ops::commit::CommitOptions {
                    id: current.id,
                    reviewer: o.reviewer.urn(),
                    committer: o.reviewer.name.clone(),
                    kind: o.kind.clone(),
                    authority: o.authority.clone(),
                    promote: o.promote,
                    dry_run: o.dry_run,
                    at: o.at,
                },
            );
        }
        commit::commit_local(self.repo, &current.id, o)
    }
}

fn matches_id(full: &str, asked: &str) -> bool {
    if full == asked {
        return true;
    }
    let hex = full
        .strip_prefix(local::PREFIX)
        .or_else(|| full.strip_prefix(crate::exchange::proposal::PROPOSAL_PREFIX));
    asked.len() >= 8 && hex.is_some_and(|h| h.starts_with(asked))
}

fn status_of(t: Transition) -> &'static str {
    match t {
        Transition::Approve => "approved",
        Transition::Reject => "rejected",
        Transition::Expire => "expired",
    }
}

fn write_failed(e: crate::error::Error) -> ClError {
    ClError::new("WRITE_FAILED", e.to_string())
}

/// A step is taken only from an open state, and approving twice is refused.
fn check_open(e: &Entry, t: Transition) -> ClResult<()> {
    if let Some(p) = &e.problem {
        return Err(p.clone());
    }
    if e.final_state() {
        return fail(
            "PROPOSAL_STATE_INVALID",
            format!(
                "proposal {} is already {}; nothing changes it now",
                e.id, e.status
            ),
        );
    }
    if t == Transition::Approve && e.status == "approved" {
        return fail(
            "PROPOSAL_STATE_INVALID",
            format!("proposal {} is already approved", e.id),
        );
    }
    Ok(())
}

/// A store record as a queue entry: status from its history, `expired` after
/// the review window, `invalid` when the record is not what was stored.
fn local_entry(
    root: &std::path::Path,
    path: PathBuf,
    record: ClResult<Value>,
    at: Instant,
) -> ClResult<Entry> {
    let name = path
        .file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let (record, problem) = match record {
        Ok(r) => {
            let p = local::verify(&r).err();
            (r, p)
        }
        Err(e) => (Value::Null, Some(e)),
    };
    let id = record["proposal_id"].as_str().unwrap_or(&name).to_string();
    let (history, _) = local::history(root, &id)?;
    let created_at = record["created_at"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut status = history
        .iter()
        .filter_map(|h| h["status"].as_str())
        .next_back()
        .unwrap_or("pending_validation")
        .to_string();
    let lapsed = crate::time::parse_timestamp(&created_at).is_some_and(|c| c + REVIEW_WINDOW <= at);
    if lapsed && !matches!(status.as_str(), "committed" | "rejected" | "expired") {
        status = "expired".into();
    }
    if problem.is_some() {
        status = "invalid".into();
    }
    Ok(Entry {
        id,
        door: record["via"].as_str().unwrap_or("mcp").to_string(),
        status,
        submitted_by: record["written_by"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        operation: "set".into(),
        targets: record["target"]
            .as_str()
            .map(str::to_string)
            .into_iter()
            .collect(),
        created_at,
        path,
        record,
        history,
        problem,
    })
}

fn exchange_entry(r: Reviewed) -> Entry {
    let core = crate::exchange::wire::to_core(&r.proposal).unwrap_or_else(|_| r.proposal.clone());
    let targets = core["proposed_claims"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["predicate"].as_str().map(str::to_string))
        .collect();
    Entry {
        id: r.proposal["id"].as_str().unwrap_or_default().to_string(),
        door: DOOR_CONTEXT_LAYER.into(),
        status: r.status,
        submitted_by: core["submitted_by"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        operation: core["operation"].as_str().unwrap_or_default().to_string(),
        targets,
        created_at: core["created_at"].as_str().unwrap_or_default().to_string(),
        path: r.path,
        record: r.proposal,
        history: r.history,
        problem: r.problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_whole_or_by_a_long_enough_prefix_of_their_hex() {
        assert!(matches_id(
            "prop_abcdef0123456789abcdef01",
            "prop_abcdef0123456789abcdef01"
        ));
        assert!(matches_id("prop_abcdef0123456789abcdef01", "abcdef01"));
        assert!(!matches_id("prop_abcdef0123456789abcdef01", "abcdef0"));
        assert!(matches_id("urn:cl:proposal:0123456789", "01234567"));
        assert!(!matches_id("urn:cl:proposal:0123456789", "prop_0123"));
    }

    #[test]
    fn reviewers_are_people_named_once() {
        let r = Reviewer::new(Some("alice"));
        assert_eq!(r.actor(), "human:alice");
        assert_eq!(r.urn(), "urn:ctx:reviewer:alice");
    }

    #[test]
    fn closed_proposals_take_no_step() {
        let e = Entry {
            id: "prop_1".into(),
            door: "mcp".into(),
            status: "rejected".into(),
            submitted_by: "helper".into(),
            operation: "set".into(),
            targets: vec!["notes.a".into()],
            created_at: String::new(),
            path: PathBuf::new(),
            record: Value::Null,
            history: Vec::new(),
            problem: None,
        };
        assert_eq!(
            check_open(&e, Transition::Approve).unwrap_err().code,
            "PROPOSAL_STATE_INVALID"
        );
        let approved = Entry {
            status: "approved".into(),
            ..e.clone()
        };
        assert!(check_open(&approved, Transition::Reject).is_ok());
        assert!(check_open(&approved, Transition::Approve).is_err());
        assert!(e.summary().get("value").is_none());
    }
}
