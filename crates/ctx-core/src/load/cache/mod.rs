//! The parse cache: every command that loads a repository reuses the parse results
//! of files that have not changed, at the cost of one `stat` per file.
//!
//! - **Keyed** by what makes a result valid: the file's path and [`Stamp`] (size,
//!   mtime and ctime with nanoseconds, inode, device) — or, for staged content, its
//!   git blob id — plus a digest of the collection (or `context:` entry) that loads
//!   it and the defaults it applies. The whole file is salted with the ctx build and
//!   the embedded schemas, so any change of parse logic starts afresh.
//! - **Racy-safe**: a file whose mtime or ctime is not clearly older than the
//!   moment its result was taken ([`stamp::RACY_MARGIN_NS`]) is read again.
//! - **Never authoritative**: a missing, foreign, truncated or damaged file, or any
//!   segment failing its checksum, is ignored (the segments before it still count)
//!   and rewritten; deleting it changes nothing but time.
//! - **No plaintext of a private collection**: a member of a collection declared in
//!   `extensions.ctx.private` is cached only when it is sealed (clear header and
//!   ciphertext, never content); anything else is parsed afresh every time, and a
//!   cache holding such an entry from before the collection became private is rewritten.
//! - **Where**: `<git dir>/ctx/parse-cache-<manifest digest>` (per work tree), else
//!   `.ctx/cache/` beside the manifest, which ignores itself for git.
//! - **Format**: see [`file`]; records are postcard-encoded [`ContextObject`]s and
//!   findings, so a hit costs a decode, never a JSON or YAML parse.

pub(crate) mod codec;
mod file;
mod location;
pub mod stamp;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::load::parse::Parsed;
use crate::load::walk::{Member, MemberSource};
use crate::manifest::Manifest;
use crate::object::ContextObject;

use codec::{DiagIn, DiagOut};
use file::{Salt, SegmentWriter};
pub use location::location;
pub use stamp::Stamp;

/// What a result is keyed by, besides its path and source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Key {
    /// The work-tree file, as it was when read.
    Stat(Stamp),
    /// Staged content: the git blob id.
    Blob(String),
}

/// A digest of what loads a member and the defaults it applies.
pub type SourceId = [u8; 16];

/// Digest the loader-side inputs of one member's parse (see [`crate::load::parse::Defaults`]).
pub fn source_id(manifest: &Manifest, member: &Member) -> SourceId {
    let defaults = crate::load::parse::Defaults::for_member(manifest, member);
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    match &member.source {
        MemberSource::Entry { key } => {
            part("entry");
            part(key);
        }
        MemberSource::Collection { name, base } => {
            part("collection");
            part(name);
            part(base);
        }
    }
    let text = |m: Option<&serde_json::Map<String, Value>>| {
        m.map(|m| serde_json::to_string(m).unwrap_or_default())
            .unwrap_or_default()
    };
    part(&text(defaults.collection));
    part(&text(Some(defaults.manifest)));
    let d = h.finalize();
    d[..16].try_into().expect("16 bytes")
}

/// The source ids of `members`, computed once per collection.
pub fn source_ids<'a>(
    manifest: &Manifest,
    members: impl IntoIterator<Item = &'a Member>,
) -> Vec<SourceId> {
    let mut memo: std::collections::BTreeMap<&MemberSource, SourceId> =
        std::collections::BTreeMap::new();
    members
        .into_iter()
        .map(|m| match &m.source {
            MemberSource::Collection { .. } => *memo
                .entry(&m.source)
                .or_insert_with(|| source_id(manifest, m)),
            MemberSource::Entry { .. } => source_id(manifest, m),
        })
        .collect()
}

/// The ctx build and the embedded schemas: what parse results depend on besides
/// their inputs. Computed once per process.
fn salt() -> &'static Salt {
    static SALT: OnceLock<Salt> = OnceLock::new();
    SALT.get_or_init(|| {
        let mut h = Sha256::new();
        h.update(b"ctx-parse-cache/2\0");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        if let Some(s) = std::env::current_exe().ok().and_then(|p| Stamp::read(&p)) {
            h.update(s.size.to_le_bytes());
            h.update(s.mtime_ns.to_le_bytes());
            h.update(s.ino.to_le_bytes());
        }
        for k in crate::schema::Kind::ALL {
            h.update(k.text().as_bytes());
        }
        h.finalize().into()
    })
}

