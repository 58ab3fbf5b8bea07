//! The fields a bundle carries from an object's effective document, read without
//! building the rest of it: a bundle of 38,000 objects parsed every document into
//! a whole map (every key hashed, every value allocated) only to keep a few.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::CARRIED;

/// Slots: [`CARRIED`] in order, then these two.
pub const SOURCES: usize = CARRIED.len();
pub const EXTENSIONS: usize = CARRIED.len() + 1;
const SLOTS: usize = CARRIED.len() + 2;

pub type Fields = [Option<Value>; SLOTS];

fn slot(key: &str) -> Option<usize> {
    match key {
        "sources" => Some(SOURCES),
        "extensions" => Some(EXTENSIONS),
        k => CARRIED.iter().position(|c| *c == k),
    }
}

/// The carried fields of a map (a decrypted private object's fields).
pub fn from_map(m: &Map<String, Value>) -> Fields {
    let mut out = Fields::default();
    for (k, v) in m {
        if let Some(i) = slot(k) {
            out[i] = Some(v.clone());
        }
    }
    out
}

/// The carried fields of a compact JSON document; other values are skipped
/// unbuilt. Not an object (never, for a loaded object): no fields, as before.
pub fn from_doc(doc: &str) -> Fields {
    let mut de = serde_json::Deserializer::from_str(doc);
    de.deserialize_map(DocVisitor).unwrap_or_default()
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object's effective document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut out = Fields::default();
        while let Some(key) = map.next_key_seed(KeySlot)? {
            match key {
                // A repeated key: the last one wins, as in a parsed map.
                Some(i) => out[i] = Some(map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// A key, as its slot (None: not carried), without allocating it.
struct KeySlot;

impl<'de> DeserializeSeed<'de> for KeySlot {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySlot {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(slot(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_same_values_as_a_parsed_map() {
        let doc = r#"{"id":"a.b","permissions":{"read":["x"]},"title":"T\u00e9","tags":["p","q"],"version":3,"sources":[{"uri":"u"}],"extensions":{"x.y":{"n":1.5}},"summary":"s","summary":"last"}"#;
        let parsed: Map<String, Value> = serde_json::from_str(doc).unwrap();
        let fields = from_doc(doc);
        for (i, key) in CARRIED
            .iter()
            .chain(["sources", "extensions"].iter())
            .enumerate()
        {
            assert_eq!(fields[i].as_ref(), parsed.get(*key), "{key}");
        }
        assert_eq!(from_map(&parsed), fields);
        assert!(from_doc("[1]").iter().all(Option::is_none));
    }
}
