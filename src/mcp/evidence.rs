//! Evidence for what the server discloses or refuses, through the library's
//! one disclosure operation ([`ctx_core::disclose`]); nothing here records on
//! its own.
//!
//! - A bundle handed out is delivered exactly as `ctx resolve` delivers one it
//!   prints ([`disclose::Disclosure::deliver`]): the audit log is locked and
//!   verified (and a receipt signed over the exact text when the manifest's
//!   policy asks) before anything leaves, and the records are committed before
//!   the text is returned. A required record that cannot be written means
//!   nothing is disclosed.
//! - Listings and search hits are recorded by [`disclose::list`] and
//!   [`disclose::search`] themselves.
//! - Approvals, refusals, denials and proposals are access decisions
//!   ([`disclose::record_decision`]) carrying the MCP details (action, era,
//!   client) under `extensions.ctx.mcp`.
//!
//! Events carry ids, codes and reasons only, never content.

use serde_json::Value;

use ctx_core::disclose::{self, Decision, Delivery, Sink};
use ctx_core::error::Result;
use ctx_core::evidence::bundle::SignOptions;
use ctx_core::evidence::{Access, BundleEvent};
use ctx_core::load::Repo;

use super::service::{Disclosure, Service};

/// Deliver a bundle that is about to be returned (audit event and receipt, as
/// `ctx resolve --format markdown` records a bundle it prints).
pub fn disclosure(d: &Disclosure, text: &str, started_at: &str) -> Result<()> {
    let delivery = Delivery {
        event: BundleEvent::Resolve,
        format: "markdown",
        started_at,
        sign: SignOptions::default(),
    };
    d.decided.deliver(
        &d.repo.manifest,
        &d.bundle,
        &delivery,
        Some(text.as_bytes()),
        Sink::Stream(Box::new(|| Ok(()))),
    )?;
    Ok(())
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
    disclose::record_decision(
        &repo.manifest,
        Decision {
            who: &svc.who.who,
            access: note.access,
            objects: note.objects,
            outcome: note.outcome,
            reason: note.reason,
            details: Some(("ctx.mcp", note.mcp)),
        },
    )
}
