//! The verification pipeline, in the contract's check order. The order is
//! part of the contract: a mutation that breaks several checks (a changed
//! `expires_at` also breaks the signature) must report the earliest one.
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value};

use super::shape::{check_shape, ContextFields, Envelope};
use super::state::AcceptKeys;
use super::{
    Acceptance, Accepted, Binding, Failure, FailureCode, Limits, StateDir, TrustStore, CONTRACT_ID,
    SIGNING_DOMAIN,
};
use crate::canonical::{self, CanonicalError};
use crate::signing::{self, Signature, SignatureError};

/// Verify a received result with the reference [`Limits`]. See
/// [`verify_envelope_with`].
pub fn verify_envelope(
    bytes: &[u8],
    trust: &TrustStore,
    binding: &Binding,
    at: DateTime<Utc>,
    state: Option<&StateDir>,
) -> Result<Accepted, Failure> {
    verify_envelope_with(bytes, trust, binding, at, state, &Limits::REFERENCE)
}

/// Verify the exact received bytes of a result for the host's
/// authenticated `binding` at time `at`. With `state`, a verified result is
/// also atomically accepted (one result per turn; exact retries are
/// idempotent); without it nothing is reserved
/// ([`super::Acceptance::NotRecorded`]).
pub fn verify_envelope_with(
    bytes: &[u8],
    trust: &TrustStore,
    binding: &Binding,
    at: DateTime<Utc>,
    state: Option<&StateDir>,
    limits: &Limits,
) -> Result<Accepted, Failure> {
    // 1. Shape: size, strict parse (duplicate keys), closed schema.
    if bytes.len() > limits.max_result_bytes() {
        return Err(Failure::new(
            FailureCode::ContractShape,
            "/",
            format!("at most {} bytes", limits.max_result_bytes()),
            format!("{} bytes", bytes.len()),
        ));
    }
    let value = canonical::parse_strict(bytes).map_err(|e| {
        Failure::new(
            FailureCode::ContractShape,
            "/",
            "JSON without duplicate keys or unsafe integers",
            e.to_string(),
        )
    })?;
    let env = check_shape(&value, limits)?;

    // 2. Every host identity binding, exactly.
    check_binding(&env.binding, binding)?;

    // 3. Trusted registration, scope and key.
    let registration = trust.find(&env.provider, &env.signature.key_id, &env.binding)?;

    // 4. Time window.
    check_time(env.created_at, env.expires_at, at, limits)?;

    // 5. Exact context bytes.
    let context = env.context.as_ref().map(check_context).transpose()?;

    // 6. Idempotency key.
    let expected_key = idempotency_key(&value).map_err(|e| internal(&e))?;
    if expected_key != env.idempotency_key {
        return Err(Failure::new(
            FailureCode::IdempotencyBinding,
            "/idempotency_key",
            expected_key,
            env.idempotency_key,
        ));
    }

    // 7. signed_payload_sha256 over the domain-separated signing input.
    let input = signed_payload(&value).map_err(|e| internal(&e))?;
    let payload_sha256 = canonical::sha256_hex(&input);
    if payload_sha256 != env.signature.signed_payload_sha256 {
        return Err(Failure::new(
            FailureCode::SignedPayloadSha256,
            "/signature/signed_payload_sha256",
            payload_sha256,
            env.signature.signed_payload_sha256,
        ));
    }

    // 8. Ed25519, strictly.
    let signature = Signature::from_base64(&env.signature.value_base64).map_err(|e| {
        Failure::new(
            FailureCode::Signature,
            "/signature/value_base64",
            "canonical base64 of 64 bytes",
            e.to_string(),
        )
    })?;
    signing::verify_bytes(&input, &signature, &registration.public_key).map_err(|_| {
        Failure::new(
            FailureCode::Signature,
            "/signature/value_base64",
            format!("a valid Ed25519 signature by key {:?}", registration.key_id),
            "a signature that does not verify",
        )
    })?;

    // 9. Atomic acceptance.
    let result_sha256 = canonical::sha256_hex(&canonical::jcs(&value).map_err(|e| internal(&e))?);
    let acceptance = match state {
        None => Acceptance::NotRecorded,
        Some(dir) => dir.accept(
            &accept_keys(&env).map_err(|e| internal(&e))?,
            &result_sha256,
        )?,
    };

    Ok(Accepted {
        decision: env.decision,
        context_sha256: context
            .as_ref()
            .map(|c| canonical::sha256_hex(c.as_bytes())),
        context,
        withhold_reason: env.withhold_reason,
        provider: env.provider,
        binding: env.binding,
        receipt: env.receipt,
        key_id: env.signature.key_id,
        source_refs: env.source_refs,
        created_at: env.created_at,
        expires_at: env.expires_at,
        nonce: env.nonce,
        idempotency_key: env.idempotency_key,
        result_sha256,
        signed_payload_sha256: payload_sha256,
        acceptance,
    })
}

