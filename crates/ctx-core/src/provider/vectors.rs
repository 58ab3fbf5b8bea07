//! Conformance vectors: a data model, a runner, and the 23 cases of the
//! AtMem reference set expressed as mutations of three base fixtures, so
//! the same code runs the shared reference folder and our own fixtures.
use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::verify::rfc3339;
use super::{verify_envelope, Acceptance, Binding, Registration, StateDir, TrustStore};
use crate::canonical::parse_strict;
use crate::signing::{decode_base64_strict, encode_base64, Signature};

/// What one verification attempt must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    Accepted {
        decision: String,
        acceptance: String,
        context_sha256: Option<String>,
        withhold_code: Option<String>,
    },
    Rejected(String),
}

impl Expect {
    pub fn to_json(&self) -> Value {
        match self {
            Expect::Accepted {
                decision,
                acceptance,
                context_sha256,
                withhold_code,
            } => json!({
                "outcome": "accepted",
                "decision": decision,
                "acceptance": acceptance,
                "context_sha256": context_sha256,
                "withhold_code": withhold_code,
            }),
            Expect::Rejected(code) => json!({"outcome": "rejected", "code": code}),
        }
    }

    pub fn from_json(v: &Value) -> Self {
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        match v["outcome"].as_str() {
            Some("accepted") => Expect::Accepted {
                decision: s("decision").expect("decision"),
                acceptance: s("acceptance").expect("acceptance"),
                context_sha256: s("context_sha256"),
                withhold_code: s("withhold_code"),
            },
            Some("rejected") => Expect::Rejected(s("code").expect("code")),
            other => panic!("unknown outcome {other:?}"),
        }
    }
}

/// One attempt, against the state shared by all steps of its vector.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub envelope: Vec<u8>,
    pub binding: Binding,
    pub at: DateTime<Utc>,
    /// Name of a trust store in the vector set.
    pub trust: String,
    pub expect: Expect,
}

#[derive(Debug, Clone)]
pub(crate) struct Vector {
    pub id: String,
    pub positive: bool,
    pub description: String,
    pub steps: Vec<Step>,
}

/// The three signed base envelopes (raw bytes as received) and their trust.
pub(crate) struct Fixtures {
    pub inject: Vec<u8>,
    pub withhold: Vec<u8>,
    pub next_turn: Vec<u8>,
    pub registration: Registration,
    pub verification_time: DateTime<Utc>,
}

impl Fixtures {
    pub fn load(dir: &Path, verification_time: DateTime<Utc>) -> Self {
        let read = |name: &str| std::fs::read(dir.join(name)).expect(name);
        let trust = TrustStore::from_json_slice(&read("trust.json"), true).expect("trust.json");
        Self {
            inject: read("inject.valid.json"),
            withhold: read("withhold.valid.json"),
            next_turn: read("inject.next-turn-same-nonce.valid.json"),
            registration: trust.registrations()[0].clone(),
            verification_time,
        }
    }

    pub fn inject_value(&self) -> Value {
        parse_strict(&self.inject).expect("inject fixture")
    }

    pub fn trust_stores(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("fixture".into(), json!([self.registration.to_json()])),
            ("empty".into(), json!([])),
        ])
    }
}

/// The envelope's own binding (lenient parse: deliberately malformed
/// vectors still name the binding the host expects).
pub(crate) fn binding_of(envelope: &[u8]) -> Binding {
    let v: Value = serde_json::from_slice(envelope).expect("fixture");
    serde_json::from_value(v["binding"].clone()).expect("binding")
}

pub(crate) fn time(v: &Value, key: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v[key].as_str().expect(key))
        .expect(key)
        .with_timezone(&Utc)
}

pub(crate) fn bytes(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("serialise");
    out.push(b'\n');
    out
}

