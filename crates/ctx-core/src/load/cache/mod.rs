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
pub(crate) mod location;
pub mod stamp;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::diag::Diagnostic;
use crate::load::walk::{Member, MemberSource};
use crate::load::{Keep, LoadOptions};
use crate::manifest::Manifest;
use crate::object::ContextObject;

use codec::{DiagIn, DiagOut};
use file::{Region, Salt, SegmentWriter, Span};
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

impl Key {
    /// Work-tree and staged results of one file are kept side by side.
    fn kind(&self) -> u8 {
        match self {
            Key::Stat(_) => 0,
            Key::Blob(_) => 1,
        }
    }
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
pub(crate) fn salt() -> &'static Salt {
    static SALT: OnceLock<Salt> = OnceLock::new();
    SALT.get_or_init(|| {
        let mut h = Sha256::new();
        h.update(b"ctx-parse-cache/9\0");
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

/// A record's index entry, as written.
#[derive(Serialize)]
struct IndexOut<'a> {
    path: &'a str,
    key: &'a Key,
    source: &'a SourceId,
    scope: Option<&'a str>,
    /// A sealed member of a private collection (only those may be cached there).
    sealed: bool,
    meta: Span,
    content: Span,
    /// The content is text, kept in the prose region.
    prose: bool,
}

/// A record's index entry, as read.
#[derive(Deserialize)]
struct IndexIn {
    path: String,
    key: Key,
    source: SourceId,
    scope: Option<String>,
    sealed: bool,
    meta: Span,
    content: Span,
    prose: bool,
}

/// A record's meta blob: the object (its content is in the content blob), its
/// document (apart from the derived encoding, so a load that elides documents
/// decodes it without allocating it), and findings.
#[derive(Serialize)]
struct MetaOut<'a> {
    object: Option<&'a ContextObject>,
    doc: &'a str,
    /// [`ContextObject::doc_is_checked`], decided once when encoded.
    checked: bool,
    diags: Vec<DiagOut<'a>>,
}

#[derive(Deserialize)]
struct MetaIn<'a> {
    object: Option<ContextObject>,
    doc: &'a str,
    checked: bool,
    diags: Vec<DiagIn>,
}

/// A record the cache holds, found through the segment indexes.
struct Held {
    path: String,
    key: Key,
    source: SourceId,
    scope: Option<String>,
    sealed: bool,
    segment: u32,
    meta: Span,
    content: Span,
    prose: bool,
}

impl Held {
    fn order(&self) -> (&str, &SourceId, u8) {
        (&self.path, &self.source, self.key.kind())
    }
}

/// One segment's records (with their position in it), and whether it held any a
/// private collection forbids.
type SegmentIndex = (Vec<(usize, Held)>, bool);

/// A result to save, borrowed from the load that produced or used it.
pub enum Entry<'a> {
    /// Parsed in this session.
    Fresh {
        path: &'a str,
        key: Key,
        source: SourceId,
        scope: Option<&'a str>,
        /// The object with its content (even when the load drops content afterwards).
        object: Option<&'a ContextObject>,
        diags: &'a [Diagnostic],
    },
    /// Taken from the cache: the [`Ticket`] it came from.
    Cached(Ticket),
}

/// A result found in the cache, to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(usize);

/// How a session used the cache (for benchmarks and tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Results taken from the cache.
    pub hits: usize,
    /// Results parsed in this session.
    pub parsed: usize,
}

/// One fetched result.
pub struct Fetched {
    pub object: Option<ContextObject>,
    pub diags: Vec<Diagnostic>,
}

/// An open parse cache for one loading session.
pub struct ParseCache {
    path: PathBuf,
    /// When this session started, before any file was looked at.
    snapshot_ns: i64,
    file: Option<file::CacheFile>,
    /// Every record, sorted by path, source and key; where a later segment restates
    /// a result, only the later one.
    held: Vec<Held>,
    /// Records in the file, live or not (to decide when to compact).
    stored: usize,
    /// The file is missing, foreign, damaged, or holds what it must not: rewrite it.
    rewrite: bool,
    /// A region failed its checksum while results were fetched: rewrite too.
    damaged: std::sync::atomic::AtomicBool,
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

