//! A backup is restorable on a new machine (seed 004 §7 "Export and import", §8
//! "Adding a new device"): export from vault A, create vault B under another home
//! with another password, import A's archive with A's password and secret key,
//! and read every field back. And the documented `?recipient=` path.

use serde_json::{json, Value};

use crate::serve_support::{write_private, Server, Vault, PASSWORD};
use crate::support::{ctx_in, Repo};

const PASSWORD_B: &str = "another machine, another password";

/// A vault made on a fresh home (a new machine), with its own password.
fn new_machine() -> Vault {
    let repo = Repo::new(&[]);
    write_private(&repo.path().join("pw.txt"), &format!("{PASSWORD_B}\n"));
    ctx_in(&repo)
        .args([
            "init",
            "--template",
            "personal",
            "--password-file",
            "pw.txt",
            "v",
        ])
        .run()
        .assert_ok();
    Vault { repo }
}

fn unlock_b(s: &Server, b: &Vault) -> String {
    let r = s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": PASSWORD_B, "secret_key": b.secret_key()}),
    );
    r.expect(200);
    r.body["token"].as_str().unwrap().to_string()
}

fn fill(s: &Server, u: &str) {
    s.put(u, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(
        u,
        "addresses.current",
        json!({"city": "Seattle", "country": "US"}),
    )
    .expect(201);
    s.put(u, "identity.full_name", json!("Cool Q. Cucumber"))
        .expect(200);
}

#[test]
fn a_backup_is_restored_on_a_new_machine_from_the_password_and_the_secret_key() {
    let a = Vault::create();
    let key_a = a.secret_key();
    let backup: Value = {
        let s = a.serve(&[]);
        let u = s.unlock(&a);
        fill(&s, &u);
        let e = s.get("/context/export", Some(&u));
        e.expect(200);
        e.body.clone()
    };
    // The archive's clear header says what derives its key, and nothing more.
    assert_eq!(backup["format"], "ctx.personal-archive.v1");
    assert_eq!(backup["kdf"]["algorithm"], "argon2id");
    assert!(
        backup["vault"].as_str().is_some_and(|v| v.len() == 32),
        "{backup}"
    );
    assert!(!backup.to_string().contains("Cucumber"));
    std::fs::write(a.repo.path().join("backup.json"), backup.to_string()).unwrap();
    drop(a);

    let b = new_machine();
    let s = b.serve(&[]);
    let u = unlock_b(&s, &b);
    // Without the source's secrets, B's own key does not open A's archive.
    s.send(
        "POST",
        "/context/import",
        Some(&u),
        json!({"archive": backup["archive"]}),
    )
    .refused(400, "invalid_request");
    // A wrong password for the source is named as such, and nothing is imported.
    let wrong = s.send(
        "POST",
        "/context/import",
        Some(&u),
        json!({"archive": backup, "password": "not it", "secret_key": key_a}),
    );
    wrong.refused(400, "invalid_request");
    assert!(
        wrong.text.contains("wrong password or secret key"),
        "{}",
        wrong.text
    );
    // The whole export document, A's password and A's secret key: restored.
    let r = s.send(
        "POST",
        "/context/import",
        Some(&u),
        json!({"archive": backup, "password": PASSWORD, "secret_key": key_a}),
    );
    r.expect(200);
    assert_eq!(
        r.body["added"],
        json!(["addresses.current", "identity.full_name"])
    );
    let f = s.get("/context/fields/identity.full_name", Some(&u));
    assert_eq!(f.body["value"], "Cool Q. Cucumber");
    assert_eq!(f.body["version"], 2);
    let c = s.get("/context/fields/addresses.current", Some(&u));
    assert_eq!(c.body["value"], json!({"city": "Seattle", "country": "US"}));
    // The restored fields are B's now: sealed to B's keys, readable after B relocks.
    s.send("POST", "/context/lock", Some(&u), json!({}))
        .expect(200);
    let u = unlock_b(&s, &b);
    let f = s.get("/context/fields/identity.full_name", Some(&u));
    assert_eq!(f.body["value"], "Cool Q. Cucumber");
    for (path, bytes) in crate::serve_support::files(&b.dir()) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("Cucumber"),
            "{path}"
        );
    }
}

#[test]
fn an_export_to_another_vaults_recipient_imports_there_with_its_own_key() {
    let b = new_machine();
    let manifest = std::fs::read_to_string(b.dir().join("opencontext.yaml")).unwrap();
    let recipient = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("archive: "))
        .expect("recipients.archive")
        .to_string();
    let a = Vault::create();
    let archive = {
        let s = a.serve(&[]);
        let u = s.unlock(&a);
        fill(&s, &u);
        let e = s.get(&format!("/context/export?recipient={recipient}"), Some(&u));
        e.expect(200);
        assert_eq!(
            e.body["recipients"].as_array().unwrap().len(),
            2,
            "{}",
            e.text
        );
        e.body["archive"].clone()
    };
    let s = b.serve(&[]);
    let u = unlock_b(&s, &b);
    s.send(
        "POST",
        "/context/import",
        Some(&u),
        json!({"archive": archive}),
    )
    .expect(200);
    let f = s.get("/context/fields/identity.full_name", Some(&u));
    assert_eq!(f.body["value"], "Cool Q. Cucumber");
}
