//! Streaming RFC 8785 (JCS) serialization of JSON values.
//!
//! Bundle digests cover tens of megabytes at 100k objects; serializing into an
//! intermediate buffer (as `serde_jcs` does) doubled peak memory. This writer emits
//! canonical bytes straight into any `io::Write` — a hasher, for digests.
//! `canonical::jcs` remains the reference; a test keeps the two identical.

use std::io::{self, Write};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Write `v` as canonical JSON.
pub fn write<W: Write>(v: &Value, w: &mut W) -> io::Result<()> {
    match v {
        Value::Null => w.write_all(b"null"),
        Value::Bool(true) => w.write_all(b"true"),
        Value::Bool(false) => w.write_all(b"false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                write!(w, "{i}")
            } else if let Some(u) = n.as_u64() {
                write!(w, "{u}")
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                let mut buf = ryu_js::Buffer::new();
                w.write_all(buf.format(f).as_bytes())
            }
        }
        Value::String(s) => string(s, w),
        Value::Array(items) => {
            w.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write(item, w)?;
            }
            w.write_all(b"]")
        }
        Value::Object(map) => object(map, &[], w),
    }
}

/// Write an object, leaving out the keys in `skip`.
fn object<W: Write>(
    map: &serde_json::Map<String, Value>,
    skip: &[&str],
    w: &mut W,
) -> io::Result<()> {
    let mut keys: Vec<&String> = map.keys().filter(|k| !skip.contains(&k.as_str())).collect();
    // RFC 8785 §3.2.3: sort by UTF-16 code units.
    keys.sort_by(|a, b| {
        if a.is_ascii() && b.is_ascii() {
            a.cmp(b)
        } else {
            a.encode_utf16().cmp(b.encode_utf16())
        }
    });
    w.write_all(b"{")?;
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        string(k, w)?;
        w.write_all(b":")?;
        write(&map[k], w)?;
    }
    w.write_all(b"}")
}

fn string<W: Write>(s: &str, w: &mut W) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        match esc {
            Some(e) => w.write_all(e)?,
            None => write!(w, "\\u{b:04x}")?,
        }
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

/// Feeds a hasher through a buffer, so small writes stay cheap.
struct HashWriter {
    hasher: Sha256,
    buf: Vec<u8>,
}

impl Write for HashWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.buf.capacity() {
            self.hasher.update(&self.buf);
            self.buf.clear();
            if data.len() > self.buf.capacity() {
                self.hasher.update(data);
                return Ok(data.len());
            }
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hasher.update(&self.buf);
        self.buf.clear();
        Ok(())
    }
}

/// `sha256:<hex>` of the canonical form of `v`, without materialising it.
pub fn sha256(v: &Value) -> String {
    sha256_without(v, &[])
}

/// Like [`sha256`], leaving out the top-level keys in `skip` (e.g. a digest's own field).
pub fn sha256_without(v: &Value, skip: &[&str]) -> String {
    let mut w = HashWriter {
        hasher: Sha256::new(),
        buf: Vec::with_capacity(64 * 1024),
    };
    match v {
        Value::Object(map) => object(map, skip, &mut w),
        other => write(other, &mut w),
    }
    .expect("writing to a hasher cannot fail");
    w.flush().expect("flushing a hasher cannot fail");
    format!("sha256:{}", hex::encode(w.hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jcs(v: &Value) -> String {
        let mut out = Vec::new();
        write(v, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn matches_the_reference_serializer() {
        let cases = [
            json!({"b": 1, "a": [true, null, "x\u{1}\n\"\\/é😀"], "€": 2, "\u{10000}": 3, "\u{ffff}": 4}),
            json!([
                1e30,
                4.5,
                0.002,
                -0.0,
                333_333_333.333_333_3,
                1e-7,
                9007199254740991i64,
                -5
            ]),
            json!({"nested": {"z": {"y": [], "x": {}}}, "": ""}),
        ];
        for v in cases {
            let ours = jcs(&v);
            let reference = String::from_utf8(crate::canonical::jcs(&v).unwrap()).unwrap();
            assert_eq!(ours, reference);
            assert_eq!(sha256(&v), crate::canonical::digest(reference.as_bytes()));
        }
    }

    #[test]
    fn rfc8785_key_order() {
        // Keys sorted by UTF-16 code units: the supplementary-plane key sorts before U+FFFF... but after ASCII.
        let v = json!({"\u{20ac}": "Euro", "\r": "CR", "\u{fb33}": "Hebrew", "1": "One", "\u{1f600}": "Emoji", "\u{80}": "Control", "\u{f6}": "Latin"});
        let text = jcs(&v);
        let order: Vec<&str> = [
            "\\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}",
        ]
        .to_vec();
        let mut last = 0;
        for k in order {
            let pos = text.find(&format!("\"{k}\"")).unwrap();
            assert!(pos >= last, "{text}");
            last = pos;
        }
    }
}
