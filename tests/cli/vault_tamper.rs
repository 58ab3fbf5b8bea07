//! An attacker who can write the vault's folder but knows neither the password nor
//! the secret key: every file they plant, swap, put back or cut is refused at unlock,
//! reported to the user (file, what failed, how to recover) and never served. Only
//! the public recipients in the manifest and `ctx private encrypt` are used to forge.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::serve_support::{Server, Vault};
use crate::support::ctx_in;

/// A derived public key the manifest records (`state`, `audit`, `archive`).
fn recipient(v: &Vault, purpose: &str) -> String {
    let m = std::fs::read_to_string(v.dir().join("opencontext.yaml")).unwrap();
    let key = format!("      {purpose}: ");
    m.lines()
        .find_map(|l| l.strip_prefix(&key))
        .unwrap_or_else(|| panic!("no {purpose} recipient"))
        .trim()
        .to_string()
}

/// Armored age to one public key: what anyone can make.
fn seal(plain: &[u8], to: &str) -> String {
    let r: age::x25519::Recipient = to.parse().unwrap();
    let enc = age::Encryptor::with_recipients(std::iter::once(&r as &dyn age::Recipient)).unwrap();
    let mut out = Vec::new();
    let armored =
        age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor).unwrap();
    let mut w = enc.wrap_output(armored).unwrap();
    std::io::Write::write_all(&mut w, plain).unwrap();
    w.finish().unwrap().finish().unwrap();
    String::from_utf8(out).unwrap()
}

/// The owner's list of refused files: (file, field, error, fix).
fn problems(s: &Server, user: &str) -> Vec<Value> {
    let r = s.get("/context/fields", Some(user));
    r.expect(200);
    r.body["problems"].as_array().cloned().unwrap_or_default()
}

fn problem_for<'a>(ps: &'a [Value], file: &str) -> &'a Value {
    ps.iter()
        .find(|p| p["file"].as_str().is_some_and(|f| f.ends_with(file)))
        .unwrap_or_else(|| panic!("no problem reported for {file}: {ps:#?}"))
}

/// A vault with two fields written by the user, and a registered consumer.
fn vault_with_fields() -> Vault {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(&user, "identity.dob", json!("1990-06-15"))
        .expect(201);
    s.consumer_token(&user, "helper", json!({"scope": "identity.*"}));
    drop(s);
    v
}

#[test]
fn a_planted_token_store_is_refused_and_reported() {
    let v = vault_with_fields();
    // The attacker's own token: scope *, read-write, no expiry, in a store sealed
    // to the public `state` recipient.
    let token = format!("ctxs_{}", "ab".repeat(32));
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    let store = json!({
        "format": "ctx.personal-state.v1",
        "consumers": {},
        "tokens": [{
            "hash": hash, "shown": "ctxs_abababab", "consumer": "mallory",
            "scope": ["*"], "mode": "read-write", "usage": "multi",
            "created_at": "2026-01-01T00:00:00Z", "expires_at": null, "purpose": null,
            "rates": {"reads": 60, "writes": 10}, "uses": 0
        }]
    });
    let file = v.dir().join(".ctx/personal/state.age");
    std::fs::write(
        &file,
        seal(store.to_string().as_bytes(), &recipient(&v, "state")),
    )
    .unwrap();
    let mut s = v.serve(&[]);
    let user = s.unlock(&v);
    s.get("/context/fields/identity.full_name", Some(&token))
        .refused(401, "unauthenticated");
    s.get("/context/context", Some(&token))
        .refused(401, "unauthenticated");
    let ps = problems(&s, &user);
    let p = problem_for(&ps, ".ctx/personal/state.age");
    let error = p["error"].as_str().unwrap();
    assert!(error.contains("authentic"), "{p}");
    assert!(p["fix"].as_str().is_some_and(|f| !f.is_empty()), "{p}");
    // Its consumers and tokens are not honoured, and the user is told at unlock.
    assert_eq!(
        s.get("/context/consumers", Some(&user)).body["consumers"],
        json!([])
    );
    let audit = s.get("/context/audit?limit=50", Some(&user)).text;
    assert!(audit.contains("state.age"), "{audit}");
    // Registering again writes an authentic store; the refused one is kept aside.
    s.consumer_token(&user, "helper", json!({"scope": "identity.*"}));
    assert!(v.dir().join(".ctx/personal/state.refused.age").exists());
    assert!(!s.stderr().contains(&token));
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    assert!(problems(&s, &user).is_empty());
    let names = s.get("/context/consumers", Some(&user)).body["consumers"].clone();
    assert_eq!(names[0]["name"], "helper", "{names}");
    s.get("/context/fields", Some(&token))
        .refused(401, "unauthenticated");
}

