//! Committing an approved proposal: each proposed claim becomes a new object
//! (operation `add`) or a new version of the object its predicate names
//! (`add_or_contradict`, `supersede`, `retract`), each one plan of the
//! library's write operation (`write::plan::add`/`supersede`, made by the
//! person committing over what the claims before it leave) — planned bytes
//! parsed as the loader would, the proposal's provenance by
//! `write::plan::Proposed` (`observed` unless a person promotes), no new
//! validation errors — applied by `write::plan::apply_plans`: atomic writes
//! that never replace a file silently, under the repository lock. A
//! contradiction never overwrites: the earlier version stays on disk and the
//! new one declares `supersedes` and, in `extensions.ctx.exchange`, what it
//! contradicts, who proposed it (`written_by`) and its provenance.
//!
//! Concurrency and crashes: the lock is taken first and the repository and
//! the proposal's status are read again under it, so parallel commits plan
//! one after another, each from what the one before wrote. The objects, their
//! sign-offs, their audit events and the commit receipt (as a pending receipt
//! under `.ctx/exchange/pending/`) are one transaction ([`crate::fs::txn`]);
//! the receipt then goes into the anchored log and the pending copy is
//! removed. A kill before the receipt reached the log leaves the pending copy,
//! which the next commit (or `ctx receipts retry`) appends first: the proposal
//! then reads as committed and is never written twice.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{meta, Exchange};
use crate::exchange::canon;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::receipts::{self, ReceiptDraft};
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::{self, SpecVersion};
use crate::load::Repo;
use crate::model::ObjectRef;
use crate::time::Instant;
use crate::validate::{supersession, Index};
use crate::write::{self, FileWrite};

/// What `ctx proposals commit` runs.
pub struct CommitOptions {
    pub id: String,
    pub reviewer: String,
    /// The person committing, by name: the sign-off and the objects name them.
    pub committer: String,
    /// Type of objects the proposal adds (default `knowledge`).
    pub kind: Option<String>,
    /// Authority of the written versions (default `observed`: an agent's
    /// claim is never canonical unless a person promotes it).
    pub authority: Option<String>,
    /// Permit canonical or approved authority.
    pub promote: bool,
    pub dry_run: bool,
    pub at: Instant,
}

/// What was (or would be) written.
pub struct Committed {
    pub writes: Vec<FileWrite>,
    /// `id@version` of each written object.
    pub objects: Vec<String>,
    pub dry_run: bool,
}

/// Raw sources behind a proposal's opaque provenance refs: from the map issued
/// with the proposal's bundle, whose digest the `bundle.issue` receipt recorded
/// (so an edited map is refused, not trusted).
fn sources(ex: &Exchange<'_>, bundle_ref: &str, refs: &[&str]) -> ClResult<Vec<String>> {
    let path = ex.state.path(Kind::Provenance, &state::name_of(bundle_ref));
    let map = state::read_json(&path).map_err(|_| {
        ClError::new(
            "UNKNOWN_PROVENANCE_HANDLE",
            format!(
                "the provenance map of {bundle_ref} is not in this repository's exchange state"
            ),
        )
    })?;
    let log = ex.log()?.verify()?;
    let recorded = log
        .receipts()
        .find(|r| r["operation"] == "bundle.issue" && r["bundle_ref"] == bundle_ref)
        .and_then(|r| r["metadata"]["provenance_map"].as_str().map(str::to_string));
    if recorded.as_deref() != Some(canon::digest(&map).as_str()) {
        return fail(
            "RECORD_INTEGRITY_MISMATCH",
            format!(
                "{} does not match the provenance map recorded when {bundle_ref} was issued",
                path.display()
            ),
        );
    }
    let mut by_ref: BTreeMap<String, String> = BTreeMap::new();
    for (handle, src) in map.as_object().into_iter().flatten() {
        if let (Some(hex), Some(s)) = (handle.strip_prefix("prov_"), src.as_str()) {
            by_ref.insert(format!("urn:cl:provenance:{hex}"), s.to_string());
        }
    }
    refs.iter()
        .map(|r| {
            by_ref.get(*r).cloned().ok_or_else(|| {
                ClError::new(
                    "UNKNOWN_PROVENANCE_HANDLE",
                    format!("provenance {r} was not issued with {bundle_ref}"),
                )
            })
        })
        .collect()
}

