//! Where content may come from: a `content_uri` stays in its lane (not another
//! object's file, not an ignored file, not `.git/`), adapter content is scanned
//! for secrets, only regular files are read (a FIFO never hangs a command), and a
//! file or folder ctx cannot read is reported by every command that needed it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{ctx_in, Repo, Run, MISSION};

const MANIFEST: &str = r#"opencontext: "1.0"
id: acme
context:
  mission: ./context/mission.md
collections:
  policies: ./context/policies/**
  secrets: ./context/secrets/**
roles:
  support:
    include: [mission, policies.*]
  admin:
    include: ["*"]
"#;

const REFUNDS: &str =
    "---\nid: policies.refunds\ntype: policy\nowner: support\n---\n\nRefunds within 30 days.\n";
const PAYROLL: &str =
    "---\nid: secrets.payroll\ntype: note\nowner: hr\n---\n\nPAYROLL-CANARY-7731\n";

fn repo(extra: &[(&str, &str)]) -> Repo {
    let mut files = vec![
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
        ("context/secrets/payroll.md", PAYROLL),
    ];
    files.extend_from_slice(extra);
    Repo::new(&files)
}

/// An object in the support role's scope whose content comes from `uri`.
fn pointer(uri: &str) -> String {
    format!("---\nid: policies.pointer\ntype: policy\nowner: support\ncontent_uri: {uri}\n---\n")
}

/// Run ctx, killing it after `limit`: a hang is a failure, not a stuck test run.
fn ctx_within(dir: &Path, args: &[&str], limit: Duration, as_nobody: bool) -> Run {
    let mut cmd = ctx_in(dir).args(args);
    if as_nobody && is_root() {
        cmd = cmd.via(&[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    cmd.spawn().wait_within(limit)
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

fn run(dir: &Path, args: &[&str]) -> Run {
    ctx_within(dir, args, Duration::from_secs(30), false)
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo")
        .arg(p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", p.display());
}

#[test]
fn content_uri_may_not_read_another_objects_file_an_ignored_file_or_git_internals() {
    let cases = [
        (
            "context/secrets/payroll.md",
            "PAYROLL-CANARY-7731",
            "loaded as an object",
        ),
        (
            "./context/secrets/payroll.md",
            "PAYROLL-CANARY-7731",
            "loaded as an object",
        ),
        (
            "file://docs/link.md",
            "PAYROLL-CANARY-7731",
            "loaded as an object",
        ),
        (".env", "ENV-CANARY-5512", ".gitignore"),
        (".git/config", "GITCONFIG-CANARY-9090", ".git/"),
    ];
    for (uri, canary, reason) in cases {
        let repo = repo(&[
            ("context/policies/pointer.md", &pointer(uri)),
            (".gitignore", ".env\n"),
            (".env", "API_TOKEN=ENV-CANARY-5512\n"),
            (".git/config", "[core]\n# GITCONFIG-CANARY-9090\n"),
        ]);
        std::fs::create_dir_all(repo.path().join("docs")).unwrap();
        std::os::unix::fs::symlink(
            "../context/secrets/payroll.md",
            repo.path().join("docs/link.md"),
        )
        .unwrap();
        let r = run(
            repo.path(),
            &["resolve", "--role", "support", "--format", "json"],
        );
        assert_eq!(r.code, 0, "{uri}: {}", r.stderr);
        assert!(!r.stdout.contains(canary), "{uri} leaked:\n{}", r.stdout);
        let bundle = r.json();
        let excluded = bundle["excluded"].as_array().unwrap();
        assert!(
            excluded.iter().any(|e| e["id"] == "policies.pointer"),
            "{uri}: {excluded:?}"
        );
        assert!(r.stdout.contains(reason), "{uri}: {}", r.stdout);
        // validate reports it without reading anything, so CI catches it.
        let v = run(repo.path(), &["validate", "--format", "json"]);
        assert_eq!(v.code, 1, "{uri}: {}", v.stdout);
        assert!(v.stdout.contains(reason), "{uri}: {}", v.stdout);
        assert!(!v.stdout.contains(canary));
    }
}

#[test]
fn content_from_adapters_goes_through_the_secret_scan() {
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    let repo = repo(&[
        ("context/policies/pointer.md", &pointer("docs/creds.txt")),
        ("docs/creds.txt", &format!("Use this token: {token}\n")),
    ]);
    let r = run(
        repo.path(),
        &["resolve", "--role", "support", "--format", "json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains(&token), "{}", r.stdout);
    assert!(r.stdout.contains("GitHub token"), "{}", r.stdout);
    let d = run(repo.path(), &["doctor", "--format", "json"]);
    assert!(d.stdout.contains("secret-detected"), "{}", d.stdout);
    assert!(!d.stdout.contains(&token));
    // Clean content from the same adapter is served.
    repo.write("docs/creds.txt", "Ask the vault.\n");
    let r = run(
        repo.path(),
        &["resolve", "--role", "support", "--format", "json"],
    );
    assert!(r.stdout.contains("Ask the vault."), "{}", r.stdout);
}

#[test]
fn fifos_never_hang_a_command() {
    let repo = repo(&[("context/policies/pointer.md", &pointer("docs/pipe.md"))]);
    std::fs::create_dir_all(repo.path().join("docs")).unwrap();
    mkfifo(&repo.path().join("docs/pipe.md"));
    mkfifo(&repo.path().join("context/policies/fifo.md"));
    let limit = Duration::from_secs(20);
    let v = ctx_within(repo.path(), &["validate", "--format", "json"], limit, false);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("context/policies/fifo.md"),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("FIFO"), "{}", v.stdout);
    let d = ctx_within(repo.path(), &["doctor", "--format", "json"], limit, false);
    assert!(d.stdout.contains("FIFO"), "{}", d.stdout);
    let r = ctx_within(
        repo.path(),
        &["resolve", "--role", "support", "--format", "json"],
        limit,
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    assert!(
        b["excluded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == "policies.pointer"),
        "{b}"
    );
    // A context entry that is a FIFO.
    std::fs::remove_file(repo.path().join("context/mission.md")).unwrap();
    mkfifo(&repo.path().join("context/mission.md"));
    let v = ctx_within(repo.path(), &["validate", "--format", "json"], limit, false);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("context/mission.md"), "{}", v.stdout);
    let r = ctx_within(
        repo.path(),
        &["resolve", "--role", "support", "--format", "json"],
        limit,
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn unreadable_files_and_folders_are_reported_by_every_command_that_needed_them() {
    let repo = repo(&[("context/policies/locked/hidden.md", REFUNDS)]);
    let root = repo.path();
    // ctx runs as an unprivileged user when the tests run as root, so modes apply.
    let mut perms = std::fs::metadata(root).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(root, perms).unwrap();
    let set = |rel: &str, m: u32| {
        std::fs::set_permissions(
            root.join(rel),
            std::os::unix::fs::PermissionsExt::from_mode(m),
        )
        .unwrap()
    };
    set("context/policies/locked", 0o000);
    set("context/policies/refunds.md", 0o000);
    let limit = Duration::from_secs(30);
    let v = ctx_within(root, &["validate", "--format", "json"], limit, true);
    set("context/policies/locked", 0o755);
    set("context/policies/refunds.md", 0o644);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    assert!(v.stdout.contains("context/policies/locked"), "{}", v.stdout);
    assert!(
        v.stdout.contains("context/policies/refunds.md"),
        "{}",
        v.stdout
    );

    set("context/policies/locked", 0o000);
    set("context/policies/refunds.md", 0o000);
    let d = ctx_within(root, &["doctor", "--format", "json"], limit, true);
    let r = ctx_within(
        root,
        &["resolve", "--role", "support", "--format", "json"],
        limit,
        true,
    );
    let e = ctx_within(
        root,
        &["resolve", "--role", "support", "--explain"],
        limit,
        true,
    );
    set("context/policies/locked", 0o755);
    set("context/policies/refunds.md", 0o644);
    assert!(d.stdout.contains("context/policies/locked"), "{}", d.stdout);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let warnings = r.json()["warnings"].clone();
    assert!(
        warnings.as_array().unwrap().iter().any(|w| w["message"]
            .as_str()
            .unwrap_or("")
            .contains("2 repository file(s) or folder(s) could not be read")),
        "{warnings}"
    );
    assert!(e.stdout.contains("could not be read"), "{}", e.stdout);
}
