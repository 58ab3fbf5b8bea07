//! A delegated-context request answered: `atmem.delegated-context-request.v1`
//! in, a signed `atmem.delegated-context-provider.v1` result out. What the
//! transport hands over has already been authenticated
//! ([`crate::provider::request_auth`]); this is the provider logic behind it.
//!
//! The answer is the library's one disclosure operation ([`crate::disclose`])
//! for the configured consumer at an agent's door, with the request's query as
//! the task: objects that error-level findings concern and approval-gated
//! (confidential, restricted) objects are withheld, since nobody at this door
//! can fix the repository or approve. The rendering is delivered with a signed
//! receipt (and the manifest's audit events), and the envelope binds exactly
//! that rendering, or a withholding decision citing the same receipt, to the
//! host's turn. The request's binding is returned unchanged; its deadline is a
//! hard bound.

use std::path::PathBuf;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

use super::bundle::SignOptions;
use super::envelope::{self, EnvelopeRequest, Rendering};
use super::BundleEvent;
use crate::bundle::render;
use crate::disclose::{self, Ask, Delivery, Release, Sink};
use crate::error::Error;
use crate::provider::{Binding, Limits, ProviderRef, WithholdReason};
use crate::view::Who;

/// The request's `contract_id`.
pub const REQUEST_CONTRACT_ID: &str = "atmem.delegated-context-request.v1";
const MAX_QUERY_CHARS: usize = 100_000;
const REQUEST_FIELDS: [&str; 6] = [
    "binding",
    "contract_id",
    "deadline",
    "max_context_bytes",
    "query",
    "query_sha256",
];

/// A parsed, checked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    pub binding: Binding,
    pub query: String,
    pub max_context_bytes: u64,
    pub deadline: DateTime<Utc>,
}

/// Parse a request body strictly: duplicate keys, unknown or missing fields,
/// a query whose digest does not match and out-of-range limits are refused.
pub fn parse_request(bytes: &[u8]) -> Result<ContextRequest, String> {
    let v = crate::canonical::parse_strict(bytes).map_err(|e| e.to_string())?;
    let obj = v.as_object().ok_or("expected a JSON object")?;
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != REQUEST_FIELDS {
        return Err(format!(
            "expected exactly the fields {}, found {}",
            REQUEST_FIELDS.join(", "),
            keys.join(", ")
        ));
    }
    if obj["contract_id"] != REQUEST_CONTRACT_ID {
        return Err(format!("contract_id: expected {REQUEST_CONTRACT_ID:?}"));
    }
    let binding = Binding::from_value(obj["binding"].clone()).map_err(|e| e.to_string())?;
    let query = obj["query"]
        .as_str()
        .filter(|q| !q.is_empty() && q.chars().count() <= MAX_QUERY_CHARS)
        .ok_or("query: expected a string of 1-100000 characters")?;
    if obj["query_sha256"].as_str() != Some(&crate::canonical::sha256_hex(query.as_bytes())) {
        return Err("query_sha256: not the SHA-256 of the query".into());
    }
    let max_context_bytes = obj["max_context_bytes"]
        .as_u64()
        .filter(|n| (1..=Limits::REFERENCE.max_context_bytes()).contains(n))
        .ok_or("max_context_bytes: expected an integer from 1 to 262144")?;
    let deadline = obj["deadline"]
        .as_str()
        .filter(|d| d.ends_with('Z'))
        .and_then(crate::time::parse_timestamp)
        .ok_or("deadline: expected an RFC 3339 UTC time ending in Z")?;
    Ok(ContextRequest {
        binding,
        query: query.to_string(),
        max_context_bytes,
        deadline,
    })
}

/// Host scopes this provider answers for (empty: any), as in a trust registration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub workspaces: Vec<String>,
    pub agents: Vec<String>,
    pub users: Vec<String>,
}

impl Scope {
    fn admits(&self, b: &Binding) -> Result<(), String> {
        for (what, list, id) in [
            ("workspace_id", &self.workspaces, &b.workspace_id),
            ("agent_id", &self.agents, &b.agent_id),
            ("user_id", &self.users, &b.user_id),
        ] {
            if !list.is_empty() && !list.contains(id) {
                return Err(format!("{what} {id:?} is not served here"));
            }
        }
        Ok(())
    }
}

/// What ctx answers as, and for whom.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// How the repository is found (`-C`) and loaded.
    pub dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub load: crate::load::LoadOptions,
    /// The ctx consumer whose context is served.
    pub who: Who,
    pub offline: bool,
    pub scope: Scope,
    pub provider: ProviderRef,
    /// Signs the receipts and the envelopes (declared in the manifest).
    pub key_id: String,
    pub rendering: Rendering,
    pub lifetime_secs: i64,
}

/// Why a request got no envelope.
#[derive(Debug)]
pub enum Refusal {
    /// The request's deadline has passed.
    DeadlineElapsed,
    /// The binding is outside [`Scope`].
    NotServed(String),
    /// The repository, the policy gate, the key or the evidence failed.
    Unavailable(Error),
}

/// A signed answer and what may be logged about it (no content).
#[derive(Debug, Clone)]
pub struct Answered {
    pub envelope: Value,
    pub withheld: Option<String>,
    pub included: usize,
    pub receipt_id: String,
    /// For the operator's log only (never the host's): ids withheld because
    /// error-level findings concern them.
    pub withheld_for_findings: Vec<String>,
    /// How many confidential or restricted objects were withheld for approval.
    pub withheld_for_approval: usize,
}

/// Withholding codes ctx signs.
pub const NO_RELEVANT_CONTEXT: &str = "NO_RELEVANT_CONTEXT";
pub const CONTEXT_TOO_LARGE: &str = "CONTEXT_TOO_LARGE";

