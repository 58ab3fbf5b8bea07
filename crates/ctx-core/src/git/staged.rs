//! The staged state of a repository — what `git commit` would record — loaded
//! without copying the work tree: a member whose work-tree copy matches the index
//! is read from disk, one with unstaged changes from its staged blob, and
//! untracked files are left out. The cases this overlay cannot reproduce exactly
//! (an unstaged manifest, ignore file, deletion or symlink; an untracked `context:`
//! entry; a collection whose files are all untracked) are reported so the caller
//! can check the index out into a temporary folder instead.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic};
use crate::load::cache::stamp::Stamp;
use crate::load::cache::{self, Key, ParseCache};
use crate::load::walk::{Member, MemberSource};
use crate::load::{parse, LoadOptions, Repo};
use crate::manifest::Manifest;

use super::{index, Git, GitError};

/// The outcome of an overlay load.
pub enum Staged {
    /// The staged repository, and the member files whose work-tree copy differs from it.
    Loaded(Box<Repo>, Vec<String>),
    /// The overlay cannot reproduce the staged state; check the index out. The reason is for people.
    Materialize(String),
}

/// What the index says about the files under the manifest folder.
struct Tracked {
    /// Stage-0 entries by path relative to the manifest folder.
    entries: HashMap<String, index::Entry>,
    /// Tracked files whose work-tree copy differs from the index, when git said so;
    /// None when the index file was read and stat data tells (see [`Tracked::differing`]).
    changed: Option<HashSet<String>>,
    /// When the index file was written (for racily clean entries).
    written_ns: i64,
}

impl Tracked {
    /// Read the index file, or (for layouts [`index::parse`] leaves to git, or
    /// without Unix stat data) ask git.
    fn read(git: &Git) -> Result<Tracked, GitError> {
        if let Some(t) = Self::from_file(git) {
            return Ok(t);
        }
        let (listed, changed) = std::thread::scope(|s| {
            let unst = s.spawn(|| unstaged(git));
            (listed(git), unst.join().expect("diff-files thread"))
        });
        Ok(Tracked {
            entries: listed?,
            changed: Some(changed?),
            written_ns: 0,
        })
    }

    #[cfg(unix)]
    fn from_file(git: &Git) -> Option<Tracked> {
        // `--git-path index` honours GIT_INDEX_FILE (a commit's temporary index) and linked work trees.
        let out = git
            .run(&["rev-parse", "--git-path", "index", "--show-object-format"])
            .ok()?;
        let out = String::from_utf8(out).ok()?;
        let mut lines = out.lines();
        let (path, format) = (lines.next()?, lines.next()?);
        let oid_len = match format {
            "sha1" => 20,
            "sha256" => 32,
            _ => return None,
        };
        let path = git.cwd.join(path);
        let bytes = std::fs::read(&path).ok()?;
        let written_ns = Stamp::read(&path)?.mtime_ns;
        let parsed = index::parse(&bytes, oid_len).ok()?;
        let prefix = git.prefix();
        // Keyed by the path relative to the manifest folder; files outside it are left out.
        let entries = parsed
            .into_iter()
            .filter_map(|(path, e)| {
                if prefix.is_empty() {
                    return Some((path, e));
                }
                path.strip_prefix(prefix.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .filter(|rest| !rest.is_empty())
                    .map(|rest| (rest.to_string(), e))
            })
            .collect();
        Some(Tracked {
            entries,
            changed: None,
            written_ns,
        })
    }

    #[cfg(not(unix))]
    fn from_file(_: &Git) -> Option<Tracked> {
        None
    }

    /// The tracked files whose work-tree copy may differ from the index: what git
    /// reported, or every entry whose stat data no longer matches (or is racily
    /// clean). A file that merely looks changed is read from its staged blob, which
    /// holds the same bytes. `stamps` are the work-tree stamps of `members` (links
    /// followed); `root` is the manifest folder.
    fn differing(
        &self,
        root: &Path,
        members: &[&Member],
        stamps: &[Option<Stamp>],
    ) -> HashSet<String> {
        if let Some(changed) = &self.changed {
            return changed.clone();
        }
        let clean = |e: &index::Entry, stamp: Option<Stamp>| {
            stamp.is_some_and(|s| e.stat.matches(&s) && !e.stat.racy(self.written_ns))
        };
        let mut out = HashSet::new();
        let mut seen = HashSet::with_capacity(members.len());
        for (m, stamp) in members.iter().zip(stamps) {
            let rel = m.rel.as_str();
            seen.insert(rel);
            if let Some(e) = self.entries.get(rel) {
                if e.mode == 0o120000 {
                    continue; // compared below, as a link
                }
                if !clean(e, *stamp) {
                    out.insert(rel.to_string());
                }
            }
        }
        // Links, and tracked files that are not members (the manifest, ignore files, ...).
        let rest: Vec<(&String, &index::Entry)> = self
            .entries
            .iter()
            .filter(|(rel, e)| e.mode == 0o120000 || !seen.contains(rel.as_str()))
            .filter(|(_, e)| e.mode != 0o160000)
            .collect();
        let paths: Vec<PathBuf> = rest.iter().map(|(rel, _)| root.join(rel)).collect();
        let stamps = cache::stamp::read_many(&paths, |p| p);
        for (((rel, e), path), stamp) in rest.into_iter().zip(&paths).zip(stamps) {
            // A link is compared as the link (its own inode and times), not its target.
            let stamp = if e.mode == 0o120000 {
                link_stamp(path)
            } else {
                stamp
            };
            if !clean(e, stamp) {
                out.insert(rel.clone());
            }
        }
        out
    }
}

/// The stamp of a symbolic link itself.
fn link_stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type()
        .is_symlink()
        .then(|| Stamp::of_any(&meta))
        .flatten()
}

