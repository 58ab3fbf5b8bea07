//! Committing an approved proposal: each proposed claim becomes a new object
//! (operation `add`) or a new version of the object its predicate names
//! (`add_or_contradict`, `supersede`, `retract`), written through the governed
//! write path of `crate::write` — planned bytes parsed as the loader would,
//! no promotion without `promote`, no new validation errors, atomic writes
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
use crate::diag::Severity;
use crate::evidence::{Record, WriteKind};
use crate::exchange::canon;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::receipts::{self, ReceiptDraft};
use crate::exchange::state::{self, Kind};
use crate::exchange::wire::{self, SpecVersion};
use crate::load::Repo;
use crate::model::ObjectRef;
use crate::object::{ContextObject, Format};
use crate::time::Instant;
use crate::validate::{self, supersession, Index, ValidateOptions};
use crate::write::{self, emit, FileWrite};

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

fn planned(repo: &Repo, rel: &str, bytes: &[u8]) -> ClResult<ContextObject> {
    let parsed = write::parse_planned(&repo.manifest, rel, bytes).ok_or_else(|| {
        ClError::new(
            "PROPOSAL_TARGET_INVALID",
            format!("no collection loads {rel}; the object would never be read"),
        )
    })?;
    if let Some(d) = parsed.diags.iter().find(|d| d.severity == Severity::Error) {
        return fail(
            "PROPOSAL_TARGET_INVALID",
            format!(
                "{rel} would not pass validation ({}: {}); nothing was written",
                d.code.as_str(),
                d.message
            ),
        );
    }
    parsed.object.ok_or_else(|| {
        ClError::new(
            "PROPOSAL_TARGET_INVALID",
            format!("{rel} would hold no object"),
        )
    })
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
    let repo = ex.repo;
    let m = &repo.manifest;
    let idx = Index::new(&repo.objects);
    let sup = supersession::analyse(&idx);
    let operation = p["operation"].as_str().unwrap_or("add");
    let mut writes = Vec::new();
    let mut replaced = Vec::new();
    let mut added = Vec::new();
    let mut written = Vec::new();
    let mut signoffs: Vec<write::signoff::Pending> = Vec::new();
    let now = canon::iso_ms(&canon::to_ms(o.at));
    let committer = format!("human:{}", o.committer);
    let provenance_ext = json!({
        "written_by": p["submitted_by"],
        "proposal": pid,
        "approved_by": o.reviewer,
        "provenance": refs,
    });
    for claim in p["proposed_claims"].as_array().into_iter().flatten() {
        let id = claim["predicate"].as_str().unwrap_or("");
        if !crate::pattern::valid_id(id) {
            return fail(
                "PROPOSAL_TARGET_INVALID",
                format!("predicate {id:?} does not name an object id"),
            );
        }
        let value = &claim["object"]["value"];
        let all = idx.resolve(&ObjectRef {
            id: id.into(),
            version: None,
        });
        let active: Vec<usize> = all
            .iter()
            .copied()
            .filter(|i| !sup.superseded.contains(i))
            .collect();
        let mut fields = Map::new();
        fields.insert("id".into(), json!(id));
        let mut ext = provenance_ext.clone();
        let (rel, prev) = match (operation, active.as_slice()) {
            ("add", []) => {
                let rel = write::default_path(m, id).ok_or_else(|| {
                    ClError::new("PROPOSAL_TARGET_INVALID", format!("no collection matches the id `{id}`; it cannot be added"))
                })?;
                fields.insert("type".into(), json!(o.kind.clone().unwrap_or_else(|| "knowledge".into())));
                (rel, None)
            }
            ("add", _) => {
                return fail(
                    "PROPOSAL_TARGET_EXISTS",
                    format!("`{id}` already exists; an `add` never overwrites (propose add_or_contradict or supersede)"),
                )
            }
            (_, []) if operation != "add_or_contradict" => {
                return fail("PROPOSAL_TARGET_INVALID", format!("`{id}` does not exist, so it cannot be {operation}d"))
            }
            (_, []) => {
                let rel = write::default_path(m, id).ok_or_else(|| {
                    ClError::new("PROPOSAL_TARGET_INVALID", format!("no collection matches the id `{id}`"))
                })?;
                fields.insert("type".into(), json!(o.kind.clone().unwrap_or_else(|| "knowledge".into())));
                (rel, None)
            }
            (_, [one]) => {
                let prev = &repo.objects[*one];
                let next = all.iter().map(|&i| repo.objects[i].version.unwrap_or(1)).max().unwrap_or(1) + 1;
                let target = if prev.version.is_some() {
                    prev.key()
                } else {
                    let old = std::fs::read(m.root.join(&prev.origin.file))
                        .map_err(|e| ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", prev.origin.file)))?;
                    let text = String::from_utf8_lossy(&old);
                    let annotated = emit::annotate_version(&text, prev.origin.format).ok_or_else(|| {
                        ClError::new("PROPOSAL_TARGET_INVALID", format!("{} declares no `version`; add `version: 1` first", prev.origin.file))
                    })?;
                    let parsed = planned(repo, &prev.origin.file, annotated.as_bytes())?;
                    replaced.push(prev.origin.file.clone());
                    added.push(parsed);
                    writes.push(FileWrite {
                        rel: prev.origin.file.clone(),
                        bytes: annotated.into_bytes(),
                        replaces: Some(old),
                    });
                    format!("{id}@1")
                };
                // What `ctx supersede` keeps: above all the fields that govern who
                // may read the object, so approving a claim never widens access.
                fields.extend(crate::write::plan::inherited(prev));
                fields.insert("version".into(), json!(next));
                fields.insert("supersedes".into(), json!([target]));
                if !value.is_null() {
                    fields.remove("content_uri");
                }
                if operation == "add_or_contradict" {
                    ext["contradicts"] = json!(target);
                }
                if operation == "retract" {
                    fields.insert("status".into(), json!("retired"));
                }
                (crate::write::plan::sibling(&prev.origin.file, next), Some(prev))
            }
            (_, _) => {
                return fail(
                    "PROPOSAL_TARGET_INVALID",
                    format!("`{id}` has several active versions; resolve them before committing"),
                )
            }
        };
        let structured = !value.is_string() && !value.is_null();
        let rel = if structured {
            match rel.rsplit_once('.') {
                Some((stem, _)) => format!("{stem}.json"),
                None => rel,
            }
        } else {
            rel
        };
        let format = Format::from_path(&rel).unwrap_or(Format::Markdown);
        if !fields.contains_key("title") {
            fields.insert("title".into(), json!(id));
        }
        if let Some(a) = &o.authority {
            fields.insert("authority".into(), json!(a));
        }
        fields.insert(
            "sources".into(),
            Value::Array(
                sources
                    .iter()
                    .map(|s| json!({"uri": s, "type": "context-layer-provenance"}))
                    .collect(),
            ),
        );
        fields.insert("updated".into(), json!(now));
        let mut extensions = match fields.remove("extensions") {
            Some(Value::Object(e)) => e,
            _ => Map::new(),
        };
        extensions.insert("ctx.exchange".into(), ext);
        fields.insert("extensions".into(), Value::Object(extensions));
        // The provenance every committed proposal keeps, by the library's one
        // rule: not its own origin, the proposer's confidence, `observed`
        // unless the committer chose an authority.
        let proposed = write::plan::Proposed {
            id: pid.clone(),
            door: crate::proposals::DOOR_CONTEXT_LAYER.into(),
            proposed_by: p["submitted_by"].as_str().unwrap_or_default().into(),
            confidence: claim["confidence"].as_f64(),
            sources: Vec::new(),
            extra: Map::new(),
        };
        proposed.apply(&mut fields, &committer, o.authority.is_some());
        let content = if value.is_null() {
            prev.and_then(|p| p.content.clone())
        } else {
            Some(value.clone())
        };
        let bytes = emit::document(format, &fields, content.as_ref()).into_bytes();
        let obj = planned(repo, &rel, &bytes)?;
        // An agent's claim never keeps canonical/approved without a person's promotion.
        let raised = write::is_promotion(m, obj.meta.authority, prev.map(|p| p.meta.authority))
            || write::signoff::needed(obj.meta.authority);
        if raised && !o.promote {
            return fail(
                "PROMOTION_REQUIRES_APPROVAL",
                format!("`{id}` would become {}: promotion is an explicit governance act (pass --promote)", obj.meta.authority),
            );
        }
        // Like `ctx supersede`: a version keeping a signed-off authority, or one the
        // reviewer promotes, carries the reviewer's sign-off (`.ctx/signoffs/`).
        if write::signoff::due(m, &obj, prev, o.promote) {
            signoffs.push(
                write::signoff::plan(m, &obj, &bytes, committer.clone(), now.clone(), "proposal")
                    .map_err(|e| ClError::new("STATE_UNAVAILABLE", e.to_string()))?,
            );
        }
        written.push(obj.key());
        added.push(obj);
        writes.push(FileWrite {
            rel,
            bytes,
            replaces: None,
        });
    }
    // For the repository's audit log: what is written, and whether it supersedes.
    let superseding = added.iter().any(|o| !o.meta.supersedes.is_empty());
    let audited: Vec<(String, bool)> = added
        .iter()
        .map(|o| (o.id.clone(), o.meta.kind == "decision"))
        .collect();
    let planned_repo = write::planned_repo(repo, &replaced, added);
    let before = validate::validate(
        repo,
        ValidateOptions {
            strict: false,
            at: None,
        },
    );
    let after = validate::validate(
        &planned_repo,
        ValidateOptions {
            strict: false,
            at: None,
        },
    );
    if let Some(d) = write::new_errors(&before, &after).first() {
        return fail(
            "PROPOSAL_WOULD_INVALIDATE",
            format!(
                "committing would add a validation error ({}: {} in {}); nothing was written",
                d.code.as_str(),
                d.message,
                d.file.as_deref().unwrap_or("?")
            ),
        );
    }
    if o.dry_run {
        return Ok(Committed {
            writes,
            objects: written,
            dry_run: true,
        });
    }
    let log = ex.log()?;
    log.preflight()?;
    // A governed write like `ctx add`/`ctx supersede`: the objects, sign-offs,
    // audit events (when the manifest asks) and the commit receipt are one
    // transaction; the receipt then goes into the anchored log.
    let kind = if superseding {
        WriteKind::Supersede
    } else {
        WriteKind::Write
    };
    let receipt = receipts::build(
        &ReceiptDraft {
            operation: "memory.proposal.commit".into(),
            actor: o.reviewer.clone(),
            subject_ref: p["subject_ref"].as_str().unwrap_or_default().into(),
            bundle_ref: p["bundle_ref"].as_str().map(str::to_string),
            outcome: "success".into(),
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
    let actor = crate::audit::Actor {
        kind: "human",
        id: o.committer.clone(),
        roles: Vec::new(),
    };
    let record = Record::Write {
        actor,
        kind,
        objects: audited.iter().map(|(id, _)| id.clone()).collect(),
        decisions: audited
            .iter()
            .filter(|(_, d)| *d)
            .map(|(id, _)| id.clone())
            .collect(),
    };
    crate::evidence::record_transaction(m, Some(record), |txn| {
        write::stage(txn, &m.root, &writes)?;
        for s in &signoffs {
            write::signoff::stage(txn, &m.root, s)?;
        }
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
