//! Turning `context:` entries and `collections:` globs into a sorted list of files.
//! `.gitignore` is respected, hidden files are skipped, nothing outside the
//! manifest folder is ever read (symlinks included), only regular files are
//! members, and a file or folder that cannot be read is reported, never skipped
//! in silence.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::{Code, Diagnostic};
use crate::fs::{confine, RelPath};
use crate::load::matcher::{CompiledCollection, Local, Source};
use crate::load::walk_memo::{Found, Memo, Trail};
use crate::manifest::Manifest;

/// One file to load, and what loaded it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// Relative to the manifest folder.
    pub rel: RelPath,
    pub abs: PathBuf,
    pub source: MemberSource,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemberSource {
    /// A `context:` entry; its key is the default id.
    Entry { key: String },
    /// A collection member; `base` is the collection's folder (relative, `/`-separated).
    /// Shared by every member of the collection: a large one has ~100k members.
    Collection { name: Arc<str>, base: Arc<str> },
}

fn traversal(m: &Manifest, field: String, target: &str) -> Diagnostic {
    Diagnostic::error(
        Code::PathTraversal,
        format!("`{target}` resolves outside the repository folder"),
    )
    .file(m.file.clone())
    .field(field)
    .expected("a path inside the folder that holds the manifest")
    .actual(target)
    .fix("move the file into the repository, or reference it by URI")
}

/// A file or folder the walk could not read: every command that would have used it
/// says so (validate and doctor as a finding, resolve as a bundle warning).
pub fn unreadable(rel: &str, what: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        Code::SourceUnavailable,
        format!("cannot read {what} `{rel}`: {e}"),
    )
    .file(if rel.is_empty() { "." } else { rel })
    .expected(format!("a readable {what}"))
    .actual(e.to_string())
    .fix("check its permissions (ctx needs to read every member file and folder)")
}

/// Something that is neither a regular file nor a folder where a member was expected.
fn not_regular(rel: &str, kind: &str) -> Diagnostic {
    Diagnostic::error(
        Code::SourceUnavailable,
        format!("`{rel}` is {kind}, not a regular file; it is not read"),
    )
    .file(rel)
    .expected("a regular file")
    .actual(kind)
    .fix("replace it with a regular file, or move it out of the collection")
}

/// List every member file. Diagnostics cover globs that match nothing, references
/// that escape the repository, symlinks pointing outside it, special files, and
/// files or folders that cannot be read.
pub fn members(m: &Manifest) -> (Vec<Member>, Vec<Diagnostic>) {
    let (out, diags, _) = members_remembered(m, None);
    (out, diags)
}

