//! `ctx init --git`: a git work tree and a `.gitignore` for ctx's per-machine
//! state; an existing `.gitignore` keeps its lines.

use crate::support::ctx;
use crate::support::git::have_git;

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
