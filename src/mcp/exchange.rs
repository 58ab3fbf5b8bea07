//! The seam to the Context Layer exchange (seed 000): scoped requests and
//! memory-update proposals.
//!
//! The server talks to an [`Exchange`]; [`LocalExchange`] is the interim
//! implementation built on the resolver, until the library's exchange
//! (request → decision → approval → signed bundle → receipt; proposals) lands
//! and implements this trait instead:
//! - a *decision* is the resolver's answer for the requester, narrowed to the
//!   requested selectors (nothing outside them, nothing the requester could not
//!   resolve itself), with the purpose as the task; sensitive and critical
//!   objects are flagged for approval by the server's gate;
//! - *issuing* records the disclosure exactly as `ctx resolve` does (audit
//!   event, receipt when the manifest asks) and renders the bundle;
//! - a *proposal* goes into the library's review queue
//!   (`ctx_core::proposals::local`, `.ctx/proposals/`): no object changes
//!   until a person reviews it with `ctx proposals`.

use ctx_core::error::Result;

use super::evidence;
use super::service::{Disclosure, Query, Service};
use ctx_core::personal::Tier;

/// An agent-written value waiting for review.
#[derive(Debug, Clone)]
pub struct ProposalDraft {
    pub target: String,
    pub value: String,
    pub tier: Option<Tier>,
    /// Why this is a proposal and not a write.
    pub reason: String,
    pub client: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ProposalRecord {
    pub proposal_id: String,
    /// Where it is kept, relative to the repository root.
    pub path: String,
    pub status: &'static str,
}

/// What the MCP server needs from the Context Layer.
pub trait Exchange: Send + Sync {
    /// Which implementation answers (reported by `context_status`).
    fn name(&self) -> &'static str;
    /// Record the disclosure and render what leaves. Called only after approval
    /// (when one was needed); a required record that fails means nothing leaves.
    fn issue(
        &self,
        svc: &Service,
        disclosure: &Disclosure,
        query: &Query,
        started_at: &str,
    ) -> Result<String>;
    /// Record a memory-update proposal (never a direct write).
    fn propose(&self, svc: &Service, draft: &ProposalDraft) -> Result<ProposalRecord>;
}

/// The interim exchange over the resolver (see the module comment).
pub struct LocalExchange;

impl Exchange for LocalExchange {
    fn name(&self) -> &'static str {
        "ctx-local-interim (resolver-backed; proposals pending under .ctx/proposals/)"
    }

    fn issue(
        &self,
        _svc: &Service,
        disclosure: &Disclosure,
        query: &Query,
        started_at: &str,
    ) -> Result<String> {
        let text = disclosure.markdown();
        let _ = query;
        evidence::disclosure(disclosure, &text, started_at)?;
        Ok(text)
    }

    fn propose(&self, svc: &Service, draft: &ProposalDraft) -> Result<ProposalRecord> {
        // The library's review queue stores it; `ctx proposals` reviews it.
        let (repo, consumer) = svc.load()?;
        let stored = ctx_core::proposals::local::submit(
            &repo,
            &ctx_core::proposals::local::Draft {
                target: draft.target.clone(),
                value: draft.value.clone(),
                sensitivity: draft.tier.map(|t| t.as_str().to_string()),
                classification: draft.tier.map(|t| t.classification().as_str().to_string()),
                proposer: consumer,
                via: "mcp".into(),
                client: draft.client.clone(),
                reason: draft.reason.clone(),
            },
        )?;
        Ok(ProposalRecord {
            proposal_id: stored.id,
            path: stored.rel,
            status: "pending_validation",
        })
    }
}