/// Which collections may have only sealed members cached.
#[derive(Debug, Clone)]
enum Privacy {
    /// The names declared under `extensions.ctx.private.collections`.
    Collections(Vec<String>),
    /// `extensions.ctx.private` is present but unreadable: every collection counts as private.
    Unknown,
}

impl Privacy {
    fn of(manifest: &Manifest) -> Privacy {
        let Some(ext) = manifest.extension(crate::private::EXTENSION) else {
            return Privacy::Collections(Vec::new());
        };
        match ext.get("collections") {
            Some(Value::Object(c)) => Privacy::Collections(c.keys().cloned().collect()),
            None if ext.is_object() => Privacy::Collections(Vec::new()),
            _ => Privacy::Unknown,
        }
    }

    fn private(&self, scope: Option<&str>) -> bool {
        match (self, scope) {
            (_, None) => false,
            (Privacy::Unknown, Some(_)) => true,
            (Privacy::Collections(names), Some(s)) => names.iter().any(|n| n == s),
        }
    }

    /// May this result be written to disk? Members of a private collection only
    /// when sealed: the clear header and ciphertext, never content.
    fn allows(&self, scope: Option<&str>, object: Option<&ContextObject>) -> bool {
        !self.private(scope)
            || object.is_some_and(|o| o.meta.sealed.is_some() && o.content.is_none())
    }
}

/// The collection a member belongs to (what privacy is declared on); None for `context:` entries.
pub fn scope(member: &Member) -> Option<&str> {
    match &member.source {
        MemberSource::Collection { name, .. } => Some(name),
        MemberSource::Entry { .. } => None,
    }
}

#[derive(Serialize)]
struct RecordOut<'a> {
    path: &'a str,
    key: &'a Key,
    source: &'a SourceId,
    scope: Option<&'a str>,
    object: Option<&'a ContextObject>,
    diags: Vec<DiagOut<'a>>,
}

#[derive(Deserialize)]
struct RecordIn {
    path: String,
    key: Key,
    source: SourceId,
    scope: Option<String>,
    object: Option<ContextObject>,
    diags: Vec<DiagIn>,
}

/// A result read from the cache, waiting to be claimed.
struct Held {
    key: Key,
    source: SourceId,
    /// When the parse was started (the segment's snapshot).
    snapshot_ns: i64,
    parsed: Parsed,
}

/// One result to save: what it was keyed by, and whether it was parsed in this session.
pub struct Entry<'a> {
    pub path: &'a str,
    pub key: Key,
    pub source: SourceId,
    pub scope: Option<&'a str>,
    pub parsed: &'a Parsed,
    pub fresh: bool,
}

/// How a session used the cache (for benchmarks and tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Results taken from the cache.
    pub hits: usize,
    /// Results parsed in this session.
    pub parsed: usize,
}

/// An open parse cache for one loading session.
pub struct ParseCache {
    path: PathBuf,
    /// When this session started, before any file was looked at.
    snapshot_ns: i64,
    held: HashMap<String, Vec<Held>>,
    /// Records in the file, live or not (to decide when to compact).
    stored: usize,
    /// The file is missing, foreign, damaged, or holds what it must not: rewrite it.
    rewrite: bool,
    privacy: Privacy,
}

impl ParseCache {
    /// Open the cache of the repository `manifest` describes. `snapshot_ns` is when
    /// the session started ([`stamp::now_ns`], taken before any file is looked at).
    /// None when the repository has no place for a cache.
    pub fn open(manifest: &Manifest, snapshot_ns: i64) -> Option<ParseCache> {
        let path = location(manifest)?;
        Some(Self::open_at(path, manifest, snapshot_ns))
    }

