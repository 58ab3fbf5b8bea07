//! history, diff and the pre-commit hook, against real git repositories in temporary folders.

use std::process::Command;

use crate::support::fixtures::{git, have_git, healthy, init_git, PRICING_V1, PRICING_V2};
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
    git(repo.path(), &["add", "-A"]);
    git(
        repo.path(),
        &["commit", "-q", "-m", "Raise enterprise floor to $2,500"],
    );
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
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "Reshuffle"]);
    let r = repo.ctx(&["diff", "--rev", "HEAD~1..HEAD"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(out.contains("Governance:\n  ⚠ authority promoted: pricing.enterprise@1  reference → canonical\n  ⚠ classification lowered: notes.welcome  internal → public\n"), "{out}");
    assert!(
        out.contains("+ notes.new  (added)  context/notes/new.md\n"),
        "{out}"
    );
    assert!(
        out.contains("- policies.refunds  (removed)  context/policies/refunds.md\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "~ notes.welcome  (changed)\n    classification:\n      - (absent)\n      + public\n"
        ),
        "{out}"
    );
    assert!(
        out.ends_with(
            "1 added, 1 removed, 2 changed; 1 authority promotion(s), 1 classification change(s)\n"
        ),
        "{out}"
    );
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

fn commit(dir: &std::path::Path, message: &str) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args(["commit", "-q", "-m", message])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("NO_COLOR", "1")
        .output()
        .expect("git commit runs")
}

#[test]
fn pre_commit_hook_validates_the_staged_state() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    let r = repo.ctx(&["hook", "install"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hook = repo.path().join(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(
        text.contains("# ctx-hook: pre-commit") && text.contains("validate --staged"),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&hook).unwrap().permissions().mode() & 0o111,
            0o111
        );
    }
    // A broken reference is staged, then fixed in the work tree only: the commit is refused.
    let bad =
        "---\nid: notes.bad\ntype: note\nowner: support\nreferences: [nope.nothing]\n---\nx\n";
    repo.write("context/notes/bad.md", bad);
    git(repo.path(), &["add", "context/notes/bad.md"]);
    repo.write(
        "context/notes/bad.md",
        &bad.replace("references: [nope.nothing]\n", ""),
    );
    let out = commit(repo.path(), "Add a bad note");
    assert!(!out.status.success(), "the hook refused the commit");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("broken-reference") && all.contains("nope.nothing"),
        "{all}"
    );
    let r = repo.ctx(&["validate"]);
    assert_eq!(r.code, 0, "the work tree itself is valid: {}", r.stdout);
    let r = repo.ctx(&["validate", "--staged"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr
            .contains("line numbers refer to the staged content"),
        "{}",
        r.stderr
    );
    // Staging the fix lets the commit through; an untracked broken file does not matter.
    git(repo.path(), &["add", "context/notes/bad.md"]);
    repo.write("context/notes/untracked.md", bad);
    let out = commit(repo.path(), "Add a good note");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(repo.ctx(&["validate", "--staged"]).code, 0);
    assert_eq!(
        repo.ctx(&["validate"]).code,
        1,
        "the untracked file is broken in the work tree"
    );
}

#[test]
fn staged_fallback_checks_out_the_index() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    // A staged deletion of a referenced file... is invalid; the work tree still has it.
    repo.write(
        "context/notes/cites.md",
        "---\nid: notes.cites\ntype: note\nowner: support\nreferences: [notes.welcome]\n---\nx\n",
    );
    git(repo.path(), &["add", "-A"]);
    git(
        repo.path(),
        &["rm", "-q", "--cached", "context/notes/welcome.md"],
    );
    let r = repo.ctx(&["validate", "--staged"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("notes.welcome"), "{}", r.stdout);
    // An unstaged change to the manifest forces a checkout of the index; the staged manifest wins.
    git(repo.path(), &["add", "-A"]);
    repo.write("opencontext.yaml", "not: [valid\n");
    let r = repo.ctx(&["validate", "--staged"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("temporary checkout of the index"),
        "{}",
        r.stderr
    );
    let r = repo.ctx(&["validate", "--staged", "-C", "/"]);
    assert_ne!(r.code, 0);
}

#[test]
fn hook_install_refuses_a_foreign_hook_and_uninstalls_its_own() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    let hook = repo.path().join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho mine\n").unwrap();
    let r = repo.ctx(&["hook", "install"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("was not written by ctx; refusing to replace it"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    let r = repo.ctx(&["hook", "install", "--force", "--strict"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".git/hooks/pre-commit.bak")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    assert!(std::fs::read_to_string(&hook)
        .unwrap()
        .contains("validate --staged --strict"));
    let r = repo.ctx(&["hook", "install"]);
    assert!(r.stdout.starts_with("updated "), "{}", r.stdout);
    assert_eq!(repo.ctx(&["hook", "uninstall"]).code, 0);
    assert!(!hook.exists());
    let plain = healthy();
    let r = plain.ctx(&["hook", "install"]);
    assert_eq!(r.code, 2, "not a git repository: {}", r.stderr);
}

#[test]
fn pre_commit_framework_manifest_is_valid() {
    let text =
        std::fs::read_to_string(crate::support::project_root().join(".pre-commit-hooks.yaml"))
            .unwrap();
    let hooks = ctx_core::yaml::parse(&text).expect("valid YAML");
    let list = hooks.as_array().expect("a list of hooks");
    let validate = list
        .iter()
        .find(|h| h["id"] == "ctx-validate")
        .expect("ctx-validate hook");
    assert_eq!(validate["entry"], "ctx validate");
    assert_eq!(validate["pass_filenames"], false);
    for h in list {
        for key in ["id", "name", "entry", "language"] {
            assert!(h[key].is_string(), "{key} missing in {h}");
        }
    }
}

#[test]
fn staged_parse_cache_changes_nothing_but_time() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    repo.write("context/notes/secret.md", "---\nid: notes.secret\ntype: note\nowner: support\nreferences: [nope]\n---\nkey AKIAABCDEFGHIJKLMNOP\n");
    init_git(repo.path(), "Initial context");
    let cold = crate::support::ctx_env(
        repo.path(),
        &["validate", "--staged", "--format", "json"],
        &[("CTX_NO_CACHE", "1")],
    );
    assert!(
        !repo.path().join(".git/ctx/parse-cache").exists(),
        "CTX_NO_CACHE writes no cache"
    );
    let first = repo.ctx(&["validate", "--staged", "--format", "json"]);
    assert!(repo.path().join(".git/ctx/parse-cache").is_file());
    let second = repo.ctx(&["validate", "--staged", "--format", "json"]);
    assert_eq!(cold.code, 1);
    for r in [&first, &second] {
        assert_eq!(r.code, cold.code);
        assert_eq!(r.stdout, cold.stdout, "cached findings equal fresh ones");
    }
    assert!(cold.stdout.contains("secret-detected") && cold.stdout.contains("broken-reference"));
    // An edit is picked up through its new blob id.
    repo.write(
        "context/notes/secret.md",
        "---\nid: notes.secret\ntype: note\nowner: support\n---\nclean\n",
    );
    git(repo.path(), &["add", "-A"]);
    let r = repo.ctx(&["validate", "--staged"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn diff_rev_after_supersede_shows_one_new_version() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    let r = repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--content",
        "Refunds within 60 days.",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "Extend refunds"]);
    let r = repo.ctx(&["diff", "--rev", "HEAD~1..HEAD"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("+ policies.refunds@2  (added)  context/policies/refunds.v2.md\n"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("(removed)"),
        "numbering v1 in place is not a removal: {}",
        r.stdout
    );
    assert!(
        r.stdout.ends_with(
            "1 added, 0 removed, 0 changed; 0 authority promotion(s), 0 classification change(s)\n"
        ),
        "{}",
        r.stdout
    );
}
