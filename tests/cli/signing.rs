//! Signing: keys, signed receipts, `ctx verify`, the audit log, decision
//! records and delegated-provider envelopes — all through the real binary.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::git::{commit_all, git, have_git};
use crate::support::{ctx_in, write, Home, Repo, Run, MANIFEST, MISSION};

mod audit;
pub(crate) mod provider;

const REFUNDS: &str = "---\nid: policies.refunds\ntype: policy\nlayer: L3\nauthority: approved\nowner: support-lead\ncanonical_source: true\n---\n\nRefunds under 100 EUR need no approval.\n";

/// A repository plus a private config folder standing in for the user's
/// `~/.config` (XDG_CONFIG_HOME), outside the repository.
pub struct Signer {
    pub repo: Repo,
    pub config: tempfile::TempDir,
}

impl Signer {
    pub fn new(extra_manifest: &str) -> Signer {
        let manifest =
            format!("{MANIFEST}agents:\n  support-agent:\n    roles: [support]\n{extra_manifest}");
        let repo = Repo::new(&[
            ("opencontext.yaml", manifest.as_str()),
            ("context/mission.md", MISSION),
            ("context/policies/refunds.md", REFUNDS),
        ]);
        Signer {
            repo,
            config: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.repo.path()
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_in(self.path(), args)
    }

    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        let cfg = self.config.path();
        ctx_in(dir)
            .args(args)
            .env("XDG_CONFIG_HOME", cfg)
            .env("HOME", cfg)
            .run()
    }

    pub fn manifest(&self) -> String {
        std::fs::read_to_string(self.path().join("opencontext.yaml")).unwrap()
    }