/// A refusal of the library's write as the profile's error.
fn refused(e: crate::error::Error) -> ClError {
    let detail = match &e {
        crate::error::Error::Refused { findings, .. } => findings
            .first()
            .map(|d| {
                format!(
                    " ({}: {} in {})",
                    d.code.as_str(),
                    d.message,
                    d.file.as_deref().unwrap_or("?")
                )
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let code = match &e {
        crate::error::Error::Refused { .. } => "PROPOSAL_WOULD_INVALIDATE",
        crate::error::Error::Invalid(m) if m.contains("--promote") => "PROMOTION_REQUIRES_APPROVAL",
        crate::error::Error::NotFound(_) | crate::error::Error::Usage(_) => {
            "PROPOSAL_TARGET_INVALID"
        }
        _ => "PROPOSAL_TARGET_INVALID",
    };
    ClError::new(code, format!("{e}{detail}"))
}

/// Commit an approved proposal through the governed write path.
pub fn commit(ex: &Exchange<'_>, o: &CommitOptions) -> ClResult<Committed> {
    let lock = ex.state.lock()?;
    // Receipts a killed commit left pending come first: they decide whether
    // this proposal (or another) is committed already.
    if ex.config.anchor_key.is_some() {
        super::ledger::retry_locked(ex)?;
    }
    let root = ex.repo.manifest.root.clone();
    let repo = crate::load::open(Some(&root), &root, &crate::load::LoadOptions::default())
        .map_err(|e| ClError::new("STATE_UNAVAILABLE", e.to_string()))?;
    let mut fresh = Exchange::new(&repo, ex.view_options.clone())?;
    fresh.state = ex.state.clone();
    fresh.keys = ex.keys.clone();
    let done = commit_locked(&fresh, o)?;
    drop(lock);
    Ok(done)
}

/// [`commit`] under the lock, over a repository loaded under it.
fn commit_locked(ex: &Exchange<'_>, o: &CommitOptions) -> ClResult<Committed> {
    let reviewed = super::proposals::show(ex, &o.id, o.at)?;
    if let Some(e) = reviewed.problem {
        return Err(e);
    }
    if reviewed.status != "approved" {
        return fail(
            "PROPOSAL_STATE_INVALID",
            format!(
                "only an approved proposal is committed; this one is {}",
                reviewed.status
            ),
        );
    }
    let p = wire::to_core(&reviewed.proposal)?;
    super::proposals::check_commit_authority(ex, &p, o.at)?;
    let pid = p["id"].as_str().unwrap_or_default().to_string();
    let refs: Vec<&str> = p["provenance_refs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if refs.is_empty() {
        return fail(
            "PROPOSAL_SOURCE_REQUIRED",
            "a proposal without provenance is never committed",
        );
    }
    let sources = sources(ex, p["bundle_ref"].as_str().unwrap_or(""), &refs)?;
    if let Some(a) = o.authority.as_deref() {
        if matches!(a, "canonical" | "approved") && !o.promote {
            return fail(
                "PROMOTION_REQUIRES_APPROVAL",
                format!("authority `{a}`: an agent's claim becomes canonical or approved only when a person promotes it (pass --promote)"),
            );
        }
    }
    let operation = p["operation"].as_str().unwrap_or("add");
    let clock = crate::time::Clock::fixed(o.at);
    let provenance_ext = json!({
        "written_by": p["submitted_by"],
        "proposal": pid,
        "approved_by": o.reviewer,
        "provenance": refs,
    });
    let source_list = Value::Array(
        sources
            .iter()
            .map(|s| json!({"uri": s, "type": "context-layer-provenance"}))
            .collect(),
    );
    // Each claim is one plan of the library's write operation, made over the
    // repository the plans before it leave, as the person committing.
    let mut plans: Vec<write::plan::Plan> = Vec::new();
    let mut written = Vec::new();
    for claim in p["proposed_claims"].as_array().into_iter().flatten() {
        let current: &Repo = plans.last().map_or(ex.repo, |pl| &pl.planned);
        let id = claim["predicate"].as_str().unwrap_or("");
        if !crate::pattern::valid_id(id) {
            return fail(
                "PROPOSAL_TARGET_INVALID",
                format!("predicate {id:?} does not name an object id"),
            );
        }
        let idx = Index::new(&current.objects);
        let sup = supersession::analyse(&idx);
        let active: Vec<usize> = idx
            .resolve(&ObjectRef {
                id: id.into(),
                version: None,
            })
            .into_iter()
            .filter(|i| !sup.superseded.contains(i))
            .collect();
        let value = &claim["object"]["value"];
        let mut ext = provenance_ext.clone();
        let mut set: Vec<(String, Value)> = vec![("sources".into(), source_list.clone())];
        let adds = match (operation, active.as_slice()) {
            ("add", []) | ("add_or_contradict", []) => true,
            ("add", _) => {
                return fail(
                    "PROPOSAL_TARGET_EXISTS",
                    format!("`{id}` already exists; an `add` never overwrites (propose add_or_contradict or supersede)"),
                )
            }
            (_, []) => {
                return fail("PROPOSAL_TARGET_INVALID", format!("`{id}` does not exist, so it cannot be {operation}d"))
            }
            (_, [one]) => {
                let prev = &current.objects[*one];
                if operation == "add_or_contradict" {
                    ext["contradicts"] = json!(prev.version.map_or(format!("{id}@1"), |_| prev.key()));
                }
                if operation == "retract" {
                    set.push(("status".into(), json!("retired")));
                }
                false
            }
            (_, _) => {
                return fail(
                    "PROPOSAL_TARGET_INVALID",
                    format!("`{id}` has several active versions; resolve them before committing"),
                )
            }
        };
        if adds && write::default_path(&current.manifest, id).is_none() {
            return fail(
                "PROPOSAL_TARGET_INVALID",
                format!("no collection matches the id `{id}`; it cannot be added"),
            );
        }
        let mut extensions = Map::new();
        extensions.insert("ctx.exchange".into(), ext);
        if !adds {
            if let Some(Value::Object(e)) = current.objects[active[0]].fields().get("extensions") {
                for (k, v) in e {
                    extensions.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        set.push(("extensions".into(), Value::Object(extensions)));
        let req = write::plan::Request {
            fields: write::plan::Fields {
                content: (!value.is_null()).then(|| value.clone()),
                authority: o.authority.clone(),
                title: adds.then(|| id.to_string()),
                set,
                ..Default::default()
            },
            cwd: current.manifest.root.clone(),
            promote: o.promote,
            signer: Some(o.committer.clone()),
            proposal: Some(write::plan::Proposed {
                id: pid.clone(),
                door: crate::proposals::DOOR_CONTEXT_LAYER.into(),
                proposed_by: p["submitted_by"].as_str().unwrap_or_default().into(),
                confidence: claim["confidence"].as_f64(),
                sources: Vec::new(),
                extra: Map::new(),
            }),
            ..Default::default()
        };
        let kind = o.kind.clone().unwrap_or_else(|| "knowledge".into());
        let planned = if adds {
            write::plan::add(current, id, &kind, &req, &clock)
        } else {
            write::plan::supersede(current, id, &req, &clock)
        }
        .map_err(refused)?;
        let key = planned
            .planned
            .objects
            .iter()
            .filter(|x| x.id == id)
            .max_by_key(|x| x.version)
            .map(|x| x.key())
            .unwrap_or_else(|| id.to_string());
        written.push(key);
        plans.push(planned);
    }
    let writes: Vec<FileWrite> = plans.iter().flat_map(|pl| pl.writes.clone()).collect();
    if o.dry_run {
        return Ok(Committed {
            writes,
            objects: written,
            dry_run: true,
        });
    }
    let log = ex.log()?;
    log.preflight()?;
    // The library's one apply: the objects, sign-offs, audit event (when the
    // manifest asks) and the commit receipt are one transaction; the receipt
    // then goes into the anchored log.
    let receipt = receipts::build(
        &ReceiptDraft {
            operation: "memory.proposal.commit".into(),
            actor: o.reviewer.clone(),
            subject_ref: p["subject_ref"].as_str().unwrap_or_default().into(),
            bundle_ref: p["bundle_ref"].as_str().map(str::to_string),
            outcome: "success".into(),
            policy_snapshot: super::proposals::snapshot_of(&reviewed),
            input_digest: p["integrity"]["digest"].as_str().map(str::to_string),
            output_digest: Some(canon::digest(&json!(written))),
            user_summary: "Committed an approved memory proposal as new object versions.".into(),
            metadata: meta(&[
                ("proposal_ref", &pid),
                ("status", "committed"),
                ("objects", &written.join(" ")),
            ]),
            ..Default::default()
        },
        o.at,
        SpecVersion::of(&reviewed.proposal, "proposal")?,
    )?;
    let pending_name = state::name_of(receipt["id"].as_str().unwrap_or_default());
    let pending = ex.state.path(Kind::Pending, &pending_name);
    let mut pending_bytes = serde_json::to_vec_pretty(&receipt).expect("JSON value");
    pending_bytes.push(b'\n');
    let m = &ex.repo.manifest;
    write::plan::apply_plans(m, &plans, |txn| {
        let dir = pending.parent().expect("state paths have a folder");
        std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, &e))?;
        txn.create(&pending, &pending_bytes, crate::fs::Mode::RepositoryDefault)
            .map_err(|e| crate::error::Error::Invalid(e.to_string()))
    })
    .map_err(|e| ClError::new("WRITE_FAILED", e.to_string()))?;
    crate::fs::failpoint::hit("proposal.committed");
    log.append(&receipt).map_err(|e| {
        ClError::new(
            "INDETERMINATE_OUTCOME",
            format!("the proposal was written, but its commit receipt could not be made durable ({}: {}); it waits in {} for `ctx receipts retry`", e.code, e.message, pending.display()),
        )
    })?;
    ex.state.remove_pending(&pending_name)?;
    Ok(Committed {
        writes,
        objects: written,
        dry_run: false,
    })
}
