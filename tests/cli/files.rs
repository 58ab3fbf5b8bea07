//! Files ctx writes: the mode each gets (an editor's mode for repository files,
//! the old mode when one is replaced, 0600 for secrets), `--output -` meaning
//! stdout, and JSON files that start with a byte order mark.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{ctx_in, write, Repo, Run, MANIFEST, MISSION};

/// A umask no default produces, so an editor's mode (0666 & ~027 = 0640) is
/// told apart from both 0600 and 0644.
const UMASK: u32 = 0o027;

/// Run ctx under [`UMASK`], with `config` as the user's configuration folder.
fn ctx_masked(dir: &Path, config: &Path, args: &[&str]) -> Run {
    ctx_in(dir)
        .args(args)
        .umask(UMASK)
        .env("XDG_CONFIG_HOME", config)
        .env("HOME", config)
        .env("SOURCE_DATE_EPOCH", "1785000000")
        .run()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// Every regular file below `root` (skipping `skip` folders), relative.
fn files(root: &Path, skip: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if skip.iter().any(|s| rel == *s) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

const REFUNDS: &str = "---\nid: policies.refunds\ntype: policy\nauthority: approved\nowner: support\n---\n\nRefunds within 30 days.\n";

fn repo() -> Repo {
    Repo::new(&[
        (
            "opencontext.yaml",
            &format!("{MANIFEST}agents:\n  support-agent:\n    roles: [support]\n"),
        ),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
    ])
}

#[test]
fn init_writes_files_with_an_editors_mode_and_keeps_a_replaced_files_mode() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tempfile::tempdir().unwrap();
    let r = ctx_masked(dir.path(), cfg.path(), &["init", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = files(dir.path(), &[]);
    assert!(
        written.contains(&"opencontext.yaml".to_string()),
        "{written:?}"
    );
    for f in &written {
        assert_eq!(mode(&dir.path().join(f)), 0o640, "{f}");
    }
    // --force replaces a file in place of the old one, keeping its mode.
    let manifest = dir.path().join("opencontext.yaml");
    set_mode(&manifest, 0o604);
    let r = ctx_masked(dir.path(), cfg.path(), &["init", "--yes", "--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mode(&manifest), 0o604);
}

#[test]
fn add_and_supersede_write_like_an_editor_and_keep_annotated_files_modes() {
    let repo = repo();
    let cfg = tempfile::tempdir().unwrap();
    let old = repo.path().join("context/policies/refunds.md");
    set_mode(&old, 0o604);
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &[
            "add",
            "policies.returns",
            "--type",
            "policy",
            "--owner",
            "support",
            "--content",
            "Within 14 days.",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        mode(&repo.path().join("context/policies/returns.md")),
        0o640
    );
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &[
            "supersede",
            "policies.refunds",
            "--content",
            "Refunds within 10 days.",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let created: Vec<String> = files(repo.path(), &[])
        .into_iter()
        .filter(|f| f.starts_with("context/policies/refunds") && f != "context/policies/refunds.md")
        .collect();
    assert_eq!(created.len(), 1, "{created:?}\n{}", r.stdout);
    assert_eq!(
        mode(&repo.path().join(&created[0])),
        0o640,
        "{}",
        created[0]
    );
    assert_eq!(mode(&old), 0o604, "an annotated file keeps its mode");
}

#[test]
fn export_and_output_files_keep_or_take_an_editors_mode() {
    let repo = repo();
    let cfg = tempfile::tempdir().unwrap();
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &["export", "--target", "agents-md", "--role", "support"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let agents = repo.path().join("AGENTS.md");
    assert_eq!(mode(&agents), 0o640);
    // Regenerating keeps the mode the user chose.
    set_mode(&agents, 0o604);
    repo.write(
        "context/policies/extra.md",
        "---\nid: policies.extra\ntype: policy\n---\n\nExtra.\n",
    );
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &["export", "--target", "agents-md", "--role", "support"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("wrote"), "{}", r.stdout);
    assert_eq!(mode(&agents), 0o604);
    // `-o` output of resolve and bundle.
    for cmd in ["resolve", "bundle"] {
        let out = format!("{cmd}.json");
        let r = ctx_masked(
            repo.path(),
            cfg.path(),
            &[cmd, "--role", "support", "-o", &out],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(mode(&repo.path().join(&out)), 0o640, "{cmd}");
    }
}

#[test]
fn keys_are_private_and_receipts_and_the_audit_log_are_repository_files() {
    let repo = Repo::new(&[
        (
            "opencontext.yaml",
            &format!(
                "{MANIFEST}agents:\n  support-agent:\n    roles: [support]\naudit:\n  context_reads: true\n"
            ),
        ),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
    ]);
    let cfg = tempfile::tempdir().unwrap();
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &["keys", "generate", "--id", "k1", "--declare"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mode(&cfg.path().join("ctx/keys/k1.pem")), 0o600);
    // Declaring the key rewrote the manifest in place: its mode is kept.
    assert_eq!(mode(&repo.path().join("opencontext.yaml")), 0o644);
    let r = ctx_masked(
        repo.path(),
        cfg.path(),
        &[
            "bundle",
            "--agent",
            "support-agent",
            "--sign",
            "-o",
            "signed.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let receipts = files(&repo.path().join(".ctx/receipts"), &[]);
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    assert_eq!(
        mode(&repo.path().join(".ctx/receipts").join(&receipts[0])),
        0o640
    );
    let audit = files(&repo.path().join(".ctx"), &["receipts"]);
    assert!(audit.iter().any(|f| f.ends_with(".jsonl")), "{audit:?}");
    for f in audit {
        assert_eq!(mode(&repo.path().join(".ctx").join(&f)), 0o640, "{f}");
    }
    // A provider envelope: `-o FILE` is a new file with an editor's mode, `-o -` is stdout.
    write(
        repo.path(),
        "host/binding.json",
        br#"{"run_id":"run-1","turn_id":"turn-1","session_id":"session-1","agent_id":"support-agent","user_id":"user-1","workspace_id":"acme"}"#,
    );
    let sign = |out: &str| {
        ctx_masked(
            repo.path(),
            cfg.path(),
            &[
                "provider",
                "sign",
                "--bundle",
                "signed.json",
                "--binding",
                "host/binding.json",
                "--key",
                "k1",
                "-o",
                out,
            ],
        )
    };
    let r = sign("host/envelope.json");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mode(&repo.path().join("host/envelope.json")), 0o640);
    let r = sign("-");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("\"decision\""), "{}", r.stdout);
    assert!(!repo.path().join("-").exists());
}

#[test]
fn the_parse_cache_and_the_hook_are_written_like_gits_own_files() {
    let repo = repo();
    let cfg = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        crate::support::git::git(repo.path(), args);
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    let r = ctx_masked(repo.path(), cfg.path(), &["hook", "install"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mode(&repo.path().join(".git/hooks/pre-commit")), 0o750);
    let r = ctx_masked(repo.path(), cfg.path(), &["validate", "--staged"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cache = files(&repo.path().join(".git/ctx"), &[]);
    assert!(
        cache.iter().any(|f| f.starts_with("parse-cache")),
        "{cache:?}"
    );
    for f in cache {
        assert_eq!(mode(&repo.path().join(".git/ctx").join(&f)), 0o640, "{f}");
    }
}

#[test]
fn output_dash_means_stdout_for_every_command_with_output() {
    let repo = repo();
    for args in [
        &["resolve", "--role", "support", "-o", "-"][..],
        &["bundle", "--role", "support", "--output", "-"],
        &[
            "resolve", "--role", "support", "--format", "markdown", "-o", "-",
        ],
    ] {
        let r = repo.ctx(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("Make refunds boring."), "{args:?}");
        assert!(!r.stderr.contains("wrote"), "{args:?}: {}", r.stderr);
    }
    let r = repo.ctx(&[
        "export",
        "--target",
        "agents-md",
        "--role",
        "support",
        "-o",
        "-",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Make refunds boring."), "{}", r.stdout);
    let r = repo.ctx(&[
        "export",
        "--target",
        "agents-md",
        "--role",
        "support",
        "-o",
        "-",
        "--check",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        !repo.path().join("-").exists(),
        "no file named `-` is ever written"
    );
}

#[test]
fn a_json_object_with_a_byte_order_mark_loads_like_yaml_and_markdown_do() {
    let repo = repo();
    write(
        repo.path(),
        "context/policies/bom.json",
        "\u{feff}{\"id\": \"policies.bom\", \"type\": \"policy\", \"content\": \"Marked.\"}\n"
            .as_bytes(),
    );
    write(
        repo.path(),
        "context/policies/bom.yaml",
        "\u{feff}id: policies.bomyaml\ntype: policy\ncontent: Marked too.\n".as_bytes(),
    );
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = repo.ctx(&["get", "policies.bom", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Marked."), "{}", r.stdout);
}
