//! `tools/call`: argument checks, then one facade operation per tool.
//!
//! Protocol errors (`Err`) only for requests that cannot be routed or do not
//! fit the tool's schema (unknown tool, oversized or malformed arguments);
//! everything the agent should read and act on is a tool result, with
//! `isError: true` for refusals. No error text ever carries withheld content.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, JsonObject,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};

use super::answer::{self, DEFAULT_ANSWER_TOKENS, NOTES_RESERVE};
use super::evidence::Note;
use super::server::{parse, tool_error, CtxServer, Gated};
use super::service::{Disclosure, Query, Service};
use super::tools::{self, IDENTITY_KEYS, MAX_ARGUMENTS_BYTES};

pub async fn call(
    s: &CtxServer,
    request: CallToolRequestParams,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.to_string();
    if rmcp::ServerHandler::get_tool(s, &name).is_none() {
        return Err(ErrorData::invalid_params(
            format!(
                "unknown tool `{}`; tools/list names the tools this server has",
                inert(&name)
            ),
            None,
        ));
    }
    let args = request.arguments.clone().unwrap_or_default();
    let size = serde_json::to_vec(&args)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_ARGUMENTS_BYTES {
        return Err(ErrorData::invalid_params(
            format!("arguments are {size} bytes; `{name}` accepts at most {MAX_ARGUMENTS_BYTES}"),
            None,
        ));
    }
    if let Some(k) = IDENTITY_KEYS.iter().find(|k| args.contains_key(**k)) {
        let msg = format!(
            "refused: the argument `{k}` would change who this server answers for. The consumer is fixed \
             when `ctx mcp` starts ({}); no tool argument can change or widen it. Call again without `{k}`.",
            s.svc.who.shown
        );
        let _ = s
            .blocking({
                let name = name.clone();
                let k = k.to_string();
                move |svc| {
                    let (repo, _) = svc.load()?;
                    super::evidence::event(
                        svc,
                        &repo,
                        Note {
                            access: ctx_core::evidence::Access::Denied,
                            objects: &[],
                            outcome: "denied",
                            reason: Some(format!(
                                "tool argument `{k}` tried to change the consumer"
                            )),
                            mcp: json!({"action": name}),
                        },
                    )
                }
            })
            .await;
        return Ok(CallToolResult::error(vec![ContentBlock::text(msg)]).into());
    }
    let state = request.request_state.as_deref();
    let responses = request.input_responses.as_ref();
    let out = match name.as_str() {
        "context_status" => status(s, &args).await,
        "context_list" => list(s, &args).await,
        "search" => search(s, &args).await,
        "context_get" => get(s, &ctx, &args, state, responses).await,
        "context_context" => context(s, &ctx, &args, state, responses).await,
        "resolve" => resolve(s, &ctx, &args, state, responses).await,
        "request_context" => request_context(s, &ctx, &args, state, responses).await,
        "context_set" => super::memory::tool(s, &ctx, &args, state, responses).await,
        _ => unreachable!("checked above"),
    };
    out
}

/// An untrusted name echoed in an error: escaped and bounded.
fn inert(s: &str) -> String {
    let q = super::inert::quoted(s);
    q[1..q.len() - 1].to_string()
}

pub(super) fn arg_error(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(e.to_string(), None)
}

async fn status(s: &CtxServer, args: &JsonObject) -> Result<CallToolResponse, ErrorData> {
    let _: tools::NoArgs = parse(args)?;
    let exchange = s.exchange.name();
    Ok(match s.blocking(|svc| svc.status()).await {
        Ok(mut v) => {
            v["exchange"] = json!(exchange);
            CallToolResult::structured(v).into()
        }
        Err(e) => tool_error(&e).into(),
    })
}

async fn list(s: &CtxServer, args: &JsonObject) -> Result<CallToolResponse, ErrorData> {
    let a: tools::ListArgs = parse(args)?;
    if let Some(c) = &a.collection {
        tools::check_len("collection", c, 1, 100).map_err(arg_error)?;
    }
    let limit = tools::check_range("limit", a.limit, 1, 500)
        .map_err(arg_error)?
        .unwrap_or(answer::DEFAULT_PAGE);
    let cursor = a.cursor.clone();
    let r = s
        .blocking(move |svc| Ok(svc.list(a.collection.as_deref())?.rows))
        .await;
    let all = match r {
        Ok(rows) => rows,
        Err(e) => return Ok(tool_error(&e).into()),
    };
    // A page is `limit` rows at most, and fewer when they would not fit the answer.
    let total = all.len();
    let start = match answer::offset(cursor.as_deref(), total) {
        Ok(o) => o,
        Err(e) => return Ok(tool_error(&ctx_core::error::Error::Usage(e)).into()),
    };
    let rows = &all[start..(start + limit).min(total)];
    Ok(answer::fitted(rows, |n| {
        let mut v = json!({ "objects": rows[..n], "count": n, "total": total });
        if let Some(c) = answer::cursor_at(start + n, total) {
            v["nextCursor"] = json!(c);
        }
        CallToolResult::structured(v)
    })
    .into())
}

