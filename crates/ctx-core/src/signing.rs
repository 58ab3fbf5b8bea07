//! Ed25519 keys and domain-separated signatures over canonical JSON.
//!
//! Signing input = ASCII domain string ‖ 0x00 ‖ JCS(value) (the scheme of
//! the delegated-provider contract §4). The domain keeps a signature made
//! for one object type from being replayed as another; JCS makes the bytes
//! independent of key order and whitespace. Verification is strict
//! (`verify_strict`: canonical `S`, no small-order keys or `R`).
//!
//! Private keys are stored as unencrypted PKCS#8 v1 PEM
//! (`-----BEGIN PRIVATE KEY-----`), the form `openssl genpkey -algorithm
//! ed25519` writes, so keys can be inspected and made with standard tools.
//! Public keys travel as standard padded base64 of the raw 32 bytes, as in
//! the manifest extension `ctx.keys: { <id>: { ed25519: "<base64>" } }`.
use std::fmt;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::Value;
use zeroize::Zeroizing;

use crate::canonical::{self, CanonicalError};

/// Length of a raw Ed25519 public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Length of a raw Ed25519 signature.
pub const SIGNATURE_LEN: usize = 64;

/// DER prefix of a PKCS#8 v1 `OneAsymmetricKey` holding an Ed25519 seed
/// (RFC 8410 §7): SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 },
/// OCTET STRING { OCTET STRING (32) } }.
const PKCS8_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";
/// Key files are tiny; refuse to slurp anything larger.
const MAX_KEY_FILE: u64 = 4096;

/// A problem with key material; messages never contain secret bytes.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("operating system random source failed: {0}")]
    Random(String),
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: refusing to overwrite an existing key file")]
    Exists { path: PathBuf },
    #[error("{path}: private key file has mode {mode:03o}; expected no group/other access (0600)")]
    Permissions { path: PathBuf, mode: u32 },
    #[error("{what}: expected {expected}, found {actual}")]
    Format {
        what: &'static str,
        expected: String,
        actual: String,
    },
}

/// Why a signature could not be made or did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("signing domain {domain:?}: expected 1..=64 printable ASCII characters")]
    Domain { domain: String },
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    #[error("{what}: expected {expected}, found {actual}")]
    Format {
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("Ed25519 signature does not verify under key {key}")]
    Mismatch { key: String },
}

/// An Ed25519 key pair. The secret is zeroised on drop and never printed.
#[derive(Clone)]
pub struct SigningKeyPair {
    key: SigningKey,
}

impl fmt::Debug for SigningKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeyPair")
            .field("public", &self.public_key().to_base64())
            .finish_non_exhaustive()
    }
}