    /// Open the cache file at `path` and read its indexes (missing or unusable
    /// files give an empty cache).
    pub fn open_at(path: PathBuf, manifest: &Manifest, snapshot_ns: i64) -> ParseCache {
        let mut c = ParseCache {
            path,
            snapshot_ns,
            file: None,
            held: Vec::new(),
            stored: 0,
            rewrite: true,
            damaged: std::sync::atomic::AtomicBool::new(false),
            privacy: Privacy::of(manifest),
        };
        let Some(f) = file::CacheFile::open(&c.path, salt()) else {
            return c;
        };
        let privacy = &c.privacy;
        let indexes: Vec<Option<SegmentIndex>> = (0..f.segments.len())
            .into_par_iter()
            .map(|seg| {
                let bytes = f.read(seg, Region::Index)?;
                let mut rest = &bytes[..];
                let mut out = Vec::with_capacity(f.segments[seg].count as usize);
                let mut forbidden = false;
                for n in 0..f.segments[seg].count as usize {
                    let (r, tail) = postcard::take_from_bytes::<IndexIn>(rest).ok()?;
                    rest = tail;
                    // Only the header of a private member may be cached; anything else
                    // (written before the collection became private) is purged.
                    if privacy.private(r.scope.as_deref()) && !r.sealed {
                        forbidden = true;
                        continue;
                    }
                    out.push((
                        n,
                        Held {
                            path: r.path,
                            key: r.key,
                            source: r.source,
                            scope: r.scope,
                            sealed: r.sealed,
                            segment: seg as u32,
                            meta: r.meta,
                            content: r.content,
                            prose: r.prose,
                        },
                    ));
                }
                rest.is_empty().then_some((out, forbidden))
            })
            .collect();
        c.rewrite = f.damaged;
        let mut all = Vec::new();
        for index in indexes {
            match index {
                None => c.rewrite = true,
                Some((records, forbidden)) => {
                    c.rewrite |= forbidden;
                    c.stored += records.len();
                    all.extend(records);
                }
            }
        }
        // File order breaks ties, so after a stable sort the last of equal records
        // is the one a later segment wrote.
        all.sort_by(|(_, a), (_, b)| a.order().cmp(&b.order()));
        let mut held: Vec<Held> = Vec::with_capacity(all.len());
        for (_, h) in all {
            match held.last_mut() {
                // One result per file, source and kind: the one written last.
                Some(last) if last.order() == h.order() => *last = h,
                _ => held.push(h),
            }
        }
        c.held = held;
        c.file = Some(f);
        c
    }

    /// The cached result for `path` loaded by `source` with `key`, if there is one
    /// that can be trusted (not racy).
    pub fn find(&self, path: &str, source: &SourceId, key: &Key) -> Option<Ticket> {
        self.find_from(&mut 0, path, source, key)
    }

    /// [`ParseCache::find`] for lookups in ascending path order: the search starts
    /// at `cursor` (where the previous one ended) and gallops, so a load whose
    /// files are nearly all cached compares a few paths per file instead of ~17.
    /// Out of order, a record may be missed: the file is then parsed, never misread.
    pub fn find_from(
        &self,
        cursor: &mut usize,
        path: &str,
        source: &SourceId,
        key: &Key,
    ) -> Option<Ticket> {
        let base = (*cursor).min(self.held.len());
        let rest = &self.held[base..];
        // Grow a window until its last path is not before `path`, then search in it.
        let mut end = 1.min(rest.len());
        while end < rest.len() && rest[end - 1].path.as_str() < path {
            end = (end * 2).min(rest.len());
        }
        let first = base + rest[..end].partition_point(|h| h.path.as_str() < path);
        *cursor = first;
        // Records of one path (one per source and kind) are adjacent.
        let at = first
            + self.held[first..]
                .iter()
                .take_while(|h| h.path == path)
                .position(|h| h.source == *source && h.key.kind() == key.kind())?;
        if &self.held[at].key != key {
            return None;
        }
        if let Key::Stat(s) = key {
            let seg = &self.file.as_ref()?.segments[self.held[at].segment as usize];
            if s.racy(seg.snapshot_ns) {
                return None;
            }
        }
        Some(Ticket(at))
    }

