//! Loading a repository: list member files, read and parse them in parallel,
//! and return objects in a deterministic order with every per-file finding.
//!
//! With [`LoadOptions::cache`], results of files that have not changed come from
//! the parse cache ([`cache`]) at the cost of one `stat` each; [`live::LiveRepo`]
//! keeps a loaded repository in memory for long-running front ends and refreshes
//! only what changed.

pub mod cache;
pub mod live;
pub mod matcher;
pub mod parse;
pub mod secrets;
pub mod walk;

use rayon::prelude::*;

use crate::diag::{self, Code, Diagnostic};
use crate::manifest::Manifest;
use crate::object::ContextObject;
use cache::{Entry, Key, ParseCache, Stamp, Usage};
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
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            cache: false,
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
    let files = pass.members.len();
    let parsed = pass.results.into_iter().map(|r| r.parsed).collect();
    (assemble(manifest, diags, parsed, files), pass.usage)
}

/// One loading pass over the member files, before assembly.
pub(crate) struct Pass {
    pub members: Vec<Member>,
    pub walk_diags: Vec<Diagnostic>,
    /// Per member (empty unless the cache was used or stamps were asked for).
    pub sources: Vec<cache::SourceId>,
    pub stamps: Vec<Option<Stamp>>,
    pub results: Vec<MemberResult>,
    /// When the pass started, before any file was looked at.
    pub snapshot_ns: i64,
    pub usage: Usage,
}

impl Pass {
    /// Walk, stat, take what the cache holds, read and parse the rest, save.
    /// `track` asks for sources and stamps even without the cache.
    pub fn run(manifest: &Manifest, opts: &LoadOptions, track: bool) -> Pass {
        // Taken before any file is looked at: what the cache's racy check compares to.
        let snapshot_ns = cache::stamp::now_ns();
        let ((members, walk_diags), mut cache) = if opts.cache {
            // Reading the cache overlaps the walk.
            std::thread::scope(|s| {
                let c = s.spawn(|| ParseCache::open(manifest, snapshot_ns));
                let walked = walk::members(manifest);
                (walked, c.join().ok().flatten())
            })
        } else {
            (walk::members(manifest), None)
        };
        let keyed = cache.is_some() || track;
        let (sources, stamps) = if keyed {
            (
                cache::source_ids(manifest, &members),
                members.par_iter().map(|m| Stamp::read(&m.abs)).collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let hits: Vec<Option<parse::Parsed>> = match cache.as_mut() {
            Some(c) => members
                .iter()
                .zip(&sources)
                .zip(&stamps)
                .map(|((m, source), stamp)| {
                    let s = stamp.filter(|s| s.size <= opts.max_file_size)?;
                    c.take(m.rel.as_str(), source, &Key::Stat(s))
                })
                .collect(),
            None => members.iter().map(|_| None).collect(),
        };
        let results = parse_all(manifest, &members, hits, opts);
        let usage = Usage {
            hits: results.iter().filter(|r| r.hit).count(),
            parsed: results.iter().filter(|r| !r.hit).count(),
        };
        if let Some(c) = cache {
            let entries: Vec<Entry<'_>> = members
                .iter()
                .zip(&sources)
                .zip(&stamps)
                .zip(&results)
                .filter_map(|(((m, source), stamp), r)| {
                    Some(Entry {
                        path: m.rel.as_str(),
                        key: Key::Stat((*stamp)?),
                        source: *source,
                        scope: cache::scope(m),
                        parsed: r.read.then_some(&r.parsed)?,
                        fresh: !r.hit,
                    })
                })
                .collect();
            c.save(&entries);
        }
        Pass {
            members,
            walk_diags,
            sources,
            stamps,
            results,
            snapshot_ns,
            usage,
        }
    }
}

/// One member's result.
pub(crate) struct MemberResult {
    pub parsed: parse::Parsed,
    /// Came from the cache.
    pub hit: bool,
    /// The file was read (or its result cached): false for unreadable files, whose
    /// findings are never cached so the next run tries again.
    pub read: bool,
}

/// Read and parse every member without a cached result, in parallel.
pub(crate) fn parse_all(
    manifest: &Manifest,
    members: &[Member],
    hits: Vec<Option<parse::Parsed>>,
    opts: &LoadOptions,
) -> Vec<MemberResult> {
    members
        .par_iter()
        .zip(hits.into_par_iter())
        .map(|(m, hit)| match hit {
            Some(parsed) => MemberResult {
                parsed,
                hit: true,
                read: true,
            },
            None => read_and_parse(manifest, m, opts),
        })
        .collect()
}

/// Read one member and parse it.
pub(crate) fn read_and_parse(manifest: &Manifest, m: &Member, opts: &LoadOptions) -> MemberResult {
    let defaults = parse::Defaults::for_member(manifest, m);
    match read_member(m, opts.max_file_size) {
        Ok(bytes) => MemberResult {
            parsed: parse::parse(m, &bytes, &defaults),
            hit: false,
            read: true,
        },
        Err(d) => MemberResult {
            parsed: parse::Parsed {
                object: None,
                diags: vec![*d],
            },
            hit: false,
            read: false,
        },
    }
}

/// The canonical object order: id, version, file. Independent of walk order and threads.
pub fn sort_objects(objects: &mut [ContextObject]) {
    objects.sort_by(|a, b| {
        a.id.cmp(&b.id)
            .then(a.version.cmp(&b.version))
            .then_with(|| a.origin.file.cmp(&b.origin.file))
    });
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
    for r in results {
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