/// Answer one authenticated, parsed request ([`parse_request`]) at `now`.
pub fn answer(
    cfg: &ProviderConfig,
    req: &ContextRequest,
    now: DateTime<Utc>,
) -> Result<Answered, Refusal> {
    if req.deadline <= now {
        return Err(Refusal::DeadlineElapsed);
    }
    cfg.scope.admits(&req.binding).map_err(Refusal::NotServed)?;
    let now = now.trunc_subsecs(0);
    let stamp = crate::time::format(&now);
    let unavailable = Refusal::Unavailable;
    let ask = ask(cfg, req, now);
    let mut repo =
        disclose::open(cfg.dir.as_deref(), &cfg.cwd, &cfg.load, &ask).map_err(unavailable)?;
    let mut disclosure = disclose::resolve(&repo, &ask).map_err(unavailable)?;
    let compiled = disclosure.compile_releasing(&mut repo, &stamp);
    let (text, format) = match cfg.rendering {
        Rendering::Markdown => (render::markdown(&compiled), "markdown"),
        Rendering::Json => (render::json(&compiled), "json"),
    };
    let included = disclosure.resolution.included.len();
    let withhold = if included == 0 {
        Some(NO_RELEVANT_CONTEXT)
    } else if text.len() as u64 > req.max_context_bytes {
        Some(CONTEXT_TOO_LARGE)
    } else {
        None
    };
    let delivery = Delivery {
        event: BundleEvent::Resolve,
        format,
        started_at: &stamp,
        sign: SignOptions {
            sign: true,
            key: Some(cfg.key_id.clone()),
            ..SignOptions::default()
        },
    };
    // The envelope is the product; it is signed right after the evidence.
    let written = disclosure
        .deliver(
            &repo.manifest,
            &compiled,
            &delivery,
            Some(text.as_bytes()),
            Sink::Stream(Box::new(|| Ok(()))),
        )
        .map_err(unavailable)?
        .ok_or_else(|| Refusal::Unavailable(Error::Invalid("no receipt was written".into())))?;
    let envelope = envelope::sign_bundle(
        EnvelopeRequest {
            manifest: Some(&repo.manifest),
            binding: req.binding.clone(),
            bundle: None,
            rendering: cfg.rendering,
            withhold: withhold.map(|code| WithholdReason {
                code: code.to_string(),
                retryable: false,
            }),
            receipt: Some(&written.path),
            provider: cfg.provider.clone(),
            source_refs: Vec::new(),
            lifetime_secs: cfg.lifetime_secs,
            created_at: Some(now),
            key_id: &cfg.key_id,
        },
        Some(&compiled),
    )
    .map_err(unavailable)?;
    Ok(Answered {
        envelope,
        withheld: withhold.map(str::to_string),
        included,
        receipt_id: written.id,
        withheld_for_findings: disclosure.withheld_for_findings,
        withheld_for_approval: disclosure.withheld_for_approval.len(),
    })
}

/// What this door asks the disclosure operation: an agent's door (objects that
/// findings concern are withheld), the query as the task, and no approval-gated
/// content, since the host has no way to ask the user.
pub fn ask(cfg: &ProviderConfig, req: &ContextRequest, now: DateTime<Utc>) -> Ask {
    let mut ask = Ask::agent(cfg.who.clone(), now);
    ask.task = Some(req.query.clone());
    ask.offline = cfg.offline;
    ask.release = Release::WithoutApproval(
        "needs the user's approval, which a delegated host cannot ask for".into(),
    );
    ask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(over: &[(&str, Value)]) -> Vec<u8> {
        let q = "refunds";
        let mut v = serde_json::json!({
            "contract_id": REQUEST_CONTRACT_ID,
            "binding": {"run_id":"r","turn_id":"t","session_id":"s","agent_id":"a","user_id":"u","workspace_id":"w"},
            "query": q,
            "query_sha256": crate::canonical::sha256_hex(q.as_bytes()),
            "max_context_bytes": 4096,
            "deadline": "2030-01-01T00:00:00Z",
        });
        for (k, x) in over {
            v[*k] = x.clone();
        }
        v.to_string().into_bytes()
    }

    #[test]
    fn requests_are_parsed_strictly() {
        let ok = parse_request(&body(&[])).unwrap();
        assert_eq!((ok.query.as_str(), ok.max_context_bytes), ("refunds", 4096));
        for (k, v) in [
            ("query_sha256", Value::from("0".repeat(64))),
            ("max_context_bytes", Value::from(262_145)),
            ("deadline", Value::from("2030-01-01T00:00:00+00:00")),
            ("contract_id", Value::from("other")),
            ("extra", Value::from(1)),
            ("query", Value::from("")),
        ] {
            assert!(parse_request(&body(&[(k, v)])).is_err(), "{k}");
        }
        let dup = br#"{"query":"a","query":"b"}"#;
        assert!(parse_request(dup).unwrap_err().contains("duplicate"));
        let mut b: Value = serde_json::from_slice(&body(&[])).unwrap();
        b["binding"]["turn_id"] = Value::from(" padded");
        assert!(parse_request(b.to_string().as_bytes()).is_err());
    }

    #[test]
    fn scope_lists_narrow_who_is_served() {
        let b = parse_request(&body(&[])).unwrap().binding;
        assert!(Scope::default().admits(&b).is_ok());
        let s = Scope {
            workspaces: vec!["w".into()],
            users: vec!["other".into()],
            ..Scope::default()
        };
        assert!(s.admits(&b).unwrap_err().contains("user_id"));
    }
}
