//! `ctx audit show` on a vault shows every audit log the repository has: the
//! repository's own and the vault's sealed one under `.ctx/personal/` — counted
//! while locked (with how to unlock), decrypted with the password.

use serde_json::json;

use crate::serve_support::Vault;
use crate::support::ctx_in;

fn vault_with_history() -> Vault {
    let v = Vault::create();
    let mut s = v.serve(&[]);
    let u = s.unlock(&v);
    s.put(&u, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.get("/context/fields/identity.full_name", Some(&u))
        .expect(200);
    s.send("POST", "/context/lock", Some(&u), json!({}))
        .expect(200);
    s.stop();
    v
}

#[test]
fn audit_show_on_a_locked_vault_names_its_sealed_log_and_how_to_read_it() {
    let v = vault_with_history();
    let r = ctx_in(&v.repo).args(["-C", "v", "audit", "show"]).run();
    r.assert_ok();
    assert!(
        r.stdout.contains(".ctx/personal/audit.jsonl"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("4 entries"), "{}", r.stdout);
    assert!(r.stdout.contains("--password-file"), "{}", r.stdout);
    assert!(!r.stdout.contains("identity.full_name"), "{}", r.stdout);
    assert!(!r.stdout.contains("Cucumber"), "{}", r.stdout);
}

#[test]
fn audit_show_with_the_password_decrypts_the_vault_log() {
    let v = vault_with_history();
    let r = ctx_in(&v.repo)
        .args(["-C", "v", "audit", "show", "--password-file", "pw.txt"])
        .run();
    r.assert_ok();
    assert!(
        r.stdout.contains(".ctx/personal/audit.jsonl"),
        "{}",
        r.stdout
    );
    for action in ["UNLOCK", "WRITE", "READ", "LOCK"] {
        assert!(r.stdout.contains(action), "{action}: {}", r.stdout);
    }
    assert!(r.stdout.contains("identity.full_name"), "{}", r.stdout);
    assert!(!r.stdout.contains("Cucumber"), "{}", r.stdout);
    let last = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "audit",
            "show",
            "--password-file",
            "pw.txt",
            "--limit",
            "1",
        ])
        .run();
    last.assert_ok();
    assert!(
        last.stdout.contains("LOCK") && !last.stdout.contains("WRITE"),
        "{}",
        last.stdout
    );
    crate::serve_support::write_private(&v.repo.path().join("wrong.txt"), "not it\n");
    ctx_in(&v.repo)
        .args(["-C", "v", "audit", "show", "--password-file", "wrong.txt"])
        .run()
        .assert_code(1);
}
