//! `ctx diff`: two versions of an object, or the whole repository between revisions.

use crate::support::ctx_in;
use crate::support::fixtures::{healthy, PRICING_V1};
use crate::support::git::{commit_all, git, have_git, init_git};

#[test]
fn diff_two_versions_shows_governance_fields_and_content() {
    let repo = healthy();
    let r = repo.ctx(&["diff", "pricing.enterprise@1", "pricing.enterprise@2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "~ pricing.enterprise  (changed: pricing.enterprise@1 → pricing.enterprise@2)\n    authority:\n      - reference\n      + canonical\n    supersedes:\n      - (absent)\n      + [\"pricing.enterprise@1\"]\n    content:\n      - Enterprise plans start at $1,800/month.\n      + Enterprise plans start at $2,500/month.\n"
    );
    assert_eq!(
        repo.ctx(&[
            "diff",
            "pricing.enterprise@1",
            "pricing.enterprise@2",
            "--exit-code"
        ])
        .code,
        1
    );
    let same = repo.ctx(&[
        "diff",
        "pricing.enterprise@2",
        "pricing.enterprise@2",
        "--exit-code",
    ]);
    assert_eq!(same.code, 0);
    assert!(same.stdout.starts_with("= "), "{}", same.stdout);
    let doc = repo
        .ctx(&[
            "diff",
            "pricing.enterprise@1",
            "pricing.enterprise@2",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(doc["changes"][0]["field"], "authority");
    assert_eq!(
        repo.ctx(&["diff", "pricing.enterprise@7", "pricing.enterprise@2"])
            .code,
        3
    );
    assert_eq!(repo.ctx(&["diff", "pricing.enterprise@1"]).code, 2);
}

#[test]
fn diff_between_revisions_highlights_promotions_and_classification() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    std::fs::remove_file(repo.path().join("context/pricing/enterprise.v2.md")).unwrap();
    init_git(repo.path(), "Initial context");
    // Promote pricing v1 in place, make the welcome note public, add and remove objects.
    repo.write(
        "context/pricing/enterprise.md",
        &PRICING_V1.replace("authority: reference", "authority: canonical"),
    );
    let welcome = std::fs::read_to_string(repo.path().join("context/notes/welcome.md")).unwrap();
    repo.write(
        "context/notes/welcome.md",
        &welcome.replace("owner: support", "owner: support\nclassification: public"),
    );
    repo.write(
        "context/notes/new.md",
        "---\nid: notes.new\ntype: note\nowner: support\n---\nNew.\n",
    );
    std::fs::remove_file(repo.path().join("context/policies/refunds.md")).unwrap();
    commit_all(repo.path(), "Reshuffle");
    let r = repo.ctx(&["diff", "--rev", "HEAD~1..HEAD"]);
    r.assert_ok();
    // Governance warnings first (promotion, lowered classification), then each
    // added, removed and changed object, then the totals.
    insta::assert_snapshot!("diff_rev_governance", r.transcript());
    // The user's index and work tree are untouched by the comparison.
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    // A revision against the work tree.
    repo.write(
        "context/notes/draft.md",
        "---\nid: notes.draft\ntype: note\nowner: support\n---\nDraft.\n",
    );
    let r = repo.ctx(&["diff", "--rev", "HEAD", "--format", "json", "--exit-code"]);
    assert_eq!(r.code, 1, "differences with --exit-code");
    assert_eq!(r.json()["added"][0]["id"], "notes.draft");
    let r = repo.ctx(&["diff", "--rev", "no-such-rev..HEAD"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("`no-such-rev` is not a commit"),
        "{}",
        r.stderr
    );
}

#[test]
fn diff_rev_needs_git() {
    let repo = healthy();
    let r = repo.ctx(&["diff", "--rev", "HEAD~1..HEAD"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("needs a git work tree"), "{}", r.stderr);
}

#[test]
fn diff_rev_after_supersede_shows_one_new_version() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    // A fixed clock for the new version's `updated`, so the commit id is stable.
    let r = ctx_in(&repo)
        .args([
            "supersede",
            "policies.refunds",
            "--content",
            "Refunds within 60 days.",
        ])
        .env("SOURCE_DATE_EPOCH", "1785000000")
        .run();
    r.assert_ok();
    commit_all(repo.path(), "Extend refunds");
    let r = repo.ctx(&["diff", "--rev", "HEAD~1..HEAD"]);
    r.assert_ok();
    assert!(
        !r.stdout.contains("(removed)"),
        "numbering v1 in place is not a removal: {}",
        r.describe()
    );
    insta::assert_snapshot!("diff_rev_after_supersede", r.transcript());
}
