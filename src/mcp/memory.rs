//! `context_set`: an agent-written value never lands directly (planning, the
//! governed write, and the tool itself).
//!
//! - Where the manifest grants the agent write access to a *new* id
//!   (`extensions.ctx.write`), the value goes through the governed write path:
//!   the planned file is parsed as the loader would, authorized
//!   (`write::authorize_write`), checked so the repository gains no error, and
//!   written atomically under the repository lock, carrying
//!   `extensions.ctx.memory.written_by`. Sensitive and critical writes need the
//!   user's approval first (the server's gate).
//! - Everything else becomes a memory-update proposal through the exchange,
//!   recorded with `written_by` = the agent, for a person to review. That
//!   includes new versions of existing objects until the library's governed
//!   supersede is callable without the CLI printer.
//!
//! Planning has no side effects (MRTR runs a tool twice); [`commit`] plans
//! again under the lock and writes.

use serde_json::{json, Map, Value};

use ctx_core::diag::{Diagnostic, Severity};
use ctx_core::disclose::{self, Target};
use ctx_core::error::{Error, Result};
use ctx_core::load::Repo;
use ctx_core::object::{ContextObject, Format};
use ctx_core::resolve::Consumer;
use ctx_core::validate::{self, ValidateOptions};
use ctx_core::write::{self, emit, FileWrite};

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorData, JsonObject};
use rmcp::service::{RequestContext, RoleServer};

use super::calls::arg_error;
use super::evidence::Note;
use super::exchange::ProposalDraft;
use super::server::{client_name, parse, tool_error, CtxServer};
use super::service::{Service, MEMORY_EXTENSION};
use super::tools;
use ctx_core::personal::Tier;

/// The largest value `context_set` accepts, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// What a `context_set` call will do.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A new object through the governed write path.
    Write { rel: String, tier: Tier },
    /// A proposal for review; `reason` says why it is not a write.
    Propose { tier: Option<Tier>, reason: String },
    /// Refused: the id is outside what the consumer may read. The same answer
    /// whether an object has it or not.
    Forbidden,
}

/// The one answer to a write of an id the consumer may not read, whether an
/// object has it (hidden from the consumer) or not.
pub fn forbidden(id: &str, shown: &str) -> String {
    format!(
        "not written: `{id}` is not an id {shown} may read or write, so nothing was written or proposed. \
         context_list shows what you may read."
    )
}

/// Decide, without writing anything.
pub fn plan(svc: &Service, id: &str, value: &str, tier: Option<Tier>) -> Result<Plan> {
    let (repo, consumer) = svc.load()?;
    let target = disclose::target(&repo, &svc.who.who, super::service::now(), id)?;
    if target == Target::Forbidden {
        return Ok(Plan::Forbidden);
    }
    Ok(
        match planned_write(svc, &repo, &consumer, target, id, value, tier)? {
            Ok((rel, _, tier)) => Plan::Write { rel, tier },
            Err(why) => Plan::Propose {
                tier,
                reason: why.to_string(),
            },
        },
    )
}

/// Write the object (a [`Plan::Write`] that was approved when it needed to be).
/// Re-plans under the lock: if anything changed so the write is no longer
/// allowed, nothing is written.
pub fn commit(svc: &Service, id: &str, value: &str, tier: Option<Tier>) -> Result<String> {
    // Only the root, to take the lock: the repository is refreshed once, under it.
    let root = svc.cfg.manifest()?.root;
    let _lock = ctx_core::fs::RepoLock::acquire(&root).map_err(|e| Error::io(&root, &e))?;
    let (repo, consumer) = svc.load()?;
    let target = disclose::target(&repo, &svc.who.who, super::service::now(), id)?;
    if target == Target::Forbidden {
        return Err(Error::Invalid(forbidden(id, &svc.who.shown)));
    }
    let (rel, bytes, _) = planned_write(svc, &repo, &consumer, target, id, value, tier)?
        .map_err(|why| Error::Invalid(format!("refusing to write: {why} (nothing was written)")))?;
    write::apply(
        &repo.manifest.root,
        &[FileWrite {
            rel: rel.clone(),
            bytes,
            replaces: None,
        }],
    )?;
    Ok(rel)
}

/// Why a value goes to review instead of being written: told to the agent
/// (`why_not_written`) and kept with the proposal.
#[derive(Debug, thiserror::Error)]
pub enum Unwritable {
    #[error(
        "`{0}` already exists; a new version of existing context is reviewed before it is written"
    )]
    Exists(String),
    #[error("no collection in this repository holds an id like `{0}`")]
    NoCollection(String),
    #[error("{0} is not an object file")]
    NotObjectFile(String),
    #[error("the value would not form a valid object ({0})")]
    NotAnObject(ObjectFault),
    /// No write grant lets this consumer create it. One reason for every cause (no
    /// grant, a deny, an object by that id the consumer may not read), so the
    /// answer says nothing about objects it cannot see.
    #[error("no write grant lets {0} create `{1}`; a person reviews the value first")]
    NotGranted(String, String),
}

