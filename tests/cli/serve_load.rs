//! `ctx serve` under load and against planted canaries: 50 parallel clients doing
//! mixed reads and writes lose no write and leave no gap in the audit chain; no
//! value outside a token's scope, unapproved, or in another category ever appears
//! in a response, an error, the server's output or the files at rest.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::serve_support::{files, Vault};

/// Check the sealed log's chain by hand (seq from 1, each `prev` the hash of the
/// line before); returns the number of entries.
fn chain(v: &Vault) -> usize {
    let text =
        std::fs::read_to_string(v.dir().join(".ctx/personal/audit.jsonl")).expect("audit log");
    let mut prev = Value::Null;
    let mut n = 0;
    for line in text.lines() {
        n += 1;
        let e: Value = serde_json::from_str(line).expect("JSON line");
        let link = &e["extensions"]["ctx.audit"];
        assert_eq!(link["seq"], n, "gap or reorder at entry {n}");
        assert_eq!(
            link["prev"], prev,
            "entry {n} does not link to its predecessor"
        );
        assert!(e["extensions"]["ctx.personal"]["sealed"].is_string());
        prev = json!(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(line.as_bytes()))
        ));
    }
    n
}

#[test]
fn fifty_parallel_clients_lose_no_write_and_leave_no_audit_gap() {
    let v = Vault::create();
    let s = Arc::new(v.serve(&[]));
    let user = s.unlock(&v);
    let mut tokens = Vec::new();
    for c in 0..5 {
        for _ in 0..10 {
            tokens.push(s.consumer_token(
                &user,
                &format!("client-{c}"),
                json!({"scope": "preferences.*", "mode": "read-write", "rate_limit": {"reads": 100000, "writes": 100000}}),
            ));
        }
    }
    let before = chain(&v);
    let ok = Arc::new(AtomicUsize::new(0));
    const ROUNDS: usize = 6;
    let handles: Vec<_> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let s = s.clone();
            let ok = ok.clone();
            std::thread::spawn(move || {
                let own = format!("preferences.c{i}");
                for k in 0..ROUNDS {
                    let w = s.put(&t, &own, json!(format!("v{k}")));
                    assert!(w.status == 200 || w.status == 201, "{}", w.text);
                    let r = s.get(&format!("/context/fields/{own}"), Some(&t));
                    r.expect(200);
                    assert_eq!(
                        r.body["value"],
                        format!("v{k}"),
                        "a client reads its own last write"
                    );
                    let c = s.get("/context/context", Some(&t));
                    c.expect(200);
                    ok.fetch_add(3, Ordering::SeqCst);
                }
                let w = s.put(&t, "preferences.shared", json!(format!("from {i}")));
                assert!(w.status == 200 || w.status == 201, "{}", w.text);
                ok.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("client thread");
    }
    for i in 0..50 {
        let r = s.get(&format!("/context/fields/preferences.c{i}"), Some(&user));
        assert_eq!(r.body["value"], format!("v{}", ROUNDS - 1));
        assert_eq!(
            r.body["version"], ROUNDS as u64,
            "every write made a version"
        );
    }
    let shared = s.get("/context/fields/preferences.shared", Some(&user));
    assert_eq!(
        shared.body["version"], 50,
        "no write to the shared field was lost"
    );
    let after = chain(&v);
    // One audit entry per successful request, plus the 51 reads just above.
    assert_eq!(
        after - before,
        ok.load(Ordering::SeqCst) + 51,
        "audit entries vs successful requests"
    );
}

#[test]
fn canaries_never_leave_the_vault() {
    let v = Vault::create();
    let mut s = v.serve(&[]);
    let user = s.unlock(&v);
    let out_of_scope = "CANARY-OUT-OF-SCOPE-7f3a";
    let critical = "CANARY-UNAPPROVED-CRITICAL-91bc";
    let other_category = "CANARY-OTHER-CATEGORY-c2d4";
    let in_scope = "visible-in-scope-value";
    s.put(&user, "identity.full_name", json!(in_scope))
        .expect(201);
    s.put(&user, "identity.passport_number", json!(critical))
        .expect(201);
    s.send(
        "PUT",
        "/context/sensitivity/identity.passport_number",
        Some(&user),
        json!({"tier": "critical"}),
    )
    .expect(200);
    s.put(&user, "identity.notes.private", json!({"k": out_of_scope}))
        .expect(201);
    s.put(&user, "financial.canary", json!(other_category))
        .expect(201);
    let agent = s.consumer_token(&user, "probe", json!({"scope": ["identity.full_name", "identity.passport_number"], "mode": "read-write", "rate_limit": {"reads": 100000, "writes": 100000}}));
    let mut texts = Vec::new();
    let mut hit = |r: crate::serve_support::Resp| texts.push(r.text);
    for path in [
        "/context/fields",
        "/context/context",
        "/context/context?max_sensitivity=critical",
        "/context/fields/identity.full_name",
        "/context/fields/identity.passport_number",
        "/context/fields/identity.notes.private",
        "/context/fields/financial.canary",
        "/context/fields/category/identity",
        "/context/fields/category/financial",
        "/context/tokens/service",
        "/context/consumers",
        "/context/audit",
        "/context/export",
        "/context/approvals",
        "/context/fields/identity.notes.private%00",
    ] {
        hit(s.get(path, Some(&agent)));
    }
    hit(s.put(&agent, "identity.notes.private", json!("overwrite")));
    hit(s.put(&agent, "financial.canary", json!("overwrite")));
    hit(s.delete("/context/fields/financial.canary", Some(&agent)));
    hit(s.send(
        "PUT",
        "/context/sensitivity/identity.passport_number",
        Some(&agent),
        json!({"tier": "public"}),
    ));
    // The pending critical read, polled by the agent: the value is not in the poll.
    let r = s.get("/context/fields/identity.passport_number", Some(&agent));
    assert_eq!(r.status, 202, "{}", r.text);
    hit(s.get(r.location.as_deref().unwrap(), Some(&agent)));
    // The user's own views of the audit (ids and codes only).
    hit(s.get("/context/audit?limit=1000", Some(&user)));
    let all = texts.join("\n");
    assert!(
        all.contains(in_scope),
        "the in-scope value is served (the probe works)"
    );
    for c in [out_of_scope, critical, other_category] {
        assert!(!all.contains(c), "{c} leaked into a response");
    }
    let stderr = s.stderr();
    for c in [out_of_scope, critical, other_category, in_scope] {
        assert!(!stderr.contains(c), "{c} reached the server's output");
        for (path, bytes) in files(&v.dir()) {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(c),
                "{c} is in clear in {path}"
            );
        }
    }
}
