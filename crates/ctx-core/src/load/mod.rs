//! Loading a repository: list member files, read and parse them in parallel,
//! and return objects in a deterministic order with every per-file finding.
//!
//! With [`LoadOptions::cache`], results of files that have not changed come from
//! the parse cache ([`cache`]) at the cost of one `stat` each; [`live::LiveRepo`]
//! keeps a loaded repository in memory for long-running front ends and refreshes
//! only what changed.

pub mod cache;
pub mod exclude;
pub mod live;
pub mod matcher;
pub mod parse;
pub mod secrets;
pub mod unloaded;
pub mod uri_entries;
pub mod walk;
pub(crate) mod walk_memo;

use rayon::prelude::*;

use crate::diag::{self, Code, Diagnostic};
use crate::manifest::Manifest;
use crate::object::ContextObject;
use cache::{Key, ParseCache, Stamp, Usage};
use walk::Member;

/// Files larger than this are refused (a context object is not a data dump).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub max_file_size: u64,
    /// Reuse and update the parse cache. Off by default: a caller loading a folder
    /// it does not own (a conformance fixture, a temporary checkout) must not write
    /// into it. Front ends turn it on unless `--no-cache` or `CTX_NO_CACHE` say otherwise.
    pub cache: bool,
    /// Keep each object's content. Commands that never read content (validate,
    /// doctor) turn it off: a large repository then loads in far less memory, and
    /// cached content is not even read.
    pub content: bool,
    /// With `content`: keep the words of prose content (a Markdown body or a text
    /// `content` field). Checks that only ask whether content is prose or structured
    /// (validate's redaction lints) turn it off: prose is then kept as an empty
    /// string — its kind, not its text — while structured content is kept whole, so a
    /// large repository checks in a fraction of the memory.
    pub prose: bool,
    /// Keep content only for the objects this accepts (None: every object). A
    /// resolution keeps the content of objects its consumer may read and no other
    /// ([`crate::resolve::content_filter`]), so the rest of a large repository never
    /// sits in memory as text. The parse cache is written whole regardless.
    pub content_for: Option<ContentFilter>,
    /// Keep every object's document ([`ContextObject::doc`]; with `content_for`, of
    /// the objects that keep their content). Checks-only loads
    /// (validate, doctor, the pre-commit hook) turn it off: only the documents that
    /// mention a field checks read from documents are kept
    /// ([`crate::object::CHECKED_FIELDS`]), and cached ones are never even allocated.
    pub docs: bool,
}

/// Which objects keep their content (see [`LoadOptions::content_for`]).
#[derive(Clone)]
pub struct ContentFilter(std::sync::Arc<dyn Fn(&ContextObject) -> bool + Send + Sync>);

impl ContentFilter {
    pub fn new(keeps: impl Fn(&ContextObject) -> bool + Send + Sync + 'static) -> ContentFilter {
        ContentFilter(std::sync::Arc::new(keeps))
    }

    /// Does `o` keep its content?
    pub fn keeps(&self, o: &ContextObject) -> bool {
        (self.0)(o)
    }
}

impl std::fmt::Debug for ContentFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContentFilter(..)")
    }
}

impl LoadOptions {
    /// Drop from a loaded object the content this load does not keep.
    pub(crate) fn trim(&self, o: &mut ContextObject) {
        self.keep().trim(o);
        let kept = self.keeps_content_of(o);
        if !self.keeps_doc(kept) {
            o.elide_doc();
        }
        if !kept {
            o.content = None;
        }
    }

    /// Does this load keep `o`'s content ([`Self::content_for`])? Asked once per
    /// object: a resolution's filter authorizes it.
    pub(crate) fn keeps_content_of(&self, o: &ContextObject) -> bool {
        self.content_for.as_ref().is_none_or(|f| f.keeps(o))
    }

