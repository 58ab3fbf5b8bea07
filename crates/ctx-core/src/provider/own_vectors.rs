//! Our own vector set in `fixtures/provider-vectors/`, signed with a
//! deterministic test key: the reference cases replayed on our fixtures
//! plus extra cases (boundaries, scopes, duplicate keys, stateful retries).
//! `vectors.json` is self-describing data, so the committed set runs
//! without this generator and without the shared reference folder.
//!
//! Regenerate after an intended change:
//! `cargo test --lib provider::own_vectors::write_own_vectors -- --ignored`
use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::sign::{attach_signature, sorted};
use super::vectors::{
    accepted, b64_decode, binding_of, bytes, check_polarity, reference_case, rejected, run, time,
    Expect, Fixtures, Step, Vector,
};
use super::verify::{idempotency_key, rfc3339};
use super::{
    sign_envelope, Acceptance, Binding, Content, EnvelopeInput, ProviderRef, ReceiptRef,
    Registration, WithholdReason,
};
use crate::canonical::{parse_strict, sha256_hex};
use crate::signing::{encode_base64, SigningKeyPair};

const KEY_ID: &str = "ctx-fixture-key-1";
const REFERENCE_IDS: [&str; 23] = [
    "signed-inject-unicode-crlf",
    "signed-withhold-no-context",
    "exact-idempotent-retry",
    "untrusted-provider",
    "wrong-run-binding",
    "wrong-turn-binding",
    "wrong-session-binding",
    "wrong-agent-binding",
    "wrong-user-binding",
    "wrong-workspace-binding",
    "expired",
    "future-created",
    "excessive-lifetime",
    "context-digest-mismatch",
    "context-length-mismatch",
    "invalid-base64",
    "signature-tamper",
    "idempotency-tamper",
    "unknown-field",
    "inject-with-reason",
    "withhold-with-context",
    "second-result-same-turn",
    "nonce-replay-other-turn",
];

/// Deterministic test key: derived from a public string, so it protects
/// nothing and must never be trusted outside these tests.
fn own_key() -> SigningKeyPair {
    use sha2::Digest;
    let seed: [u8; 32] =
        sha2::Sha256::digest(b"ctx provider-vectors fixture key v1; never trust").into();
    SigningKeyPair::from_seed(&seed)
}

fn provider(instance: &str) -> ProviderRef {
    ProviderRef {
        id: "ctx-fixture-provider".into(),
        version: "0.1.0".into(),
        instance_id: instance.into(),
    }
}

fn binding(n: u32) -> Binding {
    Binding {
        run_id: format!("run-ctx-{n:03}"),
        turn_id: format!("turn-ctx-{n:03}"),
        session_id: "session-ctx-001".into(),
        agent_id: "agent-ctx".into(),
        user_id: "user-opaque-ctx-001".into(),
        workspace_id: "workspace-ctx".into(),
    }
}

fn created() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-09-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn input(binding: Binding, content: Content, nonce: &str) -> EnvelopeInput {
    EnvelopeInput {
        provider: provider("ctx-fixture-instance"),
        binding,
        content,
        receipt: ReceiptRef {
            id: "urn:cl:receipt:ctx-fixture-001".into(),
            contract_id: "context-layer/0.1-draft#receipt".into(),
            sha256: sha256_hex(b"ctx fixture receipt 001"),
        },
        source_refs: vec!["opaque:ctx:claim-001".into(), "opaque:ctx:claim-002".into()],
        created_at: created(),
        lifetime_secs: 120,
        nonce: Some(nonce.into()),
    }
}

const INJECT_TEXT: &str =
    "# Context bundle \u{1f9e0}\r\n- CRLF kept\r\n- cafe\u{301} stays decomposed\n";
const NONCE_A: &str = "Y3R4LWZpeHR1cmUtbm9uY2UtQQ";
const NONCE_B: &str = "Y3R4LWZpeHR1cmUtbm9uY2UtQg";

fn sign(input: &EnvelopeInput) -> Vec<u8> {
    bytes(&sign_envelope(input, &own_key(), KEY_ID).expect("sign"))
}

