//! `ctx init --template personal` and `ctx private export-identity`: a vault that is
//! an ordinary, valid OpenContext repository, whose fields the `age` CLI opens with
//! the identities derived from the password and the secret key.

use serde_json::json;

use crate::serve_support::{Vault, PASSWORD};
use crate::support::{ctx_in, require_tool};

#[test]
fn a_new_vault_is_a_valid_repository_with_ten_private_categories() {
    let v = Vault::create();
    let m = std::fs::read_to_string(v.dir().join("opencontext.yaml")).unwrap();
    for c in [
        "identity",
        "documents",
        "relationships",
        "financial",
        "medical",
        "addresses",
        "employment",
        "education",
        "life_context",
        "preferences",
    ] {
        assert!(m.contains(&format!("  {c}: ./personal/{c}/**")), "{c}");
    }
    assert!(
        m.contains("ctx.personal:")
            && m.contains("memory_kib: 65536")
            && m.contains("iterations: 3")
    );
    assert!(
        m.contains("user_only_write: [ssn, tax_id]")
            && m.contains("user_only_write: [bank_routing, bank_account_number]")
    );
    ctx_in(&v.repo)
        .args(["-C", "v", "validate", "--strict"])
        .run()
        .assert_ok();
    ctx_in(&v.repo)
        .args(["-C", "v", "doctor"])
        .run()
        .assert_ok();
    let st = ctx_in(&v.repo)
        .args(["-C", "v", "private", "status", "--format", "json"])
        .run();
    st.assert_ok();
    // The secret key lives in the user's config folder, 0600, never in the repository.
    let key = v.secret_key();
    assert!(key.starts_with("ctxsk-"));
    for (path, bytes) in crate::serve_support::files(&v.dir()) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&key),
            "the secret key is in {path}"
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = v.repo.home().config().join("ctx/personal");
        let f = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(
            std::fs::metadata(f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // A second vault never overwrites the first.
    ctx_in(&v.repo)
        .args([
            "init",
            "--template",
            "personal",
            "--password-file",
            "pw.txt",
            "v",
        ])
        .run()
        .assert_code(2);
}

#[test]
fn fields_are_age_files_the_exported_identity_opens() {
    let v = Vault::create();
    {
        let s = v.serve(&[]);
        let user = s.unlock(&v);
        s.put(&user, "identity.full_name", json!("Cool Cucumber"))
            .expect(201);
        s.put(&user, "addresses.current.city", json!("Seattle"))
            .expect(201);
        s.put(&user, "identity.full_name", json!("Cool Q. Cucumber"))
            .expect(200);
    }
    let file = v.dir().join("personal/identity/full_name.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("Cucumber") && text.contains("\"classification\": \"internal\""),
        "{text}"
    );
    ctx_in(&v.repo)
        .args(["-C", "v", "validate", "--strict"])
        .run()
        .assert_ok();
    let wrong = v.repo.path().join("wrong.txt");
    crate::serve_support::write_private(&wrong, "not the password\n");
    ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "wrong.txt",
            "--category",
            "identity",
        ])
        .run()
        .assert_code(1)
        .assert_stderr_contains("wrong password or secret key");
    let r = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "pw.txt",
            "--category",
            "identity",
        ])
        .run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("AGE-SECRET-KEY-1").count(), 1);
    let id = v.repo.path().join("identity.txt");
    std::fs::write(&id, &r.stdout).unwrap();
    // The library opens it: resolve as the owner with the exported identity.
    let res = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "resolve",
            "--role",
            "owner",
            "--identity",
            "identity.txt",
            "--format",
            "json",
        ])
        .run();
    res.assert_ok();
    let b = res.json();
    let full = b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "identity.full_name")
        .expect("decrypted");
    assert_eq!(full["content"], "Cool Q. Cucumber");
    assert_eq!(
        full["extensions"]["ctx.personal"]["history"][0]["content"],
        "Cool Cucumber"
    );
    // The identity category key does not open another category.
    assert!(!res.stdout.contains("Seattle"));
    // Without an identity nothing private reaches an export.
    let out = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "export",
            "--target",
            "agents-md",
            "--role",
            "owner",
        ])
        .run();
    out.assert_ok();
    let md = std::fs::read_to_string(v.dir().join("AGENTS.md")).unwrap();
    assert!(!md.contains("Cucumber") && !md.contains("Seattle"));
    std::fs::remove_file(v.dir().join("AGENTS.md")).unwrap();
    // And the age CLI opens the field with the same identity.
    if require_tool("age") {
        let v2: serde_json::Value = serde_json::from_str(&text).unwrap();
        let armor = v2["extensions"]["ctx.private"]["age"].as_str().unwrap();
        let mut child = std::process::Command::new("age")
            .args(["-d", "-i"])
            .arg(&id)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(armor.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let plain: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plain["content"], "Cool Q. Cucumber");
        assert_eq!(plain["extensions"]["ctx.personal"]["written_by"], "user");
    }
    let _ = PASSWORD;
}

