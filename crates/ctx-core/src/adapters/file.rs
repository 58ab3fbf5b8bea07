//! `file://` and relative paths: confined to the manifest folder, symlinks included.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::manifest::Manifest;
use crate::model::Trust;

use super::{digest, AdapterError, AdapterOptions, Loaded};

/// Does `path` (relative to the root) stay inside it, judged on its text alone?
pub fn lexically_inside(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => return false,
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    true
}

/// Resolve `path` (relative to `root`, or absolute) to a real path inside `root`.
/// Refuses anything that leaves it, by `..`, by an absolute path or through a symlink;
/// the check throws rather than clamps. `root` must be canonical.
pub fn resolve_inside(root: &Path, path: &str, uri: &str) -> Result<PathBuf, AdapterError> {
    let p = Path::new(path);
    let candidate = if p.is_absolute() {
        if !p.starts_with(root) {
            return Err(AdapterError::PathTraversal(uri.to_string()));
        }
        p.to_path_buf()
    } else {
        if !lexically_inside(p) {
            return Err(AdapterError::PathTraversal(uri.to_string()));
        }
        root.join(p)
    };
    let real = candidate
        .canonicalize()
        .map_err(|e| AdapterError::unavailable(uri, e.to_string()))?;
    if !real.starts_with(root) {
        return Err(AdapterError::PathTraversal(uri.to_string()));
    }
    Ok(real)
}

/// The path part of a local URI: `file://x`, `./x` or `x`.
pub fn local_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let path = local_path(uri);
    let real = resolve_inside(&m.root, path, uri)?;
    let f =
        std::fs::File::open(&real).map_err(|e| AdapterError::unavailable(uri, e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(opts.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AdapterError::unavailable(uri, e.to_string()))?;
    if bytes.len() as u64 > opts.max_bytes {
        return Err(AdapterError::unavailable(
            uri,
            format!("larger than {} bytes", opts.max_bytes),
        ));
    }
    let d = digest(&bytes);
    let text =
        String::from_utf8(bytes).map_err(|_| AdapterError::unavailable(uri, "not UTF-8 text"))?;
    Ok(Loaded {
        content: Value::String(text),
        content_type: content_type_for(path),
        digest: d,
        trust: super::adapter_trust(m, "file", Trust::Trusted),
    })
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
