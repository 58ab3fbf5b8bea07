//! A repository kept in memory by a long-running front end (`ctx mcp`, `ctx serve`).
//!
//! Each request starts with [`LiveRepo::snapshot`]: a stat sweep (manifest
//! discovery, the walk — which notices added, removed and renamed files — and one
//! `stat` per member). Files whose stamp is unchanged keep their parsed object;
//! only changed, added, racy or previously unreadable files are read and parsed
//! again, and when nothing changed the same [`Arc<Repo>`] is handed back without
//! rebuilding anything. A change to the manifest (its stamp, which manifest is
//! found, or which ones it shadows) loads everything again: collections, defaults,
//! roles, agents and redaction rules may all differ, and policy is never served
//! from before an edit.
//!
//! A refresh that fails (the manifest became unreadable or invalid, or vanished)
//! returns the error and drops the loaded state: the next snapshot loads from
//! scratch, so a front end can never fall back to the policy of an older manifest.
//!
//! ```no_run
//! use ctx_core::load::{live::LiveRepo, LoadOptions};
//! let cwd = std::env::current_dir().unwrap();
//! let mut live = LiveRepo::open(None, &cwd, LoadOptions { cache: true, ..Default::default() })?;
//! // ... for each request (behind a Mutex when requests run concurrently):
//! let repo = live.snapshot()?; // an Arc<Repo>: the request keeps it however long it runs
//! # Ok::<(), ctx_core::error::Error>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::diag::Diagnostic;
use crate::error::Result;
use crate::manifest::{discover, Manifest};
use crate::object::ContextObject;

use super::cache::{SourceId, Stamp};
use super::walk::{Member, MemberSource};
use super::{assemble_slots, cache, read_and_parse, LoadOptions, Pass, Repo, Slots};

/// What one member file contributed at the last load, and how it looked then.
#[derive(Debug)]
struct Tracked {
    rel: String,
    source: SourceId,
    stamp: Option<Stamp>,
    /// When the pass that read it started (for the racy check).
    snapshot_ns: i64,
    /// The file could be read; unreadable files are tried again on every refresh.
    read: bool,
    diags: Vec<Diagnostic>,
}

/// Which manifest was found, and its stamp: if either changes, everything is reloaded.
#[derive(Debug, PartialEq, Eq)]
struct ManifestState {
    path: PathBuf,
    shadowed: Vec<PathBuf>,
    stamp: Option<Stamp>,
}

/// What a refresh did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refresh {
    /// Nothing changed: [`LiveRepo::repo`] is the same `Arc` as before.
    pub unchanged: bool,
    /// The manifest changed: the repository was loaded again from scratch (through the cache).
    pub reloaded: bool,
    /// Member files read and parsed again (changed, added, racy, or unreadable before).
    pub reparsed: usize,
    /// Member files that are gone since the last refresh.
    pub removed: usize,
}

/// A loaded repository that refreshes itself from disk.
#[derive(Debug)]
pub struct LiveRepo {
    dir: Option<PathBuf>,
    cwd: PathBuf,
    opts: LoadOptions,
    repo: Arc<Repo>,
    found: ManifestState,
    snapshot_ns: i64,
    /// The manifest's own findings (shadowed files, schema, roles).
    manifest_diags: Vec<Diagnostic>,
    walk_diags: Vec<Diagnostic>,
    files: Vec<Tracked>,
    /// The last refresh failed: the state above is not to be trusted or served.
    broken: bool,
}

fn found(dir: Option<&Path>, cwd: &Path) -> Result<ManifestState> {
    let located = discover::locate(dir, cwd)?;
    Ok(ManifestState {
        stamp: Stamp::read(&located.path),
        path: located.path,
        shadowed: located.shadowed,
    })
}

/// The collection (or `context:` key) an object records as its origin.
fn origin_name(m: &Member) -> &str {
    match &m.source {
        MemberSource::Entry { key } => key,
        MemberSource::Collection { name, .. } => name,
    }
}

