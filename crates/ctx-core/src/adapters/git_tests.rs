use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::*;
use crate::adapters::tests::manifest_in;
use crate::adapters::{digest, load, AdapterError};

fn sh(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// A repository with the manifest in `ctx/`, a file committed twice and tagged once.
fn repo() -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ctx");
    std::fs::create_dir_all(root.join("context")).unwrap();
    sh(dir.path(), &["init", "-q"]);
    let m = manifest_in(&root, "");
    std::fs::write(root.join("context/a.md"), "first\n").unwrap();
    std::fs::write(dir.path().join("top.md"), "above the manifest\n").unwrap();
    sh(dir.path(), &["add", "-A"]);
    sh(dir.path(), &["commit", "-q", "-m", "one"]);
    sh(dir.path(), &["tag", "v1.0.0"]);
    std::fs::write(root.join("context/a.md"), "second\n").unwrap();
    sh(dir.path(), &["commit", "-q", "-am", "two"]);
    (dir, m)
}

#[test]
fn reads_a_file_at_a_revision_relative_to_the_manifest() {
    let (_d, m) = repo();
    let opts = AdapterOptions::default();
    let head = load("git://HEAD/context/a.md", &m, &opts).unwrap();
    assert_eq!(head.content, Value::String("second\n".into()));
    assert_eq!(head.trust, Trust::Trusted);
    assert_eq!(head.digest, digest(b"second\n"));
    for old in [
        "git://v1.0.0/context/a.md",
        "git://HEAD~1/context/a.md",
        "git://HEAD^/./context/a.md",
    ] {
        let l = load(old, &m, &opts).unwrap();
        assert_eq!(l.content, Value::String("first\n".into()), "{old}");
    }
}

#[test]
fn paths_are_confined_to_the_manifest_folder() {
    let (_d, m) = repo();
    let opts = AdapterOptions::default();
    for uri in [
        "git://HEAD/../top.md",
        "git://HEAD//etc/passwd",
        "git://HEAD/context/../../top.md",
    ] {
        let e = load(uri, &m, &opts).unwrap_err();
        assert_eq!(e, AdapterError::PathTraversal(uri.into()), "{uri}");
    }
}

#[test]
fn hostile_revisions_are_refused_before_git_runs() {
    let (_d, m) = repo();
    let opts = AdapterOptions::default();
    for uri in [
        "git://--output=x/context/a.md",
        "git://HEAD..v1.0.0/context/a.md",
        "git://HEAD$(id)/context/a.md",
        "git://HEAD:x/context/a.md",
    ] {
        let e = load(uri, &m, &opts).unwrap_err();
        assert!(
            e.to_string().contains("not an acceptable revision"),
            "{uri}: {e}"
        );
    }
    assert!(valid_rev("feature/x-1.2^~3"));
    assert!(!valid_rev("-p"));
}

#[test]
fn missing_revision_or_path_is_unavailable() {
    let (_d, m) = repo();
    let opts = AdapterOptions::default();
    let e = load("git://nosuchrev/context/a.md", &m, &opts).unwrap_err();
    assert!(matches!(e, AdapterError::Unavailable { .. }), "{e}");
    let e = load("git://HEAD/context/missing.md", &m, &opts).unwrap_err();
    assert!(
        e.to_string()
            .contains("git cannot read `context/missing.md`"),
        "{e}"
    );
}

#[test]
fn remote_form_needs_a_mapping() {
    let (d, _m) = repo();
    let root = d.path().join("ctx");
    let m = manifest_in(&root, "");
    let e = load(
        "git://github.com/acme/context/policies/refunds.md",
        &m,
        &AdapterOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("adapters.git.repos"), "{e}");

    // A mapped checkout (the repository itself, seen from the manifest folder).
    let m = manifest_in(
        &root,
        "adapters:\n  git:\n    repos:\n      github.com/acme/context: ..\n",
    );
    let l = load(
        "git://github.com/acme/context/top.md",
        &m,
        &AdapterOptions::default(),
    )
    .unwrap();
    assert_eq!(l.content, Value::String("above the manifest\n".into()));
    assert_eq!(
        l.trust,
        Trust::Verified,
        "an external checkout is verified, not trusted"
    );
    let l = load(
        "git://github.com/acme/context/ctx/context/a.md?rev=v1.0.0",
        &m,
        &AdapterOptions::default(),
    )
    .unwrap();
    assert_eq!(l.content, Value::String("first\n".into()));
    let e = load(
        "git://github.com/acme/context/../x.md",
        &m,
        &AdapterOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, AdapterError::PathTraversal(_)), "{e}");
}

#[test]
fn disabled_adapter_is_refused() {
    let (d, _m) = repo();
    let m = manifest_in(
        &d.path().join("ctx"),
        "adapters:\n  git:\n    enabled: false\n",
    );
    let e = load("git://HEAD/context/a.md", &m, &AdapterOptions::default()).unwrap_err();
    assert!(e.to_string().contains("enabled: false"), "{e}");
}

#[cfg(unix)]
#[test]
fn helper_processes_are_bounded_in_time_and_output() {
    let mut cmd = Command::new("sleep");
    cmd.arg("5");
    let start = std::time::Instant::now();
    assert!(matches!(
        process::run(cmd, Duration::from_millis(100), 10),
        Err(Failure::TimedOut(_))
    ));
    assert!(start.elapsed() < Duration::from_secs(3));
    let cmd = Command::new("yes");
    assert!(matches!(
        process::run(cmd, Duration::from_secs(5), 1000),
        Err(Failure::TooLarge(1000))
    ));
}
