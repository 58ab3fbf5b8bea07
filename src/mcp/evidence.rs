//! Evidence for what the server discloses or refuses, through the library's
//! one recorder ([`ctx_core::evidence`]).
//!
//! - A bundle handed out is recorded exactly as `ctx resolve` records one it
//!   prints: [`bundle::prepare`] locks and verifies the audit log (and signs a
//!   receipt over the exact text when the manifest's policy asks) before
//!   anything leaves, and the records are committed before the text is
//!   returned. A required record that cannot be written means nothing is
//!   disclosed.
//! - Metadata answers are `context.read` / `context.search` events
//!   ([`Record::read`], [`Record::search`]), as `ctx list` / `ctx search` write.
//! - Approvals, refusals, denials and proposals are [`Record::Access`] events
//!   carrying the MCP details (action, era, client) under
//!   `extensions.ctx.mcp`.
//!
//! Events carry ids, codes and reasons only, never content.

use serde_json::Value;

use ctx_core::error::Result;
use ctx_core::evidence::bundle::{self, Emission, RequestEcho, SignOptions};
use ctx_core::evidence::{self as recorder, Access, BundleEvent, Record};
use ctx_core::load::Repo;

use super::service::{Disclosure, Query, Rows, Service};

/// Record a bundle before it is handed out (audit event and receipt, as
/// `ctx resolve --format markdown` records a bundle it prints).
pub fn disclosure(d: &Disclosure, q: &Query, text: &str, started_at: &str) -> Result<()> {
    let emission = Emission {
        event: BundleEvent::Resolve,
        bundle: &d.bundle,
        request: RequestEcho {
            include_historical: false,
            limit: q.limit,
            min_relevance: None,
            include: &q.include,
            max_tokens: q.max_tokens,
        },
        format: "markdown",
        started_at,
    };
    bundle::prepare(
        &d.repo.manifest,
        &SignOptions::default(),
        &emission,
        Some(text.as_bytes()),
    )?
    .commit()?;
    Ok(())
}

/// Metadata shown to the consumer: a listing (`context.read`) or search hits
/// (`context.search`).
pub fn shown(svc: &Service, shown: &Rows, search: bool) -> Result<()> {
    let who = &svc.who.who;
    let ids = shown.ids();
    let record = if search {
        Record::search(who.agent.as_deref(), &who.roles, ids)
    } else {
        Record::read(who.agent.as_deref(), &who.roles, ids)
    };
    recorder::record(&shown.repo.manifest, record)
}

/// What one access decision says besides the standard fields.
pub struct Note<'a> {
    pub access: Access,
    pub objects: &'a [String],
    /// `allowed`, `denied`, `partial`, `error`.
    pub outcome: &'static str,
    pub reason: Option<String>,
    /// MCP details: tool, era, approval, client (never content).
    pub mcp: Value,
}

/// Record one access decision (when the manifest's audit block asks for it).
pub fn event(svc: &Service, repo: &Repo, note: Note<'_>) -> Result<()> {
    recorder::record(
        &repo.manifest,
        Record::Access {
            actor: svc.who.actor(),
            access: note.access,
            objects: note.objects.to_vec(),
            outcome: note.outcome,
            reason: note.reason,
            details: Some(("ctx.mcp", note.mcp)),
        },
    )
}
