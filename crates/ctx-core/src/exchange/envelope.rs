//! The consumer's checks on an authenticated bundle envelope, in the
//! local-core profile's order (§4): size, JSON, envelope shape, the inner
//! record's integrity, local structure, trusted key id, signature, recipient,
//! expiry, revocation. (Replay and the receipt come after, in [`super::consumer`].)
//! Every rejection carries the profile's code; nothing is acted on.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::bundle::{BUNDLE_PREFIX, ENVELOPE_VERSION};
use super::canon;
use super::error::{fail, ClError, ClResult};
use super::policy::is_valid_purpose_code;
use super::schema::{self, ClKind};
use super::wire;
use crate::signing::{PublicKey, Signature};
use crate::time::Instant;

/// Largest serialized envelope a consumer accepts (2 MiB).
pub const MAX_ENVELOPE_BYTES: usize = 2_097_152;

/// A revocation provider: `Ok(true)` revoked, `Ok(false)` not, `Err` cannot tell.
/// Arguments: bundle id, decision id.
pub type RevocationCheck<'a> = &'a dyn Fn(&str, &str) -> ClResult<bool>;

/// What the deployment says about revocation.
pub enum Revocation<'a> {
    /// No provider: revocation is not checked (and not claimed).
    Unchecked,
    /// `Ok(true)`: revoked; `Ok(false)`: not revoked; `Err`: cannot tell.
    Provider(RevocationCheck<'a>),
}

/// Inputs of [`verify`].
pub struct VerifyInput<'a> {
    /// The serialized envelope exactly as received.
    pub text: &'a [u8],
    /// The consumer opening it: must equal the bundle's recipient.
    pub recipient: &'a str,
    pub at: Instant,
    /// Trusted issuer keys by `kid` (preconfigured; never fetched).
    pub trusted: &'a dyn Fn(&str) -> Option<PublicKey>,
    /// Retired HMAC verification, only when explicitly opted into: the key.
    pub legacy_hmac_key: Option<&'a [u8]>,
    pub revocation: Revocation<'a>,
}

/// A bundle that passed every check up to (not including) replay.
#[derive(Debug, Clone)]
pub struct Verified {
    pub envelope: Value,
    pub bundle: Value,
    pub bundle_id: String,
    pub kid: String,
}

/// The profile's structural checks on a bundle record, without the signature.
/// `recipient`/`at`, when given, are enforced too.
pub fn check_bundle(bundle: &Value, recipient: Option<&str>, at: Option<Instant>) -> ClResult<()> {
    if !bundle.is_object() {
        return fail("INVALID_BUNDLE", "bundle: expected a JSON object");
    }
    canon::verify_record(bundle, BUNDLE_PREFIX, "bundle")?;
    let core = wire::to_core(bundle).map_err(|e| ClError::new("INVALID_BUNDLE", e.message))?;
    if core.get("type").and_then(Value::as_str) != Some("scoped_context_bundle") {
        return fail(
            "INVALID_BUNDLE",
            "bundle: `type` must be \"scoped_context_bundle\"",
        );
    }
    if let Some(what) = canon::forbidden_material(bundle) {
        return fail(
            "BUNDLE_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the bundle contains {what}"),
        );
    }
    if let Some(why) = schema::summary(ClKind::ScopedContextBundle, &core) {
        return fail(
            "INVALID_BUNDLE",
            format!("bundle does not have the closed 0.2 shape: {why}"),
        );
    }
    if !core["purpose_code"]
        .as_str()
        .is_some_and(is_valid_purpose_code)
    {
        return fail(
            "INVALID_BUNDLE_PURPOSE_CODE",
            "bundle purpose_code is not registered or `x.` namespaced",
        );
    }
    let r = &core["restrictions"];
    if r["retention_seconds"] != core["retention"]["max_seconds"] {
        return fail(
            "INVALID_BUNDLE_RESTRICTIONS",
            "bundle restrictions.retention_seconds differs from retention.max_seconds",
        );
    }
    let known: Vec<&str> = core["provenance"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for (i, c) in core["context"].as_array().into_iter().flatten().enumerate() {
        let handles = c["provenance_handles"].as_array();
        if handles.is_none_or(|h| {
            h.is_empty()
                || h.iter()
                    .any(|x| !x.as_str().is_some_and(|s| known.contains(&s)))
        }) {
            return fail(
                "BUNDLE_PROVENANCE_INVALID",
                format!("bundle context[{i}] names provenance the bundle does not carry"),
            );
        }
    }
    let Some(expires) = core["expires_at"].as_str().and_then(canon::parse_time) else {
        return fail(
            "INVALID_BUNDLE",
            "bundle expires_at is not an RFC 3339 timestamp",
        );
    };
    if let Some(want) = recipient {
        if core["recipient"].as_str() != Some(want) {
            return fail(
                "BUNDLE_RECIPIENT_MISMATCH",
                format!("the bundle is addressed to another recipient, not {want:?}"),
            );
        }
    }
    if let Some(at) = at {
        if expires <= canon::to_ms(at) {
            return fail(
                "BUNDLE_EXPIRED",
                format!("the bundle expired at {}", canon::iso_ms(&expires)),
            );
        }
    }
    Ok(())
}

/// HMAC-SHA-256 (RFC 2104), for the verify-only legacy reader.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(msg);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn is_b64url(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

enum Auth {
    Ed25519 { kid: String, sig: String },
    Hmac { key_id: String, mac: String },
}

