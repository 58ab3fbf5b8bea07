use std::sync::{Arc, Barrier};

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::*;
use crate::signing::SigningKeyPair;

fn provider() -> ProviderRef {
    ProviderRef {
        id: "p".into(),
        version: "1".into(),
        instance_id: "p-1".into(),
    }
}

fn binding() -> Binding {
    Binding {
        run_id: "run-1".into(),
        turn_id: "turn-1".into(),
        session_id: "session-1".into(),
        agent_id: "agent-1".into(),
        user_id: "user-opaque-1".into(),
        workspace_id: "ws-1".into(),
    }
}

fn receipt() -> ReceiptRef {
    ReceiptRef {
        id: "urn:cl:receipt:1".into(),
        contract_id: "ctx.receipt.v1".into(),
        sha256: "a".repeat(64),
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-09-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

struct Setup {
    key: SigningKeyPair,
    trust: TrustStore,
}

fn setup() -> Setup {
    let key = SigningKeyPair::generate().unwrap();
    let trust =
        TrustStore::new(vec![Registration::new(provider(), "k1", key.public_key())]).unwrap();
    Setup { key, trust }
}

fn envelope(s: &Setup, content: Content) -> Vec<u8> {
    let mut input = EnvelopeInput::new(provider(), binding(), content, receipt());
    input.created_at = t0();
    serde_json::to_vec(&sign_envelope(&input, &s.key, "k1").unwrap()).unwrap()
}

fn inject(s: &Setup, text: &str) -> Vec<u8> {
    envelope(s, Content::Inject(text.into()))
}

fn at() -> DateTime<Utc> {
    t0() + TimeDelta::seconds(10)
}

#[test]
fn signed_inject_round_trips_with_exact_bytes() {
    let s = setup();
    let text = "line one\r\nzwei \u{1f9e0} cafe\u{301}\n";
    let bytes = inject(&s, text);
    let ok = verify_envelope(&bytes, &s.trust, &binding(), at(), None).unwrap();
    assert_eq!(ok.decision, Decision::Inject);
    assert_eq!(ok.context.as_deref(), Some(text));
    assert_eq!(
        ok.context_sha256,
        Some(crate::canonical::sha256_hex(text.as_bytes()))
    );
    assert_eq!(ok.acceptance, Acceptance::NotRecorded);
    assert_eq!(ok.expires_at - ok.created_at, TimeDelta::seconds(120));
    assert_eq!(ok.nonce.len(), 22);
    let value = crate::canonical::parse_strict(&bytes).unwrap();
    assert_eq!(idempotency_key(&value).unwrap(), ok.idempotency_key);
    let ev = ok.evidence();
    assert_eq!(ev["provider.authorization"], "verified");
    assert_eq!(ev["context_byte_length"], json!(text.len()));
    assert_eq!(ev["provider_result_sha256"], json!(ok.result_sha256));
    assert!(
        !ev.to_string().contains("zwei"),
        "evidence must not carry context bytes"
    );
}

#[test]
fn signed_withhold_round_trips() {
    let s = setup();
    let reason = WithholdReason {
        code: "POLICY_DENIED".into(),
        retryable: false,
    };
    let bytes = envelope(&s, Content::Withhold(reason.clone()));
    let ok = verify_envelope(&bytes, &s.trust, &binding(), at(), None).unwrap();
    assert_eq!(ok.decision, Decision::Withhold);
    assert_eq!(ok.context, None);
    assert_eq!(ok.withhold_reason, Some(reason));
    assert_eq!(ok.evidence()["provider.authorization"], "withheld");
}

#[test]
fn retries_keep_the_idempotency_key_and_changes_alter_it() {
    let s = setup();
    let a = crate::canonical::parse_strict(&inject(&s, "same")).unwrap();
    let b = crate::canonical::parse_strict(&inject(&s, "same")).unwrap();
    let c = crate::canonical::parse_strict(&inject(&s, "other")).unwrap();
    assert_ne!(a["nonce"], b["nonce"], "fresh random nonce per envelope");
    assert_eq!(a["idempotency_key"], b["idempotency_key"]);
    assert_ne!(a["idempotency_key"], c["idempotency_key"]);
}

#[test]
fn sign_envelope_refuses_what_verification_would_reject() {
    let s = setup();
    let base = EnvelopeInput::new(
        provider(),
        binding(),
        Content::Inject("x".into()),
        receipt(),
    );
    let code = |input: EnvelopeInput| match sign_envelope(&input, &s.key, "k1") {
        Err(SignEnvelopeError::Invalid(f)) => (f.code, f.field),
        other => panic!("expected refusal, got {other:?}"),
    };
    let mut i = base.clone();
    i.lifetime_secs = 301;
    assert_eq!(code(i).0, FailureCode::Lifetime);
    let mut i = base.clone();
    i.lifetime_secs = 0;
    assert_eq!(code(i).0, FailureCode::TimeOrder);
    let mut i = base.clone();
    i.content = Content::Inject(String::new());
    assert_eq!(code(i).1, "/context/byte_length");
    let mut i = base.clone();
    i.content = Content::Inject("x".repeat(262_145));
    assert_eq!(code(i).1, "/context/byte_length");
    let mut i = base.clone();
    i.binding.user_id = " padded".into();
    assert_eq!(code(i).1, "/binding/user_id");
    let mut i = base.clone();
    i.content = Content::Withhold(WithholdReason {
        code: "lower".into(),
        retryable: true,
    });
    assert_eq!(code(i).1, "/withhold_reason/code");
    let mut i = base.clone();
    i.nonce = Some("short".into());
    assert_eq!(code(i).1, "/nonce");
    let mut i = base;
    i.content = Content::Inject("x".repeat(262_144));
    assert!(sign_envelope(&i, &s.key, "k1").is_ok());
}

#[test]
fn random_nonces_are_128_bit_url_safe() {
    let a = random_nonce().unwrap();
    let b = random_nonce().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.len(), 22);
    assert!(a
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
}

#[test]
fn deployment_limits_only_tighten() {
    let s = setup();
    let bytes = inject(&s, "0123456789abcdef");
    let strict = Limits::REFERENCE.with_max_lifetime_secs(60);
    let err = verify_envelope_with(&bytes, &s.trust, &binding(), at(), None, &strict).unwrap_err();
    assert_eq!(err.code, FailureCode::Lifetime);
    let small = Limits::REFERENCE.with_max_context_bytes(8);
    let err = verify_envelope_with(&bytes, &s.trust, &binding(), at(), None, &small).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        (FailureCode::ContractShape, "/context/byte_length")
    );
    let loose = Limits::REFERENCE
        .with_max_lifetime_secs(10_000)
        .with_max_future_skew_secs(999)
        .with_max_context_bytes(u64::MAX);
    assert_eq!(loose, Limits::REFERENCE);
    let oversized = vec![b' '; Limits::REFERENCE.max_result_bytes() + 1];
    let err = verify_envelope(&oversized, &s.trust, &binding(), at(), None).unwrap_err();
    assert_eq!(err.code, FailureCode::ContractShape);
}

#[test]
fn failures_name_field_expected_and_actual() {
    let s = setup();
    let bytes = inject(&s, "x");
    let mut host = binding();
    host.agent_id = "agent-2".into();
    let f = verify_envelope(&bytes, &s.trust, &host, at(), None).unwrap_err();
    assert_eq!(f.code.as_str(), "turn_scope_binding");
    assert_eq!(f.field, "/binding/agent_id");
    let text = f.to_string();
    assert!(
        text.contains("agent-2") && text.contains("agent-1"),
        "{text}"
    );
    assert_eq!(f.to_json()["code"], "turn_scope_binding");
    for code in FailureCode::ALL {
        assert_eq!(FailureCode::parse(code.as_str()), Some(code));
    }
    let f = verify_envelope(b"{\"a\":1,\"a\":2}", &s.trust, &binding(), at(), None).unwrap_err();
    assert_eq!(f.code, FailureCode::ContractShape);
    assert!(f.actual.contains("duplicate object key"), "{f}");
}

#[test]
fn state_survives_new_handles_and_hides_raw_ids() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    let a = StateDir::open(dir.path().join("st")).unwrap();
    let first = inject(&s, "one");
    let ok = verify_envelope(&first, &s.trust, &binding(), at(), Some(&a)).unwrap();
    assert_eq!(ok.acceptance, Acceptance::New);
    let b = StateDir::open(dir.path().join("st")).unwrap();
    let again = verify_envelope(&first, &s.trust, &binding(), at(), Some(&b)).unwrap();
    assert_eq!(again.acceptance, Acceptance::IdempotentRetry);
    let other = inject(&s, "two");
    let f = verify_envelope(&other, &s.trust, &binding(), at(), Some(&b)).unwrap_err();
    assert_eq!(f.code, FailureCode::Turn);
    assert_eq!(b.accepted_turns().unwrap(), 1);
    let text = std::fs::read_to_string(dir.path().join("st/acceptances.json")).unwrap();
    assert!(
        !text.contains("user-opaque-1") && !text.contains("turn-1"),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("st"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

#[test]
fn unreadable_state_fails_closed() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(dir.path()).unwrap();
    std::fs::write(dir.path().join("acceptances.json"), b"{\"format\":1}").unwrap();
    let f =
        verify_envelope(&inject(&s, "x"), &s.trust, &binding(), at(), Some(&state)).unwrap_err();
    assert_eq!(f.code, FailureCode::StateUnavailable);
}

#[test]
fn racing_threads_accept_exactly_one_result_per_turn() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    let envelopes: Vec<Vec<u8>> = (0..8)
        .map(|i| inject(&s, &format!("candidate {i}")))
        .collect();
    let barrier = Arc::new(Barrier::new(envelopes.len()));
    let trust = Arc::new(s.trust.clone());
    let handles: Vec<_> = envelopes
        .into_iter()
        .map(|env| {
            let (barrier, trust) = (barrier.clone(), trust.clone());
            let path = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let state = StateDir::open(path).unwrap();
                barrier.wait();
                verify_envelope(&env, &trust, &binding(), at(), Some(&state))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(accepted, 1, "{results:?}");
    assert!(results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .all(|f| f.code == FailureCode::Turn));

    // The same envelope raced: one new acceptance, the rest idempotent.
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(inject(&s, "same"));
    let barrier = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let (barrier, trust, env) = (barrier.clone(), trust.clone(), env.clone());
            let path = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let state = StateDir::open(path).unwrap();
                barrier.wait();
                verify_envelope(&env, &trust, &binding(), at(), Some(&state)).map(|a| a.acceptance)
            })
        })
        .collect();
    let mut got: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    got.sort_by_key(|a| a.as_str());
    assert_eq!(got[0], Acceptance::New);
    assert!(
        got[1..].iter().all(|a| *a == Acceptance::IdempotentRetry),
        "{got:?}"
    );
}

