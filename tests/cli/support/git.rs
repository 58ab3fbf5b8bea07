//! The one git helper: real repositories in temporary folders, made with a
//! fixed author, committer and date in the hermetic environment (no user or
//! system git configuration, no global gitignore), so commit ids are the
//! same on every machine and snapshots may show them.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{hermetic, tools};

/// Is git usable here? Tests that need it return early otherwise (and fail
/// under `CTX_REQUIRE_INTEROP=1`).
#[track_caller]
pub fn have_git() -> bool {
    tools::require_tool("git")
}

/// `git` in `dir`, configured but not run: for the rare test that inspects
/// a failure itself.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    hermetic::apply(&mut cmd, hermetic::tool_home());
    cmd.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Dana Okafor")
        .env("GIT_AUTHOR_EMAIL", "dana@example.com")
        .env("GIT_COMMITTER_NAME", "Dana Okafor")
        .env("GIT_COMMITTER_EMAIL", "dana@example.com")
        .env("GIT_AUTHOR_DATE", "2026-08-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-08-01T12:00:00Z")
        // SHA-1 object ids even where a newer git defaults to SHA-256: snapshots show commit ids.
        .env("GIT_DEFAULT_HASH", "sha1")
        .stdin(Stdio::null());
    cmd
}

/// Run git in `dir`; panics with git's stderr unless it succeeds. Returns stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = try_git(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run git in `dir` and return its output whatever the outcome (e.g. a commit
/// a hook refuses).
pub fn try_git(dir: &Path, args: &[&str]) -> Output {
    git_command(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?} runs: {e}"))
}

/// `git init` (branch `main`) and a first commit of everything in `dir`.
#[track_caller]
pub fn init_git(dir: &Path, message: &str) {
    git(dir, &["init", "-q", "-b", "main"]);
    commit_all(dir, message);
}

/// Stage everything (`git add -A`) and commit it.
#[track_caller]
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}
