//! Content adapters: where `content_uri` is read from. Adapters run only for
//! objects that passed authorization; what they return is data, never instruction,
//! and they never return empty content for something they could not read.

pub mod file;
pub mod git;
#[cfg(feature = "http")]
pub mod http;
mod lane;
pub mod plugin;
mod process;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::diag::Code;
use crate::manifest::Manifest;
use crate::model::Trust;
use crate::object::ContextObject;

/// Schemes with a built-in adapter (whether or not this build includes it:
/// another scheme is never handed to a plugin).
pub const SCHEMES: [&str; 5] = ["file", "git", "http", "https", "sqlite"];

/// Optional adapters and the cargo feature each needs; a build without the
/// feature refuses the scheme with [`AdapterError::BuiltWithout`].
pub const FEATURES: [(&str, &str, bool); 3] = [
    ("http", "http", cfg!(feature = "http")),
    ("https", "http", cfg!(feature = "http")),
    ("sqlite", "sqlite", cfg!(feature = "sqlite")),
];

/// Network and size policy for one run.
#[derive(Debug, Clone)]
pub struct AdapterOptions {
    /// `--offline`: never reach the network.
    pub offline: bool,
    /// Used when the manifest sets no `adapters.<scheme>.timeout_ms`.
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
    #[error("no adapter handles the URI scheme `{0}` (built in: file, http, https, git, sqlite; any other scheme needs a `ctx-adapter-{0}` plugin on PATH, enabled with `adapters.{0}.enabled: true`)")]
    UnknownScheme(String),
    #[error("`{uri}` needs the `{feature}` adapter, and this ctx was built without it (rebuild with `--features {feature}`, or use a release build)")]
    BuiltWithout { uri: String, feature: String },
    #[error("`{0}` resolves outside the repository folder")]
    PathTraversal(String),
    #[error("`{uri}` is unavailable: {reason}")]
    Unavailable { uri: String, reason: String },
    #[error("`{0}` needs the network, and this run is --offline (run without --offline, or inline the content)")]
    Offline(String),
    #[error("`{0}` needs remote fetching, which this repository has not enabled (set `adapters.{1}.enabled: true` in the manifest)")]
    RemoteDisabled(String, String),
    /// A local source outside its lane: another object's file, an ignored file, `.git/`.
    #[error("`{uri}` may not be read as content: {reason}")]
    OutOfLane { uri: String, reason: String },
    /// The content holds what looks like a credential; it is withheld.
    #[error("`{uri}` is withheld: {what} (line {line} of the content)")]
    SecretDetected {
        uri: String,
        what: String,
        line: u32,
    },
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
            AdapterError::PathTraversal(_) | AdapterError::OutOfLane { .. } => Code::PathTraversal,
            AdapterError::SecretDetected { .. } => Code::SecretDetected,
            _ => Code::SourceUnavailable,
        }
    }

    pub(crate) fn unavailable(uri: &str, reason: impl Into<String>) -> AdapterError {
        AdapterError::Unavailable {
            uri: uri.to_string(),
            reason: reason.into(),
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

/// The sha256 digest of bytes, `sha256:<hex>` (the one digest function).
pub use crate::canonical::digest;

/// `adapters.<scheme>` from the manifest, when it is a mapping.
pub fn config<'m>(m: &'m Manifest, scheme: &str) -> Option<&'m Map<String, Value>> {
    m.raw.get("adapters")?.get(scheme)?.as_object()
}

/// Is remote fetching enabled for `scheme` in the manifest (`adapters.<scheme>.enabled: true`)?
pub fn remote_enabled(m: &Manifest, scheme: &str) -> bool {
    config(m, scheme)
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A local adapter is on unless the manifest says `adapters.<scheme>.enabled: false`.
fn local_enabled(m: &Manifest, scheme: &str, uri: &str) -> Result<(), AdapterError> {
    match config(m, scheme).and_then(|c| c.get("enabled")) {
        Some(Value::Bool(false)) => Err(AdapterError::unavailable(
            uri,
            format!("the manifest disables this adapter (`adapters.{scheme}.enabled: false`)"),
        )),
        _ => Ok(()),
    }
}

/// The time budget for `scheme`: `adapters.<scheme>.timeout_ms`, else the run's default.
pub fn timeout(m: &Manifest, scheme: &str, opts: &AdapterOptions) -> Duration {
    config(m, scheme)
        .and_then(|c| c.get("timeout_ms"))
        .and_then(Value::as_u64)
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(opts.timeout)
}

fn rank(t: Trust) -> u8 {
    match t {
        Trust::Trusted => 2,
        Trust::Verified => 1,
        Trust::Untrusted => 0,
    }
}

/// The more cautious of two trust levels.
pub fn more_cautious(a: Trust, b: Trust) -> Trust {
    if rank(a) <= rank(b) {
        a
    } else {
        b
    }
}

/// The trust an adapter returns: its own default, lowered (never raised) by the
/// operator's `adapters.<scheme>.trust`.
pub fn adapter_trust(m: &Manifest, scheme: &str, default: Trust) -> Trust {
    match config(m, scheme)
        .and_then(|c| c.get("trust"))
        .and_then(Value::as_str)
        .and_then(Trust::parse)
    {
        Some(t) => more_cautious(default, t),
        None => default,
    }
}

/// A scheme this build cannot serve because a cargo feature was left out.
fn built_without(uri: &str, scheme: &str) -> Result<(), AdapterError> {
    match FEATURES.iter().find(|(s, _, _)| *s == scheme) {
        Some((_, feature, false)) => Err(AdapterError::BuiltWithout {
            uri: uri.to_string(),
            feature: (*feature).to_string(),
        }),
        _ => Ok(()),
    }
}

/// Does some adapter claim `scheme` for this manifest: a built-in one, or a
/// plugin the manifest enables? (Static: nothing is looked up or run.)
pub fn claims(m: &Manifest, scheme: &str) -> bool {
    SCHEMES.contains(&scheme) || plugin::enabled(m, scheme)
}

/// Read the content a URI names. Whatever comes back is scanned for credentials
/// like inline content; content that holds one is withheld.
pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let loaded = fetch(uri, m, opts)?;
    lane::scan_secrets(uri, &loaded)?;
    Ok(loaded)
}

