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

#[cfg(test)]
mod tests {
    use crate::adapters::tests::manifest_in;
    use crate::adapters::{load, AdapterError, AdapterOptions};
    use crate::diag::Code;

    #[test]
    fn local_sources_stay_in_their_lane_and_secrets_are_withheld() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("context/notes")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::create_dir_all(d.join("docs")).unwrap();
        std::fs::write(d.join("context/notes/a.md"), "---\nid: notes.a\n---\nA\n").unwrap();
        std::fs::write(d.join("context/notes/.draft.md"), "draft\n").unwrap();
        std::fs::write(d.join(".gitignore"), "*.local\n").unwrap();
        std::fs::write(d.join("docs/x.local"), "ignored\n").unwrap();
        std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(d.join("docs/ok.md"), "fine\n").unwrap();
        std::fs::write(
            d.join("docs/key.txt"),
            format!("AGE-SECRET-KEY-1{}\n", "Q".repeat(58)),
        )
        .unwrap();
        let m = manifest_in(d, "collections:\n  notes: ./context/notes/**\n");
        let opts = AdapterOptions::default();
        let lane = |uri: &str| match load(uri, &m, &opts) {
            Err(e @ AdapterError::OutOfLane { .. }) => {
                assert_eq!(e.code(), Code::PathTraversal);
                e.to_string()
            }
            other => panic!("{uri}: {other:?}"),
        };
        assert!(lane("context/notes/a.md").contains("loaded as an object"));
        assert!(lane("file://./context/notes/../notes/a.md").contains("loaded as an object"));
        assert!(lane("docs/x.local").contains(".gitignore"));
        assert!(lane(".git/HEAD").contains(".git/"));
        // A hidden file the walk skips is no object.
        assert!(load("context/notes/.draft.md", &m, &opts).is_ok());
        assert!(load("docs/ok.md", &m, &opts).is_ok());
        match load("docs/key.txt", &m, &opts) {
            Err(e @ AdapterError::SecretDetected { .. }) => {
                assert_eq!(e.code(), Code::SecretDetected);
                assert!(!e.to_string().contains("QQQQ"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