    /// Decode the results of `wanted` (ticket, slot) pairs, in parallel, one segment
    /// at a time, handing each to `put(slot, result)` trimmed as `load` says
    /// ([`LoadOptions::trim`]) without decoding what it drops: the documents a load
    /// keeps and those checks read ([`ContextObject::elide_doc`]); the content of the
    /// objects it keeps content for, as much as [`LoadOptions::keep`] says (without
    /// content the content regions are not even read; prose is never decoded unless
    /// kept, nor anything of an object whose content the load drops). Returns the
    /// slots whose results could not be read back (damage found late): parse those
    /// afresh.
    pub(crate) fn fetch(
        &self,
        wanted: &[(Ticket, usize)],
        load: &LoadOptions,
        put: &(dyn Fn(usize, Fetched) + Sync),
    ) -> Vec<usize> {
        let keep = load.keep();
        let Some(f) = &self.file else {
            return wanted.iter().map(|(_, slot)| *slot).collect();
        };
        let mut by_segment: Vec<Vec<(usize, usize)>> = vec![Vec::new(); f.segments.len()];
        for (Ticket(t), slot) in wanted {
            by_segment[self.held[*t].segment as usize].push((*t, *slot));
        }
        by_segment
            .par_iter()
            .enumerate()
            .filter(|(_, w)| !w.is_empty())
            .flat_map_iter(|(seg, w)| {
                let meta = f.read(seg, Region::Meta);
                // Each content region only when this load keeps some of what it holds.
                let wants = |prose: bool| {
                    let kept = match keep {
                        Keep::Nothing => false,
                        Keep::Kind => !prose,
                        Keep::All => true,
                    };
                    kept && w.iter().any(|&(t, _)| self.held[t].prose == prose)
                };
                let structured = wants(false).then(|| f.read(seg, Region::Structured));
                let prose = wants(true).then(|| f.read(seg, Region::Prose));
                let mut failed = Vec::new();
                for &(t, slot) in w {
                    let h = &self.held[t];
                    let decoded = meta.as_deref().and_then(|m| {
                        let m: MetaIn = postcard::from_bytes(blob(m, h.meta)?).ok()?;
                        let diags = m
                            .diags
                            .into_iter()
                            .map(DiagIn::into_diag)
                            .collect::<Option<Vec<_>>>()?;
                        let mut object = m.object;
                        if let Some(o) = object.as_mut() {
                            let kept = load.keeps_content_of(o);
                            if m.checked || load.keeps_doc(kept) {
                                o.doc = Box::from(m.doc);
                            }
                            let region = if h.prose { &prose } else { &structured };
                            let c = read_blob(region, h.content)?;
                            o.content = match (keep, c) {
                                (Keep::Nothing, _) => None,
                                // Content this load drops: never decoded.
                                _ if !kept => None,
                                // Prose the load does not keep: what it is, not what it says.
                                (Keep::Kind, None) if h.prose => Some(Value::String(String::new())),
                                (_, Some(c)) => codec::decode_content(c)?,
                                (_, None) => return None,
                            };
                        }
                        Some(Fetched { object, diags })
                    });
                    match decoded {
                        Some(r) => put(slot, r),
                        None => {
                            self.damaged
                                .store(true, std::sync::atomic::Ordering::Relaxed);
                            failed.push(slot);
                        }
                    }
                }
                failed
            })
            .collect()
    }

    /// When this session started.
    pub fn snapshot_ns(&self) -> i64 {
        self.snapshot_ns
    }

    /// Where the cache file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What encodes this session's fresh results (see [`Encoder`]).
    pub fn encoder(&self) -> Encoder {
        Encoder {
            privacy: self.privacy.clone(),
            snapshot_ns: self.snapshot_ns,
        }
    }

    /// Persist this session. `live` is every result of the load: fresh ones are
    /// appended as a new segment, unless the file must be rewritten (missing,
    /// damaged, holding forbidden or mostly dead records), when cached ones are
    /// copied over as they are. Never fails the load: a cache that cannot be
    /// written costs only time.
    pub fn save(self, live: &[Entry<'_>]) {
        let encoder = self.encoder();
        let fresh: Vec<Segments> = live
            .par_chunks(256)
            .map(|chunk| {
                let mut segments = Segments::default();
                for e in chunk {
                    if let Entry::Fresh {
                        path,
                        key,
                        source,
                        scope,
                        object,
                        diags,
                    } = e
                    {
                        encoder.encode(
                            &mut segments,
                            &Fresh {
                                path,
                                key,
                                source,
                                scope: *scope,
                                object: *object,
                                diags,
                            },
                        );
                    }
                }
                segments
            })
            .collect();
        let kept: Vec<Ticket> = live
            .iter()
            .filter_map(|e| match e {
                Entry::Cached(t) => Some(*t),
                Entry::Fresh { .. } => None,
            })
            .collect();
        self.save_encoded(&kept, encoder.finish(fresh));
    }

    /// [`ParseCache::save`] for results already encoded: `kept` are the cached
    /// results still in use, `fresh` what [`Encoder::encode`] made of the new ones.
    pub fn save_encoded(self, kept: &[Ticket], fresh: Segments) {
        let total = fresh.records + kept.len();
        let damaged = self.damaged.load(std::sync::atomic::Ordering::Relaxed);
        let compact =
            self.rewrite || damaged || self.stored + fresh.records > total + total / 4 + 64;
        if !compact && fresh.records == 0 {
            return;
        }
        let _ = self.persist(compact, kept, &fresh.done);
    }

    fn persist(&self, compact: bool, kept: &[Ticket], fresh: &[Vec<u8>]) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            location::prepare(dir)?;
        }
        // One writer at a time, so concurrent loads never interleave segments.
        let _lock = crate::fs::lock_file(
            &self.path.with_extension("lock"),
            crate::fs::Mode::RepositoryDefault,
        )?;
        if !compact && file::append(&self.path, salt(), fresh)? {
            return Ok(());
        }
        // Rewrite: cached records are copied blob for blob, segment by segment.
        let salt = salt();
        let snapshot = self.snapshot_ns;
        let mut by_segment: Vec<Vec<usize>> = match &self.file {
            Some(f) => vec![Vec::new(); f.segments.len()],
            None => Vec::new(),
        };
        for Ticket(t) in kept {
            by_segment[self.held[*t].segment as usize].push(*t);
        }
        file::write(&self.path, salt, |out| {
            let Some(f) = &self.file else {
                return fresh.iter().try_for_each(|s| out.write_all(s));
            };
            for (seg, wanted) in by_segment.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
                let (Some(meta), Some(structured), Some(prose)) = (
                    f.read(seg, Region::Meta),
                    f.read(seg, Region::Structured),
                    f.read(seg, Region::Prose),
                ) else {
                    continue; // damaged since it was indexed: those files are parsed next time
                };
                let mut w = SegmentWriter::default();
                for &t in wanted {
                    let h = &self.held[t];
                    let text = if h.prose { &prose } else { &structured };
                    let (Some(m), Some(c)) = (blob(&meta, h.meta), blob(text, h.content)) else {
                        continue;
                    };
                    w.push(m, c, h.prose, |meta, content| IndexOut {
                        path: &h.path,
                        key: &h.key,
                        source: &h.source,
                        scope: h.scope.as_deref(),
                        sealed: h.sealed,
                        meta,
                        content,
                        prose: h.prose,
                    });
                }
                if !w.is_empty() {
                    out.write_all(&w.finish(salt, snapshot))?;
                }
            }
            fresh.iter().try_for_each(|s| out.write_all(s))
        })
    }
}