/// `git ls-files -s -z`: path (relative to the manifest folder) → entry.
fn listed(git: &Git) -> Result<HashMap<String, index::Entry>, GitError> {
    let out = git.run(&["ls-files", "-s", "-z"])?;
    let mut map = HashMap::new();
    for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        let Some((meta, path)) = rec.split_once('\t') else {
            continue;
        };
        let mut p = meta.split(' ');
        let (Some(mode), Some(oid)) = (p.next(), p.next()) else {
            continue;
        };
        if let Some(e) = index::Entry::listed(mode, oid) {
            map.insert(path.to_string(), e);
        }
    }
    Ok(map)
}

/// Tracked paths whose work-tree copy differs from the index (modified or deleted).
fn unstaged(git: &Git) -> Result<HashSet<String>, GitError> {
    let out = git.run(&["diff-files", "--name-only", "-z", "--relative"])?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect())
}

/// Load the staged state of the repository `manifest` describes (its folder is `git.cwd`).
pub fn load(
    git: &Git,
    manifest: Manifest,
    mut diags: Vec<Diagnostic>,
    opts: &LoadOptions,
) -> Result<Staged, GitError> {
    let snapshot = crate::load::cache::stamp::now_ns();
    // Reading the index and the parse cache run while this thread walks the work tree.
    let (tracked, (members, walk_diags), cache) = std::thread::scope(|s| {
        let idx = s.spawn(|| Tracked::read(git));
        let cache = s.spawn(|| {
            opts.cache
                .then(|| ParseCache::open(&manifest, snapshot))
                .flatten()
        });
        let walked = crate::load::walk_members(&manifest, opts, snapshot);
        let idx = idx.join().expect("index thread");
        let cache = cache.join().ok().flatten();
        (idx, walked, cache)
    });
    let tracked = tracked?;
    let index = &tracked.entries;
    if !index.contains_key(&manifest.file) {
        return Ok(Staged::Materialize(format!(
            "{} is not staged",
            manifest.file
        )));
    }
    let mut per_collection: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut kept = Vec::with_capacity(members.len());
    for m in &members {
        let tracked = index.contains_key(m.rel.as_str());
        match &m.source {
            MemberSource::Entry { key } if !tracked => {
                return Ok(Staged::Materialize(format!(
                    "context entry `{key}` ({}) is not staged",
                    m.rel
                )));
            }
            MemberSource::Collection { name, .. } => {
                let e = per_collection.entry(&**name).or_default();
                e.0 += 1;
                e.1 += usize::from(tracked);
            }
            MemberSource::Entry { .. } => {}
        }
        if tracked {
            kept.push(m);
        }
    }
    if let Some((name, _)) = per_collection
        .iter()
        .find(|(_, (all, t))| *all > 0 && *t == 0)
    {
        return Ok(Staged::Materialize(format!(
            "no file of collection `{name}` is staged"
        )));
    }
    // One `fstatat` per file: what the cache is keyed by, and (reading the index
    // file) what tells which files differ from the index.
    let stamps = (cache.is_some() || tracked.changed.is_none())
        .then(|| cache::stamp::read_many(&kept, |m| &m.abs));
    let changed = tracked.differing(&manifest.root, &kept, stamps.as_deref().unwrap_or(&[]));
    for path in &changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        if *path == manifest.file {
            return Ok(Staged::Materialize(format!("{path} has unstaged changes")));
        }
        if name == ".gitignore" || name == ".ignore" {
            return Ok(Staged::Materialize(format!("{path} has unstaged changes")));
        }
        if !manifest.root.join(path).exists() {
            return Ok(Staged::Materialize(format!(
                "{path} is deleted but not staged"
            )));
        }
        if index.get(path).is_some_and(|e| e.mode == 0o120000) {
            return Ok(Staged::Materialize(format!(
                "symbolic link {path} has unstaged changes"
            )));
        }
    }
    // What each result is keyed by: the staged blob for files with unstaged changes,
    // the work-tree file (which matches the index) for the others.
    let staged_blob = |m: &Member| changed.contains(m.rel.as_str());
    let keys: Vec<Option<Key>> = match (&cache, stamps) {
        (Some(_), Some(stamps)) => kept
            .iter()
            .zip(stamps)
            .map(|(m, stamp)| {
                if staged_blob(m) {
                    Some(Key::Blob(index[m.rel.as_str()].oid_hex()))
                } else {
                    stamp
                        .filter(|s| s.size <= opts.max_file_size)
                        .map(Key::Stat)
                }
            })
            .collect(),
        _ => vec![None; kept.len()],
    };
    let sources = cache::source_ids(&manifest, kept.iter().copied());
    // Staged blobs are fetched in one `git cat-file --batch` for the files the cache misses.
    let want: Vec<String> = kept
        .iter()
        .zip(&keys)
        .zip(&sources)
        .filter(|((m, k), source)| {
            staged_blob(m)
                && !matches!((&cache, k), (Some(c), Some(k)) if c.find(m.rel.as_str(), source, k).is_some())
        })
        .map(|((m, _), _)| index[m.rel.as_str()].oid_hex())
        .collect();
    let blobs = git.blobs(&want)?;
    diags.extend(walk_diags);
    let slots = crate::load::fill(&kept, &keys, &sources, cache, opts, |m| {
        let defaults = parse::Defaults::for_member(&manifest, m);
        let bytes = if staged_blob(m) {
            match blobs.get(&index[m.rel.as_str()].oid_hex()) {
                Some(b) if b.len() as u64 <= opts.max_file_size => Ok(b.clone()),
                Some(_) => Err(Box::new(
                    Diagnostic::error(
                        Code::SourceUnavailable,
                        format!("staged file is over the {}-byte limit", opts.max_file_size),
                    )
                    .file(m.rel.clone()),
                )),
                None => Err(Box::new(
                    Diagnostic::error(Code::SourceUnavailable, "staged blob is missing")
                        .file(m.rel.clone()),
                )),
            }
        } else {
            crate::load::read_member(m, opts.max_file_size)
        };
        match bytes {
            Ok(b) => (parse::parse(m, &b, &defaults), true),
            // Unreadable files are not cached: the next run tries again.
            Err(d) => (
                parse::Parsed {
                    object: None,
                    diags: vec![*d],
                },
                false,
            ),
        }
    });
    let files = kept.len();
    let differing: Vec<String> = kept
        .iter()
        .filter(|m| staged_blob(m))
        .map(|m| m.rel.to_string())
        .collect();
    Ok(Staged::Loaded(
        Box::new(crate::load::assemble_slots(manifest, diags, slots, files)),
        differing,
    ))
}

