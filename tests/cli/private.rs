//! Private collections: encrypt/decrypt/edit/rekey/status, the plaintext guard,
//! resolution with and without an identity, and interop with the real `age` CLI.

use std::path::{Path, PathBuf};

use age::secrecy::ExposeSecret;

use crate::support::{ctx_in, Repo, Run};

/// An identity file outside the repository and its public key.
pub struct Key {
    pub path: PathBuf,
    pub public: String,
}

pub fn keygen(dir: &Path, name: &str) -> Key {
    let id = age::x25519::Identity::generate();
    let path = dir.join(format!("{name}.txt"));
    std::fs::write(
        &path,
        format!("# {name}\n{}\n", id.to_string().expose_secret()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    Key {
        path,
        public: id.to_public().to_string(),
    }
}

/// Run ctx in `dir` with extra environment variables: shorthand for
/// `ctx_in(dir).args(args).envs(env).run()` (a fresh hermetic home each time,
/// so no default identity and no inherited `CTX_AGE_*`).
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    ctx_in(dir).args(args).envs(env.iter().copied()).run()
}

pub fn manifest(recipients: &[&str]) -> String {
    let list: Vec<String> = recipients.iter().map(|r| format!("\"{r}\"")).collect();
    format!(
        r#"opencontext: "1.0"
id: home
context:
  mission: ./context/mission.md
collections:
  vault: ./private/vault/**
roles:
  owner:
    include: [mission, vault.*]
    max_classification: restricted
  assistant:
    include: [mission, vault.*]
    max_classification: restricted
    redact:
      - path: number
        mode: mask
        replacement: "[REDACTED]"
  guest:
    include: [mission, vault.*]
extensions:
  ctx.private:
    collections:
      vault:
        recipients: [{}]
"#,
        list.join(", ")
    )
}

pub const MISSION: &str =
    "---\nid: mission\ntype: mission\nowner: me\n---\n\nKeep my papers in order.\n";

pub const PASSPORT: &str = "---\nid: vault.passport\ntype: fact\ntitle: Passport details\nclassification: confidential\nowner: me\nupdated: 2026-01-01T00:00:00Z\ntags: [travel]\n---\n\nPassport number X1234567, expires 2031-05-01.\n";

/// A repository with one plaintext private file, keys in a separate folder.
pub fn fixture() -> (Repo, tempfile::TempDir, Key) {
    let keys = tempfile::tempdir().unwrap();
    let alice = keygen(keys.path(), "alice");
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(&[&alice.public])),
        ("context/mission.md", MISSION),
        ("private/vault/passport.md", PASSPORT),
    ]);
    (repo, keys, alice)
}

pub fn read(repo: &Repo, rel: &str) -> String {
    std::fs::read_to_string(repo.path().join(rel)).unwrap()
}

pub fn id_arg(k: &Key) -> String {
    k.path.display().to_string()
}

#[test]
fn encrypt_round_trip_without_churn() {
    let (repo, _keys, alice) = fixture();
    let r = run(repo.path(), &["private", "encrypt"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("encrypted  private/vault/passport.md"),
        "{}",
        r.stdout
    );
    let sealed = read(&repo, "private/vault/passport.md");
    assert!(sealed.contains("classification: confidential"), "{sealed}");
    assert!(sealed.contains("    encrypted: true\n"), "{sealed}");
    assert!(sealed.contains(&alice.public));
    assert!(sealed.contains("-----BEGIN AGE ENCRYPTED FILE-----"));
    for secret in ["X1234567", "Passport details", "travel"] {
        assert!(!sealed.contains(secret), "{secret} leaked:\n{sealed}");
    }
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);

    let d = run(
        repo.path(),
        &[
            "private",
            "decrypt",
            "private/vault/passport.md",
            "--identity",
            &id_arg(&alice),
        ],
        &[],
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.stdout, PASSPORT, "plaintext comes back byte for byte");
    assert!(d.stderr.contains(&alice.public), "{}", d.stderr);

    // Encrypting again leaves the file alone.
    let again = run(repo.path(), &["private", "encrypt", "private/vault"], &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("0 encrypted, 1 already encrypted"),
        "{}",
        again.stdout
    );
    assert_eq!(read(&repo, "private/vault/passport.md"), sealed);
    // Rekey with unchanged recipients and an edit that changes nothing keep the bytes too.
    let rk = run(
        repo.path(),
        &["private", "rekey", "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(rk.code, 0, "{}", rk.stderr);
    assert!(
        rk.stdout.contains("0 re-encrypted, 1 already current"),
        "{}",
        rk.stdout
    );
    let e = run(
        repo.path(),
        &[
            "private",
            "edit",
            "private/vault/passport.md",
            "-i",
            &id_arg(&alice),
        ],
        &[("EDITOR", "true"), ("VISUAL", "")],
    );
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert!(e.stderr.contains("no changes"), "{}", e.stderr);
    assert_eq!(read(&repo, "private/vault/passport.md"), sealed);
}

#[test]
fn validate_fails_on_plaintext_in_a_private_collection() {
    let (repo, _keys, _alice) = fixture();
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    assert!(
        v.stdout.contains("plaintext in private collection `vault`"),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("secret-detected"), "{}", v.stdout);
    assert!(
        v.stdout
            .contains("ctx private encrypt private/vault/passport.md"),
        "{}",
        v.stdout
    );
    assert!(!v.stdout.contains("X1234567"), "{}", v.stdout);
    let j = run(repo.path(), &["validate", "--format", "json"], &[]);
    assert!(
        j.stdout.contains("\"file\": \"private/vault/passport.md\""),
        "{}",
        j.stdout
    );
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    assert_eq!(run(repo.path(), &["validate"], &[]).code, 0);
}

#[test]
fn resolves_with_an_identity_and_excludes_without() {
    let (repo, _keys, alice) = fixture();
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let with = run(
        repo.path(),
        &["resolve", "--role", "owner", "--identity", &id_arg(&alice)],
        &[],
    );
    assert_eq!(with.code, 0, "{}", with.stderr);
    let b = with.json();
    let obj = b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "vault.passport")
        .expect("included");
    assert_eq!(
        obj["content"],
        "Passport number X1234567, expires 2031-05-01."
    );
    assert_eq!(obj["title"], "Passport details");
    assert_eq!(obj["tags"], serde_json::json!(["travel"]));
    assert!(
        b["warnings"].as_array().unwrap().is_empty(),
        "{}",
        with.stdout
    );

    let without = run(repo.path(), &["resolve", "--role", "assistant"], &[]);
    assert_eq!(without.code, 0, "{}", without.stderr);
    let b = without.json();
    assert!(b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["id"] != "vault.passport"));
    let ex = b["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "vault.passport")
        .expect("excluded");
    assert_eq!(ex["reason"], "source-unavailable");
    assert!(
        ex["detail"].as_str().unwrap().contains("no age identity"),
        "{ex}"
    );
    let w = &b["warnings"][0];
    assert_eq!(
        (w["code"].as_str(), w["severity"].as_str()),
        (Some("source-unavailable"), Some("warning"))
    );
    assert!(!without.stdout.contains("X1234567") && !without.stdout.contains("Passport details"));

    // --explain names the identity, never the plaintext of what was excluded.
    let ex = run(
        repo.path(),
        &[
            "resolve",
            "--role",
            "owner",
            "--identity",
            &id_arg(&alice),
            "--explain",
        ],
        &[],
    );
    assert!(
        ex.stdout
            .contains(&format!("Identity: {} (--identity)", alice.path.display())),
        "{}",
        ex.stdout
    );
    assert!(
        ex.stdout
            .contains(&format!("decrypted with {} from", alice.public)),
        "{}",
        ex.stdout
    );
    let ex = run(
        repo.path(),
        &["resolve", "--role", "assistant", "--explain"],
        &[],
    );
    assert!(ex.stdout.contains("Identity: none"), "{}", ex.stdout);
    assert!(
        !ex.stdout.contains("X1234567") && !ex.stdout.contains("Passport details"),
        "{}",
        ex.stdout
    );

    // A role above whose ceiling the object sits is denied before any decryption.
    let guest = run(
        repo.path(),
        &[
            "resolve",
            "--role",
            "guest",
            "--identity",
            &id_arg(&alice),
            "--explain",
        ],
        &[],
    );
    assert!(
        guest
            .stdout
            .contains("vault.passport  classification-denied"),
        "{}",
        guest.stdout
    );
    assert!(
        !guest.stdout.contains("decrypted with") && !guest.stdout.contains("Identity:"),
        "{}",
        guest.stdout
    );
}

#[test]
fn structured_private_content_is_redacted_after_decryption() {
    let (repo, _keys, alice) = fixture();
    repo.write(
        "private/vault/bank.yaml",
        "id: vault.bank\ntype: fact\nclassification: restricted\nowner: me\ncontent:\n  bank: Example Bank\n  number: \"DE00 1234\"\n",
    );
    repo.write("private/vault/tax.json", "{\"id\": \"vault.tax\", \"type\": \"fact\", \"owner\": \"me\", \"content\": {\"number\": \"12/345\"}}\n");
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let yaml = read(&repo, "private/vault/bank.yaml");
    assert!(
        yaml.contains("    age: |\n      -----BEGIN AGE ENCRYPTED FILE-----\n"),
        "{yaml}"
    );
    assert!(!yaml.contains("DE00"), "{yaml}");
    let json = read(&repo, "private/vault/tax.json");
    assert!(
        json.contains("\"age\": \"-----BEGIN AGE ENCRYPTED FILE-----\\n"),
        "{json}"
    );
    assert_eq!(run(repo.path(), &["validate"], &[]).code, 0);
    let r = run(
        repo.path(),
        &[
            "resolve",
            "--role",
            "assistant",
            "--identity",
            &id_arg(&alice),
        ],
        &[],
    );
    let b = r.json();
    let bank = b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "vault.bank")
        .expect("bank");
    assert_eq!(
        bank["content"],
        serde_json::json!({"bank": "Example Bank", "number": "[REDACTED]"})
    );
    assert_eq!(bank["redacted"], serde_json::json!(["number"]));
    assert!(
        !r.stdout.contains("DE00") && !r.stdout.contains("12/345"),
        "{}",
        r.stdout
    );
    let d = run(
        repo.path(),
        &[
            "private",
            "decrypt",
            "private/vault/bank.yaml",
            "-i",
            &id_arg(&alice),
        ],
        &[],
    );
    assert!(d.stdout.contains("number: \"DE00 1234\""), "{}", d.stdout);
}

mod commands;
mod interop;
mod keys;