/// [`members`], remembering the collections' walk in the memo at `memo.0` (for a
/// walk started at `memo.1`, ns) and reusing it while it holds
/// ([`super::walk_memo`]). Also says whether the memo was used.
pub(crate) fn members_remembered(
    m: &Manifest,
    memo: Option<(&Path, i64)>,
) -> (Vec<Member>, Vec<Diagnostic>, bool) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for (e, (key, target)) in m.entries.iter().zip(&m.members.entries) {
        debug_assert_eq!(&e.key, key);
        let field = format!("context.{}", e.key);
        let raw = e.target.strip_prefix("file://").unwrap_or(&e.target);
        if crate::load::matcher::is_uri(raw) {
            continue; // remote entries are resolved by adapters, not loaded from disk
        }
        let Some(rel) = target else {
            diags.push(traversal(m, field, &e.target));
            continue;
        };
        let abs = rel.to_path(&m.root);
        match std::fs::metadata(&abs) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                diags.push(
                    Diagnostic::error(
                        Code::SourceUnavailable,
                        format!("context entry `{}` points at a missing file", e.key),
                    )
                    .file(m.file.clone())
                    .field(field)
                    .expected("an existing file")
                    .actual(e.target.as_str())
                    .fix("create the file or correct the path"),
                );
                continue;
            }
            Err(err) => {
                diags.push(unreadable(rel, "file", &err).field(field));
                continue;
            }
            Ok(meta) if !meta.is_file() => {
                diags.push(not_regular(rel, crate::fs::kind(&meta)).field(field));
                continue;
            }
            Ok(_) => {}
        }
        if !confine::resolves_inside(&m.root, &abs) {
            diags.push(traversal(m, field, &e.target));
            continue;
        }
        out.push(Member {
            rel: rel.clone(),
            abs,
            source: MemberSource::Entry { key: e.key.clone() },
        });
    }
    let collections = &m.members.collections;
    let remembered = memo.and_then(|(path, _)| recalled(m, Memo::load(path, m)?));
    let used = remembered.is_some();
    // Collection members (sorted), and the object files seen under a collection's
    // folder that its source does not match.
    let (collected, candidates) = match remembered {
        Some(r) => r,
        None => {
            // Collections are walked side by side (each has its own folder and ignore
            // rules); their results are joined in manifest order, so nothing depends
            // on which finished first.
            use rayon::prelude::*;
            let walked: Vec<Walked> = collections
                .par_iter()
                .map(|c| walk_collection(m, c))
                .collect();
            let fit = walked.iter().all(|w| w.diags.is_empty());
            let (mut collected, mut candidates, mut trails) = (Vec::new(), Vec::new(), Vec::new());
            for w in walked {
                collected.extend(w.members);
                diags.extend(w.diags);
                candidates.extend(w.candidates);
                trails.push(w.trail);
            }
            sort_members(&mut collected);
            if let (Some((path, snapshot_ns)), true) = (memo, fit) {
                remember(m, &trails, &collected, &candidates, path, snapshot_ns);
            }
            (collected, candidates)
        }
    };
    sort_members(&mut out);
    let out = merge_members(out, collected);
    diags.extend(super::unloaded::findings(m, &out, candidates));
    (out, diags, used)
}

/// The order of members: by relative path, ties by the whole member.
fn member_order(x: &Member, y: &Member) -> std::cmp::Ordering {
    x.rel.as_str().cmp(y.rel.as_str()).then_with(|| x.cmp(y))
}

