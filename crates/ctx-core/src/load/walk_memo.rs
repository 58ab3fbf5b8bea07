//! A walk remembered (git's "untracked cache", in short): listing a large
//! repository's folders and matching every entry against its ignore rules and
//! collection globs costs more than stat-ing its files. A walk's member list is
//! kept beside the parse cache and trusted again only while nothing that decided
//! it has changed:
//! - the manifest (its collections), by stamp;
//! - every folder the walk listed, by stamp (adding, removing or renaming an entry
//!   changes its folder's mtime and ctime);
//! - every ignore file the walk's rules could come from: present ones by stamp, and
//!   in the folders above each collection (which are not listed) absent ones too,
//!   with whether each of those folders holds a `.git` (a repository boundary);
//! - the ctx build and schemas (the parse cache's salt).
//!
//! A walk that found anything to report, met a symbolic link (its target can change
//! without any listed folder changing), or saw a stamp too close to its own start
//! (the racy case, [`Stamp::racy`]) is not remembered. Like the parse cache, the memo
//! is never authoritative: a missing, damaged or stale one means walking again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

use super::cache::Stamp;
use crate::manifest::Manifest;

const MAGIC: &[u8; 16] = b"ctx-walk-memo\0\0\x03";

/// The ignore files the walk honours in each folder (`.gitignore` and `.ignore`;
/// git's global and info excludes are off).
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What the collections' walk found: members in their sorted order (the collection's
/// position in the manifest, the position of its id base in `id_bases`, relative
/// path), and the object files under a collection's folder that its globs do not match.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Found {
    pub members: Vec<(u32, u32, String)>,
    pub id_bases: Vec<String>,
    pub candidates: Vec<String>,
}

/// A remembered walk.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Memo {
    manifest: Stamp,
    dirs: Vec<(String, Stamp)>,
    ignores: Vec<(String, Option<Stamp>)>,
    /// Whether each folder above a collection's folder holds a `.git`: a repository
    /// boundary decides which ignore files above apply. Presence only (git changes
    /// its folder's stamp on every command).
    repos: Vec<(String, bool)>,
    /// How many collections the manifest compiled to.
    collections: usize,
    pub found: Found,
}

/// What a walk records so that it can be remembered.
#[derive(Debug, Default)]
pub(crate) struct Trail {
    /// Folders listed (absolute).
    pub dirs: Vec<PathBuf>,
    /// The walk met a symbolic link or an entry of unknown type: it is not remembered
    /// (nor is a walk with findings, or with a path that is not UTF-8).
    pub unfit: bool,
}

/// Where the memo of the repository `m` lives (beside its parse cache).
pub(crate) fn location(m: &Manifest) -> Option<PathBuf> {
    super::cache::location::file_named(m, "walk-memo")
}

fn stamp_any(p: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(p)
        .ok()
        .as_ref()
        .and_then(Stamp::of_any)
}

fn ignore_stamp(p: &Path) -> Option<Stamp> {
    std::fs::metadata(p).ok().as_ref().and_then(Stamp::of_any)
}

impl Memo {
    /// Read the memo at `path` and keep it only if it still describes the walk of `m`.
    pub fn load(path: &Path, m: &Manifest) -> Option<Memo> {
        let bytes = std::fs::read(path).ok()?;
        let body = bytes.strip_prefix(MAGIC.as_slice())?;
        let (salt, body) = body.split_at_checked(32)?;
        let (sum, payload) = body.split_at_checked(16)?;
        if salt != super::cache::salt().as_slice()
            || sum != xxh3_128(payload).to_le_bytes().as_slice()
        {
            return None;
        }
        let memo: Memo = postcard::from_bytes(payload).ok()?;
        let current = memo.collections == m.members.collections.len()
            && Stamp::read(&m.path) == Some(memo.manifest)
            && memo
                .dirs
                .iter()
                .all(|(d, s)| stamp_any(Path::new(d)) == Some(*s))
            && memo
                .ignores
                .iter()
                .all(|(f, s)| ignore_stamp(Path::new(f)) == *s)
            && memo
                .repos
                .iter()
                .all(|(g, present)| Path::new(g).symlink_metadata().is_ok() == *present);
        current.then_some(memo)
    }

    /// Remember a walk of `m` that started at `snapshot_ns`, if it is fit to be.
    pub fn remember(
        m: &Manifest,
        bases: &[PathBuf],
        trails: &[Trail],
        found: Found,
        snapshot_ns: i64,
    ) -> Option<Memo> {
        if trails.iter().any(|t| t.unfit) {
            return None;
        }
        let manifest = Stamp::read(&m.path)?;
        let mut dirs = Vec::new();
        let mut ignores = Vec::new();
        let mut stamps = vec![manifest];
        for d in trails.iter().flat_map(|t| &t.dirs) {
            let s = stamp_any(d)?;
            stamps.push(s);
            dirs.push((d.to_str()?.to_string(), s));
            // Absent ignore files in a listed folder: its own stamp covers their arrival.
            for name in IGNORE_FILES {
                let f = d.join(name);
                if let Some(s) = ignore_stamp(&f) {
                    stamps.push(s);
                    ignores.push((f.to_str()?.to_string(), Some(s)));
                }
            }
        }
        // Folders above each collection's folder are not listed: every ignore file
        // name is checked there, absent or not.
        let mut above: Vec<&Path> = bases.iter().flat_map(|b| b.ancestors().skip(1)).collect();
        above.sort_unstable();
        above.dedup();
        let mut repos = Vec::with_capacity(above.len());
        for d in above {
            for name in IGNORE_FILES {
                let f = d.join(name);
                let s = ignore_stamp(&f);
                stamps.extend(s);
                ignores.push((f.to_str()?.to_string(), s));
            }
            let git = d.join(".git");
            repos.push((git.to_str()?.to_string(), git.symlink_metadata().is_ok()));
        }
        if stamps.iter().any(|s| s.racy(snapshot_ns)) {
            return None;
        }
        dirs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        dirs.dedup_by(|a, b| a.0 == b.0);
        ignores.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        ignores.dedup_by(|a, b| a.0 == b.0);
        Some(Memo {
            manifest,
            dirs,
            ignores,
            repos,
            collections: m.members.collections.len(),
            found,
        })
    }

    /// Write the memo atomically (a failure only means walking again next time).
    pub fn save(&self, path: &Path) {
        let Ok(payload) = postcard::to_stdvec(self) else {
            return;
        };
        let mut bytes = Vec::with_capacity(MAGIC.len() + 48 + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(super::cache::salt());
        bytes.extend_from_slice(&xxh3_128(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        if let Some(dir) = path.parent() {
            if super::cache::location::prepare(dir).is_err() {
                return;
            }
        }
        let _ = crate::fs::write_atomic(
            path,
            &bytes,
            crate::fs::Mode::RepositoryDefault,
            crate::fs::Existing::Replace,
        );
    }
}

#[cfg(test)]
#[path = "walk_memo_tests.rs"]
mod tests;
