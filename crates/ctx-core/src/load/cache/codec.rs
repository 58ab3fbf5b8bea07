//! Serde adapters that let parse results go through a compact binary encoding
//! (postcard), which — unlike JSON — needs every type to say exactly what it is:
//! JSON values as a tagged tree, instants and durations as integers. Used through
//! `#[serde(with = ...)]` on the object types, so a field added to them is cached
//! without touching this module.

use chrono::{DateTime, Duration, Utc};
use serde::de::Error as _;
use serde::ser::{Error as _, SerializeSeq, SerializeTuple};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use crate::diag::{Code, Diagnostic, Severity};

/// A JSON value as postcard can carry it: the variant is explicit.
#[derive(Deserialize)]
enum Tree {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    Arr(Vec<Tree>),
    Obj(Vec<(String, Tree)>),
}

impl Tree {
    fn into_value(self) -> Result<Value, &'static str> {
        Ok(match self {
            Tree::Null => Value::Null,
            Tree::Bool(b) => Value::Bool(b),
            Tree::U64(n) => Value::Number(n.into()),
            Tree::I64(n) => Value::Number(n.into()),
            Tree::F64(f) => Value::Number(Number::from_f64(f).ok_or("a non-finite number")?),
            Tree::Str(s) => Value::String(s),
            Tree::Arr(items) => Value::Array(
                items
                    .into_iter()
                    .map(Tree::into_value)
                    .collect::<Result<_, _>>()?,
            ),
            Tree::Obj(pairs) => {
                let mut map = Map::with_capacity(pairs.len());
                for (k, v) in pairs {
                    map.insert(k, v.into_value()?);
                }
                Value::Object(map)
            }
        })
    }
}

/// Serializes a borrowed value exactly as [`Tree`] deserializes (same variant indexes).
struct TreeRef<'a>(&'a Value);

impl Serialize for TreeRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const NAME: &str = "Tree";
        match self.0 {
            Value::Null => s.serialize_unit_variant(NAME, 0, "Null"),
            Value::Bool(b) => s.serialize_newtype_variant(NAME, 1, "Bool", b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    s.serialize_newtype_variant(NAME, 2, "U64", &u)
                } else if let Some(i) = n.as_i64() {
                    s.serialize_newtype_variant(NAME, 3, "I64", &i)
                } else {
                    let f = n
                        .as_f64()
                        .ok_or_else(|| S::Error::custom("unrepresentable number"))?;
                    s.serialize_newtype_variant(NAME, 4, "F64", &f)
                }
            }
            Value::String(t) => s.serialize_newtype_variant(NAME, 5, "Str", t),
            Value::Array(items) => s.serialize_newtype_variant(NAME, 6, "Arr", &Items(items)),
            Value::Object(map) => s.serialize_newtype_variant(NAME, 7, "Obj", &Pairs(map)),
        }
    }
}

struct Items<'a>(&'a [Value]);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&TreeRef(v))?;
        }
        seq.end()
    }
}

struct Pairs<'a>(&'a Map<String, Value>);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (k, v) in self.0 {
            seq.serialize_element(&Pair(k, v))?;
        }
        seq.end()
    }
}

struct Pair<'a>(&'a str, &'a Value);

impl Serialize for Pair<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(self.0)?;
        t.serialize_element(&TreeRef(self.1))?;
        t.end()
    }
}

/// `Option<serde_json::Value>` fields.
pub mod json_opt {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(TreeRef).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Option::<Tree>::deserialize(d)?
            .map(|t| t.into_value().map_err(D::Error::custom))
            .transpose()
    }
}

/// A content blob: `Option<Value>` on its own, so a load that does not need
/// content never decodes it.
pub fn encode_content(v: Option<&Value>) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_stdvec(&v.map(TreeRef))
}

/// The content back: None if the blob is not one [`encode_content`] wrote.
pub fn decode_content(bytes: &[u8]) -> Option<Option<Value>> {
    match postcard::from_bytes::<Option<Tree>>(bytes).ok()? {
        None => Some(None),
        Some(t) => t.into_value().ok().map(Some),
    }
}

/// Is this encoded content text (a string)? Such blobs go to the prose region,
/// which loads that keep only the content's kind never read.
pub fn is_prose(encoded: &[u8]) -> bool {
    // `Some` (1), then the variant index of `Tree::Str` (5): postcard's layout.
    encoded.starts_with(&[1, TREE_STR])
}

/// `Tree::Str`'s variant index, as postcard writes it (one byte below 128).
const TREE_STR: u8 = 5;

/// An instant as whole seconds and nanoseconds: exact, and no text to parse.
pub mod instant {
    use super::*;

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        (t.timestamp(), t.timestamp_subsec_nanos()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let (secs, nanos) = <(i64, u32)>::deserialize(d)?;
        DateTime::from_timestamp(secs, nanos)
            .ok_or_else(|| D::Error::custom("instant out of range"))
    }
}

