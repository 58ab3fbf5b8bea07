//! The one JSON reader. Duplicate keys are an error at any depth, never
//! last-wins, so a document has exactly one meaning for every reader. Two
//! profiles share the parser: authored files ([`parse`]: objects, manifests,
//! suites) may start with a UTF-8 BOM like YAML and Markdown files may; signed
//! documents ([`crate::canonical::parse_strict`]) must be exactly JSON and may not
//! hold integers that RFC 8785 would round.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Largest integer magnitude that IEEE-754 doubles (and so every JCS
/// implementation) represent exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A JSON syntax or policy error with a 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

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

/// What the parser refuses beyond JSON syntax and duplicate keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Profile {
    /// Integers outside ±(2^53 − 1) are refused (signed documents).
    pub safe_integers: bool,
    /// A leading UTF-8 byte order mark is skipped (authored files).
    pub allow_bom: bool,
}

/// A failed parse: plain syntax, or a profile violation; positions are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Syntax {
        message: String,
        line: usize,
        column: usize,
    },
    Refused {
        violation: Violation,
        line: usize,
        column: usize,
    },
}

/// Parse authored JSON text (an object file, a manifest, a suite): duplicate
/// keys are rejected at any depth; a leading BOM is ignored.
pub fn parse(text: &str) -> Result<Value, JsonError> {
    let profile = Profile {
        safe_integers: false,
        allow_bom: true,
    };
    parse_bytes(text.as_bytes(), profile).map_err(|f| match f {
        Failure::Syntax {
            message,
            line,
            column,
        } => JsonError {
            message,
            line: line.max(1) as u32,
            column: column.max(1) as u32,
        },
        Failure::Refused {
            violation,
            line,
            column,
        } => JsonError {
            message: match violation {
                Violation::DuplicateKey(k) => format!("duplicate key `{k}`"),
                other => other.to_string(),
            },
            line: line.max(1) as u32,
            column: column.max(1) as u32,
        },
    })
}

/// [`parse`] for bytes that must also be UTF-8 (a file read from disk).
pub fn parse_slice(bytes: &[u8]) -> Result<Value, JsonError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => {
            let (line, column) = line_column(bytes, e.valid_up_to());
            Err(JsonError {
                message: "invalid UTF-8".into(),
                line: line as u32,
                column: column as u32,
            })
        }
    }
}

/// The parser behind both profiles.
pub(crate) fn parse_bytes(bytes: &[u8], profile: Profile) -> Result<Value, Failure> {
    let bytes = match (profile.allow_bom, bytes.strip_prefix(b"\xEF\xBB\xBF")) {
        (true, Some(rest)) => rest,
        _ => bytes,
    };
    let violation = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict {
        violation: &violation,
        safe_integers: profile.safe_integers,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = (e.line(), e.column());
            return Err(match violation.into_inner() {
                Some(violation) => Failure::Refused {
                    violation,
                    line,
                    column,
                },
                None => Failure::Syntax {
                    message: strip_position(&e.to_string()),
                    line,
                    column,
                },
            });
        }
    };
    // serde_json hands integers beyond u64/i64 to the visitor as floats, so the
    // visitor cannot tell `18446744073709551616` from `1.8e19`: scan the (now known
    // to be valid) text for integer literals instead.
    if profile.safe_integers {
        if let Some((offset, literal)) = first_unsafe_integer_literal(bytes) {
            let (line, column) = line_column(bytes, offset);
            return Err(Failure::Refused {
                violation: Violation::UnsafeInteger(literal),
                line,
                column,
            });
        }
    }
    Ok(value)
}

/// Is this number refused by the signed profile (or not representable at all)?
pub(crate) fn number_violation(n: &Number) -> Option<Violation> {
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
struct Strict<'a> {
    violation: &'a RefCell<Option<Violation>>,
    safe_integers: bool,
}

