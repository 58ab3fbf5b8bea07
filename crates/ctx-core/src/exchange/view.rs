//! The resolver adapter: the ONE place the exchange asks what a consumer may
//! obtain. [`authorized_view`] asks the library's one disclosure operation
//! ([`crate::disclose::resolve`], which passes the policy gate
//! [`crate::manifest::roles::require_sound`], names the consumer and withholds
//! what error-level findings concern), whose every judgement is the library's
//! authorized view ([`crate::view::View`]). [`View::disclose`] then
//! compiles the disclosed part exactly as `ctx bundle` would. So a Context
//! Layer bundle never holds more than `ctx resolve` gives the same consumer:
//! authorized, in scope, current, redacted.
//!
//! One deliberate narrowing: the exchange never opens private collections.
//! Envelopes are stored under `.ctx/exchange/` and written to files, and
//! plaintext of an encrypted collection never touches disk, so private objects
//! resolve as unavailable here whatever identity the user holds.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::canon;
use super::error::{ClError, ClResult};
use crate::disclose::{Ask, Private};
use crate::load::Repo;
use crate::model::{Classification, Lifecycle};
use crate::resolve::{self, Consumer, ConsumerKind, Resolution};
use crate::time::Instant;
use crate::view::Who;

/// How the resolver is run for the exchange.
#[derive(Clone, Default)]
pub struct ViewOptions {
    /// Never reach the network for `content_uri` adapters.
    pub offline: bool,
}

/// One object the consumer may obtain, by metadata only.
#[derive(Debug, Clone)]
pub struct Visible {
    pub id: String,
    pub key: String,
    pub kind: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub collection: Option<String>,
    pub classification: Classification,
    pub lifecycle: Lifecycle,
    pub confidence: Option<f64>,
}

/// One disclosed object: the value a claim carries, and its raw provenance
/// (which leaves the repository only as opaque handles).
#[derive(Debug, Clone)]
pub struct Disclosed {
    pub value: Value,
    pub provenance: Vec<String>,
}

/// What a bundle discloses: each object's claim value, and the compiled
/// OpenContext bundle of the same objects (for the audit log).
#[derive(Debug, Clone)]
pub struct Disclosure {
    pub objects: Vec<Disclosed>,
    pub bundle: Value,
}

/// What one consumer may obtain at one instant.
pub struct View {
    pub consumer: Consumer,
    pub at: Instant,
    /// Same order as the resolution's included objects.
    pub objects: Vec<Visible>,
    /// Digest of everything the consumer may obtain (ids, versions, lifecycle,
    /// fields and redacted content) and of the manifest: the repository state
    /// a decision is made on.
    pub digest: String,
    resolution: Resolution,
}

/// Who a requester name stands for (`agent` or `role:<name>`), as the
/// library's view names consumers.
pub fn who_for(requester: &str) -> Who {
    match requester.strip_prefix("role:") {
        Some(r) => Who {
            agent: None,
            roles: vec![r.to_string()],
        },
        None => Who {
            agent: Some(requester.to_string()),
            roles: Vec::new(),
        },
    }
}

/// What the exchange asks the library's disclosure operation for `requester` at
/// `at`: what `ctx resolve --agent A` (or `--role R`) would be given at an agent's
/// door (objects that error-level findings concern are withheld); private
/// collections stay closed (see above).
pub fn ask_for(requester: &str, at: Instant, opts: &ViewOptions) -> Ask {
    let mut ask = Ask::agent(who_for(requester), at);
    ask.offline = opts.offline;
    ask.private = Private::Closed;
    ask
}

/// A library error on the way to a consumer's view, with the profile's code.
fn requester_error(e: crate::error::Error) -> ClError {
    let code = match e {
        crate::error::Error::Usage(_) | crate::error::Error::NotFound(_) => "REQUESTER_UNKNOWN",
        _ => "POLICY_UNAVAILABLE",
    };
    ClError::new(code, e.to_string())
}

