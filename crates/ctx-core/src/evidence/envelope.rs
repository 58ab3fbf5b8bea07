//! A delegated-provider envelope for a signed bundle: the bundle's exact
//! rendering (or a withholding decision) bound to one host turn, citing the
//! ctx receipt that speaks for the bundle. Composes the receipt store
//! ([`crate::receipt::query`]) with the provider contract
//! ([`crate::provider::sign_envelope`]).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::bundle::render;
use crate::canonical;
use crate::error::{Error, Result};
use crate::keys;
use crate::manifest::Manifest;
use crate::provider::{
    self, Binding, Content, EnvelopeInput, ProviderRef, ReceiptRef, WithholdReason,
};
use crate::receipt::{self, query};

/// Which rendering of the bundle is the exact context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    Markdown,
    Json,
}

/// Everything an envelope needs, as plain values.
#[derive(Debug, Clone)]
pub struct EnvelopeRequest<'a> {
    /// The repository, when there is one (its store and keys are used).
    pub manifest: Option<&'a Manifest>,
    pub binding: Binding,
    /// The bundle file to inject (required unless withholding).
    pub bundle: Option<&'a Path>,
    pub rendering: Rendering,
    pub withhold: Option<WithholdReason>,
    /// The receipt to cite (default: the bundle's current receipt).
    pub receipt: Option<&'a Path>,
    pub provider: ProviderRef,
    pub source_refs: Vec<String>,
    pub lifetime_secs: i64,
    /// Issue time (default now).
    pub created_at: Option<DateTime<Utc>>,
    /// Signing key id (from the user's key folder).
    pub key_id: &'a str,
}

/// Read an intact bundle: strict JSON whose digest and id recompute.
pub fn read_bundle(path: &Path) -> Result<Value> {
    let (_, b) = receipt::read_json(path)?;
    receipt::check_bundle(&b)
        .map_err(|e| Error::Invalid(format!("{}: not an intact bundle: {e}", path.display())))?;
    Ok(b)
}

/// Build and sign the envelope.
pub fn sign(req: EnvelopeRequest<'_>) -> Result<Value> {
    let bundle = req.bundle.map(read_bundle).transpose()?;
    sign_bundle(req, bundle.as_ref())
}

/// [`sign`] for a bundle already in memory (`req.bundle` is not read).
pub fn sign_bundle(req: EnvelopeRequest<'_>, bundle: Option<&Value>) -> Result<Value> {
    let cited = query::cited(query::CiteOptions {
        receipt_file: req.receipt,
        bundle,
        manifest: req.manifest,
    })?;
    let content = match (req.withhold, bundle) {
        (Some(reason), _) => Content::Withhold(reason),
        (None, Some(b)) => Content::Inject(match req.rendering {
            Rendering::Markdown => render::markdown(b),
            Rendering::Json => render::json(b),
        }),
        (None, None) => {
            return Err(Error::Usage(
                "give --bundle FILE to inject, or --withhold CODE".into(),
            ))
        }
    };
    let receipt_ref = ReceiptRef {
        id: cited["id"].as_str().unwrap_or("").to_string(),
        contract_id: receipt::DOMAIN.to_string(),
        sha256: canonical::sha256_hex(
            &canonical::jcs(&cited).map_err(|e| Error::Invalid(e.to_string()))?,
        ),
    };
    let mut input = EnvelopeInput::new(req.provider, req.binding, content, receipt_ref);
    input.source_refs = req.source_refs;
    input.lifetime_secs = req.lifetime_secs;
    if let Some(t) = req.created_at {
        input.created_at = t;
    }
    let key = keys::load(req.key_id, req.manifest.map(|m| m.root.as_path()))?;
    provider::sign_envelope(&input, &key, req.key_id).map_err(|e| Error::Invalid(e.to_string()))
}