fn read_auth(a: &Value, legacy: bool) -> ClResult<Auth> {
    let bad = || {
        ClError::new(
            "INVALID_BUNDLE_AUTHENTICATION",
            "authentication must be exactly {algorithm: \"Ed25519\", kid, sig} with sig 86 characters of unpadded base64url",
        )
    };
    let m = a.as_object().ok_or_else(bad)?;
    let s = |k: &str| m.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
    match m.get("algorithm").and_then(Value::as_str) {
        Some("Ed25519") => {
            let exact = m.len() == 3 && m.contains_key("kid") && m.contains_key("sig");
            match (exact, s("kid"), s("sig")) {
                (true, Some(kid), Some(sig)) if is_b64url(sig, 86) => Ok(Auth::Ed25519 {
                    kid: kid.to_string(),
                    sig: sig.to_string(),
                }),
                _ => Err(bad()),
            }
        }
        Some("hmac-sha256") if legacy => {
            let exact = m.len() == 3 && m.contains_key("key_id") && m.contains_key("mac");
            match (exact, s("key_id"), s("mac")) {
                (true, Some(k), Some(mac)) if is_b64url(mac, 43) => Ok(Auth::Hmac {
                    key_id: k.to_string(),
                    mac: mac.to_string(),
                }),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// Verify an envelope up to revocation. Nothing is written.
pub fn verify(input: &VerifyInput<'_>) -> ClResult<Verified> {
    if input.text.len() > MAX_ENVELOPE_BYTES {
        return fail(
            "BUNDLE_TOO_LARGE",
            format!(
                "the envelope is {} bytes; the limit is {MAX_ENVELOPE_BYTES}",
                input.text.len()
            ),
        );
    }
    let text = std::str::from_utf8(input.text)
        .map_err(|_| ClError::new("INVALID_BUNDLE_JSON", "the envelope is not UTF-8 text"))?;
    let envelope = crate::json::parse(text).map_err(|e| {
        ClError::new(
            "INVALID_BUNDLE_JSON",
            format!(
                "the envelope is not valid JSON (line {}, column {}: {})",
                e.line, e.column, e.message
            ),
        )
    })?;
    let shape_ok = envelope.as_object().is_some_and(|m| {
        m.len() == 3
            && m.get("envelope_version").and_then(Value::as_u64) == Some(ENVELOPE_VERSION)
            && m.get("bundle").is_some_and(Value::is_object)
            && m.get("authentication").is_some_and(Value::is_object)
    });
    if !shape_ok {
        return fail(
            "INVALID_AUTHENTICATED_BUNDLE",
            "the envelope must be exactly {envelope_version: 1, bundle: {...}, authentication: {...}}",
        );
    }
    let bundle = &envelope["bundle"];
    check_bundle(bundle, None, None)?;
    let auth = read_auth(&envelope["authentication"], input.legacy_hmac_key.is_some())?;
    if let Some(what) = canon::forbidden_material(&envelope) {
        return fail(
            "BUNDLE_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the envelope contains {what}"),
        );
    }
    let signed = canon::canonical_bytes(bundle);
    let kid = match auth {
        Auth::Ed25519 { kid, sig } => {
            let Some(key) = (input.trusted)(&kid) else {
                return fail(
                    "UNTRUSTED_BUNDLE_AUTHORITY",
                    format!("key id {kid:?} is not a trusted bundle issuer here"),
                );
            };
            let ok = URL_SAFE_NO_PAD
                .decode(sig.as_bytes())
                .ok()
                .and_then(|b| Signature::from_bytes(&b).ok())
                .is_some_and(|s| crate::signing::verify_bytes(&signed, &s, &key).is_ok());
            if !ok {
                return fail(
                    "BUNDLE_AUTHENTICATION_FAILED",
                    "the issuer signature does not verify: the bundle was changed or signed by another key",
                );
            }
            kid
        }
        Auth::Hmac { key_id, mac } => {
            let key = input.legacy_hmac_key.unwrap_or_default();
            if (input.trusted)(&key_id).is_none() {
                return fail(
                    "UNTRUSTED_BUNDLE_AUTHORITY",
                    format!("key id {key_id:?} is not a trusted bundle issuer here"),
                );
            }
            let expected = hmac_sha256(key, &signed);
            let ok = URL_SAFE_NO_PAD
                .decode(mac.as_bytes())
                .is_ok_and(|m| constant_time_eq(&m, &expected));
            if !ok {
                return fail(
                    "BUNDLE_AUTHENTICATION_FAILED",
                    "the legacy HMAC does not verify",
                );
            }
            key_id
        }
    };
    check_bundle(bundle, Some(input.recipient), Some(input.at))?;
    let bundle_id = bundle["id"].as_str().unwrap_or_default().to_string();
    let decision_id = bundle["decision_ref"].as_str().unwrap_or_default();
    if let Revocation::Provider(p) = &input.revocation {
        match p(&bundle_id, decision_id) {
            Ok(false) => {}
            Ok(true) => return fail("BUNDLE_REVOKED", "the bundle has been revoked"),
            Err(e) => {
                return fail(
                    "REVOCATION_CHECK_FAILED",
                    format!("revocation status could not be verified ({e}); refusing to proceed"),
                )
            }
        }
    }
    Ok(Verified {
        bundle: bundle.clone(),
        envelope,
        bundle_id,
        kid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