    /// Generate and declare `id`; returns the printed public key.
    pub fn key(&self, id: &str) -> String {
        let r = self.run(&["keys", "generate", "--id", id, "--declare"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        r.stdout.trim().to_string()
    }

    /// `ctx bundle --sign` into `.ctx/bundles/<name>.json`; returns the bundle.
    pub fn signed_bundle(&self, name: &str) -> Value {
        let out = format!(".ctx/bundles/{name}.json");
        std::fs::create_dir_all(self.path().join(".ctx/bundles")).unwrap();
        let r = self.run(&["bundle", "--agent", "support-agent", "--sign", "-o", &out]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        serde_json::from_str(&std::fs::read_to_string(self.path().join(&out)).unwrap()).unwrap()
    }

    pub fn receipts(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.path().join(".ctx/receipts"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// The "done when" sequence: generate and declare a key, sign a bundle,
/// commit bundle + receipt, and verify in a fresh clone with no keys at all.
#[test]
fn sign_commit_and_verify_in_a_clone_with_only_the_repository() {
    let s = Signer::new("");
    if !have_git() {
        return;
    }
    git(s.path(), &["init", "-q", "-b", "main"]);
    let before = s.manifest();
    let public = s.key("release-bot");
    assert_eq!(public.len(), 44, "{public}");
    let after = s.manifest();
    assert!(
        after.starts_with(&before),
        "the rest of the manifest is kept byte-for-byte"
    );
    assert_eq!(
        &after[before.len()..],
        format!("extensions:\n  ctx.keys:\n    release-bot:\n      ed25519: \"{public}\"\n")
    );
    let key = s.config.path().join("ctx/keys/release-bot.pem");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(!key.starts_with(s.path()));
    let bundle = s.signed_bundle("support");
    let id = bundle["bundle_id"].as_str().unwrap();
    assert_eq!(
        s.receipts(),
        vec![s.path().join(format!(".ctx/receipts/{id}.json"))]
    );
    commit_all(s.path(), "signed bundle");

    let ci = tempfile::tempdir().unwrap();
    let clone = ci.path().join("clone");
    git(
        ci.path(),
        &["clone", "-q", s.path().to_str().unwrap(), "clone"],
    );
    // A home with no keys at all.
    let empty = Home::new();
    let r = ctx_in(&clone)
        .args(["verify", ".ctx/bundles/support.json"])
        .home(&empty)
        .run();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("bundle {id}: digest")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("signed by `release-bot`"), "{}", r.stdout);
    assert!(
        r.stdout.contains("byte-for-byte the signed rendering"),
        "{}",
        r.stdout
    );
    let receipt = format!(".ctx/receipts/{id}.json");
    let r = ctx_in(&clone)
        .args(["verify", &receipt, "--format", "json"])
        .home(&empty)
        .run();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["ok"], true);
}

fn flip(path: &Path, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    text
}

#[test]
fn changing_any_part_of_a_bundle_or_receipt_fails_verification() {
    let s = Signer::new("");
    s.key("release-bot");
    let bundle = s.signed_bundle("support");
    let b = s.path().join(".ctx/bundles/support.json");
    let r = s.receipts()[0].clone();
    let cases: [(&Path, &str, &str, &str); 6] = [
        (&b, "Make refunds boring", "Make refunds exciting", "digest"),
        (
            &b,
            "\"generated_at\": \"",
            "\"generated_at\": \"1",
            "generated_at",
        ),
        (
            &b,
            "\"bundle_id\": \"ocb_",
            "\"bundle_id\": \"ocb_0",
            "bundle_id",
        ),
        (&r, "2 objects included", "3 objects included", "signature"),
        (
            &r,
            "\"key_id\": \"release-bot\"",
            "\"key_id\": \"other\"",
            "urn:ctx:key:other",
        ),
        (
            &r,
            "\"value_base64\": \"",
            "\"value_base64\": \"A",
            "value_base64",
        ),
    ];
    for (file, from, to, field) in cases {
        let orig = flip(file, from, to);
        let v = s.run(&["verify", ".ctx/bundles/support.json"]);
        assert_eq!(v.code, 1, "{from} → {to} went unnoticed: {}", v.stdout);
        assert!(
            v.stdout.contains(field) && v.stdout.contains("FAILED"),
            "{field}: {}",
            v.stdout
        );
        std::fs::write(file, orig).unwrap();
    }
    assert_eq!(s.run(&["verify", ".ctx/bundles/support.json"]).code, 0);
    // Without a receipt a bundle is not verified unless only the digest is asked for.
    std::fs::remove_file(&r).unwrap();
    let v = s.run(&["verify", ".ctx/bundles/support.json"]);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("a signed receipt for"), "{}", v.stdout);
    assert_eq!(
        s.run(&["verify", "--digest-only", ".ctx/bundles/support.json"])
            .code,
        0
    );
    assert!(bundle["digest"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn a_key_not_declared_in_the_manifest_is_not_trusted() {
    let s = Signer::new("");
    s.key("release-bot");
    s.signed_bundle("support");
    // Someone else's manifest: the same repository without the key entry.
    let text = s.manifest();
    let cut = text.find("extensions:").unwrap();
    std::fs::write(s.path().join("opencontext.yaml"), &text[..cut]).unwrap();
    let v = s.run(&["verify", ".ctx/bundles/support.json"]);
    assert_eq!(v.code, 1);
    assert!(
        v.stdout
            .contains("a key declared in the manifest's ctx.keys (none declared)"),
        "{}",
        v.stdout
    );
}

#[test]
fn keys_stay_out_of_repositories_and_are_never_overwritten() {
    let s = Signer::new("");
    let inside = s.path().join("cfg");
    let r = ctx_in(s.path())
        .args(["keys", "generate", "--id", "k1"])
        .env("XDG_CONFIG_HOME", &inside)
        .run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("inside the repository"), "{}", r.stderr);
    assert!(!inside.join("ctx/keys/k1.pem").exists());
    // A config folder inside some other git work tree, not ignored there.
    let other = tempfile::tempdir().unwrap();
    if have_git() {
        git(other.path(), &["init", "-q", "-b", "main"]);
        let r = ctx_in(s.path())
            .args(["keys", "generate", "--id", "k1"])
            .env("XDG_CONFIG_HOME", other.path())
            .run();
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("not ignored"), "{}", r.stderr);
        write(other.path(), ".gitignore", b"ctx/\n");
        let r = ctx_in(s.path())
            .args(["keys", "generate", "--id", "k1"])
            .env("XDG_CONFIG_HOME", other.path())
            .run();
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let first = s.key("release-bot");
    let pem = std::fs::read(s.config.path().join("ctx/keys/release-bot.pem")).unwrap();
    let r = s.run(&["keys", "generate", "--id", "release-bot", "--declare"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    assert_eq!(
        std::fs::read(s.config.path().join("ctx/keys/release-bot.pem")).unwrap(),
        pem
    );
    assert!(s.manifest().contains(&first));
    let r = s.run(&["keys", "generate", "--id", "Bad/Name"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn keys_list_shows_declared_keys_and_local_private_keys() {
    let s = Signer::new("");
    s.key("release-bot");
    let r = s.run(&["keys", "generate", "--id", "laptop"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains("ctx.keys:"),
        "prints the snippet to declare it: {}",
        r.stderr
    );
    let l = s.run(&["keys", "list", "--format", "json"]);
    assert_eq!(l.code, 0, "{}", l.stderr);
    let keys = l.json()["keys"].clone();
    assert_eq!(keys[0]["id"], "laptop");
    assert_eq!(keys[0]["declared"], false);
    assert_eq!(keys[1]["id"], "release-bot");
    assert_eq!(keys[1]["declared"], true);
    assert_eq!(keys[1]["private_key"], "present");
    let other = Signer::new("");
    std::fs::write(other.path().join("opencontext.yaml"), s.manifest()).unwrap();
    let l = other.run(&["keys", "list"]);
    assert!(
        l.stdout.contains("release-bot") && l.stdout.contains("absent"),
        "{}",
        l.stdout
    );
}

#[test]
fn required_receipts_fail_closed_without_a_usable_key() {
    let s = Signer::new("extensions:\n  ctx.policy:\n    require_receipts: true\n");
    let r = s.run(&["bundle", "--agent", "support-agent", "-o", "out.json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(!s.path().join("out.json").exists());
    assert!(
        r.stderr
            .contains("receipt (extensions.ctx.policy.require_receipts) is required"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("ctx keys generate"), "{}", r.stderr);
    // --sign with a receipt path that cannot be created: no bundle either.
    s.key("release-bot");
    let r = s.run(&[
        "resolve",
        "--agent",
        "support-agent",
        "--sign",
        "--receipt",
        "missing/dir/r.json",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // With the key the policy is met without --sign.
    let r = s.run(&["resolve", "--agent", "support-agent"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("signed receipt .ctx/receipts/ocb_"),
        "{}",
        r.stderr
    );
}

#[test]
fn signing_again_adds_a_receipt_and_a_correction_supersedes_one() {
    let s = Signer::new("");
    s.key("release-bot");
    let b1 = s.signed_bundle("one");
    let first = s.receipts()[0].clone();
    let first_text = std::fs::read_to_string(&first).unwrap();
    let first_id = serde_json::from_str::<Value>(&first_text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The same content signed again is another record, not a correction.
    // (A new second, so the two renderings differ in `generated_at`.)
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b2 = s.signed_bundle("two");
    assert_eq!(
        b1["bundle_id"], b2["bundle_id"],
        "same content, same bundle id"
    );
    assert_eq!(s.receipts().len(), 2);
    assert_eq!(
        std::fs::read_to_string(&first).unwrap(),
        first_text,
        "never rewritten"
    );
    let v = s.run(&["verify", ".ctx/bundles/one.json", ".ctx/bundles/two.json"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert_eq!(
        v.stdout.matches("describes this file, current").count(),
        2,
        "{}",
        v.stdout
    );
    assert_eq!(
        v.stdout.matches("for another compilation").count(),
        2,
        "{}",
        v.stdout
    );

    let r = s.run(&[
        "bundle",
        "--agent",
        "support-agent",
        "--sign",
        "--supersedes",
        &first_id,
        "-o",
        ".ctx/bundles/three.json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("supersedes {first_id}")),
        "{}",
        r.stderr
    );
    let v = s.run(&["verify", ".ctx/bundles/one.json"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout.contains("superseded by urn:ctx:receipt:"),
        "{}",
        v.stdout
    );
    let v = s.run(&["verify", &first.to_string_lossy()]);
    assert!(v.stdout.contains("note: superseded by"), "{}", v.stdout);
    // No forks, no dangling corrections; nothing is emitted when refused.
    for (target, msg, code) in [
        (first_id.as_str(), "already corrected", 1),
        ("urn:ctx:receipt:0000", "no such receipt", 3),
    ] {
        let r = s.run(&[
            "bundle",
            "--agent",
            "support-agent",
            "--sign",
            "--supersedes",
            target,
        ]);
        assert_eq!(r.code, code, "{}", r.stderr);
        assert!(
            r.stdout.is_empty() && r.stderr.contains(msg),
            "{}",
            r.stderr
        );
    }
    assert_eq!(s.receipts().len(), 3);
}

#[test]
fn decision_records_cite_stored_bundles_by_id_and_digest() {
    let s = Signer::new("");
    let m = s.manifest().replace(
        "collections:\n",
        "collections:\n  decisions: ./context/decisions/**\n",
    );
    std::fs::write(s.path().join("opencontext.yaml"), m).unwrap();
    s.key("release-bot");
    let b = s.signed_bundle("support");
    let decision = |digest: &str| {
        format!("---\nid: decisions.refund-limit\ntype: decision\nlayer: L5\nauthority: approved\nowner: support-lead\ncanonical_source: true\ntitle: Refund limit\ndecision: Keep the limit.\nbundle:\n  bundle_id: {}\n  digest: \"{digest}\"\n---\n\nBecause.\n", b["bundle_id"].as_str().unwrap())
    };
    s.repo.write(
        "context/decisions/refund-limit.md",
        &decision(b["digest"].as_str().unwrap()),
    );
    assert_eq!(s.run(&["validate"]).code, 0);
    let v = s.run(&["verify", "--decisions", ".ctx/bundles"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(v.stdout.contains("matches"), "{}", v.stdout);
    let wrong = format!("sha256:{}", "0".repeat(64));
    s.repo
        .write("context/decisions/refund-limit.md", &decision(&wrong));
    let v = s.run(&["verify", "--decisions", ".ctx/bundles"]);
    assert_eq!(v.code, 1);
    assert!(
        v.stdout.contains(&wrong) && v.stdout.contains(b["digest"].as_str().unwrap()),
        "{}",
        v.stdout
    );
    s.repo
        .write("context/decisions/refund-limit.md", &decision("sha256:XYZ"));
    let v = s.run(&["validate", "--format", "json"]);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("bundle.digest"), "{}", v.stdout);
}
