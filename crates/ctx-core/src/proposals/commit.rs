//! Committing a proposal from the queue's own store: one claim (the target id
//! and its text value) written through the library's write operation — a new
//! object (`write::plan::add`) or a new version of the one the id names
//! (`write::plan::supersede`), planned under the repository lock by the person
//! committing, applied as one transaction with its sign-off (only when that
//! person promotes), its audit event and the proposal's `committed` step.

use serde_json::{json, Map, Value};

use super::{local, CommitOptions, Committed};
use crate::disclose::{self, Target};
use crate::error::Error;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::load::{LoadOptions, Repo};
use crate::model::ObjectRef;
use crate::time::Clock;
use crate::view::{View, Who};
use crate::write::plan::{self, Fields, Proposed, Request, Session};

pub(super) fn commit_local(repo: &Repo, id: &str, o: &CommitOptions) -> ClResult<Committed> {
    let root = repo.manifest.root.clone();
    // Lock first, then load: what is planned is what gets replaced, and two
    // commits of one proposal run one after the other.
    let s = Session::open(Some(&root), &root, &LoadOptions::default()).map_err(refused)?;
    let queue = super::Queue {
        repo: &s.repo,
        exchange: None,
    };
    let current = queue.show(id, o.at)?;
    if let Some(p) = current.problem {
        return Err(p);
    }
    if current.status != "approved" {
        return fail(
            "PROPOSAL_STATE_INVALID",
            format!(
                "only an approved proposal is committed; {} is {}",
                current.id, current.status
            ),
        );
    }
    let r = &current.record;
    let target = r["target"].as_str().unwrap_or_default();
    let proposer = local::proposer(r);
    check_proposer(
        &s.repo,
        &proposer,
        r["written_by"].as_str().unwrap_or(""),
        target,
        o,
    )?;
    let clock = Clock::fixed(o.at);
    let exists = View::open(&s.repo, &Who::author(), o.at)
        .map_err(refused)?
        .find(
            &ObjectRef {
                id: target.into(),
                version: None,
            },
            None,
        )
        .is_some();
    let mut extra = Map::new();
    for k in ["client", "reason", "created_at"] {
        if let Some(v) = r.get(k).filter(|v| !v.is_null()) {
            extra.insert(
                if k == "created_at" {
                    "proposed_at".into()
                } else {
                    k.into()
                },
                v.clone(),
            );
        }
    }
    let door = r["via"].as_str().unwrap_or("mcp");
    let req = Request {
        who: Who::author(),
        fields: Fields {
            content: Some(Value::from(r["value"].as_str().unwrap_or_default())),
            authority: o.authority.clone(),
            // A new object takes the sensitivity the agent asked for; a new
            // version keeps its predecessor's, so a proposal never widens access.
            classification: (!exists)
                .then(|| r["classification"].as_str().map(str::to_string))
                .flatten(),
            ..Fields::default()
        },
        cwd: root.clone(),
        promote: o.promote,
        signer: Some(o.reviewer.name.clone()),
        proposal: Some(Proposed {
            id: current.id.clone(),
            door: door.into(),
            proposed_by: r["written_by"].as_str().unwrap_or_default().into(),
            confidence: None,
            sources: vec![format!(
                "urn:ctx:{door}:{}:{}",
                r["proposer"]["type"].as_str().unwrap_or("agent"),
                r["written_by"].as_str().unwrap_or_default()
            )],
            extra,
        }),
        ..Request::default()
    };
    let made = if exists {
        plan::supersede(&s.repo, target, &req, &clock)
    } else {
        let kind = o
            .kind
            .clone()
            .unwrap_or_else(|| default_type(&s.repo, target));
        plan::add(&s.repo, target, &kind, &req, &clock)
    }
    .map_err(refused)?;
    let object = made
        .planned
        .objects
        .iter()
        .filter(|x| x.id == target)
        .max_by_key(|x| x.version)
        .map(|x| x.key())
        .unwrap_or_else(|| target.to_string());
    if o.dry_run {
        return Ok(Committed {
            writes: made.shown(o.at).map_err(refused)?,
            objects: vec![object],
            dry_run: true,
        });
    }
    let (steps, old) = local::history(&root, &current.id)?;
    let step = json!({"status": "committed", "by": o.reviewer.actor(),
        "at": crate::time::format(&o.at), "objects": [object]});
    let history = local::with_step(&current.id, &steps, step);
    s.apply_with(&made, |txn| {
        local::stage_history(txn, &root, &current.id, old.as_deref(), &history)
    })
    .map_err(refused)?;
    Ok(Committed {
        writes: made.writes,
        objects: vec![object],
        dry_run: false,
    })
}

/// The submitter's authority at commit, as at submission: the target must be
/// an id it may read (or one that would be in its read scope), and an
/// existing target must be one it may read now.
fn check_proposer(
    repo: &Repo,
    who: &Who,
    shown: &str,
    target: &str,
    o: &CommitOptions,
) -> ClResult<()> {
    let t = disclose::target(repo, who, o.at, target).map_err(refused)?;
    let hidden = t == Target::Unseen && repo.objects.iter().any(|x| x.id == target);
    if t == Target::Forbidden || hidden {
        return fail(
            "PROPOSAL_TARGET_NOT_PERMITTED",
            format!("{shown} may not read or write `{target}` now, so its proposal cannot be committed; reject it"),
        );
    }
    Ok(())
}

/// The type a new object of this id gets: its collection's, else `memory`.
fn default_type(repo: &Repo, id: &str) -> String {
    repo.manifest
        .collections
        .iter()
        .find(|c| id.starts_with(&format!("{}.", c.name)))
        .and_then(|c| c.defaults.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("memory")
        .to_string()
}

/// A refused write as the queue's error, with its first finding in the message.
fn refused(e: Error) -> ClError {
    let code = match &e {
        Error::Refused { .. } => "PROPOSAL_WOULD_INVALIDATE",
        Error::NotFound(_) => "PROPOSAL_TARGET_INVALID",
        _ => "WRITE_FAILED",
    };
    let detail = match &e {
        Error::Refused { findings, .. } => findings
            .first()
            .map(|d| format!(" ({}: {})", d.code.as_str(), d.message))
            .unwrap_or_default(),
        _ => String::new(),
    };
    ClError::new(code, format!("{e}{detail}"))
}
