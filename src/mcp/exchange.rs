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
//! - a *proposal* is a pending record under `.ctx/proposals/`, written
//!   atomically under the repository lock, never over an existing file; no
//!   object changes until a person reviews it.

use serde_json::{json, Value};

use ctx_core::error::{Error, Result};

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
        let (repo, consumer) = svc.load()?;
        let root = repo.manifest.root.clone();
        let _lock = ctx_core::fs::RepoLock::acquire(&root).map_err(|e| Error::io(&root, &e))?;
        let created_at = ctx_core::evidence::now();
        // The id is the record's digest and `created_at` has whole seconds: two
        // identical proposals in one second would share an id (and the second
        // fail to store). A random component keeps every proposal its own.
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce)
            .map_err(|e| Error::Invalid(format!("no randomness for a proposal id: {e}")))?;
        let mut record = json!({
            "format": "ctx.memory-proposal.v0",
            "status": "pending_validation",
            "target": draft.target,
            "value": draft.value,
            "sensitivity": draft.tier.map(Tier::as_str),
            "classification": draft.tier.map(|t| t.classification().as_str()),
            "written_by": consumer.id,
            "proposer": {"type": consumer.kind.as_str(), "id": consumer.id, "roles": consumer.roles},
            "via": "mcp",
            "client": draft.client,
            "reason": draft.reason,
            "created_at": created_at,
            "namespace": repo.manifest.id,
            "nonce": nonce.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        });
        let digest = ctx_core::jcs::sha256(&record);
        let hexpart = digest.trim_start_matches("sha256:");
        let proposal_id = format!("prop_{}", &hexpart[..24]);
        record["proposal_id"] = json!(proposal_id);
        record["digest"] = Value::from(digest);
        let rel = format!(".ctx/proposals/{proposal_id}.json");
        let path = root.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        }
        let mut bytes = serde_json::to_vec_pretty(&record).expect("serializable");
        bytes.push(b'\n');
        ctx_core::fs::write_atomic(
            &path,
            &bytes,
            // The value may be confidential: readable by its owner only.
            ctx_core::fs::Mode::Private,
            ctx_core::fs::Existing::Refuse,
        )
        .map_err(|e| Error::io(&path, &e))?;
        Ok(ProposalRecord {
            proposal_id,
            path: rel,
            status: "pending_validation",
        })
    }
}
