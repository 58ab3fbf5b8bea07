//! `context_set`: an agent-written value never lands directly (planning, the
//! governed write, and the tool itself).
//!
//! - Where the manifest grants the agent write access to a *new* id
//!   (`extensions.ctx.write`), the value is written by the library's one
//!   write operation, as `ctx add --agent` would write it
//!   (`write::plan::add_unless_denied`, then `Session::apply`: the writer's
//!   authority, the planned file parsed as the loader would, the repository
//!   staying valid, one transaction with its audit event), carrying
//!   `extensions.ctx.memory.written_by`. Sensitive and critical writes need
//!   the user's approval first (the server's gate).
//! - Everything else becomes a proposal in the library's review queue
//!   (`ctx_core::proposals`), recorded with `written_by` = the agent, for a
//!   person to review with `ctx proposals`. That includes new versions of
//!   existing objects.
//!
//! Planning has no side effects (MRTR runs a tool twice); [`commit`] plans
//! again under the lock and writes.

use serde_json::{json, Value};

use ctx_core::disclose::{self, Target};
use ctx_core::error::{Error, Result};
use ctx_core::load::{LoadOptions, Repo};
use ctx_core::time::Clock;
use ctx_core::write::plan::{self as write_plan, Fields, Request, Session};

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
    let (repo, _) = svc.load()?;
    let target = disclose::target(&repo, &svc.who.who, super::service::now(), id)?;
    if target == Target::Forbidden {
        return Ok(Plan::Forbidden);
    }
    Ok(match planned_write(svc, &repo, target, id, value, tier)? {
        Ok(p) => Plan::Write {
            rel: written_file(&p),
            tier: planned_tier(&p, id),
        },
        Err(why) => Plan::Propose {
            tier,
            reason: why.to_string(),
        },
    })
}

/// Write the object (a [`Plan::Write`] that was approved when it needed to be).
/// Re-plans under the lock: if anything changed so the write is no longer
/// allowed, nothing is written.
pub fn commit(svc: &Service, id: &str, value: &str, tier: Option<Tier>) -> Result<String> {
    let root = svc.cfg.manifest()?.root;
    let s = Session::open(Some(&root), &root, &LoadOptions::default())?;
    let target = disclose::target(&s.repo, &svc.who.who, super::service::now(), id)?;
    if target == Target::Forbidden {
        return Err(Error::Invalid(forbidden(id, &svc.who.shown)));
    }
    let p = planned_write(svc, &s.repo, target, id, value, tier)?
        .map_err(|why| Error::Invalid(format!("refusing to write: {why} (nothing was written)")))?;
    s.apply(&p)?;
    Ok(written_file(&p))
}

fn written_file(p: &write_plan::Plan) -> String {
    p.writes.last().map(|w| w.rel.clone()).unwrap_or_default()
}

fn planned_tier(p: &write_plan::Plan, id: &str) -> Tier {
    p.planned
        .objects
        .iter()
        .find(|o| o.id == id)
        .map(|o| Tier::of(o.meta.classification))
        .unwrap_or(Tier::Standard)
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
    #[error("the value would not form a valid object ({0})")]
    NotAnObject(String),
    /// No write grant lets this consumer create it. One reason for every cause (no
    /// grant, a deny, an object by that id the consumer may not read), so the
    /// answer says nothing about objects it cannot see.
    #[error("no write grant lets {0} create `{1}`; a person reviews the value first")]
    NotGranted(String, String),
}

/// `Ok(Ok(plan))`: the library's write operation allows the write;
/// `Ok(Err(why))`: it must be a proposal.
fn planned_write(
    svc: &Service,
    repo: &Repo,
    target: Target,
    id: &str,
    value: &str,
    tier: Option<Tier>,
) -> Result<std::result::Result<write_plan::Plan, Unwritable>> {
    let m = &repo.manifest;
    if let Target::Visible(_) = target {
        return Ok(Err(Unwritable::Exists(id.to_string())));
    }
    if ctx_core::write::default_path(m, id).is_none() {
        return Ok(Err(Unwritable::NoCollection(id.to_string())));
    }
    // An object the consumer may not read has this id: answered as a missing id
    // without a grant, after the same planning over the repository without it,
    // so neither the answer nor its cost tells the two apart.
    let hidden: Vec<String> = repo
        .objects
        .iter()
        .filter(|o| o.id == id)
        .map(|o| o.origin.file.clone())
        .collect();
    let without;
    let over = if hidden.is_empty() {
        repo
    } else {
        without = ctx_core::write::planned_repo(repo, &hidden, Vec::new());
        &without
    };
    let kind = m
        .collections
        .iter()
        .find(|c| id.starts_with(&format!("{}.", c.name)))
        .and_then(|c| c.defaults.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("memory")
        .to_string();
    let now = super::service::now();
    let consumer = &svc.who;
    let req = Request {
        who: consumer.who.clone(),
        fields: Fields {
            content: Some(Value::from(value)),
            authority: Some("observed".into()),
            classification: tier.map(|t| t.classification().as_str().to_string()),
            sources: vec![format!(
                "urn:ctx:mcp:{}:{}",
                if consumer.who.agent.is_some() {
                    "agent"
                } else {
                    "role"
                },
                consumer.id
            )],
            set: vec![(
                "extensions".into(),
                json!({ MEMORY_EXTENSION: { "written_by": consumer.id, "via": "mcp", "at": ctx_core::time::format(&now) } }),
            )],
            ..Fields::default()
        },
        cwd: m.root.clone(),
        ..Request::default()
    };
    let planned = write_plan::add_unless_denied(over, id, &kind, &req, &Clock::fixed(now));
    let not_granted = || Unwritable::NotGranted(consumer.shown.clone(), id.to_string());
    Ok(match planned {
        _ if !hidden.is_empty() => Err(not_granted()),
        Ok(Ok(p)) => Ok(p),
        Ok(Err(_denied)) => Err(not_granted()),
        Err(e) => Err(Unwritable::NotAnObject(e.to_string())),
    })
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
            // The library's write records its own audit event (the agent as actor).
            let r = s
                .blocking(move |svc| commit(svc, &id, &value, requested))
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
    fn reasons_name_what_blocks_the_write() {
        let why = Unwritable::NotAnObject("notes/a.md would not hold an object".into());
        assert_eq!(
            why.to_string(),
            "the value would not form a valid object (notes/a.md would not hold an object)"
        );
        let why = Unwritable::NotGranted("agent `helper`".into(), "policies.x".into());
        assert!(why.to_string().contains("no write grant"));
    }
}
