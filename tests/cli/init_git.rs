//! `ctx init --git`: a git work tree and a `.gitignore` for ctx's per-machine
//! state; an existing `.gitignore` keeps its lines.

use crate::support::ctx;
use crate::support::git::{git, have_git, try_git};

#[test]
fn init_git_makes_a_work_tree_and_ignores_machine_state() {
    if !have_git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("repo")).unwrap();
    std::fs::write(dir.path().join("repo/.gitignore"), "node_modules/").unwrap();
    let r = ctx(dir.path(), &["init", "repo", "--yes", "--git"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(dir.path().join("repo/.git").is_dir());
    let ignore = std::fs::read_to_string(dir.path().join("repo/.gitignore")).unwrap();
    assert!(ignore.starts_with("node_modules/\n"), "{ignore}");
    assert!(ignore.contains("/.ctx/provider-state/\n"), "{ignore}");
    // The pre-commit hook comes with it, and it runs.
    let hook = dir.path().join("repo/.git/hooks/pre-commit");
    let script = std::fs::read_to_string(&hook).unwrap();
    assert!(script.contains("validate --staged"), "{script}");
    assert!(r.stdout.contains("pre-commit hook"), "{}", r.stdout);
    // Re-initialising needs --force; --git alone adds git to an existing
    // repository, and never adds its lines twice.
    let again = ctx(dir.path(), &["init", "repo", "--yes"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    let git_only = ctx(dir.path(), &["init", "repo", "--yes", "--git"]);
    assert_eq!(git_only.code, 0, "{}", git_only.stderr);
    assert!(
        git_only.stdout.contains("kept     opencontext.yaml"),
        "{}",
        git_only.stdout
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("repo/.gitignore")).unwrap(),
        ignore
    );
}

#[test]
fn init_git_blocks_a_broken_commit_and_keeps_a_hook_of_the_users_own() {
    if !have_git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["init", "repo", "--yes", "--git"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let repo = dir.path().join("repo");
    // A commit whose object is invalid is refused by the hook init installed.
    std::fs::write(
        repo.join("context/policies/broken.md"),
        "---\ntype: [\n---\nx\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    let out = try_git(&repo, &["commit", "-q", "-m", "broken"]);
    assert!(
        !out.status.success(),
        "the hook let a broken commit through"
    );

    // --no-hook leaves it out; a hook of the user's own is never replaced.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    let own = other.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    std::fs::write(&own, "#!/bin/sh\nexit 0\n").unwrap();
    let r = ctx(dir.path(), &["init", "other", "--yes", "--git"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&own).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert!(r.stdout.contains("your own hook"), "{}", r.stdout);
    let third = dir.path().join("third");
    let r = ctx(
        dir.path(),
        &["init", "third", "--yes", "--git", "--no-hook"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!third.join(".git/hooks/pre-commit").exists());
}