/// The staged state, loaded: what `validate --staged` and the pre-commit hook check.
#[derive(Debug)]
pub struct StagedRepo {
    pub repo: Repo,
    /// The temporary checkout of the index when the overlay could not be used: the
    /// repository's paths point into it, so keep it alive while using `repo`.
    pub checkout: Option<tempfile::TempDir>,
    /// What people should know about how the staged state was read (one line each,
    /// without a `note:` prefix: that is the renderer's).
    pub notes: Vec<String>,
}

/// Load what `git commit` would record of the repository found from `dir` (or
/// upward from `cwd`): the work tree overlaid with the index when that is exact
/// ([`load`]), else a temporary checkout of the index (never cached).
pub fn load_staged(
    dir: Option<&std::path::Path>,
    cwd: &std::path::Path,
    opts: &LoadOptions,
) -> crate::error::Result<StagedRepo> {
    use crate::error::Error;
    let located = crate::manifest::discover::locate(dir, cwd)?;
    let folder = located
        .path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let file = located
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let git = Git::discover(&folder).ok_or_else(|| {
        Error::Usage(format!(
            "--staged needs a git work tree, and {} is not inside one (or git is not installed)",
            folder.display()
        ))
    })?;
    let reason =
        match Manifest::discover(dir, cwd) {
            Ok((manifest, diags)) => match load(&git, manifest, diags, opts) {
                Ok(Staged::Loaded(repo, differing)) => {
                    let mut notes = Vec::new();
                    if !differing.is_empty() {
                        notes.push(format!(
                        "checking the staged content of {} file(s) with unstaged changes ({}); \
                         line numbers refer to the staged content",
                        differing.len(),
                        differing.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
                    ));
                    }
                    return Ok(StagedRepo {
                        repo: *repo,
                        checkout: None,
                        notes,
                    });
                }
                Ok(Staged::Materialize(reason)) => reason,
                Err(e) => return Err(Error::Invalid(e.to_string())),
            },
            // The work-tree manifest does not load; the staged one may.
            Err(Error::Invalid(_) | Error::Manifest { .. }) => {
                format!("{file} in the work tree does not load")
            }
            Err(e) => return Err(e),
        };
    let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), &e))?;
    let root = git
        .materialize_index(&tmp.path().join("index"))
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if !root.join(&file).is_file() {
        return Err(Error::Invalid(format!(
            "{file} is not staged, so the commit would not contain this repository's manifest; \
             run `git add {file}`"
        )));
    }
    let (manifest, diags) = Manifest::discover(Some(&root), cwd)?;
    // A throw-away checkout: nothing is cached for it.
    let opts = LoadOptions {
        cache: false,
        ..opts.clone()
    };
    Ok(StagedRepo {
        repo: crate::load::load(manifest, diags, &opts),
        checkout: Some(tmp),
        notes: vec![format!(
            "checking a temporary checkout of the index ({reason})"
        )],
    })
}
