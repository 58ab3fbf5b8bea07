//! Malformed, expired, tampered, replayed and misaddressed Context Layer
//! objects: each gets its profile error code and a clear message, and nothing
//! is acted on.

use serde_json::{json, Value};

use crate::exchange::{at, ClRepo, AT};

fn write_json(r: &ClRepo, name: &str, v: &Value) -> String {
    std::fs::write(r.file(name), serde_json::to_string_pretty(v).unwrap()).unwrap();
    r.file(name).to_str().unwrap().to_string()
}

#[test]
fn requests_are_checked_in_order_with_codes() {
    let r = ClRepo::init();
    let good = r.request("b.req.json", &[]);
    let check = |v: &Value, code: &str| {
        let p = write_json(&r, "bad.req.json", v);
        let out = r.run(&[
            "request",
            "validate",
            &p,
            "--at",
            &at(1),
            "--format",
            "json",
        ]);
        assert_eq!(out.code, 1, "{code}: {}", out.stdout);
        let codes: Vec<String> = out.json()["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["code"].as_str().unwrap().to_string())
            .collect();
        assert!(
            codes.iter().any(|c| c == code),
            "expected {code}, got {codes:?}"
        );
    };
    let mut v = good.clone();
    v["expires_at"] = json!("2030-01-01T11:00:00Z");
    check(&v, "REQUEST_EXPIRED");
    let mut v = good.clone();
    v["created_at"] = json!("2030-01-01T13:00:00Z");
    check(&v, "REQUEST_CREATED_IN_FUTURE");
    let mut v = good.clone();
    v["purpose_code"] = json!("draft.anything");
    check(&v, "PURPOSE_CODE_INVALID");
    let mut v = good.clone();
    v["receipt_requirement"] = json!({"level": "none", "required": true});
    check(&v, "RECEIPT_REQUIREMENT_INVALID");
    let mut v = good.clone();
    v["requester"]["principal"] = json!("urn:ctx:agent:nobody");
    check(&v, "REQUESTER_UNKNOWN");
    let mut v = good.clone();
    v["extra"] = json!(1);
    check(&v, "REQUEST_SCHEMA_INVALID");
    let mut v = good.clone();
    v["expires_at"] = json!("2030-01-01T12:30:00+00:60");
    check(&v, "REQUEST_SCHEMA_INVALID");
    // A wildcard is only expressible in 0.1; it is refused without a policy grant.
    let mut v = good.clone();
    v["spec_version"] = json!("context-layer/0.1-draft");
    v["selectors"] = json!([{"predicate": "*"}]);
    check(&v, "SELECTOR_WILDCARD_NOT_ALLOWED");
    let ok = r.run(&[
        "request",
        "validate",
        r.file("b.req.json").to_str().unwrap(),
        "--at",
        &at(1),
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stdout);
}

#[test]
fn malformed_requests_are_never_evaluated() {
    let r = ClRepo::init();
    std::fs::write(
        r.file("dup.json"),
        r#"{"type": "context_request", "type": "x"}"#,
    )
    .unwrap();
    let d = r.run(&[
        "request",
        "evaluate",
        r.file("dup.json").to_str().unwrap(),
        "--at",
        AT,
    ]);
    assert_eq!(d.code, 1);
    assert!(d.stderr.contains("duplicate key"), "{}", d.stderr);
    std::fs::write(
        r.file("half.json"),
        r#"{"spec_version": "context-layer/0.2-draft", "type": "context_request"}"#,
    )
    .unwrap();
    let h = r.run(&[
        "request",
        "evaluate",
        r.file("half.json").to_str().unwrap(),
        "--at",
        AT,
        "--format",
        "json",
    ]);
    assert_eq!(h.code, 1);
    assert_eq!(h.json()["code"], "INVALID_REQUEST");
    assert_eq!(h.json()["type"], "error");
    assert!(
        !r.file(".ctx/exchange/decisions").exists(),
        "a decision was stored for invalid input"
    );
    let v = r.run(&["request", "evaluate", r.file("nope.json").to_str().unwrap()]);
    assert_eq!(v.code, 3);
}

#[test]
fn tampered_forged_and_malformed_envelopes_get_their_codes() {
    let r = ClRepo::init();
    let env = r.bundle("e", &[]);
    let good = r.envelope(&env);
    let open = |v: &Value| {
        let p = write_json(&r, "bad.env.json", v);
        r.run(&[
            "exchange",
            "open",
            &p,
            "--as",
            "support-agent",
            "--at",
            &at(3),
            "--format",
            "json",
        ])
    };
    let expect = |v: &Value, code: &str| {
        let out = open(v);
        assert_eq!(out.code, 1, "{code}: {}", out.stderr);
        assert_eq!(out.json()["code"], code, "{}", out.stderr);
    };
    let mut t = good.clone();
    t["bundle"]["context"][0]["claim"] = json!("changed");
    expect(&t, "RECORD_INTEGRITY_MISMATCH");
    let mut t = good.clone();
    t["authentication"]["sig"] = json!("A".repeat(86));
    expect(&t, "BUNDLE_AUTHENTICATION_FAILED");
    for sig in [
        json!(""),
        json!(null),
        json!(42),
        json!("A".repeat(85)),
        json!("=".repeat(86)),
    ] {
        let mut t = good.clone();
        t["authentication"]["sig"] = sig;
        expect(&t, "INVALID_BUNDLE_AUTHENTICATION");
    }
    let mut t = good.clone();
    t["authentication"] =
        json!({"algorithm": "hmac-sha256", "key_id": "urn:cl:key:t-bundle", "mac": "A".repeat(43)});
    expect(&t, "INVALID_BUNDLE_AUTHENTICATION");
    let mut t = good.clone();
    t["note"] = json!("extra");
    expect(&t, "INVALID_AUTHENTICATED_BUNDLE");
    let mut t = good.clone();
    t["authentication"]["kid"] = json!("urn:cl:key:someone-else");
    expect(&t, "UNTRUSTED_BUNDLE_AUTHORITY");
    std::fs::write(r.file("junk.json"), "{not json").unwrap();
    let j = r.run(&[
        "exchange",
        "open",
        r.file("junk.json").to_str().unwrap(),
        "--as",
        "support-agent",
    ]);
    assert!(
        j.stderr.contains("INVALID_JSON") || j.stderr.contains("INVALID_BUNDLE_JSON"),
        "{}",
        j.stderr
    );
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(2_200_000));
    std::fs::write(r.file("big.json"), big).unwrap();
    let b = r.run(&[
        "exchange",
        "open",
        r.file("big.json").to_str().unwrap(),
        "--as",
        "support-agent",
    ]);
    assert!(b.stderr.contains("BUNDLE_TOO_LARGE"), "{}", b.stderr);
    // A refinalized bundle carrying raw-vault material is refused before its signature is checked.
    let mut t = good.clone();
    let mut unsigned = t["bundle"].as_object().unwrap().clone();
    unsigned.remove("id");
    unsigned.remove("integrity");
    unsigned.insert("raw_vault_object".into(), json!({"ref": "vault://x"}));
    t["bundle"] = ctx_core::exchange::canon::finalize(unsigned, "urn:cl:bundle:");
    expect(&t, "BUNDLE_CONTAINS_FORBIDDEN_MATERIAL");
    // Another trusted key (given explicitly) does not open this bundle.
    let p = r.file(&env);
    let other = r.run(&[
        "exchange",
        "open",
        p.to_str().unwrap(),
        "--as",
        "support-agent",
        "--at",
        &at(3),
        "--trust",
        &format!("urn:cl:key:t-bundle={}", r.anchor_key),
    ]);
    assert!(
        other.stderr.contains("BUNDLE_AUTHENTICATION_FAILED"),
        "{}",
        other.stderr
    );
    // None of the failures consumed the bundle: the recipient still opens it once.
    assert_eq!(r.open(&env, "support-agent", 4).code, 0);
    assert!(r
        .open(&env, "support-agent", 5)
        .stderr
        .contains("BUNDLE_REPLAY"));
}