/// Why the planned file would hold no valid object (codes and paths; the
/// agent's own value is the only content a message can carry).
#[derive(Debug, thiserror::Error)]
pub enum ObjectFault {
    #[error("no collection loads {0}")]
    NotLoaded(String),
    #[error("{code} {message}")]
    Finding { code: &'static str, message: String },
    #[error("{0} would not hold an object")]
    NoObject(String),
}

/// `Ok(Ok((path, bytes, tier)))`: the governed write is allowed; `Ok(Err(why))`:
/// it must be a proposal; `Err`: the value itself is unacceptable.
#[allow(clippy::type_complexity)]
fn planned_write(
    svc: &Service,
    repo: &Repo,
    consumer: &Consumer,
    target: Target,
    id: &str,
    value: &str,
    tier: Option<Tier>,
) -> Result<std::result::Result<(String, Vec<u8>, Tier), Unwritable>> {
    let m = &repo.manifest;
    let not_granted = || Unwritable::NotGranted(svc.who.shown.clone(), id.to_string());
    if let Target::Visible(_) = target {
        return Ok(Err(Unwritable::Exists(id.to_string())));
    }
    // An object the consumer may not read has this id: answered as a missing id
    // without a grant (a write would collide with what it cannot see), after the
    // same planning and checks, so neither the answer nor its cost tells them apart.
    let collides = repo.objects.iter().any(|o| o.id == id);
    let Some(rel) = write::default_path(m, id) else {
        return Ok(Err(Unwritable::NoCollection(id.to_string())));
    };
    let Some(format) = Format::from_path(&rel) else {
        return Ok(Err(Unwritable::NotObjectFile(rel)));
    };
    let mut fields = Map::new();
    fields.insert("id".into(), json!(id));
    let collection_types = m
        .collections
        .iter()
        .any(|c| id.starts_with(&format!("{}.", c.name)) && c.defaults.contains_key("type"));
    if !collection_types {
        fields.insert("type".into(), json!("memory"));
    }
    fields.insert("authority".into(), json!("observed"));
    if let Some(t) = tier {
        fields.insert("classification".into(), json!(t.classification().as_str()));
    }
    fields.insert(
        "sources".into(),
        json!([{ "uri": format!("urn:ctx:mcp:{}:{}", consumer.kind.as_str(), consumer.id), "label": "written by an agent through ctx mcp" }]),
    );
    let now = super::service::generated_at();
    fields.insert("updated".into(), json!(now));
    fields.insert(
        "extensions".into(),
        json!({ MEMORY_EXTENSION: { "written_by": svc.who.id, "via": "mcp", "at": now } }),
    );
    let bytes = emit::document(format, &fields, Some(&Value::from(value))).into_bytes();
    let obj = match planned_object(repo, &rel, &bytes) {
        Ok(o) => o,
        Err(e) => return Ok(Err(Unwritable::NotAnObject(e))),
    };
    let granted = write::authorize_write(m, consumer, &obj, None).is_ok();
    let tier = Tier::of(obj.meta.classification);
    let planned = write::planned_repo(repo, &[], vec![obj]);
    check_repository(repo, &planned, collides.then_some(id))?;
    if collides || !granted {
        return Ok(Err(not_granted()));
    }
    Ok(Ok((rel, bytes, tier)))
}

/// Parse the planned file as the loader would; `Err` says why it is no object.
fn planned_object(
    repo: &Repo,
    rel: &str,
    bytes: &[u8],
) -> std::result::Result<ContextObject, ObjectFault> {
    let parsed = write::parse_planned(&repo.manifest, rel, bytes)
        .ok_or_else(|| ObjectFault::NotLoaded(rel.to_string()))?;
    if let Some(d) = parsed.diags.iter().find(|d| d.severity == Severity::Error) {
        return Err(ObjectFault::Finding {
            code: d.code.as_str(),
            message: d.message.clone(),
        });
    }
    parsed
        .object
        .ok_or_else(|| ObjectFault::NoObject(rel.to_string()))
}

/// Refuse if the planned repository has errors the current one does not
/// (messages name codes and ids; the agent's own value is the only content).
/// `hidden`: an id an object the consumer may not read already has; what the
/// planned copy's collision with it finds is not the consumer's to learn.
fn check_repository(repo: &Repo, planned: &Repo, hidden: Option<&str>) -> Result<()> {
    let opts = || ValidateOptions {
        strict: false,
        at: None,
    };
    let before = validate::validate(repo, opts());
    let after = validate::validate(planned, opts());
    let mut new: Vec<Diagnostic> = write::new_errors(&before, &after);
    if let Some(id) = hidden {
        new.retain(|d| d.id.as_deref() != Some(id) && !d.ids.iter().any(|x| x == id));
    }
    match new.first() {
        None => Ok(()),
        Some(d) => Err(Error::Invalid(format!(
            "refusing to write: the repository would gain {} error(s), first {} ({}); nothing was written",
            new.len(),
            d.code.as_str(),
            d.message
        ))),
    }
}

/// `context_set`: plan, ask when a sensitive value would be written, then write or propose.
pub async fn tool(
    s: &CtxServer,
    ctx: &RequestContext<RoleServer>,
    args: &JsonObject,
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let a: tools::SetArgs = parse(args)?;
    tools::check_id(&a.id).map_err(arg_error)?;
    if a.value.is_empty() || a.value.len() > MAX_VALUE_BYTES {
        return Err(arg_error(format!(
            "`value` must be 1 to {} bytes, got {}",
            MAX_VALUE_BYTES,
            a.value.len()
        )));
    }
    let requested = a.sensitivity.map(|x| x.tier());
    let (id, value) = (a.id.clone(), a.value.clone());
    let plan = match s
        .blocking(move |svc| plan(svc, &id, &value, requested))
        .await
    {
        Ok(p) => p,
        Err(e) => return Ok(tool_error(&e).into()),
    };
    let client = client_name(ctx);
    match plan {
        Plan::Forbidden => {
            let id = a.id.clone();
            let r = s
                .blocking(move |svc| {
                    let (repo, _) = svc.load()?;
                    super::evidence::event(
                        svc,
                        &repo,
                        Note {
                            access: ctx_core::evidence::Access::Write,
                            objects: std::slice::from_ref(&id),
                            outcome: "denied",
                            reason: Some("outside the consumer's read scope".into()),
                            mcp: json!({"action": "context_set"}),
                        },
                    )
                })
                .await;
            Ok(match r {
                Ok(()) => CallToolResult::error(vec![ContentBlock::text(forbidden(
                    &a.id,
                    &s.svc.who.shown,
                ))])
                .into(),
                Err(e) => tool_error(&e).into(),
            })
        }
        Plan::Propose { tier, reason } => {
            let draft = ProposalDraft {
                target: a.id.clone(),
                value: a.value,
                tier,
                reason,
                client,
            };
            let exchange = s.exchange.clone();
            let r = s
                .blocking(move |svc| {
                    let rec = exchange.propose(svc, &draft)?;
                    let (repo, _) = svc.load()?;
                    super::evidence::event(
                        svc,
                        &repo,
                        Note {
                            access: ctx_core::evidence::Access::Write,
                            objects: std::slice::from_ref(&draft.target),
                            outcome: "partial",
                            reason: Some(format!(
                                "memory update proposed ({}), pending review",
                                rec.proposal_id
                            )),
                            mcp: json!({"action": "context_set", "proposal": rec.proposal_id}),
                        },
                    )?;
                    Ok((rec, draft.reason))
                })
                .await;
            Ok(match r {
                Ok((rec, reason)) => CallToolResult::structured(json!({
                    "outcome": "proposed",
                    "proposal_id": rec.proposal_id,
                    "status": rec.status,
                    "path": rec.path,
                    "written_by": s.svc.who.id,
                    "why_not_written": reason,
                    "next": "a person reviews the proposal; nothing in the repository changed",
                }))
                .into(),
                Err(e) => tool_error(&e).into(),
            })
        }
        Plan::Write { rel, tier } => {
            if tier.needs_approval() {
                let binding = ctx_core::jcs::sha256(&json!({
                    "action": "context_set", "consumer": s.svc.who.id, "arguments": Value::Object(args.clone()),
                }));
                let ask = super::approval::Ask {
                    action: "context_set".into(),
                    consumer: s.svc.who.shown.clone(),
                    purpose: None,
                    verb: "write",
                    items: vec![super::approval::Item {
                        id: a.id.clone(),
                        title: Some(format!("new object in {rel}")),
                        tier,
                        proposed: None,
                    }],
                    binding,
                    second_factor: super::approval::SecondFactor::Phrase,
                };
                match s.gate.check(ctx, &ask, state, responses).await {
                    super::approval::Verdict::Ask(r) => return Ok(r.into()),
                    super::approval::Verdict::Refused(r) => {
                        let _ = s
                            .note_refusal(ctx, "context_set", std::slice::from_ref(&a.id), &r)
                            .await;
                        return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                            "not written: {}",
                            r.explain()
                        ))])
                        .into());
                    }
                    super::approval::Verdict::Approved(_) => {}
                }
            }
            let (id, value) = (a.id.clone(), a.value.clone());
            let r = s
                .blocking(move |svc| {
                    let rel = commit(svc, &id, &value, requested)?;
                    let (repo, _) = svc.load()?;
                    super::evidence::event(
                        svc,
                        &repo,
                        Note {
                            access: ctx_core::evidence::Access::Write,
                            objects: std::slice::from_ref(&id),
                            outcome: "allowed",
                            reason: Some(format!(
                                "written through the governed write path ({rel})"
                            )),
                            mcp: json!({"action": "context_set"}),
                        },
                    )?;
                    Ok(rel)
                })
                .await;
            Ok(match r {
                Ok(rel) => CallToolResult::structured(json!({
                    "outcome": "written",
                    "id": a.id,
                    "file": rel,
                    "tier": tier.as_str(),
                    "written_by": s.svc.who.id,
                }))
                .into(),
                Err(e) => tool_error(&e).into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_nest_the_object_fault() {
        let why = Unwritable::NotAnObject(ObjectFault::NoObject("notes/a.md".into()));
        assert_eq!(
            why.to_string(),
            "the value would not form a valid object (notes/a.md would not hold an object)"
        );
    }
}
