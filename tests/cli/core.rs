//! Core: discovery, validate, schema, init, version, exit codes.

use crate::support::{ctx, Repo, MANIFEST, MISSION};

#[test]
fn validate_clean_repository_exits_zero() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ]);
    let r = repo.ctx(&["validate"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("✓ valid"), "{}", r.stdout);
}

#[test]
fn missing_manifest_exits_three_with_help() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["validate"]);
    assert_eq!(r.code, 3);
    assert!(r.stderr.contains("no opencontext.yaml"), "{}", r.stderr);
    assert!(r.stderr.contains("ctx init"), "{}", r.stderr);
}