/// Merge two sorted member lists into one (what sorting both together gives; equal
/// members are identical).
fn merge_members(a: Vec<Member>, b: Vec<Member>) -> Vec<Member> {
    if a.is_empty() {
        return b;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    for y in b {
        while let Some(x) = a.next_if(|x| member_order(x, &y).is_le()) {
            out.push(x);
        }
        out.push(y);
    }
    out.extend(a);
    out
}

/// What walking one collection found.
#[derive(Default)]
struct Walked {
    members: Vec<Member>,
    diags: Vec<Diagnostic>,
    candidates: Vec<RelPath>,
    trail: Trail,
}

/// Remember a walk that reported nothing, if it is fit to be (see [`super::walk_memo`]):
/// its trails, sorted collection members and candidates.
fn remember(
    m: &Manifest,
    trails: &[Trail],
    collected: &[Member],
    candidates: &[RelPath],
    path: &Path,
    snapshot_ns: i64,
) {
    let bases: Vec<PathBuf> = m
        .members
        .collections
        .iter()
        .filter_map(|c| match &c.source {
            Source::Local(local) => Some(local.base.to_path(&m.root)),
            _ => None,
        })
        .collect();
    let index = |name: &str| m.members.collections.iter().position(|c| c.name == name);
    // Id bases are few (one per collection folder): stored once, named by position.
    let mut id_bases: Vec<&str> = Vec::new();
    let mut members = Vec::with_capacity(collected.len());
    for x in collected {
        let MemberSource::Collection { name, base } = &x.source else {
            return;
        };
        let Some(c) = index(name) else {
            return;
        };
        let b = match id_bases.iter().position(|b| *b == &**base) {
            Some(b) => b,
            None => {
                id_bases.push(base);
                id_bases.len() - 1
            }
        };
        members.push((c as u32, b as u32, x.rel.to_string()));
    }
    let found = Found {
        members,
        id_bases: id_bases.iter().map(ToString::to_string).collect(),
        candidates: candidates.iter().map(ToString::to_string).collect(),
    };
    if let Some(memo) = Memo::remember(m, &bases, trails, found, snapshot_ns) {
        memo.save(path);
    }
}

/// The walk a memo remembers, as members again (sorted) and candidates; None if
/// any path is not one or names no collection. Paths are parsed again, so even a
/// damaged memo that passed its checksum never yields one outside the repository.
fn recalled(m: &Manifest, memo: Memo) -> Option<(Vec<Member>, Vec<RelPath>)> {
    use rayon::prelude::*;
    let collections = &m.members.collections;
    let Found {
        members,
        id_bases,
        candidates,
    } = memo.found;
    let names: Vec<Arc<str>> = collections.iter().map(|c| c.name.as_str().into()).collect();
    let id_bases: Vec<Arc<str>> = id_bases.into_iter().map(Arc::from).collect();
    let members = members
        .into_par_iter()
        .map(|(c, base, rel)| {
            let rel = RelPath::parse(&rel).ok()?;
            Some(Member {
                abs: rel.to_path(&m.root),
                rel,
                source: MemberSource::Collection {
                    name: names.get(c as usize)?.clone(),
                    base: id_bases.get(base as usize)?.clone(),
                },
            })
        })
        .collect::<Option<Vec<Member>>>()?;
    let candidates = candidates
        .iter()
        .map(|r| RelPath::parse(r).ok())
        .collect::<Option<Vec<RelPath>>>()?;
    Some((members, candidates))
}

/// Walk one collection's folder (remote and broken sources give findings only).
fn walk_collection(m: &Manifest, c: &CompiledCollection) -> Walked {
    let mut w = Walked::default();
    let field = format!("collections.{}", c.name);
    let written = m
        .collections
        .iter()
        .find(|x| x.name == c.name)
        .map_or("", |x| x.source.as_str());
    match &c.source {
        Source::Remote => return w,
        Source::Escapes => {
            w.diags.push(traversal(m, field, written));
            return w;
        }
        Source::Invalid(e) => {
            w.diags.push(
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("collection `{}` has an invalid glob: {e}", c.name),
                )
                .file(m.file.clone())
                .field(field)
                .actual(written)
                .fix("fix the glob syntax, e.g. `./context/policies/**`"),
            );
            return w;
        }
        Source::Local(local) => collect(m, &c.name, local, &field, written, &mut w),
    }
    if w.members.is_empty() && !w.diags.iter().any(|d| d.field.as_deref() == Some(&field)) {
        w.diags.push(
            Diagnostic::warning(
                Code::SourceUnavailable,
                format!("collection `{}` matches no files", c.name),
            )
            .file(m.file.clone())
            .field(field)
            .actual(written)
            .expected("a glob matching at least one .md, .yaml, .yml or .json file")
            .fix("correct the glob or remove the collection"),
        );
    }
    w
}

/// Members in their `Ord` order. Positions are sorted by the relative path first
/// (members are 100-byte values: moving them through a sort cost more than the
/// comparisons), ties by the whole member; equal members are identical, so the
/// unstable sort gives exactly what a stable one would.
fn sort_members(out: &mut [Member]) {
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_unstable_by(|&a, &b| member_order(&out[a], &out[b]));
    super::permute(out, order);
}

/// The path an `ignore` error is about, when it names one.
fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

