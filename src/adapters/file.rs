//! `file://` and relative paths: confined to the manifest folder, symlinks included.

use std::io::Read;

use serde_json::Value;

use crate::manifest::Manifest;
use crate::model::Trust;

use super::{digest, AdapterError, AdapterOptions, Loaded};

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    let candidate = if std::path::Path::new(path).is_absolute() {
        std::path::PathBuf::from(path)
    } else {
        m.root.join(path)
    };
    let real = candidate.canonicalize().map_err(|e| {
        if candidate
            .components()
            .any(|c| c == std::path::Component::ParentDir)
        {
            AdapterError::PathTraversal(uri.to_string())
        } else {
            AdapterError::Unavailable {
                uri: uri.to_string(),
                reason: e.to_string(),
            }
        }
    })?;
    if !real.starts_with(&m.root) {
        return Err(AdapterError::PathTraversal(uri.to_string()));
    }
    let f = std::fs::File::open(&real).map_err(|e| AdapterError::Unavailable {
        uri: uri.to_string(),
        reason: e.to_string(),
    })?;
    let mut bytes = Vec::new();
    f.take(opts.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AdapterError::Unavailable {
            uri: uri.to_string(),
            reason: e.to_string(),
        })?;
    if bytes.len() as u64 > opts.max_bytes {
        return Err(AdapterError::Unavailable {
            uri: uri.to_string(),
            reason: format!("larger than {} bytes", opts.max_bytes),
        });
    }
    let d = digest(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| AdapterError::Unavailable {
        uri: uri.to_string(),
        reason: "not UTF-8 text".into(),
    })?;
    let content_type = if path.ends_with(".json") {
        Some("application/json".to_string())
    } else if path.ends_with(".md") {
        Some("text/markdown".to_string())
    } else {
        None
    };
    Ok(Loaded {
        content: Value::String(text),
        content_type,
        digest: d,
        trust: Trust::Trusted,
    })
}
