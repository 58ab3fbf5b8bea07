//! Interop with the standard tools: the `age` / `age-keygen` binaries (Debian
//! package `age`) and `ssh-keygen`. Each test is skipped, with a printed note, only
//! when its binary is missing, and fails instead under `CTX_REQUIRE_INTEROP=1`
//! (`.ci/run` installs the tools and sets it).

use std::path::Path;

use age::secrecy::SecretString;

use super::{fixture, manifest, read, run, MISSION, PASSPORT};
use crate::support::tools::{require_tool, tool};
use crate::support::Repo;

/// `age-keygen -o` in `dir`; returns (identity path, public key).
fn age_keygen(dir: &Path, name: &str) -> (String, String) {
    let path = dir.join(name).display().to_string();
    let (code, _, err) = tool("age-keygen", &["-o", &path], None);
    assert_eq!(code, 0, "{err}");
    let (code, public, err) = tool("age-keygen", &["-y", &path], None);
    assert_eq!(code, 0, "{err}");
    (path, String::from_utf8(public).unwrap().trim().to_string())
}

/// The armored block of a Markdown or YAML encrypted file, unindented.
fn armor_of(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("-----BEGIN AGE ENCRYPTED FILE-----") {
            inside = true;
        }
        if inside {
            out.push_str(l);
            out.push('\n');
        }
        if l.starts_with("-----END AGE ENCRYPTED FILE-----") {
            inside = false;
        }
    }
    out
}

#[test]
fn age_cli_decrypts_what_ctx_encrypts() {
    if !require_tool("age") || !require_tool("age-keygen") {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = age_keygen(keys.path(), "key.txt");
    let bank = "id: vault.bank\ntype: fact\nowner: me\ncontent:\n  number: \"DE00 1234\"\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(&[&public])),
        ("context/mission.md", MISSION),
        ("private/vault/passport.md", PASSPORT),
        ("private/vault/bank.yaml", bank),
    ]);
    let r = run(repo.path(), &["private", "encrypt"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (file, plain) in [
        ("private/vault/passport.md", PASSPORT),
        ("private/vault/bank.yaml", bank),
    ] {
        let armor = armor_of(&read(&repo, file));
        let (code, out, err) = tool("age", &["-d", "-i", &key], Some(armor.as_bytes()));
        assert_eq!(code, 0, "age -d failed on {file}: {err}");
        assert_eq!(String::from_utf8(out).unwrap(), plain, "{file}");
    }
    // And ctx reads the identity file that age-keygen wrote.
    let d = run(
        repo.path(),
        &[
            "private",
            "decrypt",
            "private/vault/passport.md",
            "-i",
            &key,
        ],
        &[],
    );
    assert_eq!(d.stdout, PASSPORT, "{}", d.stderr);
}

#[test]
fn ctx_reads_a_block_encrypted_by_age_cli() {
    if !require_tool("age") || !require_tool("age-keygen") {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = age_keygen(keys.path(), "key.txt");
    let (code, armor, err) = tool("age", &["-r", &public, "-a"], Some(PASSPORT.as_bytes()));
    assert_eq!(code, 0, "{err}");
    let armor = String::from_utf8(armor).unwrap();
    let file = format!(
        "---\nid: vault.passport\ntype: fact\nclassification: confidential\nowner: me\nupdated: 2026-01-01T00:00:00Z\nextensions:\n  ctx.private:\n    encrypted: true\n    recipients:\n      - {public}\n---\n{armor}"
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(&[&public])),
        ("context/mission.md", MISSION),
        ("private/vault/passport.md", &file),
    ]);
    assert_eq!(run(repo.path(), &["validate", "--strict"], &[]).code, 0);
    let d = run(
        repo.path(),
        &[
            "private",
            "decrypt",
            "private/vault/passport.md",
            "-i",
            &key,
        ],
        &[],
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.stdout, PASSPORT);
    let b = run(
        repo.path(),
        &["resolve", "--role", "owner", "--identity", &key],
        &[],
    )
    .json();
    let o = b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "vault.passport")
        .expect("included");
    assert_eq!(
        o["content"],
        "Passport number X1234567, expires 2031-05-01."
    );
    // Saving it unchanged through ctx keeps age's bytes (no churn).
    let e = run(
        repo.path(),
        &["private", "edit", "private/vault/passport.md", "-i", &key],
        &[("EDITOR", "true"), ("VISUAL", "")],
    );
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert_eq!(read(&repo, "private/vault/passport.md"), file);
}