impl SigningKeyPair {
    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut()).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Self::from_seed(&seed))
    }

    /// The key whose RFC 8032 secret is `seed` (deterministic; for tests and
    /// for keys held elsewhere).
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(seed),
        }
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.key.verifying_key())
    }

    /// PKCS#8 v1 PEM text (secret; write it only with [`Self::save`]).
    pub fn to_pem(&self) -> Zeroizing<String> {
        let mut der = Zeroizing::new(Vec::with_capacity(48));
        der.extend_from_slice(&PKCS8_ED25519_PREFIX);
        der.extend_from_slice(self.key.as_bytes());
        let body = Zeroizing::new(STANDARD.encode(der.as_slice()));
        Zeroizing::new(format!("{PEM_BEGIN}\n{}\n{PEM_END}\n", body.as_str()))
    }

    /// Parse an unencrypted PKCS#8 v1 Ed25519 PEM (what [`Self::to_pem`] and
    /// `openssl genpkey -algorithm ed25519` write). Anything else is refused.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let format = |expected: &str, actual: &str| KeyError::Format {
            what: "private key PEM",
            expected: expected.into(),
            actual: actual.into(),
        };
        let mut lines = text.lines().map(str::trim_end).filter(|l| !l.is_empty());
        match lines.next() {
            Some(PEM_BEGIN) => {}
            Some(_) => return Err(format(PEM_BEGIN, "another first line (not shown)")),
            None => return Err(format(PEM_BEGIN, "empty text")),
        }
        let mut body = Zeroizing::new(String::new());
        let mut ended = false;
        for line in lines.by_ref() {
            if line == PEM_END {
                ended = true;
                break;
            }
            body.push_str(line);
        }
        if !ended {
            return Err(format(PEM_END, "end of text"));
        }
        if lines.next().is_some() {
            return Err(format(
                "nothing after the PEM block",
                "more lines (not shown)",
            ));
        }
        let der = Zeroizing::new(
            decode_base64_strict(&body).map_err(|_| format("base64 body", "invalid base64"))?,
        );
        if der.len() != 48 || der[..16] != PKCS8_ED25519_PREFIX {
            return Err(format(
                "an unencrypted PKCS#8 v1 Ed25519 key (48 DER bytes)",
                &format!("{} DER bytes of another key type or form", der.len()),
            ));
        }
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&der[16..]);
        Ok(Self::from_seed(&seed))
    }

    /// Write the PEM atomically to a new file with mode 0600; refuses to
    /// overwrite an existing file.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        let io = |e: std::io::Error| KeyError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let pem = Zeroizing::new(self.to_pem());
        crate::fs::write_atomic(
            path,
            pem.as_bytes(),
            crate::fs::Mode::Private,
            crate::fs::Existing::Refuse,
        )
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                KeyError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                io(e)
            }
        })
    }

    /// Read a key written by [`Self::save`]. On Unix, refuses files that
    /// group or others can access (as ssh does), so a leaked mode is noticed.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        use std::io::Read;
        let io = |e: std::io::Error| KeyError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyError::Permissions {
                    path: path.to_path_buf(),
                    mode,
                });
            }
        }
        if meta.len() > MAX_KEY_FILE {
            return Err(KeyError::Format {
                what: "private key file size",
                expected: format!("at most {MAX_KEY_FILE} bytes"),
                actual: format!("{} bytes", meta.len()),
            });
        }
        let mut text = Zeroizing::new(String::new());
        file.take(MAX_KEY_FILE)
            .read_to_string(&mut text)
            .map_err(io)?;
        Self::from_pem(&text)
    }
}

/// An Ed25519 public key that passed point decoding and is not of small
/// order (weak keys would let one signature verify for many messages).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.to_base64())
    }
}

impl PublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SignatureError> {
        let raw: [u8; PUBLIC_KEY_LEN] = bytes.try_into().map_err(|_| SignatureError::Format {
            what: "Ed25519 public key",
            expected: format!("{PUBLIC_KEY_LEN} bytes"),
            actual: format!("{} bytes", bytes.len()),
        })?;
        let key = VerifyingKey::from_bytes(&raw).map_err(|_| SignatureError::Format {
            what: "Ed25519 public key",
            expected: "a valid curve point".into(),
            actual: "bytes that do not decode to a point".into(),
        })?;
        // Only the canonical encoding of a point is accepted, so one key has
        // one text form (y >= p would otherwise decode too).
        if key.to_edwards().compress().to_bytes() != raw {
            return Err(SignatureError::Format {
                what: "Ed25519 public key",
                expected: "the canonical encoding of a curve point".into(),
                actual: "a non-canonical encoding".into(),
            });
        }
        if key.is_weak() {
            return Err(SignatureError::Format {
                what: "Ed25519 public key",
                expected: "a key of large prime order".into(),
                actual: "a small-order (weak) key".into(),
            });
        }
        Ok(Self(key))
    }

    /// From canonical padded standard base64 of the raw 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, SignatureError> {
        let bytes = decode_base64_strict(text).map_err(|e| SignatureError::Format {
            what: "Ed25519 public key base64",
            expected: "canonical padded standard base64".into(),
            actual: e.to_string(),
        })?;
        Self::from_bytes(&bytes)
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0.as_bytes())
    }

    pub fn to_bytes(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.0.to_bytes()
    }

    /// `sha256:<hex>` of the raw key: a stable name for display and logs.
    pub fn fingerprint(&self) -> String {
        canonical::digest(self.0.as_bytes())
    }

    /// The manifest `ctx.keys` entry: `{ "ed25519": "<base64>" }`.
    pub fn to_manifest_entry(&self) -> Value {
        serde_json::json!({ "ed25519": self.to_base64() })
    }

    /// Read a manifest `ctx.keys` entry; unknown members are refused.
    pub fn from_manifest_entry(entry: &Value) -> Result<Self, SignatureError> {
        let format = |actual: String| SignatureError::Format {
            what: "ctx.keys entry",
            expected: "an object with exactly one member \"ed25519\" (base64 string)".into(),
            actual,
        };
        let map = entry
            .as_object()
            .ok_or_else(|| format(json_kind(entry).into()))?;
        if let Some(k) = map.keys().find(|k| *k != "ed25519") {
            return Err(format(format!("unknown member {k:?}")));
        }
        match map.get("ed25519") {
            Some(Value::String(s)) => Self::from_base64(s),
            Some(v) => Err(format(format!("\"ed25519\" is {}", json_kind(v)))),
            None => Err(format("no \"ed25519\" member".into())),
        }
    }
}

