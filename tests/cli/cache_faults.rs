//! The parse cache keeps every fault the uncached load finds: invalid governance
//! (the object stays withheld), secrets, unreadable files and folders, FIFOs and
//! URI entries give the same findings and the same bundles from a warm cache as
//! from a fresh parse — and unreadable files are tried again on every run, never
//! remembered as empty.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{ctx_in, Repo, Run, MISSION};

const AT: &str = "2026-09-01T00:00:00Z";

const MANIFEST: &str = r#"opencontext: "1.0"
id: acme
context:
  mission: ./context/mission.md
  crm: crm://acme/accounts
collections:
  policies: ./context/policies/**
roles:
  support:
    include: [mission, policies.*]
"#;

const REFUNDS: &str =
    "---\nid: policies.refunds\ntype: policy\nowner: support\n---\n\nRefunds within 30 days.\n";

/// Objects whose governance is present but invalid: each must stay withheld.
const FAULTY: &[(&str, &str)] = &[
    (
        "context/policies/classified.md",
        "---\nid: policies.classified\ntype: policy\nowner: support\nclassification: top-secret\n---\n\nFAULT-CANARY-CLASSIFIED\n",
    ),
    (
        "context/policies/perms.md",
        "---\nid: policies.perms\ntype: policy\nowner: support\npermissions:\n  read: support\n---\n\nFAULT-CANARY-PERMS\n",
    ),
    (
        "context/policies/expiry.md",
        "---\nid: policies.expiry\ntype: policy\nowner: support\nexpires: next tuesday\n---\n\nFAULT-CANARY-EXPIRY\n",
    ),
    (
        "context/policies/typo.md",
        "---\nid: policies.typo\ntype: policy\nowner: support\npermisions:\n  deny: [support]\n---\n\nFAULT-CANARY-TYPO\n",
    ),
];

const SECRET: &str = "---\nid: policies.keys\ntype: policy\nowner: support\n---\n\nUse AKIAABCDEFGHIJKLMNOP for uploads.\n";

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

/// Run ctx as a user that file modes apply to (the tests may run as root), with
/// or without the cache; `generated_at` blanked.
fn run(repo: &Repo, args: &[&str], cache: bool) -> (i32, String, String) {
    let mut cmd = ctx_in(repo).args(args);
    if !cache {
        cmd = cmd.arg("--no-cache");
    }
    if is_root() {
        cmd = cmd.via(&[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    let r: Run = cmd.spawn().wait_within(Duration::from_secs(60));
    let blank = |text: &str| {
        text.lines()
            .filter(|l| !l.contains("\"generated_at\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    (r.code, blank(&r.stdout), blank(&r.stderr))
}

/// The parse cache files (outside git: `.ctx/cache/`).
fn cache_file(dir: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir.join(".ctx/cache"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("parse-cache-") && !name.ends_with(".lock")
        })
}

/// Runs are made as nobody when the tests run as root: let it read the
/// repository and write its cache (file modes then decide what it cannot read).
fn hand_to_runner(repo: &Repo) {
    if is_root() {
        let ok = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(repo.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "chown");
    }
    set_mode(repo.path(), 0o755);
}

fn faulty_repo() -> Repo {
    let mut files = vec![
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/keys.md", SECRET),
        (
            "context/policies/locked/hidden.md",
            "---\nid: policies.hidden\ntype: policy\nowner: support\n---\n\nHidden.\n",
        ),
        (
            "context/policies/sealed.md",
            "---\nid: policies.sealed\ntype: policy\nowner: support\n---\n\nLocked away.\n",
        ),
    ];
    files.extend_from_slice(FAULTY);
    let repo = Repo::new(&files);
    let ok = Command::new("mkfifo")
        .arg(repo.path().join("context/policies/pipe.md"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo");
    hand_to_runner(&repo);
    set_mode(&repo.path().join("context/policies/locked"), 0o000);
    set_mode(&repo.path().join("context/policies/sealed.md"), 0o000);
    // Past the racy margin, so a warm run may trust every stamp.
    std::thread::sleep(Duration::from_millis(250));
    repo
}

const COMMANDS: &[&[&str]] = &[
    &["validate", "--format", "json"],
    &["validate", "--strict"],
    &["doctor", "--at", AT, "--format", "json"],
    &[
        "resolve",
        "--role",
        "support",
        "--at",
        AT,
        "--format",
        "json",
        "--allow-findings",
    ],
    &["resolve", "--role", "support", "--at", AT, "--explain"],
    &["list", "--role", "support", "--at", AT, "--format", "json"],
    &["get", "policies.perms", "--role", "support", "--at", AT],
    &["search", "FAULT", "--role", "support", "--format", "json"],
];

#[test]
fn every_fault_and_finding_survives_the_cache() {
    let repo = faulty_repo();
    let mut outputs = Vec::new();
    for args in COMMANDS {
        let fresh = run(&repo, args, false);
        let cold = run(&repo, args, true);
        let warm = run(&repo, args, true);
        assert_eq!(cold, fresh, "{args:?}: the run that fills the cache");
        assert_eq!(warm, fresh, "{args:?}: a run from the cache");
        outputs.push(fresh);
    }
    // The runs saw what the fixture holds (so the comparison above meant something).
    let validate = &outputs[0].1;
    assert_eq!(outputs[0].0, 1, "{validate}");
    for needle in [
        "classification",
        "permissions.read",
        "expires",
        "permisions",
        "secret-detected",
        "context/policies/locked",
        "context/policies/sealed.md",
        "context/policies/pipe.md",
        "FIFO",
        "crm://acme/accounts",
    ] {
        assert!(validate.contains(needle), "{needle} missing: {validate}");
    }
    // Faulty objects are withheld from every consumer, cached or not.
    for (code, out, _) in &outputs[3..] {
        for canary in [
            "FAULT-CANARY-CLASSIFIED",
            "FAULT-CANARY-PERMS",
            "FAULT-CANARY-EXPIRY",
            "FAULT-CANARY-TYPO",
        ] {
            assert!(
                !out.contains(canary),
                "{canary} served (exit {code}): {out}"
            );
        }
    }
    assert!(outputs[3].1.contains("Refunds within 30 days."));
    // A warm run with nothing changed took everything from the cache: nothing new
    // to write (the unreadable files are read again, and never cached).
    let file = cache_file(repo.path()).expect("a cache was written");
    let before = std::fs::read(&file).unwrap();
    run(&repo, &["validate", "--format", "json"], true);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // An unreadable file that becomes readable is seen at once.
    set_mode(&repo.path().join("context/policies/sealed.md"), 0o644);
    let (_, after, _) = run(&repo, &["validate", "--format", "json"], true);
    assert!(!after.contains("context/policies/sealed.md"), "{after}");
    assert_eq!(
        after,
        run(&repo, &["validate", "--format", "json"], false).1
    );
    set_mode(&repo.path().join("context/policies/locked"), 0o755);
}

#[test]
fn a_fixed_governance_field_is_served_and_a_broken_one_withheld_through_the_cache() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
    ]);
    hand_to_runner(&repo);
    std::thread::sleep(Duration::from_millis(250));
    let args = [
        "resolve", "--role", "support", "--at", AT, "--format", "json",
    ];
    let (_, first, _) = run(&repo, &args, true);
    assert!(first.contains("Refunds within 30 days."), "{first}");
    // Broken after it was cached: withheld at once.
    repo.write(
        "context/policies/refunds.md",
        &REFUNDS.replace(
            "owner: support\n",
            "owner: support\nclassification: top-sekret\n",
        ),
    );
    let (_, broken, _) = run(&repo, &args, true);
    assert!(!broken.contains("Refunds within 30 days."), "{broken}");
    assert_eq!(broken, run(&repo, &args, false).1);
    // Once more to cache it past the racy margin, then from the cache.
    std::thread::sleep(Duration::from_millis(250));
    run(&repo, &args, true);
    assert_eq!(run(&repo, &args, true).1, broken, "warm, still withheld");
    // Fixed: served again.
    repo.write("context/policies/refunds.md", REFUNDS);
    let (_, fixed, _) = run(&repo, &args, true);
    assert!(fixed.contains("Refunds within 30 days."), "{fixed}");
}
