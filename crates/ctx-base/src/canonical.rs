//! The signed-document profile: strict parsing, RFC 8785 canonical bytes, and
//! the one digest function.
//!
//! Signed objects must have exactly one meaning. `serde_json` keeps the last
//! of two duplicate keys and turns integers beyond `u64` into lossy floats,
//! so a signer and a verifier could disagree about what was signed. Parsing
//! (the one reader, [`crate::json`]) rejects duplicate keys and unsafe
//! integers; canonical bytes come from the one JCS writer, [`crate::jcs`].
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::json;

pub use crate::json::{Violation, MAX_SAFE_INTEGER};

/// A strict-parse or canonicalisation failure; positions are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// Not JSON at all (syntax, invalid UTF-8, lone surrogate escape, depth).
    #[error("invalid JSON at line {line} column {column}: {message}")]
    Syntax {
        message: String,
        line: usize,
        column: usize,
    },
    /// Valid JSON that this profile refuses.
    #[error("refused JSON at line {line} column {column}: {violation}")]
    Refused {
        violation: Violation,
        line: usize,
        column: usize,
    },
    /// An in-memory value that cannot be canonicalised (`path` is a JSON pointer).
    #[error("cannot canonicalise {path}: {violation}")]
    Value { violation: Violation, path: String },
}

impl CanonicalError {
    /// The profile violation, if this is not a plain syntax error.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            CanonicalError::Syntax { .. } => None,
            CanonicalError::Refused { violation, .. } | CanonicalError::Value { violation, .. } => {
                Some(violation)
            }
        }
    }
}

/// Parse UTF-8 JSON text, rejecting duplicate keys at any depth, integers
/// outside ±(2^53 − 1), invalid UTF-8, lone surrogate escapes and a BOM: the
/// signed-document profile of the one JSON reader ([`crate::json`]).
pub fn parse_strict(bytes: &[u8]) -> Result<Value, CanonicalError> {
    let profile = json::Profile {
        safe_integers: true,
        allow_bom: false,
    };
    json::parse_bytes(bytes, profile).map_err(|f| match f {
        json::Failure::Syntax {
            message,
            line,
            column,
        } => CanonicalError::Syntax {
            message,
            line,
            column,
        },
        json::Failure::Refused {
            violation,
            line,
            column,
        } => CanonicalError::Refused {
            violation,
            line,
            column,
        },
    })
}

/// RFC 8785 canonical bytes of `value`. Refuses integers outside
/// ±(2^53 − 1), which JCS would silently round.
pub fn jcs(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    check_numbers(value, &mut String::new())?;
    Ok(crate::jcs::to_vec(value))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `sha256:<hex>`, the digest form used in OpenContext objects, sources,
/// receipts and bundles: the one digest function.
pub fn digest(bytes: &[u8]) -> String {
    format!("{DIGEST_PREFIX}{}", sha256_hex(bytes))
}

/// The algorithm prefix of every digest ctx writes.
pub const DIGEST_PREFIX: &str = "sha256:";

/// `sha256:<hex>` of the JCS form of `value` (numbers checked, then streamed
/// into the hasher).
pub fn digest_value(value: &Value) -> Result<String, CanonicalError> {
    check_numbers(value, &mut String::new())?;
    Ok(crate::jcs::sha256(value))
}

/// The `bundle_id` ctx derives from a bundle's digest: `ocb_` and the first 24
/// hex digits. The one derivation, used when compiling and when verifying.
pub fn bundle_id(digest: &str) -> String {
    let hex = digest.strip_prefix(DIGEST_PREFIX).unwrap_or(digest);
    format!("ocb_{}", hex.get(..24).unwrap_or(hex))
}

fn check_numbers(value: &Value, path: &mut String) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            if let Some(v) = json::number_violation(n) {
                return Err(CanonicalError::Value {
                    violation: v,
                    path: if path.is_empty() {
                        "/".into()
                    } else {
                        path.clone()
                    },
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                check_numbers(item, path)?;
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                check_numbers(item, path)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests;