    /// Does this load keep the whole document of an object whose content it keeps
    /// (`kept`, [`Self::keeps_content_of`])? Not in a checks-only load, nor for an
    /// object whose content it drops: a resolution's consumer never sees that object,
    /// so only what checks read of its document is kept.
    pub(crate) fn keeps_doc(&self, kept: bool) -> bool {
        self.docs && kept
    }

    /// How much content a load keeps.
    pub(crate) fn keep(&self) -> Keep {
        match (self.content, self.prose) {
            (false, _) => Keep::Nothing,
            (true, false) => Keep::Kind,
            (true, true) => Keep::All,
        }
    }
}

/// How much of each object's content a load keeps ([`LoadOptions::content`],
/// [`LoadOptions::prose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// No content at all.
    Nothing,
    /// Structured content whole; prose as an empty string (what it is, not what it says).
    Kind,
    /// Everything.
    All,
}

impl Keep {
    /// Drop from `o` what this load does not keep.
    pub(crate) fn trim(self, o: &mut ContextObject) {
        match self {
            Keep::All => {}
            Keep::Nothing => o.content = None,
            Keep::Kind => {
                if let Some(serde_json::Value::String(s)) = &mut o.content {
                    *s = String::new();
                }
            }
        }
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            cache: false,
            content: true,
            prose: true,
            content_for: None,
            docs: true,
        }
    }
}