#[test]
fn ssh_keys_work_as_recipients_and_identities() {
    if !require_tool("ssh-keygen") {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let plain = keys.path().join("id_ed25519");
    let locked = keys.path().join("id_locked");
    for (path, pass) in [(&plain, ""), (&locked, "open sesame")] {
        let (code, _, err) = tool(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                pass,
                "-C",
                "alice@laptop",
                "-f",
                &path.display().to_string(),
            ],
            None,
        );
        assert_eq!(code, 0, "{err}");
    }
    let pub1 = std::fs::read_to_string(keys.path().join("id_ed25519.pub")).unwrap();
    let pub2 = std::fs::read_to_string(keys.path().join("id_locked.pub")).unwrap();
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(&[pub1.trim(), pub2.trim()])),
        ("context/mission.md", MISSION),
        ("private/vault/passport.md", PASSPORT),
    ]);
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let st = run(repo.path(), &["private", "status"], &[]);
    assert!(
        st.stdout.contains("ssh-ed25519 SHA256:") && st.stdout.contains("alice@laptop"),
        "{}",
        st.stdout
    );
    let file = "private/vault/passport.md";
    let p1 = plain.display().to_string();
    let d = run(repo.path(), &["private", "decrypt", file, "-i", &p1], &[]);
    assert_eq!(d.stdout, PASSPORT, "{}", d.stderr);
    let p2 = locked.display().to_string();
    let d = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &p2],
        &[("CTX_AGE_PASSPHRASE", "open sesame")],
    );
    assert_eq!(d.stdout, PASSPORT, "{}", d.stderr);
    let wrong = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &p2],
        &[("CTX_AGE_PASSPHRASE", "nope")],
    );
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stderr.contains("wrong passphrase"),
        "{}",
        wrong.stderr
    );
    let no_tty = run(repo.path(), &["private", "decrypt", file, "-i", &p2], &[]);
    assert_eq!(no_tty.code, 1);
    assert!(
        no_tty.stderr.contains("CTX_AGE_PASSPHRASE"),
        "{}",
        no_tty.stderr
    );
    if require_tool("age") {
        let (code, out, err) = tool(
            "age",
            &["-d", "-i", &p1],
            Some(armor_of(&read(&repo, file)).as_bytes()),
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(String::from_utf8(out).unwrap(), PASSPORT);
    }
}

#[test]
fn passphrase_protected_age_identity_file() {
    let (repo, keys, alice) = fixture();
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    // What `age -p -a -o identity.age identity.txt` produces (made with the library:
    // the CLI reads passphrases only from a terminal).
    let inner = std::fs::read(&alice.path).unwrap();
    // A fixed, small scrypt work factor. age calibrates it to about a second on the
    // machine that encrypts and refuses more than 16 times its own calibration when
    // decrypting, so a calibrated one fails this test on a busy machine.
    let mut passphrase =
        age::scrypt::Recipient::new(SecretString::from("s3cret words".to_string()));
    passphrase.set_work_factor(10);
    let enc = age::Encryptor::with_recipients(std::iter::once(&passphrase as &dyn age::Recipient))
        .unwrap();
    let mut out = Vec::new();
    let armored =
        age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor).unwrap();
    let mut w = enc.wrap_output(armored).unwrap();
    std::io::Write::write_all(&mut w, &inner).unwrap();
    w.finish().unwrap().finish().unwrap();
    let protected = keys.path().join("identity.age");
    std::fs::write(&protected, &out).unwrap();
    let p = protected.display().to_string();
    let file = "private/vault/passport.md";
    let d = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &p],
        &[("CTX_AGE_PASSPHRASE", "s3cret words")],
    );
    assert_eq!(d.stdout, PASSPORT, "{}", d.stderr);
    let wrong = run(
        repo.path(),
        &["resolve", "--role", "owner", "--identity", &p],
        &[("CTX_AGE_PASSPHRASE", "guess")],
    )
    .json();
    let ex = wrong["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "vault.passport")
        .expect("excluded");
    assert!(
        ex["detail"].as_str().unwrap().contains("wrong passphrase"),
        "{ex}"
    );
    // A repository without private objects never asks for the passphrase.
    let clear = Repo::new(&[
        ("opencontext.yaml", &manifest(&[&alice.public])),
        ("context/mission.md", MISSION),
    ]);
    let r = run(
        clear.path(),
        &["resolve", "--role", "owner", "--identity", &p],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.json()["warnings"].as_array().unwrap().is_empty(),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("assphrase"), "{}", r.stderr);
}