    /// Open the cache file at `path` (missing or unusable files give an empty cache).
    pub fn open_at(path: PathBuf, manifest: &Manifest, snapshot_ns: i64) -> ParseCache {
        let privacy = Privacy::of(manifest);
        let mut c = ParseCache {
            path,
            snapshot_ns,
            held: HashMap::new(),
            stored: 0,
            rewrite: true,
            privacy,
        };
        let privacy = &c.privacy;
        let loaded = file::read(&c.path, salt(), |seg| {
            let mut rest = seg.payload;
            let mut out = Vec::with_capacity(seg.count as usize);
            let mut forbidden = false;
            for _ in 0..seg.count {
                let (r, tail) = postcard::take_from_bytes::<RecordIn>(rest).ok()?;
                rest = tail;
                if !privacy.allows(r.scope.as_deref(), r.object.as_ref()) {
                    forbidden = true;
                    continue;
                }
                let diags = r
                    .diags
                    .into_iter()
                    .map(DiagIn::into_diag)
                    .collect::<Option<Vec<_>>>()?;
                out.push((
                    r.path,
                    Held {
                        key: r.key,
                        source: r.source,
                        snapshot_ns: seg.snapshot_ns,
                        parsed: Parsed {
                            object: r.object,
                            diags,
                        },
                    },
                ));
            }
            rest.is_empty().then_some((out, forbidden))
        });
        let Some(loaded) = loaded else {
            return c;
        };
        c.rewrite = loaded.damaged;
        for (records, forbidden) in loaded.segments {
            c.rewrite |= forbidden;
            c.stored += records.len();
            for (path, h) in records {
                let slot = c.held.entry(path).or_default();
                // A later segment restates a result: it wins.
                slot.retain(|o| o.key != h.key || o.source != h.source);
                slot.push(h);
            }
        }
        c
    }

    /// Claim the result for `path` loaded by `source` with `key`, if the cache holds
    /// one that can be trusted (not racy).
    pub fn take(&mut self, path: &str, source: &SourceId, key: &Key) -> Option<Parsed> {
        let slot = self.held.get_mut(path)?;
        let at = slot
            .iter()
            .position(|h| &h.key == key && &h.source == source)?;
        let h = slot.swap_remove(at);
        if let Key::Stat(s) = key {
            if s.racy(h.snapshot_ns) {
                return None;
            }
        }
        Some(h.parsed)
    }

    /// When this session started.
    pub fn snapshot_ns(&self) -> i64 {
        self.snapshot_ns
    }

    /// Where the cache file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Persist this session's results. `entries` are all results of the load (live
    /// ones); only those parsed in this session are appended, unless the file must
    /// be rewritten (missing, damaged, holding forbidden or mostly dead records).
    /// Never fails the load: a cache that cannot be written costs only time.
    pub fn save(self, entries: &[Entry<'_>]) {
        let allowed: Vec<&Entry<'_>> = entries
            .iter()
            .filter(|e| self.privacy.allows(e.scope, e.parsed.object.as_ref()))
            .collect();
        let fresh = allowed.iter().filter(|e| e.fresh).count();
        let compact = self.rewrite || self.stored + fresh > allowed.len() + allowed.len() / 4 + 64;
        if !compact && fresh == 0 {
            return;
        }
        let chosen: Vec<&Entry<'_>> = if compact {
            allowed
        } else {
            allowed.into_iter().filter(|e| e.fresh).collect()
        };
        let salt = salt();
        let snapshot = self.snapshot_ns;
        let segments: Vec<Vec<u8>> = chosen
            .par_chunks(512)
            .flat_map_iter(|chunk| {
                let mut out = Vec::new();
                let mut w = SegmentWriter::default();
                for e in chunk {
                    w.push(&RecordOut {
                        path: e.path,
                        key: &e.key,
                        source: &e.source,
                        scope: e.scope,
                        object: e.parsed.object.as_ref(),
                        diags: e.parsed.diags.iter().map(DiagOut::of).collect(),
                    });
                    if w.len() >= file::SEGMENT_TARGET {
                        out.push(std::mem::take(&mut w).finish(salt, snapshot));
                    }
                }
                if !w.is_empty() {
                    out.push(w.finish(salt, snapshot));
                }
                out
            })
            .collect();
        let _ = self.persist(compact, &segments);
    }

    fn persist(&self, compact: bool, segments: &[Vec<u8>]) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            location::prepare(dir)?;
        }
        // One writer at a time, so concurrent loads never interleave segments.
        let _lock = crate::fs::lock_file(
            &self.path.with_extension("lock"),
            crate::fs::Mode::RepositoryDefault,
        )?;
        if !compact && file::append(&self.path, salt(), segments)? {
            return Ok(());
        }
        file::write(&self.path, salt(), segments)
    }
}

#[cfg(test)]
mod tests;