/// Accepted expectation for a base fixture.
pub(crate) fn accepted(envelope: &[u8], acceptance: Acceptance) -> Expect {
    let v = parse_strict(envelope).expect("fixture");
    let context_sha256 = v["context"]["sha256"].as_str().map(str::to_owned);
    Expect::Accepted {
        decision: v["decision"].as_str().expect("decision").to_owned(),
        acceptance: acceptance.as_str().to_owned(),
        context_sha256,
        withhold_code: v["withhold_reason"]["code"].as_str().map(str::to_owned),
    }
}

pub(crate) fn rejected(code: &str) -> Expect {
    Expect::Rejected(code.to_owned())
}

impl Fixtures {
    /// A step verifying `envelope` for its own binding at the reference time.
    pub fn step(&self, envelope: Vec<u8>, expect: Expect) -> Step {
        Step {
            binding: binding_of(&envelope),
            envelope,
            at: self.verification_time,
            trust: "fixture".into(),
            expect,
        }
    }

    /// An inject mutation expected to fail with `code`.
    pub fn mutated(&self, code: &str, change: impl FnOnce(&mut Value)) -> Vec<Step> {
        let mut v = self.inject_value();
        change(&mut v);
        vec![self.step(bytes(&v), rejected(code))]
    }
}

/// The reference set's cases by id (`None` for an unknown id).
pub(crate) fn reference_case(id: &str, fx: &Fixtures) -> Option<Vector> {
    let ok_new = |env: &[u8]| accepted(env, Acceptance::New);
    let (positive, description, steps): (bool, &str, Vec<Step>) = match id {
        "signed-inject-unicode-crlf" => (
            true,
            "signed inject with non-ASCII and CRLF context bytes verifies",
            vec![fx.step(fx.inject.clone(), ok_new(&fx.inject))],
        ),
        "signed-withhold-no-context" => (
            true,
            "signed withhold without context verifies",
            vec![fx.step(fx.withhold.clone(), ok_new(&fx.withhold))],
        ),
        "exact-idempotent-retry" => (
            true,
            "the same signed envelope twice: second is an idempotent retry",
            vec![
                fx.step(fx.inject.clone(), ok_new(&fx.inject)),
                fx.step(
                    fx.inject.clone(),
                    accepted(&fx.inject, Acceptance::IdempotentRetry),
                ),
            ],
        ),
        "untrusted-provider" => {
            let mut s = fx.step(fx.inject.clone(), rejected("trusted_provider"));
            s.trust = "empty".into();
            (false, "no registration trusts the provider", vec![s])
        }
        "wrong-run-binding"
        | "wrong-turn-binding"
        | "wrong-session-binding"
        | "wrong-agent-binding"
        | "wrong-user-binding"
        | "wrong-workspace-binding" => {
            let name = id.trim_start_matches("wrong-").trim_end_matches("-binding");
            let field = format!("{name}_id");
            let mut s = fx.step(fx.inject.clone(), rejected("turn_scope_binding"));
            let mut b = serde_json::to_value(&s.binding).expect("binding");
            b[&field] = Value::String(format!("wrong-{field}"));
            s.binding = serde_json::from_value(b).expect("binding");
            (false, "the host expects a different binding id", vec![s])
        }
        "expired" => {
            let mut s = fx.step(fx.inject.clone(), rejected("not_expired"));
            s.at = time(&fx.inject_value(), "expires_at");
            (
                false,
                "verified exactly at expires_at (inclusive bound)",
                vec![s],
            )
        }
        "future-created" => {
            let mut s = fx.step(fx.inject.clone(), rejected("not_created_in_future"));
            s.at = time(&fx.inject_value(), "created_at") - TimeDelta::seconds(60);
            (
                false,
                "verified 60 s before created_at (skew 30 s)",
                vec![s],
            )
        }
        "excessive-lifetime" => (
            false,
            "expires_at 600 s after created_at",
            fx.mutated("lifetime", |v| {
                let t = time(v, "created_at") + TimeDelta::seconds(600);
                v["expires_at"] = Value::String(rfc3339(t));
            }),
        ),
        "context-digest-mismatch" => (
            false,
            "context.sha256 replaced",
            fx.mutated("context_sha256", |v| {
                v["context"]["sha256"] = Value::String("b".repeat(64));
            }),
        ),
        "context-length-mismatch" => (
            false,
            "context.byte_length incremented",
            fx.mutated("context_byte_length", |v| {
                let n = v["context"]["byte_length"].as_u64().expect("length");
                v["context"]["byte_length"] = json!(n + 1);
            }),
        ),
        "invalid-base64" => (
            false,
            "context.bytes_base64 is not base64",
            fx.mutated("context_base64", |v| {
                v["context"]["bytes_base64"] = Value::String("not base64".into());
            }),
        ),
        "signature-tamper" => (
            false,
            "first signature byte XOR 0x01",
            fx.mutated("signature", |v| {
                let sig = v["signature"]["value_base64"].as_str().expect("sig");
                let mut raw = Signature::from_base64(sig).expect("sig").to_bytes();
                raw[0] ^= 0x01;
                v["signature"]["value_base64"] = Value::String(encode_base64(&raw));
            }),
        ),
        "idempotency-tamper" => (
            false,
            "idempotency_key replaced",
            fx.mutated("idempotency_binding", |v| {
                v["idempotency_key"] = Value::String(format!("dcp-{}", "0".repeat(64)));
            }),
        ),
        "unknown-field" => (
            false,
            "undeclared top-level member",
            fx.mutated("contract_shape", |v| {
                v["raw_prompt"] = Value::String("must never be accepted".into());
            }),
        ),
        "inject-with-reason" => (
            false,
            "inject carrying a withhold_reason",
            fx.mutated("contract_shape", |v| {
                v["withhold_reason"] = json!({"code": "POLICY_DENIED", "retryable": false});
            }),
        ),
        "withhold-with-context" => {
            let mut v = parse_strict(&fx.withhold).expect("withhold");
            v["context"] = fx.inject_value()["context"].clone();
            (
                false,
                "withhold carrying the inject context",
                vec![fx.step(bytes(&v), rejected("contract_shape"))],
            )
        }
        "second-result-same-turn" => (
            false,
            "a different signed result for an already accepted turn",
            vec![
                fx.step(fx.inject.clone(), ok_new(&fx.inject)),
                fx.step(fx.withhold.clone(), rejected("turn")),
            ],
        ),
        "nonce-replay-other-turn" => (
            false,
            "the accepted nonce reused by a valid result for another turn",
            vec![
                fx.step(fx.inject.clone(), ok_new(&fx.inject)),
                fx.step(fx.next_turn.clone(), rejected("nonce")),
            ],
        ),
        _ => return None,
    };
    Some(Vector {
        id: id.to_owned(),
        positive,
        description: description.to_owned(),
        steps,
    })
}