#[test]
fn export_and_import_round_trip_loses_nothing() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(&user, "identity.full_name", json!("Cool Q. Cucumber"))
        .expect(200);
    s.put(
        &user,
        "documents.passport",
        json!({"type": "passport", "expiry_date": "2031-01-01"}),
    )
    .expect(201);
    s.put(&user, "identity.ssn", json!("123-45-6789"))
        .expect(201);
    let agent = s.consumer_token(
        &user,
        "helper",
        json!({"scope": "preferences.*", "mode": "write"}),
    );
    s.put(&agent, "preferences.timezone", json!("America/Los_Angeles"))
        .expect(201);
    let before = s.get("/context/context", Some(&user));
    let meta_before = s.get("/context/fields", Some(&user));
    let e = s.get("/context/export", Some(&user));
    e.expect(200);
    assert_eq!(e.body["fields"], 4);
    let archive = e.body["archive"].as_str().unwrap().to_string();
    assert!(
        archive.starts_with("-----BEGIN AGE ENCRYPTED FILE-----") && !archive.contains("Cucumber")
    );
    // Replace with the archive after changes: everything comes back exactly.
    s.put(&user, "identity.full_name", json!("Changed"))
        .expect(200);
    s.delete("/context/fields/documents.passport", Some(&user))
        .expect(200);
    s.put(&user, "addresses.current.city", json!("Elsewhere"))
        .expect(201);
    let r = s.send(
        "POST",
        "/context/import",
        Some(&user),
        json!({"archive": archive, "mode": "replace"}),
    );
    r.expect(200);
    assert_eq!(r.body["removed"], json!(["addresses.current.city"]));
    assert_eq!(s.get("/context/context", Some(&user)).body, before.body);
    assert_eq!(s.get("/context/fields", Some(&user)).body, meta_before.body);
    let f = s.get("/context/fields/identity.full_name", Some(&user));
    assert_eq!(
        (f.body["version"].as_u64(), f.body["value"].as_str()),
        (Some(2), Some("Cool Q. Cucumber"))
    );
    // Merge keeps newer local values and adds what is missing.
    s.delete("/context/fields/identity.ssn", Some(&user))
        .expect(200);
    let r = s.send(
        "POST",
        "/context/import",
        Some(&user),
        json!({"archive": archive, "mode": "merge"}),
    );
    r.expect(200);
    assert_eq!(r.body["added"], json!(["identity.ssn"]));
    s.send(
        "POST",
        "/context/import",
        Some(&user),
        json!({"archive": "not an archive", "mode": "merge"}),
    )
    .refused(400, "invalid_request");
    s.send(
        "POST",
        "/context/import",
        Some(&agent),
        json!({"archive": archive}),
    )
    .refused(403, "scope_exceeded");
}

/// A password file others may read (or write) is refused before it is read, by
/// every command that takes one, naming the file, its mode and the fix.
#[cfg(unix)]
#[test]
fn a_password_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let repo = crate::support::Repo::new(&[("pw.txt", &format!("{PASSWORD}\n"))]);
    let pw = repo.path().join("pw.txt");
    let init = |repo: &crate::support::Repo| {
        ctx_in(repo)
            .args([
                "init",
                "--template",
                "personal",
                "--password-file",
                "pw.txt",
                "v",
            ])
            .run()
    };
    for mode in [0o644, 0o640, 0o622, 0o604] {
        std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = init(&repo);
        r.assert_code(1)
            .assert_stderr_contains("pw.txt")
            .assert_stderr_contains(&format!("{mode:04o}"))
            .assert_stderr_contains("chmod 600");
        assert!(!r.stderr.contains(PASSWORD), "{}", r.stderr);
        assert!(!repo.path().join("v/opencontext.yaml").exists());
    }
    std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o600)).unwrap();
    init(&repo).assert_ok();
    // The same check guards `ctx mcp` and `export-identity`.
    std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o644)).unwrap();
    for args in [
        &[
            "-C",
            "v",
            "mcp",
            "--agent",
            "a",
            "--password-file",
            "pw.txt",
        ][..],
        &[
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "pw.txt",
            "--all",
        ][..],
    ] {
        ctx_in(&repo)
            .args(args)
            .run()
            .assert_code(1)
            .assert_stderr_contains("0644")
            .assert_stderr_contains("chmod 600");
    }
}