/// Run the resolver for `requester` at `at`.
pub fn authorized_view(
    repo: &Repo,
    requester: &str,
    at: Instant,
    opts: &ViewOptions,
) -> ClResult<View> {
    let resolution = crate::disclose::resolve(repo, &ask_for(requester, at, opts))
        .map_err(requester_error)?
        .resolution;
    let consumer = resolution.request.consumer.clone();
    let mut h = Sha256::new();
    h.update(b"ctx-exchange-view/1\0");
    h.update(consumer.kind.as_str().as_bytes());
    h.update(b"\0");
    h.update(consumer.id.as_bytes());
    h.update(b"\0");
    h.update(Sha256::digest(repo.manifest.text.as_bytes()));
    let mut objects = Vec::with_capacity(resolution.included.len());
    for s in &resolution.included {
        let o = &repo.objects[s.index];
        let key = o.key();
        for part in [
            key.as_bytes(),
            s.lifecycle.as_str().as_bytes(),
            o.document().as_bytes(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        let content = s
            .content
            .as_ref()
            .map(canon::canonical_bytes)
            .unwrap_or_default();
        h.update((content.len() as u64).to_le_bytes());
        h.update(&content);
        h.update(s.redacted.join("\n").as_bytes());
        h.update([s.trust.map_or(0, |t| t as u8 + 1)]);
        objects.push(Visible {
            id: o.id.clone(),
            key,
            kind: o.meta.kind.clone(),
            title: o.meta.title.clone(),
            tags: o.meta.tags.clone(),
            collection: o.origin.collection.clone(),
            classification: o.meta.classification,
            lifecycle: s.lifecycle,
            confidence: o.meta.confidence,
        });
    }
    Ok(View {
        consumer,
        at,
        objects,
        digest: format!("sha256:{}", hex::encode(h.finalize())),
        resolution,
    })
}

impl View {
    /// Compile the objects at `positions` exactly as `ctx resolve` would
    /// for this consumer (redacted), in the order given. The compiled
    /// OpenContext bundle comes back too: it is what the repository's audit
    /// log records for the disclosure ([`crate::evidence::Record::Bundle`]).
    pub fn disclose(&self, repo: &Repo, positions: &[usize]) -> Disclosure {
        let r = &self.resolution;
        let included: Vec<resolve::Selected> =
            positions.iter().map(|&p| r.included[p].clone()).collect();
        let ids: Vec<&str> = positions
            .iter()
            .map(|&p| self.objects[p].id.as_str())
            .collect();
        let mut subset = Resolution {
            request: r.request.clone(),
            included,
            excluded: Vec::new(),
            warnings: r
                .warnings
                .iter()
                .filter(|w| w.id.as_deref().is_some_and(|id| ids.contains(&id)))
                .cloned()
                .collect(),
            not_in_scope: 0,
            considered: positions.len(),
            permissions: r.permissions.clone(),
            // The exchange discloses by policy, not by a token budget.
            budget: None,
            ceiling: r.ceiling,
            supersession: r.supersession.clone(),
        };
        let compiled = crate::bundle::compile(repo, &mut subset, "");
        let objects = compiled["objects"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .zip(positions)
            .map(|(o, &p)| {
                let mut provenance = vec![format!("ctx:object:{}", self.objects[p].key)];
                for src in o["sources"].as_array().into_iter().flatten() {
                    if let Some(u) = src["uri"].as_str() {
                        provenance.push(u.to_string());
                    }
                }
                Disclosed {
                    value: minimal(o),
                    provenance,
                }
            })
            .collect();
        Disclosure {
            objects,
            bundle: compiled,
        }
    }

    /// Who the view is for, as the bundle document names it.
    pub fn consumer_label(&self) -> String {
        match self.consumer.kind {
            ConsumerKind::Agent => format!("agent {}", self.consumer.id),
            ConsumerKind::Role => format!("role {}", self.consumer.id),
        }
    }
}

/// The fields of a compiled object that leave the repository in a claim:
/// no sources (they may be paths), no owner, no extensions.
fn minimal(o: Value) -> Value {
    let mut m = Map::new();
    for k in [
        "id",
        "version",
        "type",
        "title",
        "summary",
        "classification",
        "trust",
        "lifecycle",
        "content_type",
        "content",
        "redacted",
    ] {
        if let Some(v) = o.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    if !m.contains_key("trust") {
        m.insert("trust".into(), json!("trusted"));
    }
    Value::Object(m)
}