/// `"dcp-" + sha256(JCS({contract_id, provider, binding, decision,
/// context_sha256, receipt_id, receipt_sha256, source_refs,
/// withhold_reason}))` of an envelope (its own key, times, nonce and
/// signature are excluded, so an exact retry keeps the key).
pub fn idempotency_key(envelope: &Value) -> Result<String, CanonicalError> {
    let get = |k: &str| envelope.get(k).cloned().unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("contract_id".into(), Value::String(CONTRACT_ID.into()));
    m.insert("provider".into(), get("provider"));
    m.insert("binding".into(), get("binding"));
    m.insert("decision".into(), get("decision"));
    let context_sha256 = envelope
        .get("context")
        .and_then(|c| c.get("sha256"))
        .cloned()
        .unwrap_or(Value::Null);
    m.insert("context_sha256".into(), context_sha256);
    let receipt = envelope.get("receipt");
    let member = |k: &str| {
        receipt
            .and_then(|r| r.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    m.insert("receipt_id".into(), member("id"));
    m.insert("receipt_sha256".into(), member("sha256"));
    m.insert("source_refs".into(), get("source_refs"));
    m.insert("withhold_reason".into(), get("withhold_reason"));
    Ok(format!(
        "dcp-{}",
        canonical::sha256_hex(&canonical::jcs(&Value::Object(m))?)
    ))
}

/// The signing input of an envelope: `ATMEM-DELEGATED-CONTEXT-V1 ‖ 0x00 ‖
/// JCS(envelope without its signature member)`.
pub fn signed_payload(envelope: &Value) -> Result<Vec<u8>, SignatureError> {
    let mut unsigned = envelope.clone();
    if let Some(map) = unsigned.as_object_mut() {
        map.remove("signature");
    }
    signing::signing_input(SIGNING_DOMAIN, &unsigned)
}

fn check_binding(found: &Binding, expected: &Binding) -> Result<(), Failure> {
    for ((field, want), got) in Binding::FIELDS
        .iter()
        .zip(expected.values())
        .zip(found.values())
    {
        if want != got {
            return Err(Failure::new(
                FailureCode::TurnScopeBinding,
                format!("/binding/{field}"),
                format!("{want:?} (host binding)"),
                format!("{got:?}"),
            ));
        }
    }
    Ok(())
}

/// Order and lifetime of a window (also used when signing).
pub(crate) fn check_window(
    created: DateTime<Utc>,
    expires: DateTime<Utc>,
    limits: &Limits,
) -> Result<(), Failure> {
    if created >= expires {
        return Err(Failure::new(
            FailureCode::TimeOrder,
            "/expires_at",
            format!("a time after created_at {}", rfc3339(created)),
            rfc3339(expires),
        ));
    }
    let max = limits.max_lifetime_secs();
    if expires - created > TimeDelta::seconds(max) {
        return Err(Failure::new(
            FailureCode::Lifetime,
            "/expires_at",
            format!("at most {max} s after created_at"),
            format!("{} s", (expires - created).num_seconds()),
        ));
    }
    Ok(())
}

fn check_time(
    created: DateTime<Utc>,
    expires: DateTime<Utc>,
    now: DateTime<Utc>,
    limits: &Limits,
) -> Result<(), Failure> {
    check_window(created, expires, limits)?;
    let skew = limits.max_future_skew_secs();
    if created > now + TimeDelta::seconds(skew) {
        return Err(Failure::new(
            FailureCode::NotCreatedInFuture,
            "/created_at",
            format!(
                "at most {skew} s after the verification time {}",
                rfc3339(now)
            ),
            rfc3339(created),
        ));
    }
    if now >= expires {
        return Err(Failure::new(
            FailureCode::NotExpired,
            "/expires_at",
            format!("a time after the verification time {}", rfc3339(now)),
            rfc3339(expires),
        ));
    }
    Ok(())
}

/// Decode once, then check length, UTF-8 and digest of the exact bytes.
fn check_context(c: &ContextFields) -> Result<String, Failure> {
    const MAX_TEXT: usize = 349_528;
    let text = &c.bytes_base64;
    let bytes = if (4..=MAX_TEXT).contains(&text.len()) {
        signing::decode_base64_strict(text).map_err(|e| e.to_string())
    } else {
        Err(format!("{} characters", text.len()))
    }
    .map_err(|why| {
        Failure::new(
            FailureCode::ContextBase64,
            "/context/bytes_base64",
            format!("canonical padded base64 of 4..={MAX_TEXT} characters"),
            why,
        )
    })?;
    if bytes.len() as u64 != c.byte_length {
        return Err(Failure::new(
            FailureCode::ContextByteLength,
            "/context/byte_length",
            format!("{} (decoded length)", bytes.len()),
            c.byte_length.to_string(),
        ));
    }
    let digest = canonical::sha256_hex(&bytes);
    let text = String::from_utf8(bytes).map_err(|e| {
        Failure::new(
            FailureCode::ContextUtf8,
            "/context/bytes_base64",
            "valid UTF-8 bytes",
            format!("invalid UTF-8 after byte {}", e.utf8_error().valid_up_to()),
        )
    })?;
    if digest != c.sha256 {
        return Err(Failure::new(
            FailureCode::ContextSha256,
            "/context/sha256",
            format!("{digest} (SHA-256 of the decoded bytes)"),
            c.sha256.clone(),
        ));
    }
    Ok(text)
}

fn accept_keys(env: &Envelope) -> Result<AcceptKeys, CanonicalError> {
    let binding = serde_json::to_value(&env.binding).expect("strings serialise");
    let instance = &env.provider.instance_id;
    Ok(AcceptKeys {
        turn: String::from_utf8(canonical::jcs(&binding)?).expect("JCS is UTF-8"),
        nonce: format!("{instance}\0{}", env.nonce),
        idempotency: format!("{instance}\0{}", env.idempotency_key),
    })
}

fn internal(e: &dyn std::fmt::Display) -> Failure {
    // Unreachable after the shape check (no numbers beyond the safe range);
    // kept as a closed failure rather than a panic.
    Failure::new(
        FailureCode::ContractShape,
        "/",
        "a canonicalisable envelope",
        e.to_string(),
    )
}

pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}