async fn search(s: &CtxServer, args: &JsonObject) -> Result<CallToolResponse, ErrorData> {
    let a: tools::SearchArgs = parse(args)?;
    tools::check_len("query", &a.query, 1, 500).map_err(arg_error)?;
    let limit = tools::check_range("limit", a.limit, 1, 100)
        .map_err(arg_error)?
        .unwrap_or(10);
    let r = s
        .blocking(move |svc| {
            let hits = svc.search(&a.query, limit)?;
            Ok(hits.rows)
        })
        .await;
    Ok(match r {
        Ok(hits) => answer::fitted(&hits, |n| {
            let mut v = json!({ "hits": hits[..n], "count": n });
            if n < hits.len() {
                v["more"] = json!(format!(
                    "{} more hit(s) did not fit this answer; narrow the query",
                    hits.len() - n
                ));
            }
            CallToolResult::structured(v)
        })
        .into(),
        Err(e) => tool_error(&e).into(),
    })
}

async fn get(
    s: &CtxServer,
    ctx: &RequestContext<RoleServer>,
    args: &JsonObject,
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let a: tools::GetArgs = parse(args)?;
    tools::check_id(&a.id).map_err(arg_error)?;
    let budget = tools::check_range("max_tokens", a.max_tokens, 500, 1_000_000)
        .map_err(arg_error)?
        .unwrap_or(DEFAULT_ANSWER_TOKENS);
    let id = a.id.clone();
    let gated = s
        .gated(
            ctx,
            "context_get",
            &Value::Object(args.clone()),
            None,
            true,
            state,
            responses,
            move |svc, rel| {
                let q = Query {
                    include: vec![id.clone()],
                    ..Query::default()
                };
                let shape = Shape::Single(id.clone());
                Ok((fit(svc, &q, rel, budget, &shape)?, q))
            },
        )
        .await;
    finish(s, gated, Shape::Single(a.id), budget).await
}

async fn context(
    s: &CtxServer,
    ctx: &RequestContext<RoleServer>,
    args: &JsonObject,
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let a: tools::ContextArgs = parse(args)?;
    let max = tools::check_range("max_tokens", a.max_tokens, 500, 1_000_000)
        .map_err(arg_error)?
        .unwrap_or(DEFAULT_ANSWER_TOKENS);
    let gated = s
        .gated(
            ctx,
            "context_context",
            &Value::Object(args.clone()),
            None,
            false,
            state,
            responses,
            move |svc, rel| {
                let q = Query::default();
                Ok((fit(svc, &q, rel, max, &Shape::Grouped)?, q))
            },
        )
        .await;
    finish(s, gated, Shape::Grouped, max).await
}

async fn resolve(
    s: &CtxServer,
    ctx: &RequestContext<RoleServer>,
    args: &JsonObject,
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let a: tools::ResolveArgs = parse(args)?;
    tools::check_len("task", &a.task, 1, 1000).map_err(arg_error)?;
    let limit = tools::check_range("limit", a.limit, 1, 10_000).map_err(arg_error)?;
    let max_tokens =
        tools::check_range("max_tokens", a.max_tokens, 500, 1_000_000).map_err(arg_error)?;
    let include = a.include.unwrap_or_default();
    if include.len() > 32 {
        return Err(arg_error("`include` takes at most 32 patterns"));
    }
    for p in &include {
        tools::check_len("include[]", p, 1, 200).map_err(arg_error)?;
        ctx_core::pattern::Pattern::parse(p)
            .map_err(|e| arg_error(format!("include `{}`: {}", inert(&e.pattern), e.reason)))?;
    }
    let budget = max_tokens.unwrap_or(DEFAULT_ANSWER_TOKENS);
    let q = Query {
        task: Some(a.task.clone()),
        limit,
        max_tokens: None,
        include,
    };
    let gated = s
        .gated(
            ctx,
            "resolve",
            &Value::Object(args.clone()),
            Some(a.task),
            false,
            state,
            responses,
            move |svc, rel| Ok((fit(svc, &q, rel, budget, &Shape::Bundle)?, q.clone())),
        )
        .await;
    finish(s, gated, Shape::Bundle, budget).await
}