/// Run vectors (fresh state per vector); returns every mismatch.
pub(crate) fn run(vectors: &[Vector], trust_stores: &BTreeMap<String, Value>) -> Vec<String> {
    let stores: BTreeMap<&str, TrustStore> = trust_stores
        .iter()
        .map(|(name, v)| {
            let store = TrustStore::from_json_slice(&serde_json::to_vec(v).expect("json"), true)
                .expect("trust store");
            (name.as_str(), store)
        })
        .collect();
    let mut problems = Vec::new();
    for vector in vectors {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = StateDir::open(tmp.path().join("state")).expect("state dir");
        for (i, step) in vector.steps.iter().enumerate() {
            let trust = &stores[step.trust.as_str()];
            let result =
                verify_envelope(&step.envelope, trust, &step.binding, step.at, Some(&state));
            let got = match &result {
                Ok(a) => Expect::Accepted {
                    decision: a.decision.as_str().into(),
                    acceptance: a.acceptance.as_str().into(),
                    context_sha256: a.context_sha256.clone(),
                    withhold_code: a.withhold_reason.as_ref().map(|r| r.code.clone()),
                },
                Err(f) => Expect::Rejected(f.code.as_str().into()),
            };
            if std::env::var_os("CTX_VECTORS_VERBOSE").is_some() {
                match &result {
                    Ok(a) => eprintln!("{} #{i}: {}", vector.id, a.acceptance.as_str()),
                    Err(f) => eprintln!("{} #{i}: {f}", vector.id),
                }
            }
            if got != step.expect {
                let detail = result.err().map(|f| f.to_string()).unwrap_or_default();
                problems.push(format!(
                    "{} step {i}: expected {:?}, got {got:?} {detail}",
                    vector.id, step.expect
                ));
            }
        }
    }
    problems
}

