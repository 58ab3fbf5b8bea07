//! Evidence for what the server discloses or refuses.
//!
//! A bundle handed out through MCP is recorded exactly as `ctx resolve`
//! records one: the CLI's own `sign::record` writes the audit event and the
//! signed receipt (when the manifest's `audit` block or `ctx.policy` asks), and
//! a required record that cannot be written means nothing is disclosed.
//! Approvals, refusals and metadata answers add one audit event each through
//! `ctx_core::audit`, carrying the MCP details under `extensions.ctx.mcp`.
//! Events carry ids and reasons only, never content.
//!
//! When the library's single evidence recorder lands, these two functions
//! become calls to it.

use serde_json::{json, Map, Value};

use ctx_core::audit;
use ctx_core::error::Result;
use ctx_core::load::Repo;

use super::service::{Disclosure, Query, Service};
use crate::cli::resolve::{BundleFormat, ResolveArgs};
use crate::cli::{ColorChoice, Printer};

/// Record a bundle before it is handed out (audit event and receipt, as the CLI does).
pub fn disclosure(
    svc: &Service,
    d: &Disclosure,
    q: &Query,
    text: &str,
    started_at: &str,
) -> Result<()> {
    let args = ResolveArgs {
        agent: svc.who.args.agent.clone(),
        role: svc.who.args.role.clone(),
        task: q.task.clone(),
        at: None,
        explain: false,
        include_historical: false,
        limit: q.limit,
        min_relevance: None,
        include: q.include.clone(),
        format: Some(BundleFormat::Markdown),
        output: None,
        sign: Default::default(),
        identity: Vec::new(),
    };
    let p = Printer::new(ColorChoice::Never);
    crate::cli::sign::record(&p, &d.repo, &args, &d.bundle, text, false, started_at)
}

/// What one MCP event says besides the standard fields.
pub struct Note<'a> {
    /// `context.read`, `context.search`, `context.denied`, `context.write`.
    pub event: &'a str,
    pub objects: &'a [String],
    /// `allowed`, `denied`, `partial`, `error`.
    pub outcome: &'a str,
    pub reason: Option<String>,
    /// MCP details: tool, era, approval, client (never content).
    pub mcp: Value,
}

/// Append one audit event when the manifest enables reads or decisions.
pub fn event(svc: &Service, repo: &Repo, note: Note<'_>) -> Result<()> {
    let Some(cfg) = audit::Config::from_manifest(&repo.manifest)? else {
        return Ok(());
    };
    let wanted = match note.event {
        "context.write" => cfg.context_writes || cfg.decisions,
        _ => cfg.context_reads || cfg.decisions,
    };
    if !wanted {
        return Ok(());
    }
    let mut actor = Map::new();
    let (kind, roles) = match &svc.who.args.agent {
        Some(a) => (
            "agent",
            repo.manifest
                .agents
                .get(a)
                .map(|b| b.roles.clone())
                .unwrap_or_default(),
        ),
        None => ("role", svc.who.args.role.clone()),
    };
    actor.insert("type".into(), json!(kind));
    actor.insert("id".into(), json!(svc.who.id));
    let mut roles = roles;
    roles.sort();
    roles.dedup();
    if !roles.is_empty() {
        actor.insert("roles".into(), json!(roles));
    }
    let mut objects: Vec<&String> = note.objects.iter().collect();
    objects.sort();
    objects.dedup();
    let mut e = Map::new();
    e.insert("opencontext".into(), json!(ctx_core::SPEC_VERSION));
    e.insert("event".into(), json!(note.event));
    e.insert("at".into(), json!(crate::cli::sign::now()));
    e.insert("actor".into(), Value::Object(actor));
    e.insert("objects".into(), json!(objects));
    e.insert("outcome".into(), json!(note.outcome));
    if let Some(r) = note.reason {
        e.insert("reason".into(), json!(r));
    }
    let ns = &repo.manifest.id;
    if !ns.is_empty()
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        e.insert("namespace".into(), json!(ns));
    }
    e.insert("extensions".into(), json!({ "ctx.mcp": note.mcp }));
    cfg.log.append(Value::Object(e))?;
    Ok(())
}