const CHILD_DIR: &str = "CTX_PROVIDER_RACE_DIR";
const CHILD_INDEX: &str = "CTX_PROVIDER_RACE_INDEX";

/// Child side of the process race (does nothing unless spawned by it).
#[test]
#[ignore = "helper: run by racing_processes_accept_exactly_one_result_per_turn"]
fn race_child() {
    let (Ok(dir), Ok(index)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_INDEX)) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let trust = TrustStore::from_json_slice(&std::fs::read(dir.join("trust.json")).unwrap(), false)
        .unwrap();
    let binding =
        Binding::from_json_slice(&std::fs::read(dir.join("binding.json")).unwrap()).unwrap();
    let env = std::fs::read(dir.join(format!("envelope-{index}.json"))).unwrap();
    let state = StateDir::open(dir.join("state")).unwrap();
    // Wait for the start signal so the children really overlap.
    while !dir.join("go").exists() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let outcome = match verify_envelope(&env, &trust, &binding, at(), Some(&state)) {
        Ok(a) => a.acceptance.as_str().to_owned(),
        Err(f) => f.code.as_str().to_owned(),
    };
    std::fs::write(dir.join(format!("result-{index}")), outcome).unwrap();
}

#[test]
fn racing_processes_accept_exactly_one_result_per_turn() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("trust.json"),
        serde_json::to_vec(&s.trust.to_json()).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("binding.json"),
        serde_json::to_vec(&binding()).unwrap(),
    )
    .unwrap();
    const N: usize = 4;
    for i in 0..N {
        std::fs::write(
            dir.path().join(format!("envelope-{i}.json")),
            inject(&s, &format!("process {i}")),
        )
        .unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..N)
        .map(|i| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "provider::tests::race_child",
                    "--ignored",
                    "--quiet",
                ])
                .env(CHILD_DIR, dir.path())
                .env(CHILD_INDEX, i.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::fs::write(dir.path().join("go"), b"").unwrap();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut outcomes: Vec<String> = (0..N)
        .map(|i| std::fs::read_to_string(dir.path().join(format!("result-{i}"))).unwrap())
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, vec!["accepted", "turn", "turn", "turn"]);
}