impl Strict<'_> {
    fn refuse<E: de::Error>(&self, v: Violation) -> E {
        let msg = v.to_string();
        self.violation.borrow_mut().get_or_insert(v);
        E::custom(msg)
    }

    fn number<E: de::Error>(&self, n: Number) -> Result<Value, E> {
        match number_violation(&n) {
            Some(Violation::UnsafeInteger(_)) if !self.safe_integers => Ok(Value::Number(n)),
            Some(v) => Err(self.refuse(v)),
            None => Ok(Value::Number(n)),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
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

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
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

/// serde_json appends " at line L column C"; positions are kept separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(p) => message[..p].to_owned(),
        None => message.to_owned(),
    }
}

/// One top-level member of a compact JSON object that ctx wrote itself (an
/// object's effective document): its value, without building the rest. Absent
/// when the text is not an object or has no such key.
pub fn member(doc: &str, key: &str) -> Option<Value> {
    // serde_json writes every key as `"key":`; a key without that text is absent.
    // Keys needing escapes are always looked for the slow way.
    let plain = !key.contains(['"', '\\']) && !key.chars().any(char::is_control);
    if plain && !doc.contains(&format!("\"{key}\":")) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(doc);
    de::Deserializer::deserialize_map(&mut de, Member(key)).ok()?
}

/// Visits a map, keeping the value of one key and skipping the others unbuilt.
struct Member<'k>(&'k str);

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_key) = map.next_key_seed(KeyIs(self.0))? {
            if is_key {
                found = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Deserializes a key as whether it equals the one looked for (no allocation).
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_reads_one_key_like_a_whole_parse() {
        let doc = r#"{"id":"a.b","redact":[{"path":"x","mode":"hash"}],"note":"say \"redact\": no","t\"q":1}"#;
        let whole: Map<String, Value> = serde_json::from_str(doc).unwrap();
        for key in ["id", "redact", "note", "t\"q", "missing", "redac"] {
            assert_eq!(member(doc, key), whole.get(key).cloned(), "{key}");
        }
        // Escaped key text inside a value is not a key.
        assert_eq!(member(r#"{"a":"\"b\":1"}"#, "b"), None);
        assert_eq!(member("[1]", "a"), None);
        assert_eq!(member("not json", "a"), None);
    }

    #[test]
    fn duplicate_keys_are_rejected_with_position() {
        let err = parse("{\n  \"a\": 1,\n  \"b\": {\"x\": 1, \"x\": 2}\n}").unwrap_err();
        assert!(err.message.contains("duplicate key `x`"), "{err:?}");
        assert_eq!(err.line, 3);
    }

    #[test]
    fn keeps_order_and_values() {
        let v = parse(r#"{"z": 1, "a": [true, null, "s", 1.5]}"#).unwrap();
        assert_eq!(
            v.as_object().unwrap().keys().collect::<Vec<_>>(),
            vec!["z", "a"]
        );
        assert!(parse("{} trailing").is_err());
    }

    #[test]
    fn authored_files_may_start_with_a_bom_signed_ones_may_not() {
        assert_eq!(parse("\u{feff}{\"a\": 1}").unwrap()["a"], 1);
        assert!(parse("{\"a\": \u{feff}1}").is_err());
        let signed = Profile {
            safe_integers: true,
            allow_bom: false,
        };
        assert!(parse_bytes("\u{feff}{}".as_bytes(), signed).is_err());
    }

    #[test]
    fn big_integers_are_kept_by_authored_files_and_refused_by_signed_ones() {
        assert!(parse("{\"n\": 9007199254740993}").is_ok());
        let signed = Profile {
            safe_integers: true,
            allow_bom: false,
        };
        match parse_bytes(b"{\"n\": 9007199254740993}", signed) {
            Err(Failure::Refused {
                violation: Violation::UnsafeInteger(n),
                ..
            }) => assert_eq!(n, "9007199254740993"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lone_surrogates_are_not_json_text() {
        for bad in [r#""\ud800""#, r#""\udc00x""#, r#"{"\ud83d": 1}"#] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), "\u{1f600}");
    }
}
