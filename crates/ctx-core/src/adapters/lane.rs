//! Content sources stay in their lane. A `content_uri` is a way to keep large or
//! generated content outside an object's file, not a way around another object's
//! permissions or the repository's boundaries. A local source may not be:
//! - a file the loader reads as an object (that object has its own permissions);
//! - a file `.gitignore` excludes (`.env`, local databases: not shared context);
//! - anything inside git's own folder (`.git/`: config, hooks, every old version).
//!
//! And whatever any adapter returns is scanned for credentials, like inline content.

use std::path::{Path, PathBuf};

use crate::fs::{confine, is_gitignored, RelPath};
use crate::manifest::Manifest;

use super::{AdapterError, Loaded};

/// Resolve a local source path (relative to the manifest folder, or absolute
/// below it) to its real path, refusing anything outside the lane.
pub(crate) fn local_path(m: &Manifest, uri: &str, path: &str) -> Result<PathBuf, AdapterError> {
    let real = confine::resolve_inside(&m.root, path).map_err(|e| match e {
        confine::Escape::Outside => AdapterError::PathTraversal(uri.to_string()),
        confine::Escape::Unavailable(e) => AdapterError::unavailable(uri, e.to_string()),
    })?;
    let written = if Path::new(path).is_absolute() {
        RelPath::strip(&m.root, Path::new(path))
    } else {
        RelPath::parse(path).ok()
    };
    // The path as written and the file it resolves to (through links) both count.
    let rels: Vec<RelPath> = written
        .into_iter()
        .chain(RelPath::strip(&m.root, &real))
        .collect();
    let refuse = |reason: String| AdapterError::OutOfLane {
        uri: uri.to_string(),
        reason,
    };
    for rel in &rels {
        if confine::in_git_dir(rel) {
            return Err(refuse(format!(
                "`{rel}` is inside git's own folder (.git/), which is never context"
            )));
        }
    }
    for rel in &rels {
        if is_gitignored(&rel.to_path(&m.root), false) {
            return Err(refuse(format!(
                "`{rel}` is excluded by .gitignore, so it is not part of the shared repository"
            )));
        }
    }
    for rel in &rels {
        if loaded_as_object(m, rel) {
            return Err(refuse(format!(
                "`{rel}` is itself loaded as an object, with its own permissions; \
                 reference that object instead of reading its file"
            )));
        }
    }
    Ok(real)
}

/// Does the loader read `rel` as an object? (Hidden files are skipped by the walk.)
pub(crate) fn loaded_as_object(m: &Manifest, rel: &RelPath) -> bool {
    m.members.entry_of(rel).is_some()
        || (!rel.is_hidden() && m.members.collection_of(rel).is_some())
}

/// Refuse content that holds a credential: it is withheld, never served, and the
/// error names the kind and line only, never the secret.
pub(crate) fn scan_secrets(uri: &str, loaded: &Loaded) -> Result<(), AdapterError> {
    let Some(text) = loaded.content.as_str() else {
        return Ok(());
    };
    match crate::load::secrets::scan(text, uri, "").into_iter().next() {
        None => Ok(()),
        Some(d) => Err(AdapterError::SecretDetected {
            uri: uri.to_string(),
            what: d.message,
            line: d.line.unwrap_or(1),
        }),
    }
}
