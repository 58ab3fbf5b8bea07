//! Declared ids that differ from the id the file's path gives. Scope patterns are
//! written against ids, and people read folders: `context/policies/internal/discounts.md`
//! declaring `id: policies.discounts` sits in the internal folder, yet an exclude of
//! `policies.internal.*` does not keep it from anyone.

use std::borrow::Cow;

use crate::diag::{Code, Diagnostic};
use crate::fs::RelPath;
use crate::load::matcher::Source;
use crate::load::parse::derive_id;
use crate::load::Repo;
use crate::manifest::roles::{self, Scope};
use crate::object::{ContextObject, PathId};

/// The id a file's path gives it, when a `context:` entry or a local collection loads it.
pub fn path_id(repo: &Repo, o: &ContextObject) -> Option<String> {
    expected_id(repo, o).map(Cow::into_owned)
}

/// [`path_id`], borrowed from what loading kept where it can be: a collection
/// member's path id was derived when it was parsed (the walk matched it to its
/// collection, so the manifest would derive the same, which debug builds check).
fn expected_id<'a>(repo: &'a Repo, o: &'a ContextObject) -> Option<Cow<'a, str>> {
    let m = &repo.manifest;
    let name = o.origin.collection.as_deref()?;
    let entry = m
        .members
        .entries
        .iter()
        .find(|(_, t)| t.as_ref().is_some_and(|t| t.as_str() == o.origin.file));
    if let Some((key, _)) = entry.filter(|(k, _)| k == name) {
        return Some(Cow::Borrowed(key.as_str()));
    }
    let found = match &o.origin.path_id {
        PathId::Same => Some(Cow::Borrowed(o.id.as_str())),
        PathId::Differs(id) => Some(Cow::Borrowed(&**id)),
        PathId::Unknown => return from_manifest(repo, o).map(Cow::Owned),
    };
    debug_assert_eq!(
        found.as_deref(),
        from_manifest(repo, o).as_deref(),
        "{}",
        o.origin.file
    );
    found
}

/// The id the manifest gives `o`'s file, derived afresh.
fn from_manifest(repo: &Repo, o: &ContextObject) -> Option<String> {
    let m = &repo.manifest;
    let rel = RelPath::parse(&o.origin.file).ok()?;
    let name = o.origin.collection.as_deref()?;
    if let Some(key) = m.members.entry_of(&rel).filter(|k| *k == name) {
        return Some(key.to_string());
    }
    match &m.members.collection(name)?.source {
        Source::Local(l) if l.matches(&rel) => {
            Some(derive_id(name, l.id_base(&rel).as_str(), rel.as_str()))
        }
        _ => None,
    }
}