/// Check the set's bookkeeping: every negative vector ends in a rejection,
/// every positive one only in acceptances.
pub(crate) fn check_polarity(vectors: &[Vector]) {
    for v in vectors {
        let last = &v.steps.last().expect("steps").expect;
        if v.positive {
            assert!(
                v.steps
                    .iter()
                    .all(|s| matches!(s.expect, Expect::Accepted { .. })),
                "{}",
                v.id
            );
        } else {
            assert!(matches!(last, Expect::Rejected(_)), "{}", v.id);
        }
    }
}

/// The AtMem reference folder, all 23 vectors, expectations cross-checked
/// against its `test-vectors.json`.
#[test]
fn atmem_reference_vectors() {
    let Some(dir) = crate::testutil::atmem_reference_dir() else {
        return;
    };
    let file = parse_strict(&std::fs::read(dir.join("test-vectors.json")).unwrap()).unwrap();
    let at = time(&file, "verification_time");
    let fx = Fixtures::load(&dir, at);
    // The decoded fixture text is exactly this (no newline conversion).
    let inject = verify_envelope(
        &fx.inject,
        &TrustStore::new(vec![fx.registration.clone()]).unwrap(),
        &binding_of(&fx.inject),
        at,
        None,
    )
    .unwrap();
    assert_eq!(
        inject.context.as_deref(),
        Some("Reviewed context \u{1f9e0}\r\nKeep these bytes.")
    );
    assert_eq!(inject.context.as_ref().map(String::len), Some(40));

    let mut vectors = Vec::new();
    let positive = file["positive"].as_array().unwrap();
    let negative = file["negative"].as_array().unwrap();
    assert_eq!((positive.len(), negative.len()), (3, 20));
    for entry in positive.iter().chain(negative) {
        let id = entry["id"].as_str().unwrap();
        let v = reference_case(id, &fx).unwrap_or_else(|| panic!("no case for {id}"));
        let last = &v.steps.last().unwrap().expect;
        match (entry.get("expected_failure"), last) {
            (Some(code), Expect::Rejected(ours)) => assert_eq!(code.as_str(), Some(ours.as_str())),
            (
                None,
                Expect::Accepted {
                    decision,
                    acceptance,
                    context_sha256,
                    withhold_code,
                },
            ) => {
                if let Some(d) = entry.get("expected_decision") {
                    assert_eq!(d.as_str(), Some(decision.as_str()), "{id}");
                }
                if let Some(c) = entry.get("expected_context_sha256") {
                    assert_eq!(c.as_str(), context_sha256.as_deref(), "{id}");
                }
                if let Some(r) = entry.get("expected_reason") {
                    assert_eq!(r.as_str(), withhold_code.as_deref(), "{id}");
                }
                if entry.get("expected_second_idempotent") == Some(&json!(true)) {
                    assert_eq!(
                        v.steps.len(),
                        entry["accept_count"].as_u64().unwrap() as usize
                    );
                    assert_eq!(acceptance, "idempotent_retry", "{id}");
                }
            }
            (want, got) => panic!("{id}: file expects {want:?}, case expects {got:?}"),
        }
        assert_eq!(v.positive, entry.get("expected_failure").is_none(), "{id}");
        vectors.push(v);
    }
    check_polarity(&vectors);
    let problems = run(&vectors, &fx.trust_stores());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let ran: std::collections::BTreeSet<_> = vectors.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ran.len(), 23);
    eprintln!("AtMem reference vectors: 23 of 23 passed");
}

/// Canonical base64 helper re-export for the generator.
pub(crate) fn b64_decode(s: &str) -> Vec<u8> {
    decode_base64_strict(s).expect("base64")
}
