//! The staged state of a repository — what `git commit` would record — loaded
//! without copying the work tree: a member whose work-tree copy matches the index
//! is read from disk, one with unstaged changes from its staged blob, and
//! untracked files are left out. The cases this overlay cannot reproduce exactly
//! (an unstaged manifest, ignore file, deletion or symlink; an untracked `context:`
//! entry; a collection whose files are all untracked) are reported so the caller
//! can check the index out into a temporary folder instead.

use std::collections::{BTreeMap, HashMap, HashSet};

use rayon::prelude::*;

use crate::diag::{Code, Diagnostic};
use crate::load::walk::{self, Member, MemberSource};
use crate::load::{parse, LoadOptions, Repo};
use crate::manifest::Manifest;

use super::cache::{self, Cache};
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

/// `<git dir>/ctx/parse-cache` (per work tree).
fn cache_path(git: &Git) -> Option<std::path::PathBuf> {
    let out = git
        .run(&["rev-parse", "--git-path", "ctx/parse-cache"])
        .ok()?;
    let p = std::path::PathBuf::from(String::from_utf8_lossy(&out).trim_end());
    Some(if p.is_absolute() { p } else { git.cwd.join(p) })
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
    // The two git queries run while this thread walks the work tree.
    // So does reading the parse cache.
    let use_cache = std::env::var_os("CTX_NO_CACHE").is_none();
    let (index, changed, (members, walk_diags), cache) = std::thread::scope(|s| {
        let idx = s.spawn(|| index_entries(git));
        let unst = s.spawn(|| unstaged(git));
        let cache = s.spawn(|| {
            use_cache
                .then(|| cache_path(git).map(Cache::open))
                .flatten()
        });
        let walked = walk::members(&manifest);
        let idx = idx.join().expect("ls-files thread");
        let unst = unst.join().expect("diff-files thread");
        let cache = cache.join().expect("cache thread");
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
    // Cached results first (keyed by blob id, path, collection and defaults); parse the rest.
    let defaults_text: HashMap<&str, String> = manifest
        .collections
        .iter()
        .map(|c| {
            let text =
                serde_json::to_string(&(&c.defaults, &manifest.defaults)).unwrap_or_default();
            (c.name.as_str(), text)
        })
        .collect();
    let entry_defaults = serde_json::to_string(&manifest.defaults).unwrap_or_default();
    let keyed: Vec<(String, &Member)> = kept
        .iter()
        .map(|m| {
            let d = match &m.source {
                MemberSource::Collection { name, .. } => {
                    defaults_text.get(name.as_str()).unwrap_or(&entry_defaults)
                }
                MemberSource::Entry { .. } => &entry_defaults,
            };
            (cache::key(&index[m.rel.as_str()].oid, m, d), *m)
        })
        .collect();
    let hits: Vec<Option<parse::Parsed>> = match &cache {
        Some(c) => c.get_many(&keyed),
        None => keyed.iter().map(|_| None).collect(),
    };
    let want: Vec<String> = kept
        .iter()
        .zip(&hits)
        .filter(|(m, hit)| hit.is_none() && changed.contains(m.rel.as_str()))
        .map(|(m, _)| index[m.rel.as_str()].oid.clone())
        .collect();
    let blobs = git.blobs(&want)?;
    diags.extend(walk_diags);
    let results: Vec<(parse::Parsed, bool)> = kept
        .par_iter()
        .zip(hits.into_par_iter())
        .map(|(m, hit)| {
            if let Some(p) = hit {
                return (p, false);
            }
            let defaults = parse::Defaults::for_member(&manifest, m);
            let bytes = if changed.contains(m.rel.as_str()) {
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
        })
        .collect();
    if let Some(mut c) = cache {
        for ((k, _), (p, fresh)) in keyed.iter().zip(&results) {
            if *fresh {
                c.put(k.clone(), p);
            }
        }
        let live: Vec<String> = keyed.iter().map(|(k, _)| k.clone()).collect();
        // A cache that cannot be written only costs time next run.
        let _ = c.save(&live);
    }
    let results: Vec<parse::Parsed> = results.into_iter().map(|(p, _)| p).collect();
    let files = kept.len();
    let differing: Vec<String> = kept
        .iter()
        .filter(|m| changed.contains(m.rel.as_str()))
        .map(|m| m.rel.to_string())
        .collect();
    Ok(Staged::Loaded(
        Box::new(crate::load::assemble(manifest, diags, results, files)),
        differing,
    ))
}
