//! Bearer tokens and registered consumers (seed 004 §4, §7).
//!
//! Tokens are 256 random bits, hex-encoded behind a prefix (`ctx_` for the user's
//! session, `ctxs_` for service tokens). They are opaque: the server keeps only their
//! SHA-256 (a fast hash is right for 256-bit secrets) and the first eight characters
//! after the prefix, which name the token in lists and in revocation. Consumers
//! prove themselves with a name and a secret whose Argon2id hash is stored.

use chrono::Duration;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::pattern::Pattern;
use crate::time::Instant;

use super::keys::random_bytes;

pub const SESSION_PREFIX: &str = "ctx_";
pub const SERVICE_PREFIX: &str = "ctxs_";
/// Characters after the prefix kept to name a token.
pub const SHOWN: usize = 8;

/// What a token may do with fields in its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Read,
    Write,
    ReadWrite,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "read" => Some(Mode::Read),
            "write" => Some(Mode::Write),
            "read-write" => Some(Mode::ReadWrite),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::ReadWrite => "read-write",
        }
    }

    pub fn reads(self) -> bool {
        matches!(self, Mode::Read | Mode::ReadWrite)
    }

    pub fn writes(self) -> bool {
        matches!(self, Mode::Write | Mode::ReadWrite)
    }
}

/// Single-use tokens are spent by their first successful field request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Usage {
    Single,
    Multi,
}

/// Requests per minute a token may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rates {
    pub reads: u32,
    pub writes: u32,
}

impl Default for Rates {
    fn default() -> Self {
        Rates {
            reads: 60,
            writes: 10,
        }
    }
}

/// The server's record of one token (never the token itself).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// `sha256` of the whole token text, hex.
    pub hash: String,
    /// `ctxs_a1b2c3d4`: prefix plus the first characters.
    pub shown: String,
    /// `None` for the user's session.
    pub consumer: Option<String>,
    pub scope: Vec<String>,
    pub mode: Mode,
    pub usage: Usage,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub purpose: Option<String>,
    pub rates: Rates,
    #[serde(default)]
    pub uses: u64,
}

impl TokenRecord {
    pub fn is_session(&self) -> bool {
        self.consumer.is_none()
    }

    pub fn expired(&self, now: Instant) -> bool {
        self.expires_at
            .as_deref()
            .and_then(crate::time::parse_timestamp)
            .is_some_and(|t| t <= now)
    }

    pub fn spent(&self) -> bool {
        self.usage == Usage::Single && self.uses > 0
    }
}

/// Generate a token: its text (shown once), its hash and its shown prefix.
pub fn issue(session: bool) -> crate::error::Result<(Zeroizing<String>, String, String)> {
    let bytes = Zeroizing::new(random_bytes::<32>()?);
    let prefix = if session {
        SESSION_PREFIX
    } else {
        SERVICE_PREFIX
    };
    let token = Zeroizing::new(format!("{prefix}{}", hex::encode(&bytes[..])));
    let shown = token[..prefix.len() + SHOWN].to_string();
    let hash = hash(&token);
    Ok((token, hash, shown))
}

pub fn hash(token: &str) -> String {
    crate::canonical::sha256_hex(token.as_bytes())
}

/// Why a token's scope is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum ScopeError {
    #[error("`scope` is empty")]
    #[diagnostic(help(
        "name the fields the token may reach, e.g. `identity.*`, `addresses.current` or `*`"
    ))]
    Empty,
    #[error("scope entry `{}`: {reason}", super::field::inert(entry))]
    Entry { entry: String, reason: &'static str },
}

/// Parse a scope: `"identity.*, financial.*"` or a list. An entry without a wildcard
/// names a field or a whole subtree (`addresses.current` covers
/// `addresses.current.city`), as in seed 004's examples; `*` is everything.
pub fn parse_scope(entries: &[String]) -> Result<Vec<Pattern>, ScopeError> {
    if entries.is_empty() {
        return Err(ScopeError::Empty);
    }
    entries
        .iter()
        .map(|e| {
            let e = e.trim();
            let text = if e == "*" || e.ends_with(".*") {
                e.to_string()
            } else {
                format!("{e}.*")
            };
            Pattern::parse(&text).map_err(|p| ScopeError::Entry {
                entry: e.to_string(),
                reason: p.reason,
            })
        })
        .collect()
}

