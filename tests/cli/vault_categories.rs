//! Seed 004 §2: "any category.field_name is valid". The user's write to a category
//! the vault does not have adds it (to the manifest, as a private collection with
//! its own derived key); a name that is not a category name is refused; an agent
//! cannot add categories and learns nothing from trying.

use serde_json::json;

use crate::serve_support::{files, Vault};
use crate::support::ctx_in;

#[test]
fn the_users_write_to_a_new_category_adds_it_and_it_survives_a_restart() {
    let v = Vault::create();
    let manifest = v.dir().join("opencontext.yaml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let mut s = v.serve(&[]);
    let u = s.unlock(&v);
    let r = s.put(&u, "custom.thing", json!("a value of my own"));
    r.expect(201);
    assert_eq!(r.body["category"], "custom");
    assert_eq!(r.body["sensitivity"], "standard");
    s.put(&u, "hobbies.chess.rating", json!("1850")).expect(201);
    let got = s.get("/context/fields/custom.thing", Some(&u));
    assert_eq!(got.body["value"], "a value of my own");
    let cat = s.get("/context/fields/category/hobbies", Some(&u));
    cat.expect(200);
    assert!(cat.text.contains("1850"), "{}", cat.text);
    let status = s.get("/context/status", None);
    assert!(status.text.contains("hobbies"), "{}", status.text);
    // The manifest kept every byte it had and gained the three entries per category.
    let after = std::fs::read_to_string(&manifest).unwrap();
    for line in before.lines() {
        assert!(after.contains(line), "lost: {line}");
    }
    assert!(
        after.contains("  custom: ./personal/custom/**\n"),
        "{after}"
    );
    assert!(
        after.contains("      hobbies:\n        sensitivity: standard\n"),
        "{after}"
    );
    // No plaintext reached the disk.
    for (path, bytes) in files(&v.dir()) {
        let t = String::from_utf8_lossy(&bytes);
        assert!(
            !t.contains("a value of my own") && !t.contains("1850"),
            "{path}"
        );
    }
    s.stop();
    ctx_in(&v.repo)
        .args(["-C", "v", "validate", "--strict"])
        .run()
        .assert_ok();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    let got = s.get("/context/fields/custom.thing", Some(&u));
    assert_eq!(got.body["value"], "a value of my own");
    // Deleting the last field leaves the category valid (its descriptor stays).
    s.delete("/context/fields/custom.thing", Some(&u))
        .expect(200);
    drop(s);
    ctx_in(&v.repo)
        .args(["-C", "v", "validate", "--strict"])
        .run()
        .assert_ok();
}

#[test]
fn a_name_that_is_not_a_category_name_is_refused_and_changes_nothing() {
    let v = Vault::create();
    let manifest = v.dir().join("opencontext.yaml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    for bad in ["Custom.thing", "_x.y", "a%20b.c", "ünï.code", "x.", ".x"] {
        let r = s.put(&u, bad, json!("v"));
        assert!(r.status == 400 || r.status == 404, "{bad}: {}", r.text);
    }
    s.put(&u, &format!("{}.x", "a".repeat(65)), json!("v"))
        .refused(400, "invalid_request");
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), before);
}

#[test]
fn an_agent_cannot_add_a_category_and_cannot_tell_it_from_a_missing_field() {
    let v = Vault::create();
    let manifest = v.dir().join("opencontext.yaml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    let a = s.consumer_token(&u, "helper", json!({"scope": "*", "mode": "read-write"}));
    let new_cat = s.put(&a, "hobbies.chess", json!("x"));
    new_cat.refused(404, "not_found");
    let unseen = s.get("/context/fields/hobbies.chess", Some(&a));
    unseen.refused(404, "not_found");
    assert_eq!(
        new_cat.body["error"]
            .as_str()
            .unwrap()
            .replace("hobbies.chess", "ID"),
        unseen.body["error"]
            .as_str()
            .unwrap()
            .replace("hobbies.chess", "ID"),
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), before);
}

/// A vault made with a recovery key: a category the user adds is sealed to it too,
/// so the recovery identity opens its fields with the `age` CLI.
#[test]
fn a_new_category_is_also_sealed_to_the_recovery_key() {
    if !crate::support::require_tool("age") || !crate::support::require_tool("age-keygen") {
        return;
    }
    let repo = crate::support::Repo::new(&[]);
    let key = repo.path().join("recovery.txt");
    let out = std::process::Command::new("age-keygen")
        .arg("-o")
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let public = String::from_utf8_lossy(&out.stderr)
        .trim()
        .trim_start_matches("Public key: ")
        .to_string();
    crate::serve_support::write_private(
        &repo.path().join("pw.txt"),
        &format!("{}\n", crate::serve_support::PASSWORD),
    );
    ctx_in(&repo)
        .args([
            "init",
            "--template",
            "personal",
            "--password-file",
            "pw.txt",
        ])
        .args(["--recovery-recipient", &public, "v"])
        .run()
        .assert_ok();
    let v = Vault { repo };
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    s.put(&u, "hobbies.chess", json!("club player")).expect(201);
    let manifest = std::fs::read_to_string(v.dir().join("opencontext.yaml")).unwrap();
    assert!(
        manifest.contains("      hobbies:\n        recipients: [age1"),
        "{manifest}"
    );
    let file = v.dir().join("personal/hobbies/chess.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let armor = &text[text.find("-----BEGIN AGE").unwrap()..];
    let armor = &armor[..armor.find("-----END AGE ENCRYPTED FILE-----").unwrap() + 32];
    let sealed = v.repo.path().join("chess.age");
    std::fs::write(&sealed, armor.replace("\\n", "\n")).unwrap();
    let opened = std::process::Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(&key)
        .arg(&sealed)
        .output()
        .unwrap();
    assert!(
        opened.status.success(),
        "{}",
        String::from_utf8_lossy(&opened.stderr)
    );
    assert!(String::from_utf8_lossy(&opened.stdout).contains("club player"));
}