#[test]
fn binding_files_are_strict() {
    let good = serde_json::to_vec(&binding()).unwrap();
    assert_eq!(Binding::from_json_slice(&good).unwrap(), binding());
    let mut extra: Value = serde_json::to_value(binding()).unwrap();
    extra["tenant"] = json!("x");
    assert!(Binding::from_json_slice(&serde_json::to_vec(&extra).unwrap()).is_err());
    let dup = br#"{"run_id":"a","run_id":"b","turn_id":"t","session_id":"s","agent_id":"a","user_id":"u","workspace_id":"w"}"#;
    assert!(Binding::from_json_slice(dup).is_err());
    let mut blank: Value = serde_json::to_value(binding()).unwrap();
    blank["turn_id"] = json!("");
    let err = Binding::from_json_slice(&serde_json::to_vec(&blank).unwrap()).unwrap_err();
    assert!(err.to_string().contains("turn_id"), "{err}");
}

#[test]
fn trust_files_are_strict() {
    let key = SigningKeyPair::from_seed(&[3; 32]).public_key();
    let mut reg = Registration::new(provider(), "k1", key);
    let one = serde_json::to_vec(&reg.to_json()).unwrap();
    assert_eq!(
        TrustStore::from_json_slice(&one, false)
            .unwrap()
            .registrations()
            .len(),
        1
    );
    let twice = serde_json::to_vec(&json!([reg.to_json(), reg.to_json()])).unwrap();
    assert!(TrustStore::from_json_slice(&twice, false).is_err());
    reg.fixture_key_only = true;
    let fixture = serde_json::to_vec(&reg.to_json()).unwrap();
    assert!(TrustStore::from_json_slice(&fixture, false).is_err());
    assert!(TrustStore::from_json_slice(&fixture, true).is_ok());
    let mut empty_scope = reg.to_json();
    empty_scope["user_ids"] = json!([]);
    assert!(TrustStore::from_json_slice(&serde_json::to_vec(&empty_scope).unwrap(), true).is_err());
    let mut bad_key = reg.to_json();
    bad_key["public_key_base64"] = json!("AAAA");
    assert!(TrustStore::from_json_slice(&serde_json::to_vec(&bad_key).unwrap(), true).is_err());
    let round = TrustStore::from_json_slice(
        &serde_json::to_vec(&TrustStore::new(vec![reg.clone()]).unwrap().to_json()).unwrap(),
        true,
    )
    .unwrap();
    assert_eq!(round.registrations(), &[reg]);
}

