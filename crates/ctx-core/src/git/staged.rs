//! The staged state of a repository — what `git commit` would record — loaded
//! without copying the work tree: a member whose work-tree copy matches the index
//! is read from disk, one with unstaged changes from its staged blob, and
//! untracked files are left out. The cases this overlay cannot reproduce exactly
//! (an unstaged manifest, ignore file, deletion or symlink; an untracked `context:`
//! entry; a collection whose files are all untracked) are reported so the caller
//! can check the index out into a temporary folder instead.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::diag::{Code, Diagnostic};
use crate::load::cache::{self, Key, ParseCache};
use crate::load::walk::{self, Member, MemberSource};
use crate::load::{parse, LoadOptions, Repo};
use crate::manifest::Manifest;

use super::{Git, GitError};

/// The outcome of an overlay load.
pub enum Staged {
    /// The staged repository, and the member files whose work-tree copy differs from it.
    Loaded(Box<Repo>, Vec<String>),
    /// The overlay cannot reproduce the staged state; check the index out. The reason is for people.
    Materialize(String),
}

struct IndexEntry {
    mode: String,
    oid: String,
}

/// `git ls-files -s -z`: path (relative to the manifest folder) → entry.
fn index_entries(git: &Git) -> Result<HashMap<String, IndexEntry>, GitError> {
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
        map.insert(
            path.to_string(),
            IndexEntry {
                mode: mode.to_string(),
                oid: oid.to_string(),
            },
        );
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
    // The two git queries and reading the parse cache run while this thread walks the work tree.
    let (index, changed, (members, walk_diags), cache) = std::thread::scope(|s| {
        let idx = s.spawn(|| index_entries(git));
        let unst = s.spawn(|| unstaged(git));
        let cache = s.spawn(|| {
            opts.cache
                .then(|| ParseCache::open(&manifest, snapshot))
                .flatten()
        });
        let walked = walk::members(&manifest);
        let idx = idx.join().expect("ls-files thread");
        let unst = unst.join().expect("diff-files thread");
        let cache = cache.join().ok().flatten();
        (idx, unst, walked, cache)
    });
    let (index, changed) = (index?, changed?);
    if !index.contains_key(&manifest.file) {
        return Ok(Staged::Materialize(format!(
            "{} is not staged",
            manifest.file
        )));
    }
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
        if index.get(path).is_some_and(|e| e.mode == "120000") {
            return Ok(Staged::Materialize(format!(
                "symbolic link {path} has unstaged changes"
            )));
        }
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
                let e = per_collection.entry(name.as_str()).or_default();
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
    // What each result is keyed by: the staged blob for files with unstaged changes,
    // the work-tree file (which matches the index) for the others.
    let staged_blob = |m: &Member| changed.contains(m.rel.as_str());
    let keys: Vec<Option<Key>> = match &cache {
        None => vec![None; kept.len()],
        Some(_) => {
            // Stamped like every warm load (one `fstatat` per file); staged blobs use their id.
            let stamps = cache::stamp::read_many(&kept, |m| &m.abs);
            kept.iter()
                .zip(stamps)
                .map(|(m, stamp)| {
                    if staged_blob(m) {
                        Some(Key::Blob(index[m.rel.as_str()].oid.clone()))
                    } else {
                        stamp
                            .filter(|s| s.size <= opts.max_file_size)
                            .map(Key::Stat)
                    }
                })
                .collect()
        }
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
        .map(|((m, _), _)| index[m.rel.as_str()].oid.clone())
        .collect();
    let blobs = git.blobs(&want)?;
    diags.extend(walk_diags);
    let slots = crate::load::fill(&kept, &keys, &sources, cache, opts, |m| {
        let defaults = parse::Defaults::for_member(&manifest, m);
        let bytes = if staged_blob(m) {
            match blobs.get(&index[m.rel.as_str()].oid) {
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
    /// What people should know about how the staged state was read (one line each).
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
    let reason = match Manifest::discover(dir, cwd) {
        Ok((manifest, diags)) => match load(&git, manifest, diags, opts) {
            Ok(Staged::Loaded(repo, differing)) => {
                let mut notes = Vec::new();
                if !differing.is_empty() {
                    notes.push(format!(
                        "note: checking the staged content of {} file(s) with unstaged changes ({}); \
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
            "note: checking a temporary checkout of the index ({reason})"
        )],
    })
}