/// Does the environment turn the parse cache off? `CTX_NO_CACHE` set to anything
/// but empty or `0`.
pub fn cache_disabled_by_env() -> bool {
    std::env::var_os("CTX_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Find the manifest from `dir` (or upward from `cwd`) and load the repository:
/// the entry point every front end uses.
pub fn open(
    dir: Option<&std::path::Path>,
    cwd: &std::path::Path,
    opts: &LoadOptions,
) -> crate::error::Result<Repo> {
    let (manifest, diags) = Manifest::discover(dir, cwd)?;
    Ok(load(manifest, diags, opts))
}

/// A loaded repository.
#[derive(Debug, Clone)]
pub struct Repo {
    pub manifest: Manifest,
    /// Sorted by id, then version, then file: independent of walk order and threads.
    pub objects: Vec<ContextObject>,
    /// Manifest, walk and per-file findings (repository-wide checks are added by `validate`).
    pub diags: Vec<Diagnostic>,
    /// Number of member files examined.
    pub files: usize,
}

impl Repo {
    /// Drop every object's content, keeping its metadata and document: for a caller
    /// done with content (see [`crate::resolve::bundle_releasing_content`]).
    pub fn release_content(&mut self) {
        for o in &mut self.objects {
            o.content = None;
        }
    }

    /// Files and folders the loader could not use (unreadable, missing, special,
    /// too large): they may hold context a consumer should have seen, so a
    /// resolution says so. Counted only: a bundle never enumerates the repository.
    pub fn unread_sources(&self) -> usize {
        self.diags
            .iter()
            .filter(|d| {
                d.code == Code::SourceUnavailable && d.severity == crate::diag::Severity::Error
            })
            .count()
    }
}

/// Read a member file: regular files only (a FIFO or device is refused, never
/// waited on), at most `limit` bytes.
pub fn read_member(m: &Member, limit: u64) -> Result<Vec<u8>, Box<Diagnostic>> {
    use crate::fs::ReadError;
    crate::fs::read_regular(&m.abs, limit).map_err(|e| {
        Box::new(match e {
            ReadError::Io(e) => walk::unreadable(&m.rel, "file", &e),
            ReadError::NotRegular(kind) => Diagnostic::error(
                Code::SourceUnavailable,
                format!("`{}` is {kind}, not a regular file; it is not read", m.rel),
            )
            .file(m.rel.clone())
            .expected("a regular file")
            .actual(kind)
            .fix("replace it with a regular file"),
            ReadError::TooLarge { len, limit } => Diagnostic::error(
                Code::SourceUnavailable,
                format!("file is {len} bytes, over the {limit}-byte limit"),
            )
            .file(m.rel.clone())
            .expected(format!("at most {limit} bytes"))
            .actual(format!("{len} bytes"))
            .fix("split the object, or reference large data by URI"),
            ReadError::Grew(limit) => Diagnostic::error(
                Code::SourceUnavailable,
                format!("file grew over the {limit}-byte limit while reading"),
            )
            .file(m.rel.clone()),
        })
    })
}

/// Load every object the manifest declares.
pub fn load(manifest: Manifest, diags: Vec<Diagnostic>, opts: &LoadOptions) -> Repo {
    load_counted(manifest, diags, opts).0
}

/// [`load`], also saying how many results came from the cache.
pub fn load_counted(
    manifest: Manifest,
    mut diags: Vec<Diagnostic>,
    opts: &LoadOptions,
) -> (Repo, Usage) {
    let pass = Pass::run(&manifest, opts, false);
    diags.extend(pass.walk_diags);
    let usage = pass.slots.usage();
    let files = pass.members.len();
    (assemble_slots(manifest, diags, pass.slots, files), usage)
}

/// Per-member results, in member order, filled in place (a repository's objects
/// are never held twice while loading).
#[derive(Debug, Default)]
pub(crate) struct Slots {
    pub objects: Vec<Option<ContextObject>>,
    pub diags: Vec<Vec<Diagnostic>>,
    /// The result came from the cache.
    pub hit: Vec<bool>,
    /// The file was read (or its result cached): false for unreadable files, whose
    /// findings are never cached so the next run tries again.
    pub read: Vec<bool>,
}

impl Slots {
    fn usage(&self) -> Usage {
        let hits = self.hit.iter().filter(|h| **h).count();
        Usage {
            hits,
            parsed: self.hit.len() - hits,
        }
    }
}

/// Fill the results of `members`: those `cache` holds under `keys` are decoded,
/// the others made by `produce` (result, and whether the file could be read) in
/// parallel; then the cache is saved. Objects keep the content `opts` says. Fresh
/// results are encoded for the cache as they are made, before their content is
/// trimmed, so a load that keeps little never holds every file's content at once.
pub(crate) fn fill(
    members: &[&Member],
    keys: &[Option<Key>],
    sources: &[cache::SourceId],
    cache: Option<ParseCache>,
    opts: &LoadOptions,
    produce: impl Fn(&Member) -> (parse::Parsed, bool) + Sync,
) -> Slots {
    let n = members.len();
    let mut slots = Slots {
        objects: (0..n).map(|_| None).collect(),
        diags: vec![Vec::new(); n],
        hit: vec![false; n],
        read: vec![true; n],
    };
    let tickets: Vec<Option<cache::Ticket>> = match &cache {
        Some(c) => {
            // Members come in path order: each search starts where the last ended.
            let mut cursor = 0;
            members
                .iter()
                .zip(keys)
                .zip(sources)
                .map(|((m, k), source)| {
                    c.find_from(&mut cursor, m.rel.as_str(), source, k.as_ref()?)
                })
                .collect()
        }
        None => vec![None; n],
    };
    if let Some(c) = &cache {
        let wanted: Vec<(cache::Ticket, usize)> = tickets
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some(((*t)?, i)))
            .collect();
        for &(_, i) in &wanted {
            slots.hit[i] = true;
        }
        let sink = std::sync::Mutex::new((&mut slots.objects, &mut slots.diags));
        // Fetched results come trimmed as `opts` says.
        let failed = c.fetch(&wanted, opts, &|i, f| {
            let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
            s.0[i] = f.object;
            s.1[i] = f.diags;
        });
        for i in failed {
            slots.hit[i] = false;
        }
    }
    let hit = &slots.hit;
    let encoder = cache.as_ref().map(|c| c.encoder());
    // Each worker encodes what it parses into segments of its own.
    let fresh: Vec<cache::Segments> = slots
        .objects
        .par_iter_mut()
        .zip(slots.diags.par_iter_mut())
        .zip(slots.read.par_iter_mut())
        .enumerate()
        .filter(|(i, _)| !hit[*i])
        .fold(
            cache::Segments::default,
            |mut segments, (i, ((o, d), r))| {
                let (p, ok) = produce(members[i]);
                *o = p.object;
                *d = p.diags;
                *r = ok;
                if let (Some(e), Some(key), true) = (&encoder, &keys[i], ok) {
                    e.encode(
                        &mut segments,
                        &cache::Fresh {
                            path: members[i].rel.as_str(),
                            key,
                            source: &sources[i],
                            scope: cache::scope(members[i]),
                            object: o.as_ref(),
                            diags: d,
                        },
                    );
                }
                if let Some(o) = o {
                    opts.trim(o);
                }
                segments
            },
        )
        .collect();
    if let (Some(c), Some(e)) = (cache, encoder) {
        let kept: Vec<cache::Ticket> = tickets
            .iter()
            .zip(&slots.hit)
            .filter_map(|(t, hit)| t.filter(|_| *hit))
            .collect();
        c.save_encoded(&kept, e.finish(fresh));
    }
    slots
}

/// One loading pass over the member files, before assembly.
pub(crate) struct Pass {
    pub members: Vec<Member>,
    pub walk_diags: Vec<Diagnostic>,
    /// Per member (empty unless the cache was used or stamps were asked for).
    pub sources: Vec<cache::SourceId>,
    pub stamps: Vec<Option<Stamp>>,
    pub slots: Slots,
    /// When the pass started, before any file was looked at.
    pub snapshot_ns: i64,
}

impl Pass {
    /// Walk, stat, take what the cache holds, read and parse the rest, save.
    /// `track` asks for sources and stamps even without the cache.
    pub fn run(manifest: &Manifest, opts: &LoadOptions, track: bool) -> Pass {
        // Taken before any file is looked at: what the cache's racy check compares to.
        let snapshot_ns = cache::stamp::now_ns();
        let ((members, walk_diags), cache) = if opts.cache {
            // Reading the cache's indexes overlaps the walk.
            std::thread::scope(|s| {
                let c = s.spawn(|| ParseCache::open(manifest, snapshot_ns));
                let walked = walk_members(manifest, opts, snapshot_ns);
                (walked, c.join().ok().flatten())
            })
        } else {
            (walk::members(manifest), None)
        };
        let keyed = cache.is_some() || track;
        let (sources, stamps): (Vec<cache::SourceId>, Vec<Option<Stamp>>) = if keyed {
            (
                cache::source_ids(manifest, &members),
                cache::stamp::read_many(&members, |m| &m.abs),
            )
        } else {
            (vec![[0; 16]; members.len()], vec![None; members.len()])
        };
        let keys: Vec<Option<Key>> = stamps
            .iter()
            .map(|s| s.filter(|s| s.size <= opts.max_file_size).map(Key::Stat))
            .collect();
        let refs: Vec<&Member> = members.iter().collect();
        let slots = fill(&refs, &keys, &sources, cache, opts, |m| {
            let r = read_and_parse(manifest, m, opts);
            (r.0, r.1)
        });
        drop(refs);
        Pass {
            members,
            walk_diags,
            sources,
            stamps,
            slots,
            snapshot_ns,
        }
    }
}

/// List the member files; with the cache on, through the walk's memo
/// ([`walk_memo`]) for a walk started at `snapshot_ns`.
pub(crate) fn walk_members(
    manifest: &Manifest,
    opts: &LoadOptions,
    snapshot_ns: i64,
) -> (Vec<Member>, Vec<Diagnostic>) {
    let memo = opts.cache.then(|| walk_memo::location(manifest)).flatten();
    let memo = memo.as_deref().map(|p| (p, snapshot_ns));
    let (members, diags, _) = walk::members_remembered(manifest, memo);
    (members, diags)
}

/// Read one member and parse it; false when it could not be read.
pub(crate) fn read_and_parse(
    manifest: &Manifest,
    m: &Member,
    opts: &LoadOptions,
) -> (parse::Parsed, bool) {
    let defaults = parse::Defaults::for_member(manifest, m);
    match read_member(m, opts.max_file_size) {
        Ok(bytes) => (parse::parse(m, &bytes, &defaults), true),
        Err(d) => (
            parse::Parsed {
                object: None,
                diags: vec![*d],
            },
            false,
        ),
    }
}

/// [`assemble`] from per-member slots, reusing their storage for the objects.
pub(crate) fn assemble_slots(
    manifest: Manifest,
    mut diags: Vec<Diagnostic>,
    slots: Slots,
    files: usize,
) -> Repo {
    for d in slots.diags {
        diags.extend(d);
    }
    // Collected in place (`filter_map` reuses the buffer; `flatten` would not):
    // `Option<ContextObject>` and `ContextObject` have one size.
    #[allow(clippy::filter_map_identity)]
    let mut objects: Vec<ContextObject> = slots.objects.into_iter().filter_map(|o| o).collect();
    // URI entries come from the manifest alone: made afresh every time, never cached.
    for p in uri_entries::parsed(&manifest) {
        diags.extend(p.diags);
        objects.extend(p.object);
    }
    sort_objects(&mut objects);
    diag::normalize(&mut diags);
    Repo {
        manifest,
        objects,
        diags,
        files,
    }
}

/// The canonical object order: id, version, file. Independent of walk order and threads.
/// Positions are sorted by a compact key (the position last, so the order is total
/// and an unstable sort gives what a stable one would), then the objects are moved
/// into place: sorting the objects themselves would move 800-byte values around.
pub fn sort_objects(objects: &mut [ContextObject]) {
    let key = |i: usize| {
        let o = &objects[i];
        (o.id.as_str(), o.version, o.origin.file.as_str(), i)
    };
    if (1..objects.len()).all(|i| key(i - 1) < key(i)) {
        return;
    }
    let mut keys: Vec<_> = (0..objects.len()).map(key).collect();
    keys.sort_unstable();
    let order: Vec<usize> = keys.into_iter().map(|k| k.3).collect();
    permute(objects, order);
}

/// Reorder `items` so that position `i` holds what was at `order[i]` (`order` a
/// permutation), in place: each cycle of the permutation is walked once.
pub(crate) fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        while order[at] != start {
            let from = order[at];
            items.swap(at, from);
            order[at] = at;
            at = from;
        }
        order[at] = at;
    }
}

