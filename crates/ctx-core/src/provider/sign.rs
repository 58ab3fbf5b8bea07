//! Building and signing envelopes (the provider side).
use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SubsecRound, TimeDelta, Utc};
use serde_json::{json, Map, Value};

use super::shape::check_shape;
use super::verify::{check_window, idempotency_key, rfc3339, signed_payload};
use super::{
    Binding, Failure, Limits, ProviderRef, ReceiptRef, WithholdReason, ALGORITHM, CONTEXT_ENCODING,
    CONTEXT_MEDIA_TYPE, CONTRACT_ID, PROFILE,
};
use crate::canonical;
use crate::signing::{self, SigningKeyPair};

/// What the provider decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Authorise exactly these bytes (nonempty UTF-8, at most 262,144 bytes),
    /// e.g. a bundle's Markdown or JSON rendering.
    Inject(String),
    /// Authorise withholding, with a structured reason.
    Withhold(WithholdReason),
}

/// Everything a signed envelope says, except the signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeInput {
    pub provider: ProviderRef,
    pub binding: Binding,
    pub content: Content,
    pub receipt: ReceiptRef,
    /// Opaque identifiers (≤ 32, unique); may be empty.
    pub source_refs: Vec<String>,
    /// Issue time; written with whole-second precision.
    pub created_at: DateTime<Utc>,
    /// Seconds until `expires_at` (1..=300).
    pub lifetime_secs: i64,
    /// `None` draws 128 random bits; fixed values are for test vectors.
    pub nonce: Option<String>,
}

impl EnvelopeInput {
    /// Issued now, valid for 120 s, random nonce, no source refs.
    pub fn new(
        provider: ProviderRef,
        binding: Binding,
        content: Content,
        receipt: ReceiptRef,
    ) -> Self {
        Self {
            provider,
            binding,
            content,
            receipt,
            source_refs: Vec::new(),
            created_at: Utc::now(),
            lifetime_secs: 120,
            nonce: None,
        }
    }
}

/// The input cannot make a valid envelope, or randomness failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignEnvelopeError {
    /// The built envelope would fail verification at this check.
    Invalid(Failure),
    Random(String),
}

impl fmt::Display for SignEnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignEnvelopeError::Invalid(failure) => write!(f, "cannot sign envelope: {failure}"),
            SignEnvelopeError::Random(e) => write!(f, "random source failed: {e}"),
        }
    }
}

impl std::error::Error for SignEnvelopeError {}

/// 128 bits from the OS CSPRNG as 22 URL-safe base64 characters.
pub fn random_nonce() -> Result<String, SignEnvelopeError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| SignEnvelopeError::Random(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Build, check and sign an envelope with `key` registered as `key_id`.
/// The result passes the shape and window checks of the verifier (an input
/// that would not is refused), and its JSON member order is the JCS order.
pub fn sign_envelope(
    input: &EnvelopeInput,
    key: &SigningKeyPair,
    key_id: &str,
) -> Result<Value, SignEnvelopeError> {
    let invalid = SignEnvelopeError::Invalid;
    let created = input.created_at.trunc_subsecs(0);
    let expires = created + TimeDelta::seconds(input.lifetime_secs);
    check_window(created, expires, &Limits::REFERENCE).map_err(invalid)?;
    let nonce = match &input.nonce {
        Some(n) => n.clone(),
        None => random_nonce()?,
    };
    let (decision, context, reason) = match &input.content {
        Content::Inject(text) => {
            let bytes = text.as_bytes();
            let context = json!({
                "byte_length": bytes.len(),
                "bytes_base64": signing::encode_base64(bytes),
                "encoding": CONTEXT_ENCODING,
                "media_type": CONTEXT_MEDIA_TYPE,
                "sha256": canonical::sha256_hex(bytes),
            });
            ("inject", context, Value::Null)
        }
        Content::Withhold(reason) => ("withhold", Value::Null, json!(reason)),
    };
    let mut envelope = json!({
        "binding": input.binding,
        "context": context,
        "contract_id": CONTRACT_ID,
        "created_at": rfc3339(created),
        "decision": decision,
        "expires_at": rfc3339(expires),
        "idempotency_key": "",
        "nonce": nonce,
        "provider": input.provider,
        "receipt": input.receipt,
        "source_refs": input.source_refs,
        "withhold_reason": reason,
    });
    let key_value = idempotency_key(&envelope).map_err(|e| {
        invalid(Failure::new(
            super::FailureCode::ContractShape,
            "/",
            "a canonicalisable envelope",
            e.to_string(),
        ))
    })?;
    envelope["idempotency_key"] = Value::String(key_value);
    let signed = attach_signature(envelope, key, key_id)?;
    check_shape(&signed, &Limits::REFERENCE).map_err(invalid)?;
    Ok(sorted(signed))
}

/// Add the `signature` member to an unsigned envelope value, whatever it
/// contains (tests use this to sign deliberately bad envelopes).
pub(crate) fn attach_signature(
    mut envelope: Value,
    key: &SigningKeyPair,
    key_id: &str,
) -> Result<Value, SignEnvelopeError> {
    let input = signed_payload(&envelope).map_err(|e| {
        SignEnvelopeError::Invalid(Failure::new(
            super::FailureCode::ContractShape,
            "/",
            "a canonicalisable envelope",
            e.to_string(),
        ))
    })?;
    let signature = signing::sign_bytes(&input, key);
    envelope["signature"] = json!({
        "algorithm": ALGORITHM,
        "key_id": key_id,
        "profile": PROFILE,
        "signed_payload_sha256": canonical::sha256_hex(&input),
        "value_base64": signature.to_base64(),
    });
    Ok(envelope)
}

/// The same value with object members in sorted order at every depth, so
/// a pretty-printed envelope reads like its canonical form.
pub(crate) fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