impl LiveRepo {
    /// Find the manifest (as [`Manifest::discover`] does) and load the repository.
    pub fn open(dir: Option<&Path>, cwd: &Path, opts: LoadOptions) -> Result<LiveRepo> {
        let state = found(dir, cwd)?;
        let (manifest, manifest_diags) = Manifest::discover(dir, cwd)?;
        let mut live = LiveRepo {
            dir: dir.map(Path::to_path_buf),
            cwd: cwd.to_path_buf(),
            opts,
            repo: Arc::new(Repo {
                manifest: manifest.clone(),
                objects: Vec::new(),
                diags: Vec::new(),
                files: 0,
            }),
            found: state,
            snapshot_ns: 0,
            manifest_diags,
            walk_diags: Vec::new(),
            files: Vec::new(),
            broken: false,
        };
        live.load_all(manifest);
        Ok(live)
    }

    /// The repository as of the last refresh. Front ends call [`LiveRepo::snapshot`]
    /// instead, which refreshes first and never hands out state a failed refresh left.
    pub fn repo(&self) -> Arc<Repo> {
        Arc::clone(&self.repo)
    }

    /// Refresh, then hand out the current repository: what every request starts with.
    pub fn snapshot(&mut self) -> Result<Arc<Repo>> {
        self.refresh()?;
        Ok(self.repo())
    }

    /// Load every member (through the parse cache when enabled).
    fn load_all(&mut self, manifest: Manifest) {
        let pass = Pass::run(&manifest, &self.opts, true);
        self.snapshot_ns = pass.snapshot_ns;
        self.files = pass
            .members
            .iter()
            .zip(&pass.sources)
            .zip(&pass.stamps)
            .enumerate()
            .map(|(i, ((m, source), stamp))| Tracked {
                rel: m.rel.to_string(),
                source: *source,
                stamp: *stamp,
                snapshot_ns: pass.snapshot_ns,
                read: pass.slots.read[i],
                diags: pass.slots.diags[i].clone(),
            })
            .collect();
        let mut diags = self.manifest_diags.clone();
        diags.extend(pass.walk_diags.iter().cloned());
        self.walk_diags = pass.walk_diags;
        let files = pass.members.len();
        self.repo = Arc::new(assemble_slots(manifest, diags, pass.slots, files));
    }

    /// Bring the repository up to date with the files on disk; see [`Refresh`].
    /// On error the loaded state is dropped (see the module documentation).
    pub fn refresh(&mut self) -> Result<Refresh> {
        let r = self.try_refresh();
        if r.is_err() {
            self.broken = true;
            self.files.clear();
            self.repo = Arc::new(Repo {
                manifest: self.repo.manifest.clone(),
                objects: Vec::new(),
                diags: Vec::new(),
                files: 0,
            });
        }
        r
    }

