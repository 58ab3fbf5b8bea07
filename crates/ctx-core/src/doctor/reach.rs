//! Findings about what can reach an object, and what an object reaches:
//! orphaned context and broken sources.

use std::collections::HashSet;

use rayon::prelude::*;
use serde_json::Value;

use crate::adapters::{self, AdapterError};
use crate::diag::{Code, Diagnostic};
use crate::load::Repo;
use crate::object::ContextObject;

use super::readers::{Memo, Readers};

fn at(o: &ContextObject, d: Diagnostic) -> Diagnostic {
    d.file(o.origin.file.clone())
        .line(o.origin.line)
        .id(o.id.clone())
}

/// Orphaned context: an active object that **no role or agent may read** and that
/// **no other object links to** (`references`, `depends_on`, `conflicts_with`,
/// `supersedes`, `superseded_by`). Nothing can ever bring it into a bundle, so it is
/// dead weight or a scope mistake. Reported as `info`; skipped when the manifest
/// defines no roles (then there is no consumer model to be unreachable from).
pub fn orphaned(repo: &Repo, superseded: &HashSet<usize>) -> Vec<Diagnostic> {
    if repo.manifest.roles.is_empty() {
        return Vec::new();
    }
    let mut linked: HashSet<&str> = HashSet::new();
    for o in &repo.objects {
        let m = &o.meta;
        let refs = m
            .references
            .iter()
            .chain(&m.depends_on)
            .chain(&m.conflicts_with)
            .chain(&m.supersedes)
            .chain(m.superseded_by.iter());
        for r in refs {
            if r.id != o.id {
                linked.insert(r.id.as_str());
            }
        }
    }
    // Decided object by object over the role graph, never by flattening every
    // consumer's scope (quadratic in a deep inheritance chain).
    let readers = Readers::new(&repo.manifest);
    repo.objects
        .par_iter()
        .enumerate()
        .filter(|(i, o)| !superseded.contains(i) && !linked.contains(o.id.as_str()))
        .map_init(Memo::default, |memo, (_, o)| {
            (!readers.any_reads(o, memo)).then_some(o)
        })
        .flatten()
        .map(|o| {
            at(o, Diagnostic::info(Code::Orphaned, "no role or agent may read this object and no other object links to it"))
                .field("id")
                .expected("an id some role includes (within its classification ceiling), or one another object references")
                .actual(o.id.clone())
                .fix("add a matching `include` pattern to a role, reference it from related context, or retire it")
        })
        .collect()
}

/// Broken sources: a `content_uri` the adapters cannot read offline, and local
/// `file://` provenance sources that do not exist. Remote URIs are never fetched
/// and plugins never run here (doctor stays offline and runs nothing for objects
/// nobody resolves); they are checked when a resolution needs them. A plugin
/// that is enabled but not installed, and an adapter this build lacks, are reported.
pub fn broken_sources(repo: &Repo, superseded: &HashSet<usize>) -> Vec<Diagnostic> {
    let m = &repo.manifest;
    repo.objects
        .par_iter()
        .enumerate()
        .filter(|(i, _)| !superseded.contains(i))
        .flat_map_iter(|(_, o)| {
            let mut out = Vec::new();
            if let Some(uri) = &o.meta.content_uri {
                match adapters::probe(uri, m) {
                    // Network and disabled adapters are judged when a resolution needs them;
                    // an unknown scheme and a path outside the repository are validate's findings.
                    Ok(_)
                    | Err(
                        AdapterError::Offline(_)
                        | AdapterError::RemoteDisabled(..)
                        | AdapterError::UnknownScheme(_)
                        | AdapterError::PathTraversal(_),
                    ) => {}
                    Err(e) => out.push(
                        at(
                            o,
                            Diagnostic::error(e.code(), format!("content cannot be read: {e}")),
                        )
                        .field("content_uri")
                        .expected(
                            "a readable file inside the repository, or a URI an adapter handles",
                        )
                        .actual(uri.clone())
                        .fix("correct `content_uri`, restore the file, or inline the content"),
                    ),
                }
            }
            if o.mentions("file://") {
                let sources = o.field("sources");
                for (n, src) in sources
                    .iter()
                    .flat_map(|s| s.as_array())
                    .flatten()
                    .enumerate()
                {
                    let Some(uri) = src.get("uri").and_then(Value::as_str) else {
                        continue;
                    };
                    let Some(path) = uri.strip_prefix("file://") else {
                        continue;
                    };
                    let abs = if std::path::Path::new(path).is_absolute() {
                        std::path::PathBuf::from(path)
                    } else {
                        m.root.join(path)
                    };
                    if !abs.exists() {
                        out.push(
                            at(
                                o,
                                Diagnostic::warning(
                                    Code::SourceUnavailable,
                                    format!("declared source `{uri}` does not exist"),
                                ),
                            )
                            .field(format!("sources[{n}].uri"))
                            .expected("an existing file")
                            .actual(uri)
                            .fix("correct the source URI, or restore the file it names"),
                        );
                    }
                }
            }
            out
        })
        .collect()
}
