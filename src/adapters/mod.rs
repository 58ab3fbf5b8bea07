//! Content adapters: where `content_uri` is read from. Adapters run only for
//! objects that passed authorization; what they return is data, never instruction,
//! and they never return empty content for something they could not read.

pub mod file;

use std::time::Duration;

use serde_json::Value;

use crate::diag::Code;
use crate::manifest::Manifest;
use crate::model::Trust;

/// Network and size policy for one run.
#[derive(Debug, Clone)]
pub struct AdapterOptions {
    /// `--offline`: never reach the network.
    pub offline: bool,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl Default for AdapterOptions {
    fn default() -> Self {
        AdapterOptions {
            offline: false,
            timeout: Duration::from_secs(10),
            max_bytes: 5 * 1024 * 1024,
        }
    }
}

/// What an adapter read.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub content: Value,
    pub content_type: Option<String>,
    /// `sha256:<hex>` of the bytes read.
    pub digest: String,
    /// Trust the adapter asserts for what it returned (remote content is untrusted).
    pub trust: Trust,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    #[error("no adapter handles the URI scheme `{0}` (built in: file, http, https, git, sqlite)")]
    UnknownScheme(String),
    #[error("`{0}` resolves outside the repository folder")]
    PathTraversal(String),
    #[error("`{uri}` is unavailable: {reason}")]
    Unavailable { uri: String, reason: String },
    #[error("`{0}` needs the network, and this run is --offline")]
    Offline(String),
    #[error("`{0}` needs remote fetching, which this repository has not enabled (set `adapters.{1}.enabled: true` in the manifest)")]
    RemoteDisabled(String, String),
    #[error("`{uri}` content digest mismatch: declared {expected}, read {actual}")]
    DigestMismatch {
        uri: String,
        expected: String,
        actual: String,
    },
}

impl AdapterError {
    pub fn code(&self) -> Code {
        match self {
            AdapterError::UnknownScheme(_) => Code::UnknownScheme,
            AdapterError::PathTraversal(_) => Code::PathTraversal,
            _ => Code::SourceUnavailable,
        }
    }
}

/// The scheme of a URI, or None for a plain relative path.
pub fn scheme(uri: &str) -> Option<&str> {
    let i = uri.find("://")?;
    let s = &uri[..i];
    (!s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
    .then_some(s)
}

/// The sha256 digest of bytes, `sha256:<hex>`.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Is remote fetching enabled for `scheme` in the manifest (`adapters.<scheme>.enabled: true`)?
pub fn remote_enabled(m: &Manifest, scheme: &str) -> bool {
    m.raw
        .get("adapters")
        .and_then(|a| a.get(scheme))
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Read the content a URI names.
pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    match scheme(uri) {
        None | Some("file") => file::load(uri, m, opts),
        Some(s @ ("http" | "https")) => {
            if opts.offline {
                return Err(AdapterError::Offline(uri.to_string()));
            }
            if !remote_enabled(m, s) {
                return Err(AdapterError::RemoteDisabled(uri.to_string(), s.to_string()));
            }
            Err(AdapterError::Unavailable {
                uri: uri.to_string(),
                reason: "this build of ctx has no HTTP client".into(),
            })
        }
        Some(other) => Err(AdapterError::UnknownScheme(other.to_string())),
    }
}
