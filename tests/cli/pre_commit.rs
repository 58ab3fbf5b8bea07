//! The pre-commit hook and `validate --staged`, against real git repositories in temporary folders.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;
use crate::support::git::{git, have_git, init_git, try_git};

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
    let out = try_git(repo.path(), &["commit", "-q", "-m", "Add a bad note"]);
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
    let out = try_git(repo.path(), &["commit", "-q", "-m", "Add a good note"]);
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
        r.stderr
            .lines()
            .any(|l| l.starts_with("note: checking a temporary checkout of the index (")),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("note: note:"), "{}", r.stderr);
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
    let cold = ctx_in(&repo)
        .args(["validate", "--staged", "--format", "json"])
        .env("CTX_NO_CACHE", "1")
        .run();
    let cached = || {
        std::fs::read_dir(repo.path().join(".git/ctx")).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("parse-cache-"))
        })
    };
    assert!(!cached(), "CTX_NO_CACHE writes no cache");
    let first = repo.ctx(&["validate", "--staged", "--format", "json"]);
    assert!(cached());
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

/// The staged state is read from git's index file: a manifest below the top level,
/// a version 4 (path-compressed) index, a tracked link elsewhere in the work tree,
/// and edits that keep a file's size are all seen as git sees them.
#[test]
fn staged_state_is_read_from_the_index_file_in_a_subfolder() {
    if !have_git() {
        return;
    }
    use crate::support::fixtures::{MISSION, OPS_MANIFEST, REFUNDS, WELCOME};
    let repo = crate::support::Repo::new(&[
        ("README.md", "top level\n"),
        ("sub/opencontext.yaml", OPS_MANIFEST),
        ("sub/context/mission.md", MISSION),
        ("sub/context/policies/refunds.md", REFUNDS),
        ("sub/context/notes/welcome.md", WELCOME),
    ]);
    #[cfg(unix)]
    std::os::unix::fs::symlink("README.md", repo.path().join("link.md")).unwrap();
    init_git(repo.path(), "Initial context");
    git(repo.path(), &["update-index", "--index-version", "4"]);
    let sub = repo.path().join("sub");
    let staged = |dir: &std::path::Path| {
        ctx_in(&repo)
            .args(["validate", "--staged", "--format", "json", "-C"])
            .arg(dir)
            .run()
    };
    let r = staged(&sub);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.is_empty(), "read in place: {}", r.stderr);
    // Staged: a broken reference. Work tree: the same number of bytes, fixed.
    let bad = WELCOME.replace(
        "owner: support\n",
        "owner: support\nreferences: [nope.xy]\n",
    );
    repo.write("sub/context/notes/welcome.md", &bad);
    git(repo.path(), &["add", "-A"]);
    repo.write(
        "sub/context/notes/welcome.md",
        &bad.replace("nope.xy", "mission"),
    );
    for _ in 0..2 {
        let r = staged(&sub);
        assert_eq!(r.code, 1, "the staged reference is broken: {}", r.stdout);
        assert!(r.stdout.contains("nope.xy"), "{}", r.stdout);
        assert!(
            r.stderr.contains("staged content of 1 file(s)"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        ctx_in(&repo).args(["validate", "-C"]).arg(&sub).run().code,
        0
    );
    // Staging the fix: the work tree and the index agree again.
    git(repo.path(), &["add", "-A"]);
    let r = staged(&sub);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}
