//! The `atmem.delegated-context-provider.v1` envelope: an external provider
//! authorises exact context bytes (or withholding) for one bound turn.
//!
//! [`sign_envelope`] builds and signs an envelope; [`verify_envelope`]
//! applies the contract's checks in the contract's order (shape, binding,
//! trust, time, context bytes, idempotency key, payload hash, signature,
//! acceptance state) and returns the first failure as a [`Failure`] whose
//! [`FailureCode::as_str`] is the contract's code. A verified envelope only
//! proves provider authorisation, never delivery: [`Accepted::evidence`]
//! keeps the two apart.
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub mod context_file;
pub mod request_auth;
mod shape;
mod sign;
mod state;
mod trust;
mod verify;

pub use context_file::ContextFile;
pub use sign::{random_nonce, sign_envelope, Content, EnvelopeInput, SignEnvelopeError};
pub use state::{default_state_dir, StateDir, StateError};
pub use trust::{ConfigError, Registration, TrustStore};
pub use verify::{idempotency_key, signed_payload, verify_envelope, verify_envelope_with};

#[cfg(test)]
mod own_vectors;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;

/// The wire contract id (`contract_id` member).
pub const CONTRACT_ID: &str = "atmem.delegated-context-provider.v1";
/// Domain string prefixed (with one NUL) to the JCS bytes before signing.
pub const SIGNING_DOMAIN: &str = "ATMEM-DELEGATED-CONTEXT-V1";
/// `signature.algorithm`.
pub const ALGORITHM: &str = "ed25519";
/// `signature.profile`.
pub const PROFILE: &str = "ed25519-jcs-subset-v1";
/// `context.encoding`.
pub const CONTEXT_ENCODING: &str = "base64";
/// `context.media_type`.
pub const CONTEXT_MEDIA_TYPE: &str = "text/plain; charset=utf-8";

/// Local limits. The reference profile is the loosest a deployment may use;
/// setters only ever tighten it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    max_lifetime_secs: i64,
    max_future_skew_secs: i64,
    max_context_bytes: u64,
    max_result_bytes: usize,
}

impl Limits {
    /// Five-minute lifetime, 30 s future skew, 262,144 context bytes and
    /// 524,288 bytes of raw result (the AtMem reference profile).
    pub const REFERENCE: Limits = Limits {
        max_lifetime_secs: 300,
        max_future_skew_secs: 30,
        max_context_bytes: 262_144,
        max_result_bytes: 524_288,
    };

    pub fn with_max_lifetime_secs(mut self, secs: i64) -> Self {
        self.max_lifetime_secs = secs.clamp(0, Self::REFERENCE.max_lifetime_secs);
        self
    }
    pub fn with_max_future_skew_secs(mut self, secs: i64) -> Self {
        self.max_future_skew_secs = secs.clamp(0, Self::REFERENCE.max_future_skew_secs);
        self
    }
    pub fn with_max_context_bytes(mut self, bytes: u64) -> Self {
        self.max_context_bytes = bytes.min(Self::REFERENCE.max_context_bytes);
        self
    }
    pub fn max_lifetime_secs(&self) -> i64 {
        self.max_lifetime_secs
    }
    pub fn max_future_skew_secs(&self) -> i64 {
        self.max_future_skew_secs
    }
    pub fn max_context_bytes(&self) -> u64 {
        self.max_context_bytes
    }
    pub fn max_result_bytes(&self) -> usize {
        self.max_result_bytes
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::REFERENCE
    }
}

/// The six host identities a result is bound to. Loadable from a JSON file
/// with exactly these members (unknown members are refused).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    pub run_id: String,
    pub turn_id: String,
    pub session_id: String,
    pub agent_id: String,
    pub user_id: String,
    pub workspace_id: String,
}

impl Binding {
    /// Member names in the contract's order.
    pub const FIELDS: [&'static str; 6] = [
        "run_id",
        "turn_id",
        "session_id",
        "agent_id",
        "user_id",
        "workspace_id",
    ];

    /// Parse a binding file strictly (duplicate keys, unknown members and
    /// malformed ids are errors).
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        let value = crate::canonical::parse_strict(bytes)
            .map_err(|e| ConfigError::new("binding", e.to_string()))?;
        Self::from_value(value)
    }

    /// [`Binding::from_json_slice`] for an already parsed (strict) value.
    pub fn from_value(value: Value) -> Result<Self, ConfigError> {
        let binding: Binding = serde_json::from_value(value)
            .map_err(|e| ConfigError::new("binding", e.to_string()))?;
        for (field, id) in Self::FIELDS.iter().zip(binding.values()) {
            shape::check_id(id, 256).map_err(|why| {
                ConfigError::new("binding", format!("{field}: expected {why}, found {id:?}"))
            })?;
        }
        Ok(binding)
    }

    /// Values in [`Self::FIELDS`] order.
    pub fn values(&self) -> [&str; 6] {
        [
            &self.run_id,
            &self.turn_id,
            &self.session_id,
            &self.agent_id,
            &self.user_id,
            &self.workspace_id,
        ]
    }
}

/// `provider`: who authorised the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderRef {
    pub id: String,
    pub version: String,
    pub instance_id: String,
}

/// `receipt`: the provider's receipt this result cites (opaque to us).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptRef {
    pub id: String,
    pub contract_id: String,
    /// 64 lowercase hex characters.
    pub sha256: String,
}

