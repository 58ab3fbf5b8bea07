//! Object files that nothing loads: under a collection's folder but outside its glob,
//! or under `context/` with no `context:` or `collections:` entry naming them. Such a
//! file looks like context to its author and is invisible to every consumer (`ctx get`
//! only says "not visible"), so the walk reports it.

use std::collections::BTreeSet;

use crate::diag::{Code, Diagnostic};
use crate::fs::RelPath;
use crate::load::matcher::{Local, Source};
use crate::manifest::Manifest;

use super::walk::Member;

/// The folder people put context in by convention, checked even when no collection
/// walks it.
pub const CONTEXT_FOLDER: &str = "context";

fn locals(m: &Manifest) -> impl Iterator<Item = (&str, &Local)> {
    m.members
        .collections
        .iter()
        .filter_map(|c| match &c.source {
            Source::Local(l) => Some((c.name.as_str(), l)),
            _ => None,
        })
}

/// Object files under `context/` outside every collection folder (which the walk
/// has already seen).
fn context_files(m: &Manifest) -> Vec<RelPath> {
    let root = m.root.join(CONTEXT_FOLDER);
    if !root.is_dir() {
        return Vec::new();
    }
    let walked: Vec<RelPath> = locals(m)
        .filter(|(_, l)| l.glob.is_some() || m.root.join(l.base.as_str()).is_dir())
        .map(|(_, l)| l.base.clone())
        .collect();
    if walked
        .iter()
        .any(|b| b.as_str().is_empty() || b.as_str() == CONTEXT_FOLDER)
    {
        return Vec::new();
    }
    let root_path = m.root.clone();
    let skip = walked.clone();
    let walker = ignore::WalkBuilder::new(&root)
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .filter_entry(move |e| {
            let Some(rel) = RelPath::strip(&root_path, e.path()) else {
                return false;
            };
            !skip.iter().any(|b| rel.is_within(b))
        })
        .build();
    walker
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| RelPath::strip(&m.root, e.path()))
        .filter(|rel| crate::object::Format::from_path(rel.as_str()).is_some())
        .collect()
}

/// Findings for `candidates` (and the files under `context/`) that are not members.
pub fn findings(m: &Manifest, members: &[Member], candidates: Vec<RelPath>) -> Vec<Diagnostic> {
    let loaded: BTreeSet<&str> = members.iter().map(|x| x.rel.as_str()).collect();
    let mut files: BTreeSet<RelPath> = candidates.into_iter().collect();
    files.extend(context_files(m));
    let mut out = Vec::new();
    for rel in files {
        if loaded.contains(rel.as_str()) || m.members.entry_of(&rel).is_some() {
            continue;
        }
        let mut holders =
            locals(m).filter(|(_, l)| rel.is_within(&l.base) && !l.base.as_str().is_empty());
        let first = holders.next();
        if first.is_some_and(|(_, l)| l.excludes(&rel)) || holders.any(|(_, l)| l.excludes(&rel)) {
            continue;
        }
        let (message, fix) = match first {
            Some((name, l)) => (
                format!(
                    "`{rel}` is in the folder of collection `{name}`, but its source `{}` does not match it, so no consumer ever sees it",
                    l.text
                ),
                format!(
                    "widen the source of `{name}` (e.g. `{}/**`), rename the file to match, or, if it is not an object (a README, a content_uri source), list it under `extensions.{}.{name}.exclude`",
                    l.base,
                    super::exclude::EXTENSION
                ),
            ),
            None => (
                format!(
                    "`{rel}` is under `{CONTEXT_FOLDER}/`, but no `context:` or `collections:` entry loads it, so no consumer ever sees it"
                ),
                "add a `collections:` entry for its folder or a `context:` entry for the file, or move it out of context/".to_string(),
            ),
        };
        out.push(
            Diagnostic::warning(Code::Orphaned, message)
                .file(rel.to_string())
                .expected("every object file under a collection's folder or context/ loaded by the manifest")
                .actual("not loaded")
                .fix(fix),
        );
    }
    out
}