/// A content blob from a region a fetch may have left unread (outer None): Some(None)
/// when unread, None when read but damaged or too short.
fn read_blob(region: &Option<Option<Vec<u8>>>, span: Span) -> Option<Option<&[u8]>> {
    match region {
        None => Some(None),
        Some(bytes) => Some(Some(blob(bytes.as_deref()?, span)?)),
    }
}

/// The bytes of `span` in `region`, if it is inside.
fn blob(region: &[u8], (at, len): Span) -> Option<&[u8]> {
    region.get(at as usize..(at as usize).checked_add(len as usize)?)
}

/// A result parsed in this session, to encode.
pub struct Fresh<'a> {
    pub path: &'a str,
    pub key: &'a Key,
    pub source: &'a SourceId,
    pub scope: Option<&'a str>,
    /// The object with its content (even when the load drops content afterwards).
    pub object: Option<&'a ContextObject>,
    pub diags: &'a [Diagnostic],
}

/// Finished segments of fresh results, and how many records they hold.
#[derive(Default)]
pub struct Segments {
    done: Vec<Vec<u8>>,
    open: SegmentWriter,
    records: usize,
}

/// Encodes fresh results into segments as they are made (each worker into
/// [`Segments`] of its own), applying what a private collection allows: the
/// load can then drop their content at once.
pub struct Encoder {
    privacy: Privacy,
    snapshot_ns: i64,
}

impl Encoder {
    /// Add one result to `into` (left out if its collection forbids caching it or
    /// it cannot be encoded: it is simply parsed again next time).
    pub fn encode(&self, into: &mut Segments, e: &Fresh<'_>) {
        if !self.privacy.allows(e.scope, e.object) {
            return;
        }
        let Ok(meta) = postcard::to_stdvec(&MetaOut {
            object: e.object,
            doc: e.object.map_or("", |o| &*o.doc),
            checked: e.object.is_some_and(ContextObject::doc_is_checked),
            diags: e.diags.iter().map(DiagOut::of).collect(),
        }) else {
            return;
        };
        let Ok(content) = codec::encode_content(e.object.and_then(|o| o.content.as_ref())) else {
            return;
        };
        let prose = codec::is_prose(&content);
        let pushed = into
            .open
            .push(&meta, &content, prose, |meta, content| IndexOut {
                path: e.path,
                key: e.key,
                source: e.source,
                scope: e.scope,
                sealed: e.object.is_some_and(|o| o.meta.sealed.is_some()),
                meta,
                content,
                prose,
            });
        into.records += usize::from(pushed);
        if into.open.len() >= file::SEGMENT_TARGET {
            let full = std::mem::take(&mut into.open);
            into.done.push(full.finish(salt(), self.snapshot_ns));
        }
    }

    /// Close every part's open segment and gather them.
    pub fn finish(&self, parts: Vec<Segments>) -> Segments {
        let mut out = Segments::default();
        for mut p in parts {
            if !p.open.is_empty() {
                p.done.push(p.open.finish(salt(), self.snapshot_ns));
            }
            out.done.append(&mut p.done);
            out.records += p.records;
        }
        out
    }
}

#[cfg(test)]
mod tests;
