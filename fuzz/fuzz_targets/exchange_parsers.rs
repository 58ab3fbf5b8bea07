//! Arbitrary bytes through the Context Layer parsers: the consumer's envelope
//! checks, the wire-form translation, the closed schemas, canonical JSON and
//! policy evaluation. Nothing may panic; a random envelope never opens;
//! canonical JSON is idempotent; and any request with the closed request shape
//! evaluates, deterministically, to a decision with the closed decision shape.
#![no_main]

use ctx_core::exchange::envelope::{self, Revocation, VerifyInput};
use ctx_core::exchange::evaluate::{self, EvaluateInput, Preflight};
use ctx_core::exchange::policy::Policy;
use ctx_core::exchange::schema::{self, ClKind};
use ctx_core::exchange::{canon, kit, wire, SpecVersion};
use ctx_core::signing::SigningKeyPair;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let at = canon::parse_time("2030-01-01T12:00:00Z").expect("fixed clock");
    let key = SigningKeyPair::from_seed(&[7u8; 32]).public_key();
    let trusted = |kid: &str| (kid == "urn:cl:key:fuzz").then_some(key);
    let opened = envelope::verify(&VerifyInput {
        text: data,
        recipient: "urn:ctx:agent:fuzz",
        at,
        trusted: &trusted,
        legacy_hmac_key: None,
        revocation: Revocation::Unchecked,
    });
    assert!(opened.is_err(), "bytes nobody signed were accepted as a bundle");

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = ctx_core::json::parse(text) else {
        return;
    };
    let c1 = canon::canonical_text(&value);
    let back: Value = serde_json::from_str(&c1).expect("canonical JSON parses");
    assert_eq!(canon::canonical_text(&back), c1, "canonical JSON is not idempotent");
    assert_eq!(canon::digest(&value), canon::digest_bytes(c1.as_bytes()));

    if let Ok(core) = wire::to_core(&value) {
        for kind in ClKind::ALL {
            let valid = schema::is_valid(kind, &core);
            assert_eq!(valid, schema::problems(kind, &core).is_empty(), "{kind:?}");
        }
        if schema::is_valid(ClKind::ContextRequest, &core) {
            let policy = Policy::from_value(&policy()).expect("fixed policy");
            let input = EvaluateInput {
                request: &value,
                policy: &policy,
                at,
                approval: value.get("approval_for_fuzz"),
                verifier: None,
                preflight: Preflight::Available,
                version: SpecVersion::V02,
            };
            let a = evaluate::evaluate(&input).expect("a shaped request always gets a decision");
            let b = evaluate::evaluate(&input).expect("again");
            assert_eq!(a.decision, b.decision, "evaluation is not deterministic");
            assert!(
                schema::is_valid(ClKind::PolicyDecision, &a.decision),
                "{:?}",
                schema::problems(ClKind::PolicyDecision, &a.decision)
            );
            canon::verify_record(&a.decision, evaluate::DECISION_PREFIX, "decision").expect("finalized");
        }
    }

    // The adapter's file-free operations on the same input.
    let op = value.get("operation").and_then(Value::as_str).unwrap_or("");
    if ["validate_schema", "canonicalize", "finalize_record", "purpose_code", "evaluate_policy", "validate_proposal"].contains(&op) {
        let out = kit::handle_line(text);
        assert!(out["ok"].is_boolean());
    }
});

fn policy() -> Value {
    json!({
        "version": "fuzz/1",
        "allowed_subjects": ["urn:ctx:repository:fuzz"],
        "allowed_requesters": ["urn:ctx:agent:fuzz"],
        "allowed_clients": ["urn:ctx:client:local"],
        "allowed_recipients": ["urn:ctx:agent:fuzz"],
        "allowed_purpose_codes": ["draft.response", "retrieve.context"],
        "allowed_tasks": ["draft_only"],
        "allowed_selectors": ["a", "b.c"],
        "approval_required_selectors": ["secret"],
        "allowed_actions": ["model.generate_text"],
        "approval_required_actions": ["email.send"],
        "maximum_retention": {"mode": "ephemeral", "max_seconds": 600},
        "transforms": {"b.c": ["truncate:b.c:10"]},
        "bundle_instructions": ["data only"]
    })
}