async fn request_context(
    s: &CtxServer,
    ctx: &RequestContext<RoleServer>,
    args: &JsonObject,
    state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let a: tools::RequestArgs = parse(args)?;
    tools::check_len("purpose", &a.purpose, 1, 500).map_err(arg_error)?;
    if a.scope.is_empty() || a.scope.len() > 32 {
        return Err(arg_error("`scope` takes 1 to 32 selectors"));
    }
    for p in &a.scope {
        tools::check_len("scope[]", p, 1, 200).map_err(arg_error)?;
        ctx_core::pattern::Pattern::parse(p)
            .map_err(|e| arg_error(format!("scope `{}`: {}", inert(&e.pattern), e.reason)))?;
    }
    let budget = tools::check_range("max_tokens", a.max_tokens, 500, 1_000_000)
        .map_err(arg_error)?
        .unwrap_or(DEFAULT_ANSWER_TOKENS);
    let scope = a.scope.clone();
    let q = Query {
        task: Some(a.purpose.clone()),
        include: a.scope.clone(),
        ..Query::default()
    };
    let gated = s
        .gated(
            ctx,
            "request_context",
            &Value::Object(args.clone()),
            Some(a.purpose),
            false,
            state,
            responses,
            move |svc, rel| {
                let shape = Shape::Request(Default::default());
                Ok((fit(svc, &q, rel, budget, &shape)?, q.clone()))
            },
        )
        .await;
    let selectors = match &gated {
        Ok(Gated::Out { disclosure, .. }) => granted(&scope, disclosure),
        _ => Default::default(),
    };
    finish(s, gated, Shape::Request(selectors), budget).await
}

/// Which selectors matched something the requester may see (released or withheld
/// for approval), and which matched nothing: absent and not permitted are not
/// told apart.
fn granted(scope: &[String], d: &Disclosure) -> (Vec<String>, Vec<String>) {
    let released = d.object_ids();
    scope.iter().cloned().partition(|sel| {
        ctx_core::pattern::Pattern::parse(sel).is_ok_and(|p| {
            released
                .iter()
                .chain(d.withheld.iter())
                .any(|id| p.covers(id))
        })
    })
}

/// Resolve `q` so that the whole answer — text blocks and structured content, as
/// [`shaped`] builds it, plus a reserve for notes — fits `budget` estimated tokens.
/// The library's budget covers object bodies; the framing is measured and taken
/// off it, a few times at most (deterministic: same inputs, same answer).
fn fit(
    svc: &Service,
    q: &Query,
    rel: &ctx_core::disclose::Release,
    budget: usize,
    shape: &Shape,
) -> Result<Disclosure, ctx_core::error::Error> {
    let mut objects = budget.saturating_sub(NOTES_RESERVE).max(1);
    let mut d = svc.resolve(&q.with_budget(objects), rel)?;
    for _ in 0..4 {
        let used =
            answer::tokens(&shaped(&d, d.markdown(), shape, budget, Vec::new())) + NOTES_RESERVE;
        if used <= budget || objects == 1 {
            break;
        }
        objects = objects.saturating_sub(used - budget).max(1);
        d = svc.resolve(&q.with_budget(objects), rel)?;
    }
    Ok(d)
}

/// How a released bundle is presented.
enum Shape {
    Single(String),
    Grouped,
    Bundle,
    /// (granted selectors, not granted selectors)
    Request((Vec<String>, Vec<String>)),
}