    fn try_refresh(&mut self) -> Result<Refresh> {
        let now = found(self.dir.as_deref(), &self.cwd)?;
        if self.broken || now != self.found || now.stamp.is_none_or(|s| s.racy(self.snapshot_ns)) {
            let (manifest, manifest_diags) = Manifest::discover(self.dir.as_deref(), &self.cwd)?;
            self.found = now;
            self.manifest_diags = manifest_diags;
            self.load_all(manifest);
            self.broken = false;
            return Ok(Refresh {
                reloaded: true,
                reparsed: self.files.len(),
                ..Refresh::default()
            });
        }
        let snapshot_ns = cache::stamp::now_ns();
        let manifest = &self.repo.manifest;
        let (members, walk_diags) = super::walk_members(manifest, &self.opts, snapshot_ns);
        let sources = cache::source_ids(manifest, &members);
        let stamps: Vec<Option<Stamp>> = cache::stamp::read_many(&members, |m| &m.abs);
        let before: HashMap<(&str, &SourceId), &Tracked> = self
            .files
            .iter()
            .map(|t| ((t.rel.as_str(), &t.source), t))
            .collect();
        // For each member: the tracked state it can keep, or None to read it again.
        let kept: Vec<Option<&Tracked>> = members
            .iter()
            .zip(&sources)
            .zip(&stamps)
            .map(|((m, source), stamp)| {
                let t = *before.get(&(m.rel.as_str(), source))?;
                let s = (*stamp)?;
                (t.read && t.stamp == Some(s) && !s.racy(t.snapshot_ns)).then_some(t)
            })
            .collect();
        let reparsed = kept.iter().filter(|k| k.is_none()).count();
        let current: HashSet<(&str, &SourceId)> = members
            .iter()
            .zip(&sources)
            .map(|(m, s)| (m.rel.as_str(), s))
            .collect();
        let removed = self
            .files
            .iter()
            .filter(|t| !current.contains(&(t.rel.as_str(), &t.source)))
            .count();
        drop(current);
        if reparsed == 0 && removed == 0 && walk_diags == self.walk_diags {
            return Ok(Refresh {
                unchanged: true,
                ..Refresh::default()
            });
        }
        let snapshots: Vec<i64> = kept
            .iter()
            .map(|k| k.map_or(snapshot_ns, |t| t.snapshot_ns))
            .collect();
        let n = members.len();
        let mut slots = Slots {
            objects: (0..n).map(|_| None).collect(),
            diags: kept
                .iter()
                .map(|k| k.map(|t| t.diags.clone()).unwrap_or_default())
                .collect(),
            hit: kept.iter().map(Option::is_some).collect(),
            read: vec![true; n],
        };
        drop(before);
        // Objects of unchanged files move over (or are copied, if a request still
        // holds the old repository); the rest are read and parsed again.
        let placeholder = Arc::new(Repo {
            manifest: self.repo.manifest.clone(),
            objects: Vec::new(),
            diags: Vec::new(),
            files: 0,
        });
        let old = std::mem::replace(&mut self.repo, placeholder);
        let (manifest, old_objects) = match Arc::try_unwrap(old) {
            Ok(r) => (r.manifest, r.objects),
            Err(shared) => (shared.manifest.clone(), shared.objects.clone()),
        };
        let mut by_origin: HashMap<(String, String), ContextObject> = old_objects
            .into_iter()
            .map(|o| {
                let key = (
                    o.origin.file.clone(),
                    o.origin.collection.clone().unwrap_or_default(),
                );
                (key, o)
            })
            .collect();
        for (i, m) in members.iter().enumerate() {
            if slots.hit[i] {
                slots.objects[i] =
                    by_origin.remove(&(m.rel.to_string(), origin_name(m).to_string()));
            }
        }
        drop(by_origin);
        let opts = &self.opts;
        let hit = &slots.hit;
        slots
            .objects
            .par_iter_mut()
            .zip(slots.diags.par_iter_mut())
            .zip(slots.read.par_iter_mut())
            .enumerate()
            .filter(|(i, _)| !hit[*i])
            .for_each(|(i, ((o, d), r))| {
                let (p, ok) = read_and_parse(&manifest, &members[i], opts);
                *o = p.object.map(|mut o| {
                    opts.trim(&mut o);
                    o
                });
                *d = p.diags;
                *r = ok;
            });
        self.files = members
            .iter()
            .zip(&sources)
            .zip(&stamps)
            .enumerate()
            .map(|(i, ((m, source), stamp))| Tracked {
                rel: m.rel.to_string(),
                source: *source,
                stamp: *stamp,
                snapshot_ns: snapshots[i],
                read: slots.read[i],
                diags: slots.diags[i].clone(),
            })
            .collect();
        let mut diags = self.manifest_diags.clone();
        diags.extend(walk_diags.iter().cloned());
        self.walk_diags = walk_diags;
        self.repo = Arc::new(assemble_slots(manifest, diags, slots, n));
        Ok(Refresh {
            unchanged: false,
            reloaded: false,
            reparsed,
            removed,
        })
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