/// A raw Ed25519 signature.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature([u8; SIGNATURE_LEN]);

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({})", self.to_base64())
    }
}

impl Signature {
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SignatureError> {
        bytes
            .try_into()
            .map(Self)
            .map_err(|_| SignatureError::Format {
                what: "Ed25519 signature",
                expected: format!("{SIGNATURE_LEN} bytes"),
                actual: format!("{} bytes", bytes.len()),
            })
    }

    /// From canonical padded standard base64 (86 characters + `==`).
    pub fn from_base64(text: &str) -> Result<Self, SignatureError> {
        let bytes = decode_base64_strict(text).map_err(|e| SignatureError::Format {
            what: "Ed25519 signature base64",
            expected: "canonical padded standard base64".into(),
            actual: e.to_string(),
        })?;
        Self::from_bytes(&bytes)
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    pub fn to_bytes(&self) -> [u8; SIGNATURE_LEN] {
        self.0
    }
}

/// `domain ‖ 0x00 ‖ JCS(value)`. The domain must be 1–64 printable ASCII
/// characters so it can never contain the separator.
pub fn signing_input(domain: &str, value: &Value) -> Result<Vec<u8>, SignatureError> {
    let ok = !domain.is_empty()
        && domain.len() <= 64
        && domain.bytes().all(|b| (0x20..0x7f).contains(&b));
    if !ok {
        return Err(SignatureError::Domain {
            domain: domain.into(),
        });
    }
    let body = canonical::jcs(value)?;
    let mut input = Vec::with_capacity(domain.len() + 1 + body.len());
    input.extend_from_slice(domain.as_bytes());
    input.push(0);
    input.extend_from_slice(&body);
    Ok(input)
}

/// Sign `value` under `domain`. To sign an object that carries its own
/// signature member, pass the object with that member removed.
pub fn sign(
    domain: &str,
    value: &Value,
    key: &SigningKeyPair,
) -> Result<Signature, SignatureError> {
    Ok(sign_bytes(&signing_input(domain, value)?, key))
}

/// Sign an already domain-separated signing input.
pub fn sign_bytes(input: &[u8], key: &SigningKeyPair) -> Signature {
    use ed25519_dalek::Signer;
    Signature(key.key.sign(input).to_bytes())
}

/// Strictly verify `signature` over `domain ‖ 0x00 ‖ JCS(value)`.
pub fn verify(
    domain: &str,
    value: &Value,
    signature: &Signature,
    key: &PublicKey,
) -> Result<(), SignatureError> {
    verify_bytes(&signing_input(domain, value)?, signature, key)
}

/// Strictly verify `signature` over raw signing-input bytes.
pub fn verify_bytes(
    input: &[u8],
    signature: &Signature,
    key: &PublicKey,
) -> Result<(), SignatureError> {
    let sig = ed25519_dalek::Signature::from_bytes(&signature.0);
    key.0
        .verify_strict(input, &sig)
        .map_err(|_| SignatureError::Mismatch {
            key: key.fingerprint(),
        })
}

/// Why a base64 string is not canonical.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Base64Error {
    #[error("not padded standard base64: {0}")]
    Invalid(String),
    #[error("non-canonical base64 (re-encodes differently)")]
    NonCanonical,
}

/// Decode canonical padded standard base64 (RFC 4648 §4): no whitespace,
/// required padding, zero padding bits, so every byte string has exactly
/// one accepted text form.
pub fn decode_base64_strict(text: &str) -> Result<Vec<u8>, Base64Error> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| Base64Error::Invalid(e.to_string()))?;
    if STANDARD.encode(&bytes) != text {
        return Err(Base64Error::NonCanonical);
    }
    Ok(bytes)
}

/// Canonical padded standard base64.
pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