fn fetch(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    match scheme(uri) {
        None | Some("file") => file::load(uri, m, opts),
        Some(s @ ("http" | "https")) => {
            built_without(uri, s)?;
            if opts.offline {
                return Err(AdapterError::Offline(uri.to_string()));
            }
            if !remote_enabled(m, s) {
                return Err(AdapterError::RemoteDisabled(uri.to_string(), s.to_string()));
            }
            load_http(uri, m, opts)
        }
        Some("git") => {
            local_enabled(m, "git", uri)?;
            git::load(uri, m, opts)
        }
        Some("sqlite") => {
            built_without(uri, "sqlite")?;
            local_enabled(m, "sqlite", uri)?;
            load_sqlite(uri, m, opts)
        }
        Some(other) => plugin::load(uri, other, m, opts),
    }
}

/// What `doctor` may check of a URI nobody asked to resolve: local adapters
/// read it (offline), a plugin is looked up but never run, and a missing
/// feature is reported. Network and disabled adapters are left to resolution.
pub fn probe(uri: &str, m: &Manifest) -> Result<(), AdapterError> {
    let opts = AdapterOptions {
        offline: true,
        ..AdapterOptions::default()
    };
    match scheme(uri) {
        Some(s) if !SCHEMES.contains(&s) => plugin::probe(uri, s, m).map(drop),
        _ => load(uri, m, &opts).map(drop),
    }
}

#[cfg(feature = "http")]
fn load_http(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    http::load(uri, m, opts)
}

#[cfg(not(feature = "http"))]
fn load_http(uri: &str, _: &Manifest, _: &AdapterOptions) -> Result<Loaded, AdapterError> {
    Err(AdapterError::BuiltWithout {
        uri: uri.to_string(),
        feature: "http".into(),
    })
}

#[cfg(feature = "sqlite")]
fn load_sqlite(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    sqlite::load(uri, m, opts)
}

#[cfg(not(feature = "sqlite"))]
fn load_sqlite(uri: &str, _: &Manifest, _: &AdapterOptions) -> Result<Loaded, AdapterError> {
    Err(AdapterError::BuiltWithout {
        uri: uri.to_string(),
        feature: "sqlite".into(),
    })
}

/// [`load`], then check the bytes against a declared `sha256:<hex>` digest.
pub fn load_checked(
    uri: &str,
    declared: Option<&str>,
    m: &Manifest,
    opts: &AdapterOptions,
) -> Result<Loaded, AdapterError> {
    let loaded = load(uri, m, opts)?;
    if let Some(expected) = declared {
        let well_formed = expected
            .strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !well_formed {
            return Err(AdapterError::unavailable(
                uri,
                format!("the declared digest `{expected}` is not sha256:<64 hex digits>"),
            ));
        }
        if !expected.eq_ignore_ascii_case(&loaded.digest) {
            return Err(AdapterError::DigestMismatch {
                uri: uri.to_string(),
                expected: expected.to_string(),
                actual: loaded.digest,
            });
        }
    }
    Ok(loaded)
}

/// Local forms of one path compare equal: `./a.md`, `a.md`, `file://a.md`.
fn same_uri(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> &str {
        let s = s.strip_prefix("file://").unwrap_or(s);
        s.trim_start_matches("./")
    }
    if scheme(a).is_some_and(|s| s != "file") || scheme(b).is_some_and(|s| s != "file") {
        return a == b;
    }
    norm(a) == norm(b)
}

/// The digest the author declared for an object's `content_uri`: the `digest` of
/// the `sources` entry naming that same URI.
pub fn declared_digest(o: &ContextObject) -> Option<String> {
    let uri = o.meta.content_uri.as_deref()?;
    if o.supplied("sources") {
        return None; // loader-supplied provenance is not a declaration
    }
    match o.field("sources")? {
        Value::Array(list) => list.iter().find_map(|s| {
            let u = s.get("uri")?.as_str()?;
            same_uri(u, uri)
                .then(|| s.get("digest")?.as_str().map(str::to_string))
                .flatten()
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