fn own_fixtures() -> Fixtures {
    let inject = input(binding(1), Content::Inject(INJECT_TEXT.into()), NONCE_A);
    let mut withhold = input(
        binding(1),
        Content::Withhold(WithholdReason {
            code: "POLICY_DENIED".into(),
            retryable: true,
        }),
        NONCE_B,
    );
    withhold.source_refs.clear();
    let next = input(
        binding(2),
        Content::Inject("Next turn context".into()),
        NONCE_A,
    );
    let mut registration = Registration::new(
        provider("ctx-fixture-instance"),
        KEY_ID,
        own_key().public_key(),
    );
    registration.workspace_ids = vec!["workspace-ctx".into()];
    registration.agent_ids = vec!["agent-ctx".into()];
    registration.user_ids = vec!["user-opaque-ctx-001".into()];
    registration.fixture_key_only = true;
    Fixtures {
        inject: sign(&inject),
        withhold: sign(&withhold),
        next_turn: sign(&next),
        registration,
        verification_time: created() + TimeDelta::seconds(60),
    }
}

/// Re-sign a changed envelope (optionally with a fresh idempotency key).
fn resign(mut v: Value, key: &SigningKeyPair, fix_idempotency: bool) -> Vec<u8> {
    v.as_object_mut().unwrap().remove("signature");
    if fix_idempotency {
        v["idempotency_key"] = Value::String(idempotency_key(&v).unwrap());
    }
    bytes(&sorted(attach_signature(v, key, KEY_ID).unwrap()))
}

fn extra_trust_stores(fx: &Fixtures) -> BTreeMap<String, Value> {
    let mut stores = fx.trust_stores();
    let mut other_user = fx.registration.clone();
    other_user.user_ids = vec!["user-opaque-someone-else".into()];
    let mut wildcard = fx.registration.clone();
    wildcard.workspace_ids = vec!["*".into()];
    wildcard.agent_ids = vec!["*".into()];
    wildcard.user_ids = vec!["*".into()];
    let mut second = fx.registration.clone();
    second.provider.instance_id = "ctx-fixture-instance-2".into();
    stores.insert("other-user-scope".into(), json!([other_user.to_json()]));
    stores.insert("wildcard-scope".into(), json!([wildcard.to_json()]));
    stores.insert(
        "two-instances".into(),
        json!([fx.registration.to_json(), second.to_json()]),
    );
    stores
}

