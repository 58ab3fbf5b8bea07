//! Seed 004 §5: "every write is logged with the consumer identity and the previous
//! value". The audit entry of a write or a delete keeps the value it replaced,
//! sealed to the field's category key inside the sealed log (never plaintext on
//! disk), so the user can see — and put back — what an agent overwrote or deleted.

use serde_json::{json, Value};

use crate::serve_support::{files, Vault};

fn entry<'a>(audit: &'a Value, action: &str, actor: &str) -> &'a Value {
    audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["extensions"]["ctx.personal"]["action"] == action && e["actor"]["id"] == actor)
        .unwrap_or_else(|| panic!("no {action} by {actor}: {audit}"))
}

#[test]
fn what_an_agent_overwrote_or_the_user_deleted_stays_in_the_audit_log_sealed() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    s.put(&u, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    let a = s.consumer_token(
        &u,
        "helper",
        json!({"scope": "identity.*", "mode": "read-write"}),
    );
    s.put(&a, "identity.full_name", json!("Agent Pickle"))
        .expect(200);
    s.delete("/context/fields/identity.full_name", Some(&u))
        .expect(200);

    let sealed = s.get("/context/audit?limit=100", Some(&u));
    sealed.expect(200);
    assert!(!sealed.text.contains("Cool Cucumber") && !sealed.text.contains("Agent Pickle"));
    let w = &entry(&sealed.body, "WRITE", "helper")["extensions"]["ctx.personal"]["previous"];
    assert_eq!(
        (w["version"].as_u64(), w["written_by"].as_str()),
        (Some(1), Some("user")),
        "{w}"
    );
    assert!(w["sealed"]
        .as_str()
        .unwrap()
        .starts_with("-----BEGIN AGE ENCRYPTED FILE-----"));
    // The first write replaced nothing.
    let first = &entry(&sealed.body, "WRITE", "user")["extensions"]["ctx.personal"];
    assert!(first.get("previous").is_none(), "{first}");

    let shown = s.get("/context/audit?limit=100&reveal=previous", Some(&u));
    shown.expect(200);
    let w = &entry(&shown.body, "WRITE", "helper")["extensions"]["ctx.personal"]["previous"];
    assert_eq!(w["value"], "Cool Cucumber", "{w}");
    assert!(w.get("sealed").is_none(), "{w}");
    let d = &entry(&shown.body, "DELETE", "user")["extensions"]["ctx.personal"]["previous"];
    assert_eq!(
        (d["value"].as_str(), d["written_by"].as_str()),
        (Some("Agent Pickle"), Some("helper"))
    );
    assert_eq!(d["version"], 2);
    // An agent never reads the log.
    s.get("/context/audit?reveal=previous", Some(&a))
        .refused(403, "scope_exceeded");
    // The user puts back what the agent replaced.
    s.put(&u, "identity.full_name", w["value"].clone())
        .expect(201);
    // Never a plaintext on disk: not the log, not the fields.
    for (path, bytes) in files(&v.dir()) {
        let t = String::from_utf8_lossy(&bytes);
        assert!(
            !t.contains("Cool Cucumber") && !t.contains("Agent Pickle"),
            "{path}"
        );
    }
}
