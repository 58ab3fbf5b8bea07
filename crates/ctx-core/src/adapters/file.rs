//! `file://` and relative paths: confined to the manifest folder (symlinks
//! included), kept in their lane (not another object's file, not ignored, not `.git/`), regular
//! files only, bounded.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fs::{confine, ReadError};
use crate::manifest::Manifest;
use crate::model::Trust;

use super::{digest, AdapterError, AdapterOptions, Loaded};

/// Resolve `path` (relative to `root`, or absolute) to a real path inside `root`.
/// Refuses anything that leaves it, by `..`, by an absolute path or through a symlink;
/// the check throws rather than clamps. `root` must be canonical.
pub fn resolve_inside(root: &Path, path: &str, uri: &str) -> Result<PathBuf, AdapterError> {
    confine::resolve_inside(root, path).map_err(|e| match e {
        confine::Escape::Outside => AdapterError::PathTraversal(uri.to_string()),
        confine::Escape::Unavailable(e) => AdapterError::unavailable(uri, e.to_string()),
    })
}

/// The real path a local `content_uri` may be read from: inside the manifest folder
/// and in its lane (not another object's file, not ignored, not under `.git/`).
/// Nothing is read; `validate` uses this as a static check.
pub fn resolve_in_lane(m: &Manifest, uri: &str) -> Result<PathBuf, AdapterError> {
    super::lane::local_path(m, uri, local_path(uri))
}

/// The path part of a local URI: `file://x`, `./x` or `x`.
pub fn local_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let path = local_path(uri);
    let real = resolve_in_lane(m, uri)?;
    let bytes = crate::fs::read_regular(&real, opts.max_bytes).map_err(|e| read_error(uri, e))?;
    text(
        uri,
        bytes,
        content_type_for(path),
        super::adapter_trust(m, "file", Trust::Trusted),
    )
}

/// What a local adapter read, as text content with the digest of its bytes.
pub(crate) fn text(
    uri: &str,
    bytes: Vec<u8>,
    content_type: Option<String>,
    trust: Trust,
) -> Result<Loaded, AdapterError> {
    let d = digest(&bytes);
    let text =
        String::from_utf8(bytes).map_err(|_| AdapterError::unavailable(uri, "not UTF-8 text"))?;
    Ok(Loaded {
        content: Value::String(text),
        content_type,
        digest: d,
        trust,
    })
}

/// An adapter error for a local read that did not happen.
pub(crate) fn read_error(uri: &str, e: ReadError) -> AdapterError {
    match e {
        ReadError::TooLarge { limit, .. } | ReadError::Grew(limit) => {
            AdapterError::unavailable(uri, format!("larger than {limit} bytes"))
        }
        other => AdapterError::unavailable(uri, other.to_string()),
    }
}

/// A media type guessed from a file name, when the name says enough.
pub fn content_type_for(path: &str) -> Option<String> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    let t = match ext.as_str() {
        "json" => "application/json",
        "md" | "markdown" => "text/markdown",
        "yaml" | "yml" => "application/yaml",
        "txt" => "text/plain",
        _ => return None,
    };
    Some(t.to_string())
}
