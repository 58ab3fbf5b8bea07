//! `ctx history`: declared versions first, then the commits that touched them.

use crate::support::fixtures::{healthy, PRICING_V2};
use crate::support::git::{commit_all, have_git, init_git};
use crate::support::Repo;

/// pricing.enterprise v1 committed, then v2 in a second commit.
fn with_history() -> Option<Repo> {
    if !have_git() {
        return None;
    }
    let repo = healthy();
    std::fs::remove_file(repo.path().join("context/pricing/enterprise.v2.md")).unwrap();
    init_git(repo.path(), "Initial context");
    repo.write("context/pricing/enterprise.v2.md", PRICING_V2);
    commit_all(repo.path(), "Raise enterprise floor to $2,500");
    Some(repo)
}

#[test]
fn history_lists_declared_versions_then_commits() {
    let Some(repo) = with_history() else { return };
    let r = repo.ctx(&["history", "pricing.enterprise", "--at", "2026-09-01"]);
    r.assert_ok();
    // Declared versions first (v1 superseded by v2), then both commits, newest first.
    insta::assert_snapshot!("history_versions_and_commits", r.transcript());
    let doc = repo
        .ctx(&["history", "pricing.enterprise", "--format", "json"])
        .json();
    assert_eq!(doc["versions"][0]["superseded_by"], "pricing.enterprise@2");
    assert_eq!(doc["commits"].as_array().unwrap().len(), 2);
}

#[test]
fn history_works_without_git_and_respects_scope() {
    let repo = healthy();
    let r = repo.ctx(&["history", "pricing.enterprise"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("v2  current"), "{}", r.stdout);
    assert!(!r.stdout.contains("Commits:"), "{}", r.stdout);
    assert!(
        r.stderr.contains("showing declared history only"),
        "{}",
        r.stderr
    );
    let r = repo.ctx(&["history", "nope.nothing"]);
    assert_eq!(r.code, 3);
    // A role that cannot read it is told it does not exist.
    repo.write(
        "context/policies/internal/margins.md",
        "---\nid: policies.internal.margins\ntype: policy\nowner: leads\n---\nx\n",
    );
    let r = repo.ctx(&["history", "policies.internal.margins", "--role", "support"]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr
            .contains("no object `policies.internal.margins` is visible here"),
        "{}",
        r.stderr
    );
}