/// Collect parse results into a repository in canonical order: objects by id,
/// version and file; findings by file and line. Shared by every loader so the
/// order never depends on which path read the files.
pub fn assemble(
    manifest: Manifest,
    mut diags: Vec<Diagnostic>,
    results: Vec<parse::Parsed>,
    files: usize,
) -> Repo {
    let mut objects = Vec::with_capacity(results.len());
    for r in results.into_iter().chain(uri_entries::parsed(&manifest)) {
        diags.extend(r.diags);
        objects.extend(r.object);
    }
    sort_objects(&mut objects);
    diag::normalize(&mut diags);
    Repo {
        manifest,
        objects,
        diags,
        files,
    }
}

#[cfg(test)]
mod order_tests {
    use super::permute;

    #[test]
    fn permute_moves_every_item_where_the_order_says() {
        let orders: [&[usize]; 5] = [&[], &[0], &[2, 0, 1], &[1, 0, 3, 2], &[4, 3, 0, 1, 2]];
        for order in orders {
            let mut items: Vec<char> = ('a'..).take(order.len()).collect();
            let want: Vec<char> = order.iter().map(|&i| items[i]).collect();
            permute(&mut items, order.to_vec());
            assert_eq!(items, want, "order {order:?}");
        }
    }
}

#[cfg(test)]
mod elide_tests;
