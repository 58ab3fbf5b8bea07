//! `ctx serve`: seed 004's consumer journey over real HTTP — register → token →
//! fields → context → approval → write → audit → revoke → lock — and every error
//! status the protocol defines.

use serde_json::json;

use crate::serve_support::{Vault, CONSUMER_SECRET};
use crate::support::ctx_in;

#[test]
fn the_consumer_journey() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let status = s.get("/context/status", None);
    status.expect(200);
    assert_eq!(status.body["locked"], true);
    assert_eq!(status.body["categories"].as_array().unwrap().len(), 10);

    let user = s.unlock(&v);
    assert!(user.starts_with("ctx_") && user.len() == 4 + 64);
    s.put(&user, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(&user, "identity.dob", json!("1990-06-15"))
        .expect(201);
    s.put(&user, "identity.ssn", json!("123-45-6789"))
        .expect(201);
    s.put(&user, "addresses.current.city", json!("Seattle"))
        .expect(201);
    s.put(&user, "financial.income", json!("100k-150k"))
        .expect(201);

    // Register, then the consumer asks for its own token with its credentials.
    let r = s.send(
        "POST",
        "/context/consumers/register",
        Some(&user),
        json!({"name": "tax-prep-agent", "secret": CONSUMER_SECRET}),
    );
    r.expect(201);
    assert_eq!(r.body["name"], "tax-prep-agent");
    s.send(
        "POST",
        "/context/consumers/register",
        Some(&user),
        json!({"name": "tax-prep-agent", "secret": CONSUMER_SECRET}),
    )
    .refused(409, "conflict");
    s.send("POST", "/context/tokens/service", None, json!({"consumer": "tax-prep-agent", "secret": "wrong secret, long enough", "scope": "*", "ttl": "1h"}))
        .refused(401, "unauthenticated");
    let r = s.send(
        "POST",
        "/context/tokens/service",
        None,
        json!({"consumer": "tax-prep-agent", "secret": CONSUMER_SECRET, "scope": "identity.*, addresses.current", "ttl": "30m", "mode": "read-write", "purpose": "Fill Australian visa application"}),
    );
    r.expect(201);
    let agent = r.body["token"].as_str().unwrap().to_string();
    assert!(agent.starts_with("ctxs_") && agent.len() == 5 + 64);
    assert!(r.body["expires_at"].is_string());

    // Discovery: metadata in scope only, never values.
    let r = s.get("/context/fields", Some(&agent));
    r.expect(200);
    assert_eq!(r.body["context_version"], "0.1.0");
    let ids: Vec<&str> = r.body["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "addresses.current.city",
            "identity.dob",
            "identity.full_name",
            "identity.ssn"
        ]
    );
    assert!(!r.text.contains("Seattle") && !r.text.contains("1990"));

    // Context: standard fields now; asking for everything waits for approval.
    let r = s.get("/context/context?max_sensitivity=standard", Some(&agent));
    r.expect(200);
    assert_eq!(
        r.body["categories"]["identity"][0]["value"],
        "Cool Cucumber"
    );
    assert_eq!(
        r.body["categories"]["addresses"][0]["field_name"],
        "current.city"
    );
    assert!(
        r.body["categories"].get("financial").is_none(),
        "out of scope fields are absent"
    );
    let r = s.get("/context/context", Some(&agent));
    r.expect(202);
    assert_eq!(r.body["fields"], json!(["identity.dob", "identity.ssn"]));
    assert!(!r.text.contains("1990"));

    // A sensitive read: 202 with a poll location, approved from another terminal.
    let r = s.get("/context/fields/identity.dob", Some(&agent));
    r.expect(202);
    let poll = r.location.clone().expect("Location");
    assert_eq!(poll, r.body["poll"].as_str().unwrap());
    let id = r.body["approval"].as_str().unwrap().to_string();
    let p = s.get(&poll, Some(&agent));
    p.expect(200);
    assert_eq!(p.body["status"], "pending");
    let list = ctx_in(&v.repo).args(["-C", "v", "approvals", "list"]).run();
    list.assert_ok()
        .assert_stdout_contains(&id)
        .assert_stdout_contains("\"Fill Australian visa application\"");
    ctx_in(&v.repo)
        .args(["-C", "v", "approvals", "approve", &id])
        .run()
        .assert_ok();
    assert_eq!(s.get(&poll, Some(&agent)).body["status"], "approved");
    let r = s.get("/context/fields/identity.dob", Some(&agent));
    r.expect(200);
    assert_eq!(r.body["value"], "1990-06-15");
    // Single use: the same read asks again.
    s.get("/context/fields/identity.dob", Some(&agent))
        .expect(202);

    // A critical read needs the second factor; a denial is 403 approval_denied.
    let r = s.get("/context/fields/identity.ssn", Some(&agent));
    r.expect(202);
    let ssn = r.body["approval"].as_str().unwrap().to_string();
    s.send(
        "POST",
        &format!("/context/approvals/{ssn}"),
        Some(&user),
        json!({"decision": "approve"}),
    )
    .refused(400, "invalid_request");
    s.send(
        "POST",
        &format!("/context/approvals/{ssn}"),
        Some(&user),
        json!({"decision": "approve", "confirm": "identity.dob"}),
    )
    .refused(400, "invalid_request");
    s.send(
        "POST",
        &format!("/context/approvals/{ssn}"),
        Some(&agent),
        json!({"decision": "approve", "confirm": "identity.ssn"}),
    )
    .refused(403, "scope_exceeded");
    s.send(
        "POST",
        &format!("/context/approvals/{ssn}"),
        Some(&user),
        json!({"decision": "deny"}),
    )
    .expect(200);
    s.get("/context/fields/identity.ssn", Some(&agent))
        .refused(403, "approval_denied");
    s.send(
        "POST",
        &format!("/context/approvals/{ssn}"),
        Some(&user),
        json!({"decision": "approve", "confirm": "identity.ssn"}),
    )
    .refused(409, "conflict");

    // Writes: provenance, history, user-only-write, the warning to other readers.
    let w = s.put(&agent, "identity.full_name", json!("Cool Q. Cucumber"));
    w.expect(200);
    assert_eq!(
        (w.body["version"].as_u64(), w.body["written_by"].as_str()),
        (Some(2), Some("tax-prep-agent"))
    );
    s.put(&agent, "identity.ssn", json!("000-00-0000"))
        .refused(403, "user_only_write");
    s.put(&agent, "identity.tax_id", json!("000"))
        .refused(403, "user_only_write");
    s.put(&agent, "medical.allergies", json!("none"))
        .refused(403, "scope_exceeded");
    let r = s.get("/context/fields/identity.full_name", Some(&user));
    assert_eq!(r.body["value"], "Cool Q. Cucumber");
    assert!(
        r.body["warning"]
            .as_str()
            .unwrap()
            .contains("tax-prep-agent"),
        "{}",
        r.text
    );
    // A sensitive write waits for approval and commits exactly what was approved.
    let r = s.put(&agent, "identity.dob", json!("1990-06-16"));
    r.expect(202);
    let wid = r.body["approval"].as_str().unwrap().to_string();
    let shown = s.get("/context/approvals", Some(&user));
    assert!(
        shown.text.contains("1990-06-16"),
        "the approver sees the proposed value: {}",
        shown.text
    );
    s.send(
        "POST",
        &format!("/context/approvals/{wid}"),
        Some(&user),
        json!({"decision": "approve"}),
    )
    .expect(200);
    s.put(&agent, "identity.dob", json!("1990-06-17"))
        .expect(202);
    s.put(&agent, "identity.dob", json!("1990-06-16"))
        .expect(200);
    // An agent's delete always waits for the user.
    s.delete("/context/fields/identity.full_name", Some(&agent))
        .expect(202);
    // The user's sensitivity override; agents cannot.
    s.send(
        "PUT",
        "/context/sensitivity/identity.full_name",
        Some(&agent),
        json!({"tier": "public"}),
    )
    .refused(403, "user_only_write");
    let r = s.send(
        "PUT",
        "/context/sensitivity/identity.full_name",
        Some(&user),
        json!({"tier": "public"}),
    );
    r.expect(200);
    assert_eq!(r.body["sensitivity"], "public");

    // Audit: every grant, read, write, denial and approval, never a value.
    let r = s.get("/context/audit?limit=100", Some(&user));
    r.expect(200);
    let lines = r.body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for want in [
        "UNLOCK",
        "REGISTER",
        "GRANT",
        "READ",
        "WRITE",
        "DENY",
        "APPROVE",
        "SENSITIVITY",
    ] {
        assert!(lines.contains(want), "{want} missing:\n{lines}");
    }
    for secret in ["Cucumber", "1990-06", "123-45-6789", CONSUMER_SECRET] {
        assert!(!r.text.contains(secret), "audit leaked {secret}");
    }
    s.get("/context/audit?limit=0", Some(&user))
        .refused(400, "invalid_request");
    s.get("/context/audit", Some(&agent))
        .refused(403, "scope_exceeded");

    // Tokens: list truncated, revoke by prefix.
    let r = s.get("/context/tokens/service", Some(&user));
    r.expect(200);
    assert!(!r.text.contains(&agent), "a listed token is truncated");
    let prefix = r.body["tokens"][0]["prefix"].as_str().unwrap().to_string();
    assert!(agent.starts_with(&prefix));
    s.delete("/context/tokens/service/ctxs_zzzz", Some(&user))
        .refused(404, "not_found");
    s.delete(&format!("/context/tokens/service/{prefix}"), Some(&user))
        .expect(200);
    s.get("/context/fields", Some(&agent))
        .refused(401, "unauthenticated");

    // Deregistering a consumer revokes its tokens.
    let other = s.consumer_token(&user, "form-filler", json!({"scope": "addresses.*"}));
    s.get("/context/fields", Some(&other)).expect(200);
    let r = s.delete("/context/consumers/form-filler", Some(&user));
    r.expect(200);
    assert_eq!(r.body["revoked_tokens"], 1);
    s.get("/context/fields", Some(&other))
        .refused(401, "unauthenticated");
    s.delete("/context/consumers/form-filler", Some(&user))
        .refused(404, "not_found");

    // Lock: keys gone, every field endpoint answers 403 vault_locked.
    s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": "x", "secret_key": v.secret_key()}),
    )
    .refused(409, "conflict");
    s.raw("POST", "/context/lock", Some(&user), None, None)
        .expect(200);
    for path in [
        "/context/fields",
        "/context/fields/identity.dob",
        "/context/context",
        "/context/audit",
    ] {
        s.get(path, Some(&user)).refused(403, "vault_locked");
    }
    assert_eq!(s.get("/context/status", None).body["locked"], true);
    // A new unlock: the old session is gone, stored tokens and consumers come back.
    let user2 = s.unlock(&v);
    s.get("/context/fields", Some(&user))
        .refused(401, "unauthenticated");
    let r = s.get("/context/consumers", Some(&user2));
    assert_eq!(r.body["consumers"][0]["name"], "tax-prep-agent");
    let r = s.get("/context/fields/identity.dob", Some(&user2));
    assert_eq!(
        (r.body["value"].as_str(), r.body["version"].as_u64()),
        (Some("1990-06-16"), Some(2))
    );
}

