//! Repository operations of the exchange: what `ctx request|approve|exchange|
//! receipts|propose|proposals|discover` (and later the MCP and HTTP front
//! ends) call. Each takes a loaded repository ([`Exchange`]), a plain options
//! struct and an instant, and returns a typed result; none prints, none parses
//! arguments. Errors carry the profile's codes.

pub mod action;
pub mod bundles;
pub mod commit;
pub mod credentials;
pub mod decide;
pub mod discover;
pub mod gateway;
pub mod ledger;
pub mod proposals;
pub mod request;
pub mod retention;

use serde_json::{json, Map, Value};

use super::config::{self, ExchangeConfig, Requester};
use super::error::{fail, ClError, ClResult};
use super::local::{self, LocalPolicy};
use super::policy::Policy;
use super::receipts::{self, ReceiptDraft, ReceiptLog};
use super::state::{self, StateDir};
use super::view::{self, View, ViewOptions};
use super::wire::SpecVersion;
use crate::load::Repo;
use crate::time::Instant;

/// A loaded repository with its exchange configuration and state folder.
/// Long-running front ends keep one and reuse it across operations.
pub struct Exchange<'r> {
    pub repo: &'r Repo,
    pub config: ExchangeConfig,
    pub state: StateDir,
    pub view_options: ViewOptions,
    /// Signing keys held in memory, by key id (a long-running server, the
    /// conformance suite). Others are read from the user's key folder. Their
    /// declared purpose is checked either way.
    pub keys: std::collections::BTreeMap<String, crate::signing::SigningKeyPair>,
}

/// A requester's view and policy, computed once and reused by evaluation,
/// approval and issuance (so a decision never reloads what resolve loaded).
pub struct Prepared {
    pub requester: Option<Requester>,
    pub view: Option<View>,
    pub policy: LocalPolicy,
}

impl<'r> Exchange<'r> {
    /// Open the exchange over `repo`. Like every consumer command, it refuses
    /// while the manifest's role set is broken (the library's policy gate).
    pub fn new(repo: &'r Repo, view_options: ViewOptions) -> ClResult<Exchange<'r>> {
        crate::manifest::roles::require_sound(&repo.manifest)
            .map_err(|e| ClError::new("POLICY_UNAVAILABLE", e.to_string()))?;
        Ok(Exchange {
            config: ExchangeConfig::from_manifest(&repo.manifest)?,
            state: StateDir::new(&repo.manifest.root),
            repo,
            view_options,
            keys: Default::default(),
        })
    }

    /// The receipt log (fails closed when it is not configured or not usable).
    pub fn log(&self) -> ClResult<ReceiptLog> {
        state::open_log(&self.repo.manifest, &self.config, &self.state, &self.keys)
    }

    /// The log if an anchor key is configured: `None` means "no store".
    pub fn optional_log(&self) -> Option<ClResult<ReceiptLog>> {
        self.config.anchor_key.as_ref().map(|_| self.log())
    }

    /// View and policy for the requester a request names. A principal that is
    /// not a configured requester gets a policy that grants nothing.
    pub fn prepare(&self, requester_principal: &str, at: Instant) -> ClResult<Prepared> {
        let m = &self.repo.manifest;
        let Some(r) = self.config.requester_for(requester_principal) else {
            let raw = json!({
                "version": self.config.version,
                "issuer": {"id": "urn:cl:policy-engine:local"},
                "allowed_subjects": [config::subject(m)],
                "allowed_requesters": [],
                "allowed_clients": [],
                "allowed_recipients": [],
                "allowed_purpose_codes": [],
                "allowed_tasks": [],
                "allowed_selectors": [],
                "allowed_actions": [],
                "maximum_retention": {"mode": "ephemeral", "max_seconds": 1},
                "require_receipts": true,
                "repository": {"id": m.id, "requester": Value::Null},
            });
            return Ok(Prepared {
                requester: None,
                view: None,
                policy: LocalPolicy {
                    policy: Policy::from_value(&raw)?,
                    selectors: Default::default(),
                },
            });
        };
        let v = view::authorized_view(self.repo, &r.name, at, &self.view_options)?;
        let policy = local::build(m, &self.config, r, &v)?;
        Ok(Prepared {
            requester: Some(r.clone()),
            view: Some(v),
            policy,
        })
    }

    /// Append a receipt; `required` failures are errors, optional ones are skipped
    /// only when no store is configured at all.
    pub fn record(
        &self,
        log: Option<&ReceiptLog>,
        draft: &ReceiptDraft,
        at: Instant,
        version: SpecVersion,
    ) -> ClResult<Option<Value>> {
        let Some(log) = log else {
            return Ok(None);
        };
        let r = receipts::build(draft, at, version)?;
        log.append(&r).map_err(|e| {
            ClError::new(
                "RECEIPT_PERSIST_FAILED",
                format!("the {} receipt could not be made durable ({}: {}); the operation is not reported as done", draft.operation, e.code, e.message),
            )
        })?;
        Ok(Some(r))
    }
}

/// The alias receipts use for a request's subject (the same one its bundle gets).
pub fn alias_of(request: &Value) -> String {
    let core = super::wire::to_core(request).unwrap_or_else(|_| request.clone());
    super::bundle::subject_alias(
        core.get("subject_ref").unwrap_or(&Value::Null),
        core.get("id").unwrap_or(&Value::Null),
        core["recipient"]["principal"].as_str().unwrap_or(""),
    )
}

/// Metadata map from pairs (receipt metadata values are short strings).
pub fn meta(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| {
            (
                k.to_string(),
                Value::from(v.chars().take(512).collect::<String>()),
            )
        })
        .collect()
}

/// The stored request a decision or approval refers to.
pub fn stored_request(ex: &Exchange<'_>, request_ref: &str) -> ClResult<Value> {
    match ex.state.find(state::Kind::Request, request_ref)? {
        Some((_, v)) => Ok(v),
        None => fail(
            "REQUEST_NOT_FOUND",
            format!("request {request_ref} is not stored in {}; evaluate it with `ctx request evaluate` first", ex.state.dir.display()),
        ),
    }
}

/// A principal given on the command line: `agent-name`, `role:name` or a URI.
pub fn principal_arg(s: &str) -> String {
    if s.starts_with("urn:") || s.contains("://") {
        s.to_string()
    } else {
        config::principal(s)
    }
}