/// Split `"a, b"` or take a JSON list.
pub fn scope_entries(v: &serde_json::Value) -> Option<Vec<String>> {
    match v {
        serde_json::Value::String(s) => Some(
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        serde_json::Value::Array(a) => a.iter().map(|e| e.as_str().map(str::to_string)).collect(),
        _ => None,
    }
}

/// Parse a TTL (`30m`, `1h`, `8760h`); at most ten years.
pub fn parse_ttl(s: &str) -> Option<Duration> {
    crate::time::parse_duration(s.trim())
        .filter(|d| *d > Duration::zero() && *d <= Duration::days(3660))
}

/// A registered consumer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Consumer {
    pub name: String,
    pub registered_at: String,
    pub secret: SecretHash,
}

/// Argon2id hash of a consumer secret, with its parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecretHash {
    pub algorithm: String,
    pub memory_kib: u32,
    pub iterations: u32,
    pub salt: String,
    pub hash: String,
}

#[cfg(test)]
thread_local! {
    /// Verifications this thread ran (the service's timing tests count them).
    pub static VERIFICATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// OWASP's Argon2id minimum: consumer secrets are checked on every token request,
/// so they use lighter parameters than the vault key.
const SECRET_MEMORY_KIB: u32 = 19 * 1024;
const SECRET_ITERATIONS: u32 = 2;

fn argon(memory: u32, iterations: u32) -> Result<argon2::Argon2<'static>, argon2::Error> {
    let params = argon2::Params::new(memory, iterations, 1, Some(32))?;
    Ok(argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        params,
    ))
}

impl SecretHash {
    pub fn new(secret: &str) -> crate::error::Result<SecretHash> {
        let salt = random_bytes::<16>()?;
        let mut out = Zeroizing::new([0u8; 32]);
        argon(SECRET_MEMORY_KIB, SECRET_ITERATIONS)
            .and_then(|a| a.hash_password_into(secret.as_bytes(), &salt, &mut out[..]))
            .map_err(|e| crate::error::Error::Invalid(e.to_string()))?;
        Ok(SecretHash {
            algorithm: "argon2id".into(),
            memory_kib: SECRET_MEMORY_KIB,
            iterations: SECRET_ITERATIONS,
            salt: hex::encode(salt),
            hash: hex::encode(&out[..]),
        })
    }

    /// Constant-time comparison of the derived hash.
    pub fn verify(&self, secret: &str) -> bool {
        #[cfg(test)]
        VERIFICATIONS.with(|n| n.set(n.get() + 1));
        let (Ok(salt), Ok(want)) = (hex::decode(&self.salt), hex::decode(&self.hash)) else {
            return false;
        };
        if self.algorithm != "argon2id" || want.len() != 32 {
            return false;
        }
        let mut out = Zeroizing::new([0u8; 32]);
        let ok = argon(self.memory_kib, self.iterations)
            .and_then(|a| a.hash_password_into(secret.as_bytes(), &salt, &mut out[..]))
            .is_ok();
        ok && out.iter().zip(&want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// The stand-in an unknown consumer name is verified against: a hash of a random
/// secret with the parameters of real ones, made once per process.
fn unknown_consumer() -> &'static SecretHash {
    static DUMMY: std::sync::OnceLock<SecretHash> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let secret = hex::encode(random_bytes::<32>().unwrap_or([7u8; 32]));
        SecretHash::new(&secret).unwrap_or(SecretHash {
            algorithm: "argon2id".into(),
            memory_kib: SECRET_MEMORY_KIB,
            iterations: SECRET_ITERATIONS,
            salt: "00".repeat(16),
            hash: "00".repeat(32),
        })
    })
}

/// Check a consumer's name and secret. Exactly one verification runs whether or
/// not the name is registered (an unknown name is checked against a stand-in of
/// the same cost), so the answer's timing does not tell registered names apart.
/// `verify` is [`SecretHash::verify`]; tests count its calls.
pub fn check_consumer<'a>(
    registered: Option<&'a Consumer>,
    secret: &str,
    verify: impl Fn(&SecretHash, &str) -> bool,
) -> Option<&'a Consumer> {
    let hash: &SecretHash = match registered {
        Some(c) => &c.secret,
        None => unknown_consumer(),
    };
    let ok = verify(hash, secret);
    registered.filter(|_| ok)
}

