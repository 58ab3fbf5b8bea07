//! A checks-only load (`docs: false`) elides most documents; validate and doctor
//! must find exactly what they find with every document, parsed or cached.

use super::{open, LoadOptions};
use crate::doctor::report::{check, DoctorOptions};
use crate::validate::{validate, ValidateOptions};

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\nname: T\ncollections:\n  notes: ./context/notes/**\n  decisions: ./context/decisions/**\nroles:\n  support:\n    include: [\"*\"]\n    redact:\n      - path: content.card\n        mode: mask\nfreshness:\n  default_ttl: 30d\n";

/// One object per thing checks read from documents, and plain ones.
const FILES: [(&str, &str); 8] = [
    ("opencontext.yaml", MANIFEST),
    (
        "context/notes/plain.md",
        "---\nid: notes.plain\ntype: note\nowner: a\nupdated: 2026-01-01T00:00:00Z\n---\nx\n",
    ),
    (
        "context/notes/redacts.md",
        "---\nid: notes.redacts\ntype: note\nowner: a\nredact:\n  - path: content.card\n    mode: mask\n---\nprose\n",
    ),
    (
        "context/notes/review.md",
        "---\nid: notes.review\ntype: note\nowner: a\nreview:\n  interval: 7d\n  last_review: 2025-01-01\n---\nx\n",
    ),
    (
        "context/notes/stale.md",
        "---\nid: notes.stale\ntype: note\nowner: a\nttl: 1d\nupdated: 2025-01-01T00:00:00Z\n---\nx\n",
    ),
    (
        "context/notes/source.md",
        "---\nid: notes.source\ntype: note\nowner: a\nsources:\n  - uri: file://missing.txt\n---\nx\n",
    ),
    (
        "context/notes/approval.md",
        "---\nid: notes.approval\ntype: policy\nowner: a\nauthority: canonical\napproval:\n  minimum: 2\n  approved_by:\n    - id: a\n---\nx\n",
    ),
    (
        "context/decisions/d.json",
        "{\"id\": \"decisions.d\", \"type\": \"decision\", \"owner\": \"a\", \"bundle\": {\"digest\": \"nope\"}}\n",
    ),
];

fn findings(repo: &super::Repo) -> String {
    let at = crate::time::parse_timestamp("2026-06-01T00:00:00Z").unwrap();
    let v = validate(
        repo,
        ValidateOptions {
            strict: true,
            at: Some(at),
        },
    );
    let d = check(
        repo,
        &DoctorOptions {
            at,
            strict: true,
            min_score: None,
        },
    );
    format!("{v:#?}\n{d:#?}")
}

#[test]
fn checks_find_the_same_with_elided_documents_parsed_or_cached() {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in FILES {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(dir.path().join(".ctx")).unwrap();
    let full = LoadOptions {
        content: true,
        prose: false,
        ..LoadOptions::default()
    };
    let want = findings(&open(Some(dir.path()), dir.path(), &full).unwrap());
    for name in [
        "notes.redacts",
        "notes.review",
        "notes.stale",
        "notes.source",
        "notes.approval",
        "decisions.d",
    ] {
        assert!(want.contains(name), "{name} has a finding to keep: {want}");
    }
    for cache in [false, true, true] {
        let elided = LoadOptions {
            cache,
            docs: false,
            ..full.clone()
        };
        let repo = open(Some(dir.path()), dir.path(), &elided).unwrap();
        let plain = repo.objects.iter().find(|o| o.id == "notes.plain").unwrap();
        assert!(plain.doc.is_empty(), "a document no check reads is elided");
        assert_eq!(findings(&repo), want, "cache {cache}");
    }
}

/// A cheap test for a field checks do not list, on an elided document, is a bug the
/// debug build reports (it would silently say "absent").
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "which a checks-only load elided")]
fn an_unlisted_mention_of_an_elided_document_is_caught() {
    let (_dir, repo) = crate::testutil::repo_from(&FILES[..2]);
    let mut o = repo.objects[0].clone();
    assert!(o.mentions("\"owner\""), "a kept document answers");
    o.elide_doc();
    assert!(o.doc.is_empty() && !o.mentions("\"redact\""));
    o.mentions("\"content_type\"");
}
