//! Seed 004 §7's limits as a person meets them: the session token is held to the
//! seed's 60 reads and 10 writes a minute, made-up bearer tokens are limited per
//! address, and a 503 never names a file of the vault.

use serde_json::json;

use crate::serve_support::Vault;

#[test]
fn the_session_token_is_held_to_the_seeds_rates_per_minute() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    for n in 0..10 {
        s.put(&u, "preferences.timezone", json!(format!("zone {n}")))
            .expect(if n == 0 { 201 } else { 200 });
    }
    let w = s.put(&u, "preferences.timezone", json!("one too many"));
    w.refused(429, "rate_limited");
    assert!(w.retry_after.is_some(), "{w:?}");
    // A bucket of 60 refilled at one a second: the burst is 60, and a client that
    // keeps reading is stopped within a few more requests.
    let mut served = 0;
    let r = loop {
        let r = s.get("/context/fields/preferences.timezone", Some(&u));
        if r.status != 200 || served == 200 {
            break r;
        }
        served += 1;
    };
    assert!((60..70).contains(&served), "{served} reads served");
    r.refused(429, "rate_limited");
    let wait: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // Locking is never limited: the user can always close the vault.
    s.send("POST", "/context/lock", Some(&u), json!({}))
        .expect(200);
}

#[test]
fn the_session_rates_are_set_with_a_flag() {
    let v = Vault::create();
    let s = v.serve(&["--session-rate-limit", "2/1"]);
    let u = s.unlock(&v);
    s.put(&u, "preferences.timezone", json!("UTC")).expect(201);
    s.put(&u, "preferences.timezone", json!("CET"))
        .refused(429, "rate_limited");
}

#[test]
fn made_up_bearer_tokens_are_limited_per_address() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    let fake = |n: usize| format!("ctx_{n:064x}");
    for n in 0..10 {
        s.get("/context/fields", Some(&fake(n)))
            .refused(401, "unauthenticated");
    }
    // The eleventh guess in the minute is refused unchecked, on every route.
    let r = s.get("/context/fields", Some(&fake(10)));
    r.refused(429, "rate_limited");
    assert!(r.retry_after.is_some(), "{r:?}");
    s.put(&fake(11), "identity.full_name", json!("x"))
        .refused(429, "rate_limited");
    s.get("/context/fields/identity.full_name", Some(&fake(12)))
        .refused(429, "rate_limited");
    // A real token from the same address still works: guesses cannot lock the user out.
    s.get("/context/fields", Some(&u)).expect(200);
}

#[test]
fn a_503_never_names_a_file_of_the_vault() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    // A plain file where the field's folder must go: the write cannot happen.
    std::fs::write(v.dir().join("personal/addresses/current"), "in the way").unwrap();
    let r = s.put(&u, "addresses.current.city", json!("Seattle"));
    r.refused(503, "unavailable");
    let root = v.dir().canonicalize().unwrap();
    for needle in [
        root.to_str().unwrap(),
        v.repo.path().to_str().unwrap(),
        "personal/addresses",
        "/tmp",
    ] {
        assert!(!r.text.contains(needle), "{needle} in {}", r.text);
    }
    assert!(
        r.body["error"].as_str().unwrap().contains("server"),
        "{}",
        r.text
    );
}
