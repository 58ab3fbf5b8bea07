//! The files `ctx export` generated, found in a repository's work tree by their
//! marker, with the files around them (what the placement checks ask about).
//!
//! The walk respects `.gitignore` (not git's local exclude list, where a private
//! export is kept out of git), never enters `.git/` or `.ctx/`, and skips the
//! folders of local collections: the loader walks those, and a file there is an
//! object or already reported as one that nothing loads.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use crate::fs::RelPath;
use crate::load::matcher::Source;
use crate::manifest::Manifest;

use super::{Target, MARKER};

/// How much of a file is read to find its marker (front matter comes first).
const HEAD: u64 = 64 * 1024;

/// Generated files are read whole up to this size, to count their characters.
const WHOLE: u64 = 4 * 1024 * 1024;

/// One generated file.
#[derive(Debug, Clone)]
pub struct Generated {
    pub rel: RelPath,
    /// The target its marker names (None: a name this ctx does not know).
    pub target: Option<Target>,
    /// The command line its marker records.
    pub command: Option<String>,
    /// The file's text (at least its first `HEAD` bytes).
    pub text: String,
    /// Its length in characters.
    pub chars: usize,
    /// 1-based line of the marker.
    pub marker_line: u32,
}

/// The generated files of a tree and every other file walked, each sorted.
#[derive(Debug, Default)]
pub struct Scan {
    pub generated: Vec<Generated>,
    pub files: Vec<RelPath>,
}

/// What a marker line records: its target's name and the command line.
pub fn marker_fields(line: &str) -> Option<(&str, Option<&str>)> {
    let rest = line.strip_prefix(MARKER)?.strip_prefix(" (")?;
    let name = &rest[..rest.find(')')?];
    let command = rest
        .find("regenerate with `")
        .map(|i| &rest[i + "regenerate with `".len()..])
        .and_then(|c| c.rfind("` -->").map(|j| &c[..j]));
    Some((name, command))
}

/// The marker of `text` and its line, if ctx generated it.
fn find_marker(text: &str) -> Option<(u32, &str)> {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.starts_with(MARKER))
        .map(|(i, l)| (i as u32 + 1, l))
}

/// Walk the tree of `m`, reading the Markdown and text files that are not
/// `members` (object files, which the loader has read) for a marker.
pub fn scan(m: &Manifest, members: &HashSet<&str>) -> Scan {
    let root = m.root.clone();
    let skip: Vec<RelPath> = m
        .members
        .collections
        .iter()
        .filter_map(|c| match &c.source {
            Source::Local(l) if !l.base.as_str().is_empty() => Some(l.base.clone()),
            _ => None,
        })
        .collect();
    let walk_root = root.clone();
    let walker = ignore::WalkBuilder::new(&root)
        .hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .filter_entry(move |e| {
            let Some(rel) = RelPath::strip(&walk_root, e.path()) else {
                return false;
            };
            let name = e.file_name();
            !(e.file_type().is_some_and(|t| t.is_dir()) && (name == ".git" || name == ".ctx"))
                && !skip.iter().any(|b| rel.is_within(b))
        })
        .build();
    let mut out = Scan::default();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(rel) = RelPath::strip(&root, entry.path()) else {
            continue;
        };
        let candidate = !members.contains(rel.as_str())
            && matches!(
                rel.rsplit('.').next(),
                Some("md" | "mdc" | "markdown" | "txt")
            );
        match candidate.then(|| generated(entry.path(), &rel)).flatten() {
            Some(g) => out.generated.push(g),
            None => out.files.push(rel),
        }
    }
    out.generated.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.files.sort();
    out
}

/// The file at `path` as a generated file, if its head holds a marker.
fn generated(path: &Path, rel: &RelPath) -> Option<Generated> {
    let (file, len) = crate::fs::open_regular(path).ok()?;
    let mut head = Vec::new();
    file.take(HEAD).read_to_end(&mut head).ok()?;
    let head = String::from_utf8_lossy(&head);
    let (marker_line, line) = find_marker(&head)?;
    let (name, command) = marker_fields(line)?;
    let target = Target::parse(name);
    let command = command.map(str::to_string);
    let text = if len > HEAD && len <= WHOLE {
        let bytes = crate::fs::read_regular(path, WHOLE).ok()?;
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        head.into_owned()
    };
    // Beyond WHOLE the byte count stands in: far past every host's limit anyway.
    let chars = if len > WHOLE {
        len as usize
    } else {
        text.chars().count()
    };
    Some(Generated {
        rel: rel.clone(),
        target,
        command,
        text,
        chars,
        marker_line,
    })
}

/// Where `root` sits inside the git work tree that holds it (`docs/ctx`), when
/// that is not the work tree's root; None when it is, or when no `.git` is found.
pub fn below_git_root(root: &Path) -> Option<String> {
    let mut dir = root.parent();
    if root.join(".git").exists() {
        return None;
    }
    while let Some(d) = dir {
        if d.join(".git").exists() {
            let rel = RelPath::strip(d, root)?;
            return Some(rel.as_str().to_string());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_fields_give_the_target_and_the_command() {
        let line = "<!-- generated by ctx export (cursor-rules) from OpenContext repository `acme` for role `support`; bundle digest sha256:ab. Do not edit: regenerate with `ctx export --target cursor-rules --task 'a` b'` -->";
        assert_eq!(
            marker_fields(line),
            Some((
                "cursor-rules",
                Some("ctx export --target cursor-rules --task 'a` b'")
            ))
        );
        assert_eq!(
            marker_fields("<!-- generated by ctx export (x) -->"),
            Some(("x", None))
        );
        assert_eq!(marker_fields("<!-- something else -->"), None);
        assert_eq!(
            find_marker("---\na: 1\n---\n<!-- generated by ctx export (agents-md) -->\n")
                .map(|m| m.0),
            Some(4)
        );
    }

    #[test]
    fn below_git_root_finds_the_work_tree_above() {
        let tmp = tempfile::tempdir().unwrap();
        let inner = tmp.path().join("docs/ctx");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(below_git_root(&inner), None);
        std::fs::create_dir(tmp.path().join(".git")).unwrap();
        assert_eq!(below_git_root(&inner).as_deref(), Some("docs/ctx"));
        assert_eq!(below_git_root(tmp.path()), None);
    }
}
