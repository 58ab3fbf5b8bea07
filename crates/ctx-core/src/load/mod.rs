//! Loading a repository: list member files, read and parse them in parallel,
//! and return objects in a deterministic order with every per-file finding.

pub mod exclude;
pub mod matcher;
pub mod parse;
pub mod secrets;
pub mod unloaded;
pub mod uri_entries;
pub mod walk;

use rayon::prelude::*;

use crate::diag::{self, Code, Diagnostic};
use crate::manifest::Manifest;
use crate::object::ContextObject;
use walk::Member;

/// Files larger than this are refused (a context object is not a data dump).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub max_file_size: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

/// A loaded repository.
#[derive(Debug)]
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
pub fn load(manifest: Manifest, mut diags: Vec<Diagnostic>, opts: &LoadOptions) -> Repo {
    let (members, walk_diags) = walk::members(&manifest);
    diags.extend(walk_diags);
    let results: Vec<parse::Parsed> = members
        .par_iter()
        .map(|m| {
            let defaults = parse::Defaults::for_member(&manifest, m);
            match read_member(m, opts.max_file_size) {
                Ok(bytes) => parse::parse(m, &bytes, &defaults),
                Err(d) => parse::Parsed {
                    object: None,
                    diags: vec![*d],
                },
            }
        })
        .collect();
    let files = members.len();
    assemble(manifest, diags, results, files)
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