/// `pricing/enterprise.v2.json` holding version 2 of `pricing.enterprise`: versions
/// of one id cannot share a file, so a `.v<N>` (or `.<N>`) suffix is the id's own.
fn versioned_name(expected: &str, o: &ContextObject) -> bool {
    expected
        .strip_prefix(o.id.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .map(|s| s.strip_prefix('v').unwrap_or(s))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `customers/amer/acme.json` declaring `customers.acme`: the declared id is the
/// path's id with grouping folders left out (same first and last segment, the rest
/// a subsequence). A common way to organise files: not reported unless it widens
/// a scope (then it is an error like any other mismatch).
fn grouping_folders_left_out(expected: &str, declared: &str) -> bool {
    let want: Vec<&str> = expected.split('.').collect();
    let have: Vec<&str> = declared.split('.').collect();
    if have.len() < 2 || have.len() >= want.len() || have[0] != want[0] {
        return false;
    }
    if have.last() != want.last() {
        return false;
    }
    let mut rest = want.iter();
    have.iter().all(|seg| rest.any(|w| w == seg))
}

fn in_scope(s: &Scope, id: &str) -> bool {
    s.include.iter().any(|p| p.covers(id)) && !s.exclude.iter().any(|p| p.covers(id))
}

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    let m = &repo.manifest;
    // Each role's effective scope, computed only once an id actually differs from
    // its path (rare): flattening every role up front is quadratic in a deep
    // inheritance chain, and most repositories never need it.
    let mut scopes: Option<Vec<(&String, Scope)>> = None;
    let mut all_scopes = || {
        if super::scope::policy_broken(repo) {
            return Vec::new();
        }
        m.roles
            .keys()
            .filter_map(|name| {
                roles::scope(m, std::slice::from_ref(name))
                    .ok()
                    .map(|s| (name, s))
            })
            .collect()
    };
    // Deriving every path's id is the cost (a glob match and a few strings per
    // object); mismatches are rare, so they are found in parallel and judged in order.
    use rayon::prelude::*;
    let mismatched: Vec<(&ContextObject, String)> = repo
        .objects
        .par_iter()
        .filter(|o| !o.supplied("id"))
        .filter_map(|o| {
            let expected = expected_id(repo, o)?;
            (expected != o.id && !versioned_name(&expected, o)).then(|| (o, expected.into_owned()))
        })
        .collect();
    for (o, expected) in mismatched {
        // Roles the declared id lets in where the path's id would have kept it out.
        let widened: Vec<&str> = scopes
            .get_or_insert_with(&mut all_scopes)
            .iter()
            .filter(|(_, s)| in_scope(s, &o.id) && !in_scope(s, &expected))
            .map(|(n, _)| n.as_str())
            .collect();
        // `policies/index.md` or `addresses/_category.json` describing its folder.
        let folder_file = expected
            .rsplit_once('.')
            .is_some_and(|(head, leaf)| head == o.id && (leaf.starts_with('_') || leaf == "index"));
        if widened.is_empty() && (folder_file || grouping_folders_left_out(&expected, &o.id)) {
            // Folders that only group files (`customers/amer/acme.json` declaring
            // `customers.acme`) are a legitimate layout: the spec ties ids to no path.
            continue;
        }
        let d = if widened.is_empty() {
            Diagnostic::warning(
                Code::SchemaInvalid,
                format!(
                    "declared id `{}` differs from `{expected}`, the id its path gives",
                    o.id
                ),
            )
            .fix(format!(
                "declare `id: {expected}` (or drop `id` and let the path give it), or move the file to where `{}` belongs",
                o.id
            ))
        } else {
            Diagnostic::error(
                Code::InvalidPermission,
                format!(
                    "declared id `{}` differs from `{expected}`, the id its path gives, and so role(s) {} see it although their scope keeps `{expected}` out",
                    o.id,
                    widened
                        .iter()
                        .map(|r| format!("`{r}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .ids(vec![o.id.clone(), expected.clone()])
            .fix(format!(
                "declare `id: {expected}` (or drop `id`), or move the file out of the folder if `{}` is meant for those roles",
                o.id
            ))
        };
        let d = d
            .field("id")
            .expected(expected.as_str())
            .actual(o.id.as_str());
        out.push(super::at_field(o, "id", d));
    }
}

#[cfg(test)]
mod path_id_tests {
    use super::*;

    #[test]
    fn loading_keeps_each_members_path_id_as_the_manifest_gives_it() {
        let (_dir, repo) = crate::testutil::repo_from(&[
            (
                "opencontext.yaml",
                "opencontext: \"1.0\"\nid: t\ncontext:\n  notes: ./notes/b.md\n  mission: ./mission.md\ncollections:\n  notes: ./notes/**\n",
            ),
            ("mission.md", "---\nid: company.mission\n---\nWhy.\n"),
            ("notes/a.md", "---\ntitle: A\n---\nx\n"),
            ("notes/b.md", "---\nid: notes.b\n---\nx\n"),
            ("notes/deep/c.md", "---\nid: notes.c\n---\nx\n"),
        ]);
        let by_file = |f: &str| {
            repo.objects
                .iter()
                .filter(|o| o.origin.file == f)
                .collect::<Vec<_>>()
        };
        assert_eq!(by_file("mission.md")[0].origin.path_id, PathId::Unknown);
        assert_eq!(by_file("notes/a.md")[0].origin.path_id, PathId::Same);
        assert_eq!(
            by_file("notes/deep/c.md")[0].origin.path_id,
            PathId::Differs("notes.deep.c".into())
        );
        // notes/b.md is both the `notes` entry and a member of `notes`: the entry's
        // key is its path id either way.
        assert_eq!(by_file("notes/b.md").len(), 2);
        for o in &repo.objects {
            assert_eq!(
                path_id(&repo, o),
                from_manifest(&repo, o),
                "{}",
                o.origin.file
            );
        }
        assert_eq!(
            path_id(&repo, by_file("mission.md")[0]).as_deref(),
            Some("mission")
        );
        assert_eq!(
            path_id(&repo, by_file("notes/b.md")[1]).as_deref(),
            Some("notes")
        );
    }
}

#[cfg(test)]
mod grouping_tests {
    use super::grouping_folders_left_out as g;

    #[test]
    fn only_left_out_middle_folders_count_as_grouping() {
        assert!(g("customers.amer.acme", "customers.acme"));
        assert!(g("a.b.c.d", "a.c.d"));
        assert!(!g("customers.amer.acme", "customers.acme2"));
        assert!(!g("customers.amer.acme", "clients.acme"));
        assert!(!g("customers.acme", "customers.acme"));
        assert!(!g("customers.amer.acme", "acme"));
    }
}
