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
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(out.starts_with("History of pricing.enterprise\n"), "{out}");
    let v1 = out.find("v1  superseded  reference  2026-01-01T00:00:00Z  context/pricing/enterprise.md  → superseded by pricing.enterprise@2").expect(out);
    let v2 = out
        .find("v2  current     canonical  2026-08-01T00:00:00Z  context/pricing/enterprise.v2.md")
        .expect(out);
    let commits = out.find("Commits:").expect(out);
    assert!(
        v1 < v2 && v2 < commits,
        "declared versions come first:\n{out}"
    );
    let lines: Vec<&str> = out[commits..].lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].ends_with("2026-08-01  Dana Okafor  Raise enterprise floor to $2,500"),
        "{out}"
    );
    assert!(lines[1].ends_with("Dana Okafor  Initial context"), "{out}");
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