#[test]
fn a_field_sealed_without_the_vaults_key_is_never_served() {
    let v = vault_with_fields();
    // `ctx private encrypt` needs no password and no secret key.
    let plain = json!({
        "id": "identity.passport_number", "type": "field", "classification": "public",
        "owner": "user", "version": 1, "updated": "2026-01-01T00:00:00Z",
        "content": "PLANTED-VALUE",
        "extensions": {"ctx.personal": {"written_by": "user", "user_only_write": false}}
    });
    let rel = "personal/identity/passport_number.json";
    std::fs::write(
        v.dir().join(rel),
        serde_json::to_string_pretty(&plain).unwrap(),
    )
    .unwrap();
    ctx_in(&v.repo)
        .args(["-C", "v", "private", "encrypt", &format!("v/{rel}")])
        .run()
        .assert_ok();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.get("/context/fields/identity.passport_number", Some(&user))
        .refused(404, "not_found");
    let all = s.get("/context/context", Some(&user));
    assert!(!all.text.contains("PLANTED-VALUE"), "{}", all.text);
    assert!(all.text.contains("Cool Cucumber"), "{}", all.text);
    let ps = problems(&s, &user);
    let p = problem_for(&ps, rel);
    assert_eq!(p["field"], "identity.passport_number", "{p}");
    drop(s);
    // `ctx mcp` tells the user at unlock too (on stderr: stdout is the transport).
    let pw = v.repo.path().join("pw.txt");
    let mcp = ctx_in(&v.repo)
        .args(["-C", "v", "mcp", "--agent", "helper", "--password-file"])
        .arg(&pw)
        .run();
    assert!(
        mcp.stderr.contains(&format!("ctx mcp: refused {rel}: ")),
        "{}",
        mcp.stderr
    );
    assert!(!mcp.stderr.contains("PLANTED-VALUE") && !mcp.stdout.contains("PLANTED-VALUE"));
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    // Writing the field again replaces the refused file with an authentic one.
    s.put(&user, "identity.passport_number", json!("X1234567"))
        .expect(201);
    assert!(problems(&s, &user).is_empty());
    drop(s);
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    assert!(problems(&s, &user).is_empty());
    let f = s.get("/context/fields/identity.passport_number", Some(&user));
    assert_eq!(f.body["value"], "X1234567");
}

#[test]
fn swapped_replayed_and_deleted_field_files_are_refused() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    for (id, value) in [
        ("identity.full_name", "Cool Cucumber"),
        ("identity.dob", "1990-06-15"),
        ("addresses.current.city", "Seattle"),
        ("preferences.timezone", "Europe/Vienna"),
        ("employment.title", "Engineer"),
    ] {
        s.put(&user, id, json!(value)).expect(201);
    }
    let dir = v.dir().join("personal");
    let old_city = std::fs::read(dir.join("addresses/current/city.json")).unwrap();
    s.put(&user, "addresses.current.city", json!("Portland"))
        .expect(200);
    drop(s);
    // Swap: full_name's file under dob's name and back; replay: the older city;
    // delete: the time zone; cut: the title.
    let name = std::fs::read(dir.join("identity/full_name.json")).unwrap();
    let dob = std::fs::read(dir.join("identity/dob.json")).unwrap();
    std::fs::write(dir.join("identity/dob.json"), &name).unwrap();
    std::fs::write(dir.join("identity/full_name.json"), &dob).unwrap();
    std::fs::write(dir.join("addresses/current/city.json"), &old_city).unwrap();
    std::fs::remove_file(dir.join("preferences/timezone.json")).unwrap();
    let title = std::fs::read(dir.join("employment/title.json")).unwrap();
    std::fs::write(dir.join("employment/title.json"), &title[..title.len() / 2]).unwrap();

    let s = v.serve(&[]);
    let user = s.unlock(&v);
    let all = s.get("/context/context", Some(&user));
    for value in [
        "Cool Cucumber",
        "1990-06-15",
        "Seattle",
        "Portland",
        "Europe/Vienna",
        "Engineer",
    ] {
        assert!(
            !all.text.contains(value),
            "{value} was served: {}",
            all.text
        );
    }
    for id in [
        "identity.full_name",
        "identity.dob",
        "addresses.current.city",
        "preferences.timezone",
        "employment.title",
    ] {
        s.get(&format!("/context/fields/{id}"), Some(&user))
            .refused(404, "not_found");
    }
    let ps = problems(&s, &user);
    for file in [
        "personal/identity/full_name.json",
        "personal/identity/dob.json",
        "personal/addresses/current/city.json",
        "personal/preferences/timezone.json",
        "personal/employment/title.json",
    ] {
        let p = problem_for(&ps, file);
        assert!(p["fix"].as_str().is_some_and(|f| !f.is_empty()), "{p}");
    }
    let city = problem_for(&ps, "personal/addresses/current/city.json");
    assert!(city["error"].as_str().unwrap().contains("older"), "{city}");
    let tz = problem_for(&ps, "personal/preferences/timezone.json");
    assert!(tz["error"].as_str().unwrap().contains("missing"), "{tz}");
    // The user clears a report by deleting the field (or writing it again).
    s.delete("/context/fields/preferences.timezone", Some(&user))
        .expect(200);
    s.delete("/context/fields/addresses.current.city", Some(&user))
        .expect(200);
    let left = problems(&s, &user);
    assert_eq!(left.len(), 3, "{left:#?}");
    assert!(!dir.join("addresses/current/city.json").exists());
}

