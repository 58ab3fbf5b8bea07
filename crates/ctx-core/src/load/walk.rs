//! Turning `context:` entries and `collections:` globs into a sorted list of files.
//! `.gitignore` is respected, hidden files are skipped, and nothing outside the
//! manifest folder is ever read (symlinks included).

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::diag::{Code, Diagnostic};
use crate::manifest::{Collection, Manifest};

/// One file to load, and what loaded it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// `/`-separated path relative to the manifest folder.
    pub rel: String,
    pub abs: PathBuf,
    pub source: MemberSource,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemberSource {
    /// A `context:` entry; its key is the default id.
    Entry { key: String },
    /// A collection member; `base` is the collection's folder (relative, `/`-separated).
    Collection { name: String, base: String },
}

/// Split a glob into its literal folder prefix and the rest: `./context/policies/**` → `context/policies`.
fn glob_base(glob: &str) -> String {
    let norm = glob.trim_start_matches("./");
    let mut base = Vec::new();
    for part in norm.split('/') {
        if part.contains(['*', '?', '[', '{']) {
            break;
        }
        base.push(part);
    }
    // A glob without wildcards names a file or folder; the base is its parent folder
    // when it names a file (decided by the caller), else itself.
    base.join("/")
}

/// Reject absolute paths and `..` that climb out of the manifest folder (lexically).
fn lexically_inside(rel: &str) -> bool {
    let p = Path::new(rel);
    let mut depth: i64 = 0;
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => return false,
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    true
}

/// Is `abs` (after resolving symlinks) inside `root`? `root` must be canonical.
pub fn resolves_inside(root: &Path, abs: &Path) -> bool {
    match abs.canonicalize() {
        Ok(real) => real.starts_with(root),
        Err(_) => false,
    }
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

fn is_uri(s: &str) -> bool {
    match s.find("://") {
        Some(i) => {
            s[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && i > 0
        }
        None => false,
    }
}

/// List every member file. Diagnostics cover globs that match nothing, references
/// that escape the repository, and symlinks pointing outside it.
pub fn members(m: &Manifest) -> (Vec<Member>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for e in &m.entries {
        let target = e.target.strip_prefix("file://").unwrap_or(&e.target);
        if is_uri(target) {
            continue; // remote entries are resolved by adapters, not loaded from disk
        }
        let rel = target.trim_start_matches("./").to_string();
        if !lexically_inside(&rel) {
            diags.push(traversal(m, format!("context.{}", e.key), &e.target));
            continue;
        }
        let abs = m.root.join(&rel);
        if !abs.exists() {
            diags.push(
                Diagnostic::error(
                    Code::SourceUnavailable,
                    format!("context entry `{}` points at a missing file", e.key),
                )
                .file(m.file.clone())
                .field(format!("context.{}", e.key))
                .expected("an existing file")
                .actual(e.target.as_str())
                .fix("create the file or correct the path"),
            );
            continue;
        }
        if !resolves_inside(&m.root, &abs) {
            diags.push(traversal(m, format!("context.{}", e.key), &e.target));
            continue;
        }
        out.push(Member {
            rel,
            abs,
            source: MemberSource::Entry { key: e.key.clone() },
        });
    }
    for c in &m.collections {
        let before = out.len();
        collect(m, c, &mut out, &mut diags);
        // A URI collection is one object (load::uri_entries), not a glob.
        if out.len() == before && !is_uri(c.source.strip_prefix("file://").unwrap_or(&c.source)) {
            diags.push(
                Diagnostic::warning(
                    Code::SourceUnavailable,
                    format!("collection `{}` matches no files", c.name),
                )
                .file(m.file.clone())
                .field(format!("collections.{}", c.name))
                .actual(c.source.as_str())
                .expected("a glob matching at least one .md, .yaml, .yml or .json file")
                .fix("correct the glob or remove the collection"),
            );
        }
    }
    out.sort();
    (out, diags)
}

fn collect(m: &Manifest, c: &Collection, out: &mut Vec<Member>, diags: &mut Vec<Diagnostic>) {
    let source = c.source.strip_prefix("file://").unwrap_or(&c.source);
    if is_uri(source) {
        return;
    }
    let glob_text = source.trim_start_matches("./");
    if !lexically_inside(glob_text) {
        diags.push(traversal(m, format!("collections.{}", c.name), &c.source));
        return;
    }
    let mut base = glob_base(glob_text);
    let literal = base == glob_text;
    let matcher: Option<GlobMatcher> = if literal {
        None
    } else {
        match GlobBuilder::new(glob_text).literal_separator(true).build() {
            Ok(g) => Some(g.compile_matcher()),
            Err(e) => {
                diags.push(
                    Diagnostic::error(
                        Code::ManifestInvalid,
                        format!("collection `{}` has an invalid glob: {e}", c.name),
                    )
                    .file(m.file.clone())
                    .field(format!("collections.{}", c.name))
                    .actual(c.source.as_str())
                    .fix("fix the glob syntax, e.g. `./context/policies/**`"),
                );
                return;
            }
        }
    };
    let base_abs = m.root.join(&base);
    if literal && base_abs.is_file() {
        // A collection naming a single file: its base is the parent folder.
        base = Path::new(&base)
            .parent()
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
    }
    if !base_abs.exists() {
        return;
    }
    if !resolves_inside(&m.root, &base_abs) {
        diags.push(traversal(m, format!("collections.{}", c.name), &c.source));
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
    for entry in walker.flatten() {
        let Some(ft) = entry.file_type() else {
            continue;
        };
        let abs = entry.path();
        let Ok(rel_path) = abs.strip_prefix(&m.root) else {
            continue;
        };
        let rel = rel_path.to_string_lossy().replace('\\', "/");
        if crate::object::Format::from_path(&rel).is_none() {
            continue;
        }
        if let Some(g) = &matcher {
            if !g.is_match(&rel) {
                continue;
            }
        }
        if ft.is_symlink() {
            if abs.canonicalize().is_err() {
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
            if !resolves_inside(&m.root, abs) {
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
            if !abs.is_file() {
                continue;
            }
        } else if !ft.is_file() {
            continue;
        }
        out.push(Member {
            rel,
            abs: abs.to_path_buf(),
            source: MemberSource::Collection {
                name: c.name.clone(),
                base: base.clone(),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_and_traversal() {
        assert_eq!(glob_base("./context/policies/**"), "context/policies");
        assert_eq!(glob_base("context/*.md"), "context");
        assert!(lexically_inside("context/a/../b.md"));
        assert!(!lexically_inside("../outside/**"));
        assert!(!lexically_inside("/etc/passwd"));
        assert!(is_uri("https://example.com/x.md"));
        assert!(!is_uri("./context/a.md"));
    }
}
