//! Private collections from `ctx init`: encrypting a fresh repository leaves it
//! valid (provenance stays in the clear header), `ctx add` into a private collection
//! encrypts on write, and `ctx get --identity` decrypts what the consumer may read.

use std::path::Path;

use crate::private::{keygen, Key};
use crate::support::{ctx_in, Run};

/// `ctx init` in a fresh folder, then make its `policies` collection private.
fn init_private(dir: &Path, key: &Key) {
    ctx_in(dir)
        .args(["init", "--yes", "--id", "acme", "--name", "ACME"])
        .run()
        .assert_ok();
    let manifest = dir.join("opencontext.yaml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str(&format!(
        "\nextensions:\n  ctx.private:\n    collections:\n      policies:\n        recipients: [\"{}\"]\n",
        key.public
    ));
    std::fs::write(&manifest, text).unwrap();
}

fn ctx(dir: &Path, args: &[&str]) -> Run {
    ctx_in(dir).args(args).run()
}

#[test]
fn init_then_encrypt_leaves_a_valid_repository() {
    let keys = tempfile::tempdir().unwrap();
    let key = keygen(keys.path(), "me");
    let repo = tempfile::tempdir().unwrap();
    init_private(repo.path(), &key);
    ctx(repo.path(), &["private", "encrypt"]).assert_ok();
    let file = std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap();
    assert!(
        file.contains("-----BEGIN AGE ENCRYPTED FILE-----"),
        "{file}"
    );
    assert!(
        !file.contains("within 30 days"),
        "plaintext at rest:\n{file}"
    );
    // Provenance stays in clear: validation in CI needs it and has no key.
    assert!(file.contains("canonical_source: true"), "{file}");
    assert!(
        !file.contains("title:"),
        "descriptive fields are encrypted:\n{file}"
    );
    let r = ctx(repo.path(), &["validate", "--strict"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let r = ctx(
        repo.path(),
        &[
            "private",
            "status",
            "--check",
            "--identity",
            key.path.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.describe());
}

#[test]
fn add_into_a_private_collection_encrypts_on_write() {
    let keys = tempfile::tempdir().unwrap();
    let key = keygen(keys.path(), "me");
    let repo = tempfile::tempdir().unwrap();
    init_private(repo.path(), &key);
    ctx(repo.path(), &["private", "encrypt"]).assert_ok();
    let secret = "VIP customers get refunds for 90 days.";
    // The dry run shows what would be written: the sealed file.
    let dry = ctx(
        repo.path(),
        &[
            "add",
            "policies.vip",
            "--type",
            "policy",
            "--canonical-source",
            "--owner",
            "support",
            "--title",
            "VIP refunds",
            "--content",
            secret,
            "--dry-run",
        ],
    );
    dry.assert_ok();
    assert!(
        dry.stdout.contains("BEGIN AGE ENCRYPTED FILE"),
        "{}",
        dry.stdout
    );
    assert!(!dry.stdout.contains(secret), "{}", dry.stdout);
    assert!(!repo.path().join("context/policies/vip.md").exists());
    let r = ctx(
        repo.path(),
        &[
            "add",
            "policies.vip",
            "--type",
            "policy",
            "--canonical-source",
            "--owner",
            "support",
            "--title",
            "VIP refunds",
            "--content",
            secret,
        ],
    );
    r.assert_ok();
    let file = std::fs::read_to_string(repo.path().join("context/policies/vip.md")).unwrap();
    assert!(
        file.contains("-----BEGIN AGE ENCRYPTED FILE-----"),
        "{file}"
    );
    assert!(!file.contains("90 days"), "plaintext at rest:\n{file}");
    assert!(
        !file.contains("VIP refunds"),
        "the title is encrypted:\n{file}"
    );
    // No stray file anywhere in the repository holds the plaintext.
    for entry in walk(repo.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("90 days"),
            "plaintext in {}",
            entry.display()
        );
    }
    let r = ctx(repo.path(), &["validate", "--strict"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    // It decrypts back to what was added.
    let r = ctx(
        repo.path(),
        &[
            "private",
            "decrypt",
            "context/policies/vip.md",
            "--identity",
            key.path.to_str().unwrap(),
        ],
    );
    r.assert_ok();
    assert!(r.stdout.contains(secret), "{}", r.stdout);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn get_with_an_identity_decrypts_what_the_consumer_may_read() {
    let keys = tempfile::tempdir().unwrap();
    let key = keygen(keys.path(), "me");
    let repo = tempfile::tempdir().unwrap();
    init_private(repo.path(), &key);
    // A structured private object with a field the support role must not see.
    std::fs::write(
        repo.path().join("context/policies/limits.yaml"),
        "id: policies.limits\ntype: policy\nowner: support\ncanonical_source: true\ncontent:\n  refund_limit: 500\n  approver_phone: \"+1 555 0199\"\n",
    )
    .unwrap();
    let manifest = repo.path().join("opencontext.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "    exclude: [policies.internal.*]\n",
        "    exclude: [policies.internal.*]\n    redact:\n      - path: approver_phone\n        mode: mask\n",
    );
    std::fs::write(&manifest, text).unwrap();
    ctx(repo.path(), &["private", "encrypt"]).assert_ok();
    let id = key.path.to_str().unwrap();
    let get = |extra: &[&str]| {
        let mut args = vec!["get", "policies.limits", "--format", "json"];
        args.extend_from_slice(extra);
        ctx(repo.path(), &args)
    };
    let r = get(&["--role", "support", "--identity", id]);
    r.assert_ok();
    let doc = r.json();
    assert_eq!(doc["content"]["refund_limit"], 500, "{}", r.stdout);
    assert_eq!(
        doc["content"]["approver_phone"], "[REDACTED]",
        "{}",
        r.stdout
    );
    assert_eq!(doc["redacted"][0], "approver_phone");
    assert!(!r.stdout.contains("555 0199"), "{}", r.stdout);
    assert!(!r.stdout.contains("BEGIN AGE"), "{}", r.stdout);
    // The author's view is unredacted.
    let r = get(&["--identity", id]);
    r.assert_ok();
    assert_eq!(r.json()["content"]["approver_phone"], "+1 555 0199");
    // Without an identity: the clear header, and a note saying why there is no more.
    let r = get(&["--role", "support"]);
    r.assert_ok();
    assert!(!r.stdout.contains("refund_limit"), "{}", r.stdout);
    assert!(r.stderr.contains("is private"), "{}", r.describe());
    // A denied object is never decrypted, identity or not: reported like a missing one.
    let r = ctx(
        repo.path(),
        &[
            "get",
            "policies.internal.escalation",
            "--role",
            "support",
            "--identity",
            id,
        ],
    );
    assert_eq!(r.code, 3, "{}", r.describe());
    assert!(!r.stdout.contains("1,000"), "{}", r.stdout);
}

#[test]
fn a_file_sealed_with_provenance_only_inside_is_named_and_rekey_fixes_it() {
    let keys = tempfile::tempdir().unwrap();
    let key = keygen(keys.path(), "me");
    let repo = tempfile::tempdir().unwrap();
    init_private(repo.path(), &key);
    ctx(repo.path(), &["private", "encrypt"]).assert_ok();
    // What an older ctx wrote: the provenance only in the ciphertext.
    let path = repo.path().join("context/policies/refunds.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("canonical_source: true\n", "")).unwrap();
    let r = ctx(repo.path(), &["validate"]);
    assert_eq!(r.code, 1, "{}", r.describe());
    assert!(
        r.stdout.contains("ctx private rekey --force"),
        "{}",
        r.stdout
    );
    // Still consistent: the object opens, so rekey can rewrite its header.
    let id = key.path.to_str().unwrap();
    ctx(
        repo.path(),
        &["private", "rekey", "--force", "--identity", id],
    )
    .assert_ok();
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("canonical_source: true"));
    let r = ctx(repo.path(), &["validate", "--strict"]);
    assert_eq!(r.code, 0, "{}", r.describe());
}
