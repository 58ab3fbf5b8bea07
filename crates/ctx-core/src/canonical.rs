//! Strict JSON parsing and RFC 8785 canonical JSON (JCS).
//!
//! Signed objects must have exactly one meaning. `serde_json` keeps the last
//! of two duplicate keys and turns integers beyond `u64` into lossy floats,
//! so a signer and a verifier could disagree about what was signed. This
//! module parses with duplicate keys rejected and unsafe integers refused,
//! and canonicalises with JCS for hashing and signing.
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// Largest integer magnitude that IEEE-754 doubles (and so every JCS
/// implementation) represent exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a document was refused although it may be syntactically valid JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// An object repeats a key; last-key-wins is not an acceptable reading.
    DuplicateKey(String),
    /// An integer literal outside ±(2^53 − 1): it would not survive JCS.
    UnsafeInteger(String),
    /// A number that is NaN or infinite (cannot occur in JSON text, only in
    /// values built in memory).
    NonFiniteNumber,
    /// The JCS serializer itself failed (message kept for diagnosis).
    Unserialisable(String),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::DuplicateKey(k) => write!(f, "duplicate object key {k:?}"),
            Violation::UnsafeInteger(n) => write!(
                f,
                "integer {n} is outside the exactly representable range ±{MAX_SAFE_INTEGER}"
            ),
            Violation::NonFiniteNumber => write!(f, "number is not finite"),
            Violation::Unserialisable(m) => write!(f, "JCS serializer failed: {m}"),
        }
    }
}

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
/// outside ±(2^53 − 1), invalid UTF-8 and lone surrogate escapes.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, CanonicalError> {
    let violation = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = StrictSeed {
        violation: &violation,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = (e.line(), e.column());
            return Err(match violation.into_inner() {
                Some(violation) => CanonicalError::Refused {
                    violation,
                    line,
                    column,
                },
                None => CanonicalError::Syntax {
                    message: strip_position(&e.to_string()),
                    line,
                    column,
                },
            });
        }
    };
    // serde_json hands integers beyond u64/i64 to the visitor as floats, so
    // the visitor cannot tell `18446744073709551616` from `1.8e19`: scan the
    // (now known to be valid) text for integer literals instead.
    if let Some((offset, literal)) = first_unsafe_integer_literal(bytes) {
        let (line, column) = line_column(bytes, offset);
        return Err(CanonicalError::Refused {
            violation: Violation::UnsafeInteger(literal),
            line,
            column,
        });
    }
    Ok(value)
}

/// RFC 8785 canonical bytes of `value`. Refuses integers outside
/// ±(2^53 − 1), which JCS would silently round.
pub fn jcs(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    check_numbers(value, &mut String::new())?;
    serde_jcs::to_vec(value).map_err(|e| CanonicalError::Value {
        violation: Violation::Unserialisable(e.to_string()),
        path: "/".into(),
    })
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `sha256:<hex>`, the digest form used in OpenContext objects and receipts.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// `sha256:<hex>` of the JCS form of `value`.
pub fn digest_value(value: &Value) -> Result<String, CanonicalError> {
    Ok(digest(&jcs(value)?))
}

fn check_numbers(value: &Value, path: &mut String) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            if let Some(v) = check_number(n) {
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

fn check_number(n: &Number) -> Option<Violation> {
    if let Some(u) = n.as_u64() {
        (u > MAX_SAFE_INTEGER).then(|| Violation::UnsafeInteger(u.to_string()))
    } else if let Some(i) = n.as_i64() {
        (i.unsigned_abs() > MAX_SAFE_INTEGER).then(|| Violation::UnsafeInteger(i.to_string()))
    } else {
        match n.as_f64() {
            Some(f) if f.is_finite() => None,
            _ => Some(Violation::NonFiniteNumber),
        }
    }
}

/// Builds a `Value`, recording the first profile violation before failing.
#[derive(Clone, Copy)]
struct StrictSeed<'a> {
    violation: &'a RefCell<Option<Violation>>,
}

impl StrictSeed<'_> {
    fn refuse<E: de::Error>(&self, v: Violation) -> E {
        let msg = v.to_string();
        self.violation.borrow_mut().get_or_insert(v);
        E::custom(msg)
    }

    fn number<E: de::Error>(&self, n: Number) -> Result<Value, E> {
        match check_number(&n) {
            Some(v) => Err(self.refuse(v)),
            None => Ok(Value::Number(n)),
        }
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.number(Number::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.number(Number::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(n) => self.number(n),
            None => Err(self.refuse(Violation::NonFiniteNumber)),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(self.refuse(Violation::DuplicateKey(key)));
            }
            let value = access.next_value_seed(self)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// Byte offset and text of the first integer literal (no fraction, no
/// exponent) whose magnitude exceeds [`MAX_SAFE_INTEGER`]. Assumes `bytes`
/// is valid JSON.
fn first_unsafe_integer_literal(bytes: &[u8]) -> Option<(usize, String)> {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &bytes[start..i];
                let integral = !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integral {
                    let digits = token.strip_prefix(b"-").unwrap_or(token);
                    let unsafe_int = digits.len() > 16
                        || std::str::from_utf8(digits)
                            .ok()
                            .and_then(|d| d.parse::<u64>().ok())
                            .is_none_or(|n| n > MAX_SAFE_INTEGER);
                    if unsafe_int {
                        return Some((start, String::from_utf8_lossy(token).into_owned()));
                    }
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(p) => message[..p].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