#[test]
fn a_vault_rolled_back_as_a_whole_is_refused_until_the_user_accepts_it() {
    let v = vault_with_fields();
    let snapshot = tempfile::tempdir().unwrap();
    let copy = |from: &std::path::Path, to: &std::path::Path| {
        for (rel, bytes) in crate::serve_support::files(from) {
            let p = to.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
    };
    copy(&v.dir(), snapshot.path());
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!("Cool Q. Cucumber"))
        .expect(200);
    drop(s);
    // Every file put back as it was: each one authentic, the whole an older vault.
    std::fs::remove_dir_all(v.dir()).unwrap();
    copy(snapshot.path(), &v.dir());
    let s = v.serve(&[]);
    let r = s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": crate::serve_support::PASSWORD, "secret_key": v.secret_key()}),
    );
    assert_eq!(r.status, 503, "{}", r.text);
    let error = r.body["error"].as_str().unwrap();
    assert!(
        error.contains("rolled back") && error.contains(".seen"),
        "{error}"
    );
    drop(s);
    // The user accepts the older state by removing this device's record of it.
    let seen = std::fs::read_dir(v.repo.home().config().join("ctx/personal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seen"))
        .expect("a .seen file");
    std::fs::remove_file(seen).unwrap();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    let f = s.get("/context/fields/identity.full_name", Some(&user));
    assert_eq!(f.body["value"], "Cool Cucumber");
}

#[test]
fn an_unauthenticated_vault_is_upgraded_only_explicitly() {
    let v = vault_with_fields();
    // What a vault made before authentication looks like: no index, no MACs.
    let index = v.dir().join(".ctx/personal/index.json");
    std::fs::remove_file(&index).unwrap();
    for e in std::fs::read_dir(v.repo.home().config().join("ctx/personal")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "seen") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let legacy = |rel: &str, id: &str, value: &str| {
        let plain = json!({
            "id": id, "type": "field", "classification": "internal",
            "owner": "user", "version": 1, "updated": "2026-01-01T00:00:00Z",
            "content": value,
            "extensions": {"ctx.personal": {"written_by": "user", "user_only_write": false}}
        });
        std::fs::write(
            v.dir().join(rel),
            serde_json::to_string_pretty(&plain).unwrap(),
        )
        .unwrap();
        ctx_in(&v.repo)
            .args(["-C", "v", "private", "encrypt", &format!("v/{rel}")])
            .run()
            .assert_ok();
    };
    for f in ["identity/full_name.json", "identity/dob.json"] {
        std::fs::remove_file(v.dir().join("personal").join(f)).unwrap();
    }
    legacy(
        "personal/identity/full_name.json",
        "identity.full_name",
        "Legacy Name",
    );
    let store = json!({"format": "ctx.personal-state.v1", "consumers": {}, "tokens": []});
    std::fs::write(
        v.dir().join(".ctx/personal/state.age"),
        seal(store.to_string().as_bytes(), &recipient(&v, "state")),
    )
    .unwrap();

    // Unlock refuses it, saying what to run.
    let s = v.serve(&[]);
    let r = s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": crate::serve_support::PASSWORD, "secret_key": v.secret_key()}),
    );
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(r.text.contains("ctx private upgrade-vault"), "{}", r.text);
    drop(s);
    // Without a terminal the upgrade needs --yes; it shows what it will vouch for.
    let dry = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "upgrade-vault",
            "--password-file",
            "pw.txt",
        ])
        .run();
    dry.assert_code(2).assert_stderr_contains("--yes");
    assert!(dry.stdout.contains("identity.full_name"), "{}", dry.stdout);
    assert!(!dry.stdout.contains("Legacy Name"), "{}", dry.stdout);
    assert!(!index.exists());
    ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "upgrade-vault",
            "--password-file",
            "pw.txt",
            "--yes",
        ])
        .run()
        .assert_ok()
        .assert_stdout_contains("authenticated 1 field");
    assert!(index.exists());
    // A second upgrade has nothing to do.
    ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "upgrade-vault",
            "--password-file",
            "pw.txt",
            "--yes",
        ])
        .run()
        .assert_code(1)
        .assert_stderr_contains("already authenticated");
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    assert!(problems(&s, &user).is_empty());
    let f = s.get("/context/fields/identity.full_name", Some(&user));
    assert_eq!(f.body["value"], "Legacy Name");
    drop(s);
    // After the upgrade an unauthenticated file is refused like any plant.
    legacy(
        "personal/identity/dob.json",
        "identity.dob",
        "Planted Later",
    );
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.get("/context/fields/identity.dob", Some(&user))
        .refused(404, "not_found");
    problem_for(&problems(&s, &user), "personal/identity/dob.json");
}