fn extra_cases(fx: &Fixtures) -> Vec<Vector> {
    let key = own_key();
    let base = fx.inject_value();
    let text = String::from_utf8(fx.inject.clone()).unwrap();
    let ok_new = |env: &[u8]| accepted(env, Acceptance::New);
    let with = |mut v: Value, f: &dyn Fn(&mut Value)| {
        f(&mut v);
        v
    };
    let mut cases: Vec<(&str, bool, &str, Vec<Step>)> = Vec::new();
    let mut neg = |id, description, envelope: Vec<u8>, code: &str| {
        cases.push((
            id,
            false,
            description,
            vec![fx.step(envelope, rejected(code))],
        ));
    };
    neg(
        "duplicate-key",
        "a second \"decision\" member (last-key-wins must not apply)",
        text.replacen("{\n", "{\n  \"decision\": \"withhold\",\n", 1)
            .into_bytes(),
        "contract_shape",
    );
    let len = base["context"]["byte_length"].as_u64().unwrap();
    neg(
        "unsafe-integer",
        "byte_length beyond 2^53 - 1",
        text.replacen(
            &format!("\"byte_length\": {len}"),
            "\"byte_length\": 9007199254740993",
            1,
        )
        .into_bytes(),
        "contract_shape",
    );
    neg(
        "nested-unknown-field",
        "undeclared member inside context",
        bytes(&with(base.clone(), &|v| v["context"]["note"] = json!("x"))),
        "contract_shape",
    );
    neg(
        "nonce-too-short",
        "21-character nonce",
        bytes(&with(base.clone(), &|v| v["nonce"] = json!("A".repeat(21)))),
        "contract_shape",
    );
    neg(
        "duplicate-source-ref",
        "source_refs items must be unique",
        bytes(&with(base.clone(), &|v| {
            v["source_refs"] = json!(["a", "a"])
        })),
        "contract_shape",
    );
    let same_time = with(base.clone(), &|v| v["expires_at"] = v["created_at"].clone());
    neg(
        "time-order",
        "expires_at equal to created_at (re-signed)",
        resign(same_time, &key, false),
        "time_order",
    );
    let invalid = [0x66u8, 0xff, 0x0a];
    let bad_utf8 = with(base.clone(), &|v| {
        v["context"]["bytes_base64"] = json!(encode_base64(&invalid));
        v["context"]["byte_length"] = json!(invalid.len());
        v["context"]["sha256"] = json!(sha256_hex(&invalid));
    });
    neg(
        "context-invalid-utf8",
        "validly signed non-UTF-8 context bytes",
        resign(bad_utf8, &key, true),
        "context_utf8",
    );
    neg(
        "signed-payload-tamper",
        "signed_payload_sha256 replaced (signature itself still valid)",
        bytes(&with(base.clone(), &|v| {
            v["signature"]["signed_payload_sha256"] = json!("c".repeat(64))
        })),
        "signed_payload_sha256",
    );
    let sig = base["signature"]["value_base64"].as_str().unwrap();
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let last = alphabet.find(&sig[85..86]).unwrap();
    let noncanonical = format!("{}{}==", &sig[..85], &alphabet[last | 1..=last | 1]);
    assert_eq!(b64_decode(sig).len(), 64);
    neg(
        "signature-noncanonical-base64",
        "signature text with non-zero padding bits",
        bytes(&with(base.clone(), &|v| {
            v["signature"]["value_base64"] = json!(noncanonical)
        })),
        "signature",
    );
    neg(
        "unregistered-key-id",
        "signature.key_id not registered",
        bytes(&with(base.clone(), &|v| {
            v["signature"]["key_id"] = json!("ctx-fixture-key-2")
        })),
        "trusted_provider",
    );
    let other_key = SigningKeyPair::from_seed(&[0x42; 32]);
    neg(
        "wrong-key-same-key-id",
        "signed by another key under the registered key_id",
        resign(base.clone(), &other_key, false),
        "signature",
    );
    let lifetime = |secs: i64| {
        let mut i = input(binding(1), Content::Inject(INJECT_TEXT.into()), NONCE_A);
        i.lifetime_secs = secs;
        sign_envelope(&i, &key, KEY_ID).unwrap()
    };
    let mut long = lifetime(300);
    long["expires_at"] = json!(rfc3339(time(&long, "created_at") + TimeDelta::seconds(301)));
    neg(
        "lifetime-301s",
        "lifetime one second over 300 s",
        resign(long, &key, false),
        "lifetime",
    );
    let mut skew = fx.step(fx.inject.clone(), rejected("not_created_in_future"));
    skew.at = time(&base, "created_at") - TimeDelta::seconds(31);
    cases.push((
        "created-31s-ahead",
        false,
        "created_at 31 s after the verification time",
        vec![skew],
    ));
    let mut scoped = fx.step(fx.inject.clone(), rejected("trusted_provider"));
    scoped.trust = "other-user-scope".into();
    cases.push((
        "user-out-of-scope",
        false,
        "registration scoped to another user",
        vec![scoped],
    ));
    cases.push((
        "retry-after-expiry",
        false,
        "an accepted result retried at expires_at is rejected (time checked on every attempt)",
        vec![fx.step(fx.inject.clone(), ok_new(&fx.inject)), {
            let mut s = fx.step(fx.inject.clone(), rejected("not_expired"));
            s.at = time(&base, "expires_at");
            s
        }],
    ));
    cases.push((
        "withhold-then-inject-same-turn",
        false,
        "an inject after an accepted withhold for the same turn",
        vec![
            fx.step(fx.withhold.clone(), ok_new(&fx.withhold)),
            fx.step(fx.inject.clone(), rejected("turn")),
        ],
    ));
    // Positive extras.
    let l300 = bytes(&lifetime(300));
    cases.push((
        "lifetime-300s",
        true,
        "lifetime of exactly 300 s",
        vec![fx.step(l300.clone(), ok_new(&l300))],
    ));
    let mut edge = fx.step(fx.inject.clone(), ok_new(&fx.inject));
    edge.at = time(&base, "created_at") - TimeDelta::seconds(30);
    cases.push((
        "created-30s-ahead",
        true,
        "created_at exactly 30 s after the verification time",
        vec![edge],
    ));
    let mut wild = fx.step(fx.inject.clone(), ok_new(&fx.inject));
    wild.trust = "wildcard-scope".into();
    cases.push((
        "wildcard-scope",
        true,
        "registration scoped with \"*\"",
        vec![wild],
    ));
    cases.push((
        "withhold-exact-retry",
        true,
        "the same withhold twice",
        vec![
            fx.step(fx.withhold.clone(), ok_new(&fx.withhold)),
            fx.step(
                fx.withhold.clone(),
                accepted(&fx.withhold, Acceptance::IdempotentRetry),
            ),
        ],
    ));
    let reformatted = serde_json::to_vec(&parse_strict(&fx.inject).unwrap()).unwrap();
    cases.push((
        "retry-reformatted-bytes",
        true,
        "an exact retry re-serialised without whitespace is the same result",
        vec![
            fx.step(fx.inject.clone(), ok_new(&fx.inject)),
            fx.step(
                reformatted,
                accepted(&fx.inject, Acceptance::IdempotentRetry),
            ),
        ],
    ));
    let mut other_instance = input(
        binding(2),
        Content::Inject("Next turn context".into()),
        NONCE_A,
    );
    other_instance.provider.instance_id = "ctx-fixture-instance-2".into();
    let other_instance = sign(&other_instance);
    let mut first = fx.step(fx.inject.clone(), ok_new(&fx.inject));
    let mut second = fx.step(other_instance.clone(), ok_new(&other_instance));
    first.trust = "two-instances".into();
    second.trust = "two-instances".into();
    cases.push((
        "same-nonce-other-instance",
        true,
        "nonces are scoped to the provider instance",
        vec![first, second],
    ));
    cases
        .into_iter()
        .map(|(id, positive, description, steps)| Vector {
            id: id.into(),
            positive,
            description: description.into(),
            steps,
        })
        .collect()
}