#[test]
fn second_60_only_where_rfc3339_allows_a_leap_second() {
    let s = setup();
    // 2016-12-31T23:59:60Z was a leap second: it signs and verifies.
    let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
        .and_then(|d| d.and_hms_milli_opt(23, 59, 59, 1_000))
        .unwrap()
        .and_utc();
    let mut input = EnvelopeInput::new(
        provider(),
        binding(),
        Content::Inject("x".into()),
        receipt(),
    );
    input.created_at = leap;
    let bytes = serde_json::to_vec(&sign_envelope(&input, &s.key, "k1").unwrap()).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("\"2016-12-31T23:59:60Z\""));
    verify_envelope(
        &bytes,
        &s.trust,
        &binding(),
        leap + TimeDelta::seconds(10),
        None,
    )
    .unwrap();
    // Anywhere else second 60 names no instant, and the shape check refuses it.
    for bad in [
        "2026-09-01T12:00:60Z",
        "2026-09-01T23:59:60Z",
        "2026-09-30T23:58:60Z",
        "2026-09-30T12:59:60.5Z",
    ] {
        let mut v: Value = serde_json::from_slice(&inject(&s, "x")).unwrap();
        v["created_at"] = json!(bad);
        let err = verify_envelope(
            &serde_json::to_vec(&v).unwrap(),
            &s.trust,
            &binding(),
            at(),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, FailureCode::ContractShape, "{bad}: {err}");
        assert_eq!(err.field, "/created_at", "{bad}");
    }
}

#[test]
fn published_fixture_keys_are_refused_by_their_bytes() {
    for (name, key) in trust::KNOWN_FIXTURE_KEYS {
        let public = crate::signing::PublicKey::from_base64(key).unwrap();
        let reg = Registration::new(provider(), "k1", public);
        assert!(!reg.fixture_key_only, "no marker");
        let file = serde_json::to_vec(&reg.to_json()).unwrap();
        let err = TrustStore::from_json_slice(&file, false).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
        assert!(err.to_string().contains("private seed is public"), "{err}");
        assert!(TrustStore::from_json_slice(&file, true).is_ok());
    }
    // The committed fixture trust file, with its marker removed, is still refused.
    let path = crate::testutil::own_vectors_dir().join("trust.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("fixture_key_only");
    assert!(TrustStore::from_json_slice(&serde_json::to_vec(&v).unwrap(), false).is_err());
    // An ordinary key without the marker is trusted.
    let other = Registration::new(
        provider(),
        "k1",
        SigningKeyPair::from_seed(&[9; 32]).public_key(),
    );
    assert_eq!(other.fixture_key(), None);
}

#[test]
fn a_registration_is_narrowed_only_where_lists_are_given() {
    let key = crate::signing::SigningKeyPair::from_seed(&[3; 32]).public_key();
    let provider = ProviderRef {
        id: "ctx".into(),
        version: "1".into(),
        instance_id: "local".into(),
    };
    let r = Registration::new(provider, "k", key).restricted_to(
        &["w1".into()],
        &[],
        &["u1".into(), "u2".into()],
    );
    assert_eq!(r.workspace_ids, ["w1"]);
    assert_eq!(r.agent_ids, ["*"]);
    assert_eq!(r.user_ids, ["u1", "u2"]);
}