#[test]
fn every_error_status() {
    let v = Vault::create();
    let s = v.serve(&[]);
    // Locked: 403 vault_locked; status and unlock still answer.
    s.get("/context/fields", None).refused(403, "vault_locked");
    s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": "wrong", "secret_key": v.secret_key()}),
    )
    .refused(401, "unauthenticated");
    s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": "x", "secret_key": "ctxsk-0"}),
    )
    .refused(400, "invalid_request");
    s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"secret_key": v.secret_key()}),
    )
    .refused(400, "invalid_request");
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(&user, "financial.bank_routing", json!("021000021"))
        .expect(201);

    // 400: malformed JSON, wrong shapes, bad ids, bad values.
    s.raw(
        "PUT",
        "/context/fields/identity.x",
        Some(&user),
        Some("application/json"),
        Some(b"{\"value\": ".to_vec()),
    )
    .refused(400, "invalid_request");
    s.raw(
        "PUT",
        "/context/fields/identity.x",
        Some(&user),
        Some("application/json"),
        Some(b"[1]".to_vec()),
    )
    .refused(400, "invalid_request");
    s.put(&user, "identity.x", json!(5))
        .refused(400, "invalid_request");
    s.put(&user, "Identity.X", json!("v"))
        .refused(400, "invalid_request");
    s.get("/context/fields/nodot", Some(&user))
        .refused(400, "invalid_request");
    s.send(
        "PUT",
        "/context/fields/identity.x",
        Some(&user),
        json!({"value": "v", "sensitivity": "secret"}),
    )
    .refused(400, "invalid_request");
    s.get("/context/context?max_sensitivity=nope", Some(&user))
        .refused(400, "invalid_request");
    // 415: anything but JSON; 413: over the body limit.
    s.raw(
        "PUT",
        "/context/fields/identity.x",
        Some(&user),
        Some("text/plain"),
        Some(b"{\"value\":\"v\"}".to_vec()),
    )
    .refused(415, "unsupported_media_type");
    s.raw(
        "POST",
        "/context/consumers/register",
        Some(&user),
        None,
        Some(b"{}".to_vec()),
    )
    .refused(415, "unsupported_media_type");
    let big = format!("{{\"value\": \"{}\"}}", "x".repeat(300 * 1024));
    s.raw(
        "PUT",
        "/context/fields/identity.x",
        Some(&user),
        Some("application/json"),
        Some(big.into_bytes()),
    )
    .refused(413, "payload_too_large");
    // 401: no token, unknown token.
    s.get("/context/fields", None)
        .refused(401, "unauthenticated");
    s.get("/context/fields", Some("ctxs_0000"))
        .refused(401, "unauthenticated");
    // 404: unknown endpoints and fields; 405 on a known path.
    s.get("/context/nothing", Some(&user))
        .refused(404, "not_found");
    s.get("/context/fields/identity.none", Some(&user))
        .refused(404, "not_found");
    // A category the vault lacks is the seed's convention, not an error: the
    // user's write adds it (tests/cli/vault_categories.rs); a bad name is refused.
    s.put(&user, "no-such-category!.x", json!("v"))
        .refused(400, "invalid_request");

    // mode_denied both ways.
    let reader = s.consumer_token(&user, "reader", json!({"scope": "*", "mode": "read"}));
    let writer = s.consumer_token(&user, "writer", json!({"scope": "*", "mode": "write"}));
    s.put(&reader, "identity.full_name", json!("x"))
        .refused(403, "mode_denied");
    s.get("/context/fields/identity.full_name", Some(&writer))
        .refused(403, "mode_denied");
    s.get("/context/context", Some(&writer))
        .refused(403, "mode_denied");
    // Agents never reach user endpoints.
    s.get("/context/consumers", Some(&reader))
        .refused(403, "scope_exceeded");
    s.get("/context/export", Some(&reader))
        .refused(403, "scope_exceeded");

    // 429: reads per token, configurable at creation.
    let slow = s.consumer_token(
        &user,
        "slow",
        json!({"scope": "identity.*", "rate_limit": {"reads": 3}}),
    );
    for _ in 0..3 {
        s.get("/context/fields/identity.full_name", Some(&slow))
            .expect(200);
    }
    let r = s.get("/context/fields/identity.full_name", Some(&slow));
    r.refused(429, "rate_limited");
    assert!(r.retry_after.is_some());
    // Writes: 10 a minute by default.
    let w = s.consumer_token(
        &user,
        "scribe",
        json!({"scope": "preferences.*", "mode": "write"}),
    );
    let mut codes = Vec::new();
    for n in 0..11 {
        codes.push(s.put(&w, "preferences.note", json!(format!("n{n}"))).status);
    }
    assert_eq!(codes.iter().filter(|c| **c == 429).count(), 1, "{codes:?}");

    // Expired and single-use tokens.
    let brief = s.consumer_token(&user, "brief", json!({"scope": "identity.*", "ttl": "1s"}));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let r = s.get("/context/fields", Some(&brief));
    r.refused(401, "unauthenticated");
    assert!(r.text.contains("expired"));
    let once = s.consumer_token(
        &user,
        "once",
        json!({"scope": "identity.*", "usage": "single"}),
    );
    s.get("/context/fields/identity.full_name", Some(&once))
        .expect(200);
    s.get("/context/fields/identity.full_name", Some(&once))
        .refused(401, "unauthenticated");
    s.send(
        "POST",
        "/context/tokens/service",
        None,
        json!({"consumer": "once", "secret": CONSUMER_SECRET, "scope": "*", "ttl": "forever"}),
    )
    .refused(400, "invalid_request");
    let audit = s.get("/context/audit?limit=200", Some(&user));
    assert!(
        audit.body["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("EXPIRE")),
        "{}",
        audit.text
    );

    // 429 on unlock: 5 attempts a minute.
    s.raw("POST", "/context/lock", Some(&user), None, None)
        .expect(200);
    let codes: Vec<u16> = (0..5)
        .map(|_| {
            s.send(
                "POST",
                "/context/unlock",
                None,
                json!({"password": "wrong", "secret_key": v.secret_key()}),
            )
            .status
        })
        .collect();
    assert!(codes.contains(&429), "{codes:?}");
    s.send(
        "POST",
        "/context/unlock",
        None,
        json!({"password": "wrong", "secret_key": v.secret_key()}),
    )
    .refused(429, "rate_limited");
}

#[test]
fn non_loopback_needs_allow_remote_and_idle_locks() {
    let v = Vault::create();
    ctx_in(&v.repo)
        .args(["-C", "v", "serve", "--listen", "0.0.0.0:0"])
        .run()
        .assert_code(2)
        .assert_stderr_contains("--allow-remote");
    let s = v.serve(&["--idle-timeout", "2s"]);
    let user = s.unlock(&v);
    s.get("/context/fields", Some(&user)).expect(200);
    std::thread::sleep(std::time::Duration::from_millis(3200));
    s.get("/context/fields", Some(&user))
        .refused(403, "vault_locked");
    let r = ctx_in(&v.repo)
        .args(["-C", "v", "serve", "--explain-sandbox"])
        .run();
    r.assert_ok()
        .assert_stdout_contains("core dumps")
        .assert_stdout_contains("filesystem");
}