fn collect(m: &Manifest, name: &str, local: &Local, field: &str, written: &str, w: &mut Walked) {
    // Every member of the collection shares these.
    let shared_name: Arc<str> = name.into();
    let shared_base: Arc<str> = local.base.as_str().into();
    let Walked {
        members: out,
        diags,
        candidates,
        trail,
    } = w;
    let base_abs = local.base.to_path(&m.root);
    match std::fs::metadata(&base_abs) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            diags.push(unreadable(&local.base, "folder", &e).field(field));
            return;
        }
    }
    if !confine::resolves_inside(&m.root, &base_abs) {
        diags.push(traversal(m, field.to_string(), written));
        return;
    }
    let walker = ignore::WalkBuilder::new(&base_abs)
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                // An unreadable folder or file: report it, so nothing vanishes unnoticed.
                if let Some(io) = e.io_error() {
                    let rel = error_path(&e)
                        .and_then(|p| RelPath::strip(&m.root, p))
                        .unwrap_or_else(|| local.base.clone());
                    let what = if rel.as_str() == local.base.as_str()
                        || error_path(&e).is_some_and(Path::is_dir)
                    {
                        "folder"
                    } else {
                        "file"
                    };
                    diags.push(unreadable(&rel, what, io));
                }
                continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            trail.unfit = true;
            continue;
        };
        let abs = entry.path();
        // What a memo of this walk must watch: every folder listed; a link's target
        // can change without any of them changing.
        if ft.is_dir() {
            trail.dirs.push(abs.to_path_buf());
        } else if ft.is_symlink() {
            trail.unfit = true;
        }
        let Some(rel) = RelPath::strip(&m.root, abs) else {
            continue;
        };
        if crate::object::Format::from_path(&rel).is_none() {
            continue;
        }
        if !local.matches(&rel) {
            // A collection rooted at the repository itself does not make every
            // Markdown file there (README, docs) look like lost context.
            if ft.is_file() && !local.base.as_str().is_empty() && !local.excludes(&rel) {
                candidates.push(rel);
            }
            continue;
        }
        if ft.is_dir() {
            continue;
        }
        if ft.is_symlink() {
            let meta = match std::fs::metadata(abs) {
                Ok(meta) => meta,
                Err(_) => {
                    diags.push(
                        Diagnostic::error(
                            Code::SourceUnavailable,
                            format!("`{rel}` is a broken symbolic link"),
                        )
                        .file(rel.clone())
                        .expected("a link to an existing file inside the repository")
                        .actual("a link whose target does not exist")
                        .fix("restore the target, or remove the link"),
                    );
                    continue;
                }
            };
            if !confine::resolves_inside(&m.root, abs) {
                diags.push(
                    Diagnostic::error(
                        Code::PathTraversal,
                        format!("`{rel}` is a symbolic link that points outside the repository"),
                    )
                    .file(rel.clone())
                    .expected("a link target inside the repository folder")
                    .actual("a target outside the repository")
                    .fix("replace the link with the file itself, or remove it"),
                );
                continue;
            }
            if meta.is_dir() {
                continue;
            }
            if !meta.is_file() {
                diags.push(not_regular(&rel, crate::fs::kind(&meta)));
                continue;
            }
        } else if !ft.is_file() {
            let kind = entry
                .metadata()
                .map(|meta| crate::fs::kind(&meta))
                .unwrap_or("a special file");
            diags.push(not_regular(&rel, kind));
            continue;
        }
        let base = match local.id_base(&rel) {
            std::borrow::Cow::Borrowed(_) => shared_base.clone(),
            std::borrow::Cow::Owned(parent) => parent.as_str().into(),
        };
        out.push(Member {
            rel,
            abs: abs.to_path_buf(),
            source: MemberSource::Collection {
                name: shared_name.clone(),
                base,
            },
        });
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    fn member(rel: &str, source: MemberSource) -> Member {
        let rel = RelPath::parse(rel).unwrap();
        Member {
            abs: rel.to_path(Path::new("/r")),
            rel,
            source,
        }
    }

    #[test]
    fn merging_sorted_lists_equals_sorting_them_together() {
        let entry = |rel: &str, key: &str| member(rel, MemberSource::Entry { key: key.into() });
        let collected = |rel: &str, name: &str| {
            member(
                rel,
                MemberSource::Collection {
                    name: name.into(),
                    base: "c".into(),
                },
            )
        };
        // Ties on a path (an entry that is also a collection member), at both ends.
        let a = [
            entry("a.md", "a"),
            entry("c/m.md", "m"),
            entry("c/m.md", "n"),
            entry("z.md", "z"),
        ];
        let b = [
            collected("b.md", "x"),
            collected("c/m.md", "x"),
            collected("c/m.md", "y"),
            collected("c/n.md", "x"),
        ];
        for (i, j) in [(0, 0), (0, 4), (4, 0), (2, 3), (4, 4), (1, 2)] {
            let (mut x, mut y) = (a[..i].to_vec(), b[..j].to_vec());
            sort_members(&mut x);
            sort_members(&mut y);
            let mut want = [x.clone(), y.clone()].concat();
            sort_members(&mut want);
            assert_eq!(merge_members(x, y), want, "{i} {j}");
        }
    }
}