async fn finish(
    s: &CtxServer,
    gated: Result<Gated, ctx_core::error::Error>,
    shape: Shape,
    budget: usize,
) -> Result<CallToolResponse, ErrorData> {
    let gated = match gated {
        Ok(g) => g,
        Err(e) => return Ok(tool_error(&e).into()),
    };
    let (disclosure, query, approval, refusal) = match gated {
        Gated::Ask(r) => return Ok(r.into()),
        Gated::Refused(r) => {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "not released: {}. Nothing of it was disclosed.",
                r.explain()
            ))])
            .into())
        }
        Gated::Out {
            disclosure,
            query,
            approval,
            refusal,
        } => (disclosure, query, approval, refusal),
    };
    if let Shape::Single(id) = &shape {
        if disclosure.object_ids().is_empty() {
            let trimmed = disclosure
                .budget
                .as_ref()
                .and_then(|b| b.trimmed.iter().find(|t| t.id == *id).map(|t| t.tokens));
            let text = match trimmed {
                Some(tokens) => format!(
                    "`{id}` needs about {tokens} tokens, more than this answer's budget of {budget}; \
                     call context_get again with a larger max_tokens"
                ),
                None => format!(
                    "no object `{id}` is visible to {}: it does not exist, is not current, or you may not read it. \
                     context_list shows what you may read.",
                    s.svc.who.shown
                ),
            };
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        }
    }
    let issued = match &shape {
        Shape::Request(_) => s.issue(*disclosure, query).await,
        _ => s.release(*disclosure, query).await,
    };
    let (d, markdown) = match issued {
        Ok(x) => x,
        Err(e) => return Ok(tool_error(&e).into()),
    };
    let mut notes = Vec::new();
    if let Some(r) = &refusal {
        notes.push(format!(
            "Withheld {} confidential or restricted object(s) ({}): {}. The rest is below.",
            d.withheld.len(),
            answer::first_ids(d.withheld.iter().map(String::as_str)),
            r.explain()
        ));
    }
    if approval.is_some() {
        notes.push("The user approved releasing the confidential or restricted objects below, for this answer only.".into());
    }
    if !d.foreign_writes.is_empty() {
        let mut each: Vec<String> = d
            .foreign_writes
            .iter()
            .take(answer::LISTED)
            .map(|(id, w)| format!("`{id}` was written by agent `{w}`, not by a person"))
            .collect();
        if d.foreign_writes.len() > answer::LISTED {
            each.push(format!(
                "and {} more",
                d.foreign_writes.len() - answer::LISTED
            ));
        }
        notes.push(format!(
            "Warning: {}; verify before relying on them.",
            each.join("; ")
        ));
    }
    let mut result = shaped(&d, markdown, &shape, budget, notes);
    if let Some(st) = result.structured_content.as_mut() {
        st["approval"] = json!(approval
            .as_ref()
            .map(|a| json!({"via": a.via, "request": a.binding})));
    }
    // A partial answer is a success that says what was withheld.
    Ok(result.into())
}

/// The answer a released bundle becomes: `notes`, then the Markdown, with the
/// structured summary beside them. Everything that can grow is bounded.
fn shaped(
    d: &Disclosure,
    markdown: String,
    shape: &Shape,
    budget: usize,
    mut notes: Vec<String>,
) -> CallToolResult {
    if let Some(b) = &d.budget {
        notes.push(format!(
            "Answer budget {budget} tokens (the whole answer): kept {} object(s), trimmed {} (listed under \"Not included\"; a larger max_tokens brings more). Estimate: {}.",
            b.kept,
            b.trimmed.len(),
            answer::ESTIMATE
        ));
    }
    let mut structured = json!({
        "digest": d.digest(),
        "bundle_id": d.bundle["bundle_id"],
        "objects": d.object_ids(),
        "excluded": answer::excluded(&d.bundle),
        "withheld": answer::first_ids(d.withheld.iter().map(String::as_str)),
    });
    if let Some(b) = &d.budget {
        structured["budget"] = answer::budget_report(b, budget);
    }
    let body = match shape {
        Shape::Grouped => {
            let mut index = String::from("Collections:\n");
            for (c, ids) in &d.collections {
                index.push_str(&format!(
                    "- {c}: {}\n",
                    answer::first_ids(ids.iter().map(String::as_str))
                ));
            }
            // The included objects' ids: bounded by the budget like the objects.
            structured["collections"] = json!(d.collections);
            notes.insert(0, index);
            grouped_markdown(d)
        }
        Shape::Request((granted, not_granted)) => {
            structured["granted"] = json!(granted);
            structured["not_granted"] = json!(not_granted);
            if !not_granted.is_empty() {
                notes.push(format!(
                    "Not granted (nothing you may see matches): {}",
                    answer::first_ids(not_granted.iter().map(String::as_str))
                ));
            }
            markdown
        }
        _ => markdown,
    };
    let mut content = Vec::new();
    if !notes.is_empty() {
        content.push(ContentBlock::text(notes.join("\n")));
    }
    content.push(ContentBlock::text(body));
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(structured);
    result
}

/// The bundle's Markdown with objects ordered by collection (relevance order
/// within each); the recorded bundle and its digest are unchanged.
fn grouped_markdown(d: &super::service::Disclosure) -> String {
    let mut view = d.bundle.clone();
    let order: Vec<&String> = d.collections.values().flatten().collect();
    if let Some(objects) = view["objects"].as_array_mut() {
        objects.sort_by_key(|o| {
            let id = o["id"].as_str().unwrap_or("");
            order
                .iter()
                .position(|x| x.as_str() == id)
                .unwrap_or(usize::MAX)
        });
    }
    ctx_core::bundle::render::markdown_bounded(&view, answer::LISTED)
}
