use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;

fn bundle() -> Value {
    let mut b = json!({
        "opencontext": "1.0",
        "bundle_id": "",
        "generated_at": "2026-08-09T12:00:00Z",
        "namespace": "acme",
        "consumer": {"type": "agent", "id": "support-agent", "roles": ["support"]},
        "task": "refund for a customer",
        "as_of": "2026-08-09T12:00:00Z",
        "objects": [{"id": "mission", "type": "mission", "content": "Make refunds boring.\n\n- one\n- two\n", "lifecycle": "current"}],
        "excluded": [{"id": "policies.internal", "reason": "denied"}],
        "warnings": [],
        "provenance": [{"id": "mission", "canonical_source": true}],
        "permissions": ["read"],
        "stats": {"considered": 2, "included": 1, "excluded": 1, "redacted": 0, "characters": 33}
    });
    let d = crate::bundle::digest(&b);
    b["bundle_id"] = json!(format!("ocb_{}", &d[7..31]));
    b["digest"] = json!(d);
    b
}

fn key() -> SigningKeyPair {
    SigningKeyPair::from_seed(&[42; 32])
}

fn trusted() -> BTreeMap<String, PublicKey> {
    BTreeMap::from([("release-bot".to_string(), key().public_key())])
}

fn receipt(b: &Value, supersedes: Option<String>) -> Value {
    let request = json!({"consumer": b["consumer"], "task": b["task"]});
    let draft = Draft {
        operation: "context.bundle",
        bundle: b,
        started_at: "2026-08-09T12:00:00Z".into(),
        completed_at: "2026-08-09T12:00:01Z".into(),
        manifest_bytes: b"opencontext: \"1.0\"\nid: acme\n",
        request: &request,
        rendering: Some(("json", b"{}")),
        supersedes,
    };
    sign(&draft, "release-bot", &key()).unwrap()
}

#[test]
fn receipt_verifies_and_links_to_its_bundle() {
    let b = bundle();
    let r = receipt(&b, None);
    let v = verify(&r, &trusted()).unwrap();
    assert_eq!(v.bundle_ref, b["bundle_id"].as_str().unwrap());
    assert_eq!(v.output_digest, b["digest"].as_str().unwrap());
    assert!(v.id.starts_with("urn:ctx:receipt:"));
    assert_eq!(check_bundle(&b).unwrap(), v.output_digest);
    check_link(&r, &b).unwrap();
    assert_eq!(same_rendering(&r, b"{}"), Some(true));
    assert_eq!(same_rendering(&r, b"{ }"), Some(false));
}

#[test]
fn receipt_holds_no_content_or_task_text() {
    let b = bundle();
    let text = to_pretty(&receipt(&b, None));
    for secret in [
        "Make refunds boring",
        "refund for a customer",
        "policies.internal",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    for field in [
        "operation",
        "actor",
        "consumer",
        "bundle_ref",
        "started_at",
        "completed_at",
        "outcome",
        "policy_snapshot",
        "input_digest",
        "output_digest",
        "user_summary",
    ] {
        assert!(text.contains(&format!("\"{field}\"")), "{field} missing");
    }
}

#[test]
fn untrusted_key_and_wrong_bundle_are_refused() {
    let b = bundle();
    let r = receipt(&b, None);
    let err = verify(&r, &BTreeMap::new()).unwrap_err();
    assert_eq!(err.field, "signature.key_id");
    let other = BTreeMap::from([(
        "release-bot".to_string(),
        SigningKeyPair::from_seed(&[1; 32]).public_key(),
    )]);
    assert_eq!(verify(&r, &other).unwrap_err().field, "signature");
    let mut b2 = b.clone();
    b2["generated_at"] = json!("2026-08-09T12:00:02Z");
    assert_eq!(
        check_link(&r, &b2).unwrap_err().field,
        "bundle generated_at"
    );
}

/// Flip each bit of every byte of the committed receipt file: every
/// variant must fail to parse or fail verification.
#[test]
fn every_single_bit_flip_of_a_receipt_is_detected() {
    let text = to_pretty(&receipt(&bundle(), None)).into_bytes();
    let t = trusted();
    let mut still_json = 0;
    for i in 0..text.len() {
        for bit in 0..8 {
            let mut m = text.clone();
            m[i] ^= 1 << bit;
            if let Ok(v) = canonical::parse_strict(&m) {
                still_json += 1;
                assert!(
                    verify(&v, &t).is_err(),
                    "flip of bit {bit} at byte {i} went unnoticed"
                );
            }
        }
    }
    // Most flips land inside strings and keep the file valid JSON: the
    // signature, not the parser, must be what catches them.
    assert!(
        still_json > text.len() * 3,
        "{still_json} of {}",
        text.len() * 8
    );
}

/// The same for a bundle file checked against its receipt: any flip that
/// still parses changes a value, and every value is covered by the digest
/// or pinned by the receipt.
#[test]
fn every_single_bit_flip_of_a_bundle_is_detected() {
    let b = bundle();
    let r = receipt(&b, None);
    let text = crate::bundle::render::json(&b).into_bytes();
    let mut still_json = 0;
    for i in 0..text.len() {
        for bit in 0..8 {
            let mut m = text.clone();
            m[i] ^= 1 << bit;
            if let Ok(v) = canonical::parse_strict(&m) {
                still_json += 1;
                let ok = check_bundle(&v).is_ok() && check_link(&r, &v).is_ok();
                assert!(!ok, "flip of bit {bit} at byte {i} went unnoticed");
            }
        }
    }
    assert!(
        still_json > text.len() * 3,
        "{still_json} of {}",
        text.len() * 8
    );
}

#[test]
fn store_appends_without_rewriting_and_refuses_forks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("receipts"));
    let b = bundle();
    let r1 = receipt(&b, None);
    let first = store.append(&r1).unwrap();
    let first_text = std::fs::read_to_string(&first).unwrap();
    assert!(first.ends_with(format!("{}.json", b["bundle_id"].as_str().unwrap())));
    let id1 = r1["id"].as_str().unwrap().to_string();
    let r2 = receipt(&b, Some(id1.clone()));
    let second = store.append(&r2).unwrap();
    assert_ne!(first, second);
    assert_eq!(std::fs::read_to_string(&first).unwrap(), first_text);
    let all = store.for_bundle(b["bundle_id"].as_str().unwrap()).unwrap();
    assert_eq!(all.len(), 2);
    let by = store::supersessions(&all).unwrap();
    assert_eq!(by.get(&id1), r2["id"].as_str().map(str::to_string).as_ref());
    // A second correction of the same receipt would fork the chain.
    let mut later = b.clone();
    later["generated_at"] = json!("2026-08-09T13:00:00Z");
    let fork = receipt(&later, Some(id1.clone()));
    assert_ne!(fork["id"], r2["id"]);
    assert!(store
        .append(&fork)
        .unwrap_err()
        .to_string()
        .contains("already corrected"));
    assert!(store
        .append(&receipt(&b, Some("urn:ctx:receipt:00".into())))
        .unwrap_err()
        .to_string()
        .contains("no such receipt"));
    let mut forked = all.clone();
    forked.push((dir.path().join("x.json"), fork));
    assert!(store::supersessions(&forked)
        .unwrap_err()
        .to_string()
        .contains("superseded twice"));
}