/// Every committed file, by path relative to `fixtures/provider-vectors/`.
fn build() -> BTreeMap<String, Vec<u8>> {
    let fx = own_fixtures();
    let mut vectors: Vec<Vector> = REFERENCE_IDS
        .iter()
        .map(|id| reference_case(id, &fx).expect("reference id"))
        .collect();
    vectors.extend(extra_cases(&fx));
    check_polarity(&vectors);
    let mut files = BTreeMap::from([
        ("inject.valid.json".to_string(), fx.inject.clone()),
        ("withhold.valid.json".to_string(), fx.withhold.clone()),
        (
            "inject.next-turn-same-nonce.valid.json".to_string(),
            fx.next_turn.clone(),
        ),
        ("trust.json".to_string(), bytes(&fx.registration.to_json())),
    ]);
    let named: Vec<(String, Vec<u8>)> = files.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut entries = Vec::new();
    for v in &vectors {
        let mut steps = Vec::new();
        for (i, s) in v.steps.iter().enumerate() {
            let name = match named.iter().find(|(_, b)| *b == s.envelope) {
                Some((n, _)) => n.clone(),
                None => {
                    let n = if v.steps.len() == 1 {
                        format!("envelopes/{}.json", v.id)
                    } else {
                        format!("envelopes/{}.{i}.json", v.id)
                    };
                    files.insert(n.clone(), s.envelope.clone());
                    n
                }
            };
            steps.push(json!({
                "envelope": name,
                "binding": s.binding,
                "at": rfc3339(s.at),
                "trust": s.trust,
                "expect": s.expect.to_json(),
            }));
        }
        entries.push(json!({
            "id": v.id,
            "kind": if v.positive { "positive" } else { "negative" },
            "description": v.description,
            "steps": steps,
        }));
    }
    let doc = json!({
        "contract_id": "ctx.provider-test-vectors.v1",
        "about": "Vectors for atmem.delegated-context-provider.v1 signed with a deterministic TEST key (never trust it). Each step verifies the envelope file's exact bytes for `binding` at `at` with trust store `trust`; steps of one vector share one fresh acceptance state. Regenerate: cargo test --lib provider::own_vectors::write_own_vectors -- --ignored",
        "positive": vectors.iter().filter(|v| v.positive).count(),
        "negative": vectors.iter().filter(|v| !v.positive).count(),
        "trust_stores": extra_trust_stores(&fx),
        "vectors": entries,
    });
    files.insert("vectors.json".into(), bytes(&doc));
    files
}