/// A consumer name: what audit entries and `written_by` carry, so plain ASCII.
pub fn valid_consumer_name(s: &str) -> bool {
    let mut c = s.chars();
    s.len() <= 64
        && matches!(c.next(), Some(x) if x.is_ascii_lowercase() || x.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || matches!(x, '-' | '_' | '.'))
        && s != "user"
}

/// Secrets shorter than this are refused at registration.
pub const MIN_SECRET_LEN: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_hashed() {
        let (a, ha, sa) = issue(false).unwrap();
        let (b, _, _) = issue(true).unwrap();
        assert!(a.starts_with("ctxs_") && a.len() == 5 + 64);
        assert!(b.starts_with("ctx_") && b.len() == 4 + 64);
        assert_eq!(hash(&a), ha);
        assert_eq!(sa, a[..13]);
        assert_ne!(a.as_str(), b.as_str());
    }

    #[test]
    fn scope_entries_cover_subtrees() {
        let s = parse_scope(&["addresses.current".into(), "identity.*".into()]).unwrap();
        assert!(s[0].covers("addresses.current.city") && s[0].covers("addresses.current"));
        assert!(!s[0].covers("addresses.history"));
        assert!(s[1].covers("identity.full_name"));
        assert_eq!(
            parse_scope(&["Identity".into()]).unwrap_err(),
            ScopeError::Entry {
                entry: "Identity".into(),
                reason: Pattern::parse("Identity.*").unwrap_err().reason
            }
        );
        assert_eq!(
            parse_scope(&["a\u{202e}".into()]).unwrap_err().to_string(),
            format!(
                "scope entry `a\\u{{202e}}`: {}",
                Pattern::parse("a\u{202e}.*").unwrap_err().reason
            )
        );
        // The hint is a field; a refusal carries it inline.
        assert_eq!(
            crate::error::one_line(&parse_scope(&[]).unwrap_err()),
            "`scope` is empty (name the fields the token may reach, e.g. `identity.*`, `addresses.current` or `*`)"
        );
        let all = parse_scope(&["*".into()]).unwrap();
        assert!(all[0].covers("medical.allergies"));
    }

    #[test]
    fn secrets_verify_only_themselves() {
        let h = SecretHash::new("correct horse battery").unwrap();
        assert!(h.verify("correct horse battery"));
        assert!(!h.verify("correct horse batterz"));
    }

    /// The timing oracle on consumer names: an unknown name costs the same one
    /// Argon2id verification, with the same parameters, as a registered one.
    #[test]
    fn unknown_and_registered_names_cost_one_verification_alike() {
        let known = Consumer {
            name: "tax-agent".into(),
            registered_at: "2026-01-01T00:00:00Z".into(),
            secret: SecretHash::new("a long consumer secret").unwrap(),
        };
        let calls = std::cell::RefCell::new(Vec::new());
        let counting = |h: &SecretHash, s: &str| {
            calls.borrow_mut().push((
                h.algorithm.clone(),
                h.memory_kib,
                h.iterations,
                h.hash.len(),
            ));
            h.verify(s)
        };
        assert!(check_consumer(Some(&known), "a long consumer secret", counting).is_some());
        assert!(check_consumer(Some(&known), "wrong", counting).is_none());
        assert!(check_consumer(None, "a long consumer secret", counting).is_none());
        assert!(check_consumer(None, "", counting).is_none());
        let calls = calls.into_inner();
        assert_eq!(calls.len(), 4, "one verification per request: {calls:?}");
        assert!(calls.iter().all(|c| *c == calls[0]), "{calls:?}");
        assert_eq!(
            calls[0],
            ("argon2id".into(), SECRET_MEMORY_KIB, SECRET_ITERATIONS, 64)
        );
    }

    #[test]
    fn names_and_ttls() {
        assert!(valid_consumer_name("tax-prep-agent"));
        assert!(
            !valid_consumer_name("user")
                && !valid_consumer_name("Tax")
                && !valid_consumer_name("a b")
        );
        assert_eq!(parse_ttl("30m"), Some(Duration::minutes(30)));
        assert_eq!(parse_ttl("8760h"), Some(Duration::hours(8760)));
        assert!(parse_ttl("0s").is_none() && parse_ttl("soon").is_none());
    }
}
