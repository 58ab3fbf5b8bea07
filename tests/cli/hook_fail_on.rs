//! What the pre-commit hook lets through is what `ctx validate --staged` (plain or
//! `--strict`) lets through: a warning passes the plain hook and stops the `--strict`
//! one, whatever the manifest's `health.fail_on` (a `ctx doctor --strict` setting).
//! Checked by committing in a real git repository.

use crate::support::fixtures::healthy;
use crate::support::git::{have_git, init_git, try_git};
use crate::support::Repo;

/// Stage an ownerless note `notes.NAME` and try to commit it.
fn stage_and_commit(repo: &Repo, name: &str) -> (bool, String) {
    let rel = format!("context/notes/{name}.md");
    repo.write(
        &rel,
        &format!("---\nid: notes.{name}\ntype: note\n---\nNo owner.\n"),
    );
    crate::support::git::git(repo.path(), &["add", "-A"]);
    let out = try_git(repo.path(), &["commit", "-q", "-m", &rel]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), all)
}

#[test]
fn the_hook_gates_warnings_as_validate_staged_does() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    let manifest = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &manifest.replace("health:\n", "health:\n  fail_on: warning\n"),
    );
    init_git(repo.path(), "Initial context");
    assert_eq!(repo.ctx(&["hook", "install"]).code, 0);

    // A missing owner is a warning: the plain hook, like `validate --staged`, lets it in.
    let (ok, out) = stage_and_commit(&repo, "a");
    assert!(ok, "{out}");
    let v = repo.ctx(&["validate", "--staged"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(v.stdout.contains("missing-owner"), "{}", v.stdout);

    // The --strict hook refuses it, as `validate --staged --strict` and, with
    // `fail_on: warning`, `doctor --strict` do.
    assert_eq!(repo.ctx(&["hook", "install", "--strict"]).code, 0);
    let (ok, out) = stage_and_commit(&repo, "b");
    assert!(!ok && out.contains("missing-owner"), "{out}");
    assert_eq!(repo.ctx(&["validate", "--staged", "--strict"]).code, 1);
    assert_eq!(repo.ctx(&["doctor", "--strict"]).code, 1);

    // `fail_on: error` relaxes only `doctor --strict`; the hook stays validate's gate.
    let m = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &m.replace("fail_on: warning", "fail_on: error"),
    );
    assert_eq!(repo.ctx(&["doctor", "--strict"]).code, 0);
    let (ok, out) = stage_and_commit(&repo, "b");
    assert!(!ok && out.contains("missing-owner"), "{out}");
    assert_eq!(repo.ctx(&["validate", "--staged", "--strict"]).code, 1);
}