/// `Option<Instant>` fields.
pub mod instant_opt {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        t.map(|t| (t.timestamp(), t.timestamp_subsec_nanos()))
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<(i64, u32)>::deserialize(d)?
            .map(|(secs, nanos)| {
                DateTime::from_timestamp(secs, nanos)
                    .ok_or_else(|| D::Error::custom("instant out of range"))
            })
            .transpose()
    }
}

/// `Option<chrono::Duration>` fields, as seconds and nanoseconds.
pub mod duration_opt {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        v.map(|d| (d.num_seconds(), d.subsec_nanos())).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<(i64, i32)>::deserialize(d)?
            .map(|(secs, nanos)| {
                Duration::try_seconds(secs)
                    .and_then(|s| s.checked_add(&Duration::nanoseconds(nanos.into())))
                    .ok_or_else(|| D::Error::custom("duration out of range"))
            })
            .transpose()
    }
}

/// A finding as the cache stores it (the JSON form skips empty fields, which a
/// binary encoding cannot). Written from a borrowed [`Diagnostic`] by [`DiagOut`].
#[derive(Deserialize)]
pub struct DiagIn {
    code: u16,
    severity: u8,
    message: String,
    id: Option<String>,
    ids: Vec<String>,
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    field: Option<String>,
    #[serde(with = "json_opt")]
    expected: Option<Value>,
    #[serde(with = "json_opt")]
    actual: Option<Value>,
    remediation: Option<String>,
}

/// [`DiagIn`], field for field, from a borrowed finding.
#[derive(Serialize)]
pub struct DiagOut<'a> {
    code: u16,
    severity: u8,
    message: &'a str,
    id: &'a Option<String>,
    ids: &'a [String],
    file: &'a Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    field: &'a Option<String>,
    #[serde(serialize_with = "json_opt_ref")]
    expected: &'a Option<Value>,
    #[serde(serialize_with = "json_opt_ref")]
    actual: &'a Option<Value>,
    remediation: &'a Option<String>,
}

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

impl<'a> DiagOut<'a> {
    pub fn of(d: &'a Diagnostic) -> DiagOut<'a> {
        // Destructured in full: a new field fails to compile here until it is cached.
        let Diagnostic {
            code,
            severity,
            message,
            id,
            ids,
            file,
            line,
            column,
            field,
            expected,
            actual,
            remediation,
        } = d;
        DiagOut {
            code: Code::ALL.iter().position(|c| c == code).unwrap_or(0) as u16,
            severity: SEVERITIES.iter().position(|s| s == severity).unwrap_or(2) as u8,
            message,
            id,
            ids,
            file,
            line: *line,
            column: *column,
            field,
            expected,
            actual,
            remediation,
        }
    }
}

impl DiagIn {
    /// The finding back, or None when the code or severity is not one this build knows.
    pub fn into_diag(self) -> Option<Diagnostic> {
        Some(Diagnostic {
            code: *Code::ALL.get(usize::from(self.code))?,
            severity: *SEVERITIES.get(usize::from(self.severity))?,
            message: self.message,
            id: self.id,
            ids: self.ids,
            file: self.file,
            line: self.line,
            column: self.column,
            field: self.field,
            expected: self.expected,
            actual: self.actual,
            remediation: self.remediation,
        })
    }
}

/// [`json_opt`] for a borrowed field.
fn json_opt_ref<S: Serializer>(v: &&Option<Value>, s: S) -> Result<S::Ok, S::Error> {
    json_opt::serialize(v, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Holder {
        #[serde(with = "json_opt")]
        v: Option<Value>,
    }

    #[test]
    fn json_values_round_trip_exactly() {
        let text = r#"{"b": 1, "a": [null, true, -3, 18446744073709551615, 1.5, 1.0, -0.0, 1e300, "x\u0000y", {"z": {}}], "": ""}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        for v in [Some(v), None, Some(Value::String("é".into()))] {
            let h = Holder { v };
            let bytes = postcard::to_stdvec(&h).unwrap();
            let back: Holder = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(back, h);
            // Key order and number spelling survive too.
            assert_eq!(
                serde_json::to_string(&back.v).unwrap(),
                serde_json::to_string(&h.v).unwrap()
            );
        }
    }

    #[test]
    fn only_text_content_counts_as_prose() {
        let prose = Value::String("a long Markdown body".into());
        let bytes = encode_content(Some(&prose)).unwrap();
        assert!(is_prose(&bytes));
        assert_eq!(decode_content(&bytes), Some(Some(prose)));
        let structured: Value = serde_json::from_str(r#"{"ssn": "1", "tags": ["x"]}"#).unwrap();
        assert!(!is_prose(&encode_content(Some(&structured)).unwrap()));
        let top_level_list = Value::Array(vec![Value::String("s".into())]);
        assert!(!is_prose(&encode_content(Some(&top_level_list)).unwrap()));
        assert!(!is_prose(&encode_content(None).unwrap()));
        assert!(!is_prose(&[9, 9]), "not a content blob");
    }
}