fn load_committed(dir: &Path) -> (Vec<Vector>, BTreeMap<String, Value>) {
    let doc =
        parse_strict(&std::fs::read(dir.join("vectors.json")).expect("vectors.json")).unwrap();
    let stores = serde_json::from_value(doc["trust_stores"].clone()).unwrap();
    let vectors = doc["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| Vector {
            id: v["id"].as_str().unwrap().into(),
            positive: v["kind"] == "positive",
            description: v["description"].as_str().unwrap().into(),
            steps: v["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| Step {
                    envelope: std::fs::read(dir.join(s["envelope"].as_str().unwrap())).unwrap(),
                    binding: serde_json::from_value(s["binding"].clone()).unwrap(),
                    at: time(s, "at"),
                    trust: s["trust"].as_str().unwrap().into(),
                    expect: Expect::from_json(&s["expect"]),
                })
                .collect(),
        })
        .collect();
    (vectors, stores)
}

#[test]
#[ignore = "writes fixtures/provider-vectors; run on purpose"]
fn write_own_vectors() {
    let dir = crate::testutil::own_vectors_dir();
    let _ = std::fs::remove_dir_all(dir.join("envelopes"));
    for (name, content) in build() {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// The committed files are exactly what the generator produces now.
#[test]
fn own_vectors_are_current() {
    let dir = crate::testutil::own_vectors_dir();
    let files = build();
    for entry in std::fs::read_dir(dir.join("envelopes")).unwrap() {
        let name = format!("envelopes/{}", entry.unwrap().file_name().to_string_lossy());
        assert!(
            files.contains_key(&name),
            "{name} is not generated any more; remove it"
        );
    }
    for (name, content) in files {
        let on_disk = std::fs::read(dir.join(&name)).unwrap_or_default();
        assert!(
            on_disk == content,
            "fixtures/provider-vectors/{name} is stale or missing; regenerate with \
             `cargo test --lib provider::own_vectors::write_own_vectors -- --ignored`"
        );
    }
}

/// Run the committed vectors as plain data.
#[test]
fn own_vectors_pass() {
    let (vectors, stores) = load_committed(&crate::testutil::own_vectors_dir());
    let ids: std::collections::BTreeSet<_> = vectors.iter().map(|v| v.id.clone()).collect();
    assert_eq!(ids.len(), vectors.len(), "duplicate ids");
    for id in REFERENCE_IDS {
        assert!(ids.contains(id), "{id} missing");
    }
    assert!(vectors.len() >= 40, "{} vectors", vectors.len());
    check_polarity(&vectors);
    let problems = run(&vectors, &stores);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Base fixture decodes to the exact text, CRLF and combining mark kept.
    let inject =
        std::fs::read(crate::testutil::own_vectors_dir().join("inject.valid.json")).unwrap();
    let v = parse_strict(&inject).unwrap();
    let bytes = b64_decode(v["context"]["bytes_base64"].as_str().unwrap());
    assert_eq!(bytes, INJECT_TEXT.as_bytes());
    assert_eq!(binding_of(&inject), binding(1));
}