/// `withhold_reason`: a structured reason, never free text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithholdReason {
    /// `^[A-Z][A-Z0-9_]{2,63}$`, e.g. `REQUIRED_CONTEXT_MISSING`.
    pub code: String,
    pub retryable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Inject,
    Withhold,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Inject => "inject",
            Decision::Withhold => "withhold",
        }
    }
}

/// The contract's failure codes, in check order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureCode {
    ContractShape,
    TurnScopeBinding,
    TrustedProvider,
    TimeOrder,
    Lifetime,
    NotCreatedInFuture,
    NotExpired,
    ContextBase64,
    ContextByteLength,
    ContextUtf8,
    ContextSha256,
    IdempotencyBinding,
    SignedPayloadSha256,
    Signature,
    Turn,
    Nonce,
    Idempotency,
    /// Not a contract code: the acceptance state could not be read or
    /// written, so the result is refused (fail closed).
    StateUnavailable,
}

impl FailureCode {
    pub const ALL: [FailureCode; 18] = [
        FailureCode::ContractShape,
        FailureCode::TurnScopeBinding,
        FailureCode::TrustedProvider,
        FailureCode::TimeOrder,
        FailureCode::Lifetime,
        FailureCode::NotCreatedInFuture,
        FailureCode::NotExpired,
        FailureCode::ContextBase64,
        FailureCode::ContextByteLength,
        FailureCode::ContextUtf8,
        FailureCode::ContextSha256,
        FailureCode::IdempotencyBinding,
        FailureCode::SignedPayloadSha256,
        FailureCode::Signature,
        FailureCode::Turn,
        FailureCode::Nonce,
        FailureCode::Idempotency,
        FailureCode::StateUnavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::ContractShape => "contract_shape",
            FailureCode::TurnScopeBinding => "turn_scope_binding",
            FailureCode::TrustedProvider => "trusted_provider",
            FailureCode::TimeOrder => "time_order",
            FailureCode::Lifetime => "lifetime",
            FailureCode::NotCreatedInFuture => "not_created_in_future",
            FailureCode::NotExpired => "not_expired",
            FailureCode::ContextBase64 => "context_base64",
            FailureCode::ContextByteLength => "context_byte_length",
            FailureCode::ContextUtf8 => "context_utf8",
            FailureCode::ContextSha256 => "context_sha256",
            FailureCode::IdempotencyBinding => "idempotency_binding",
            FailureCode::SignedPayloadSha256 => "signed_payload_sha256",
            FailureCode::Signature => "signature",
            FailureCode::Turn => "turn",
            FailureCode::Nonce => "nonce",
            FailureCode::Idempotency => "idempotency",
            FailureCode::StateUnavailable => "state_unavailable",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rejected result: the contract code plus the field (JSON pointer into
/// the envelope, or a name) and what was expected and found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: FailureCode,
    pub field: String,
    pub expected: String,
    pub actual: String,
}

impl Failure {
    pub fn new(
        code: FailureCode,
        field: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Self {
            code,
            field: field.into(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    /// Machine form: `{code, field, expected, actual}`.
    pub fn to_json(&self) -> Value {
        json!({
            "code": self.code.as_str(),
            "field": self.field,
            "expected": self.expected,
            "actual": self.actual,
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: expected {}, found {}",
            self.code, self.field, self.expected, self.actual
        )
    }
}

impl std::error::Error for Failure {}

/// What the acceptance state said about this result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acceptance {
    /// Verified without a state directory: nothing was reserved.
    NotRecorded,
    /// First acceptance: the turn, nonce and idempotency key are now reserved.
    New,
    /// An exact retry of an already accepted result (accepted again, not
    /// duplicated).
    IdempotentRetry,
}

impl Acceptance {
    pub fn as_str(self) -> &'static str {
        match self {
            Acceptance::NotRecorded => "not_recorded",
            Acceptance::New => "accepted",
            Acceptance::IdempotentRetry => "idempotent_retry",
        }
    }
}

/// A verified result. `context` holds the exact decoded bytes (valid UTF-8,
/// never normalised) for inject; it is `None` for withhold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub decision: Decision,
    pub context: Option<String>,
    /// Lowercase hex SHA-256 of `context` (inject only).
    pub context_sha256: Option<String>,
    pub withhold_reason: Option<WithholdReason>,
    pub provider: ProviderRef,
    pub binding: Binding,
    pub receipt: ReceiptRef,
    pub key_id: String,
    pub source_refs: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub nonce: String,
    pub idempotency_key: String,
    /// Lowercase hex SHA-256 of the JCS form of the whole envelope
    /// (signature included): the provider result digest.
    pub result_sha256: String,
    pub signed_payload_sha256: String,
    pub acceptance: Acceptance,
}

impl Accepted {
    /// The authorisation evidence record of contract §7 (no context bytes):
    /// `provider.authorization` is `verified` or `withheld`; delivery is a
    /// separate record the host writes later.
    pub fn evidence(&self) -> Value {
        json!({
            "contract_id": CONTRACT_ID,
            "provider.authorization": match self.decision {
                Decision::Inject => "verified",
                Decision::Withhold => "withheld",
            },
            "provider": self.provider,
            "provider_result_sha256": self.result_sha256,
            "receipt": { "id": self.receipt.id, "sha256": self.receipt.sha256 },
            "binding": self.binding,
            "decision": self.decision.as_str(),
            "withhold_reason": self.withhold_reason,
            "context_sha256": self.context_sha256,
            "context_byte_length": self.context.as_ref().map(String::len),
            "key_id": self.key_id,
            "acceptance": self.acceptance.as_str(),
        })
    }
}
