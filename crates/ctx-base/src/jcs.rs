//! The one RFC 8785 (JCS) serializer, streaming.
//!
//! Bundle digests cover tens of megabytes at 100k objects; serializing into an
//! intermediate buffer doubled peak memory. This writer emits canonical bytes
//! straight into any `io::Write` (a hasher, for digests); [`to_vec`] is the same
//! writer into memory, which signing uses through [`crate::canonical::jcs`].

use std::io::{self, Write};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Write `v` as canonical JSON.
pub fn write<W: Write>(v: &Value, w: &mut W) -> io::Result<()> {
    match v {
        Value::Null => w.write_all(b"null"),
        Value::Bool(true) => w.write_all(b"true"),
        Value::Bool(false) => w.write_all(b"false"),
        Value::Number(n) => number(n, w),
        Value::String(s) => string(s, w),
        Value::Array(items) if items.len() >= PARALLEL_ITEMS => array_parallel(items, w),
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

/// Arrays at least this long (a bundle's objects, excluded list, provenance) are
/// serialized a batch at a time, the items of a batch in parallel, and written in
/// order: the same bytes, and the digest of a 100k-object bundle no longer waits
/// on one core.
const PARALLEL_ITEMS: usize = 256;
/// Items per batch: bounds the canonical bytes held at once to a few megabytes.
const BATCH_ITEMS: usize = 1024;

fn array_parallel<W: Write>(items: &[Value], w: &mut W) -> io::Result<()> {
    use rayon::prelude::*;
    w.write_all(b"[")?;
    for (b, batch) in items.chunks(BATCH_ITEMS).enumerate() {
        let parts: Vec<Vec<u8>> = batch.par_iter().map(to_vec).collect();
        for (i, part) in parts.iter().enumerate() {
            if b > 0 || i > 0 {
                w.write_all(b",")?;
            }
            w.write_all(part)?;
        }
    }
    w.write_all(b"]")
}

/// The canonical bytes of `v`.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, &mut out).expect("writing to memory cannot fail");
    out
}

/// RFC 8785 §3.2.2.3: a number is an IEEE-754 double written as ECMAScript
/// writes it. Integers a double holds exactly are written directly (the common
/// case, and the same digits); larger ones are rounded to a double first, as
/// every other JCS implementation does.
fn number<W: Write>(n: &serde_json::Number, w: &mut W) -> io::Result<()> {
    const EXACT: u64 = 1 << 53;
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT {
            return write!(w, "{i}");
        }
    } else if let Some(u) = n.as_u64() {
        if u <= EXACT {
            return write!(w, "{u}");
        }
    }
    let f = n.as_f64().unwrap_or(0.0);
    let mut buf = ryu_js::Buffer::new();
    w.write_all(buf.format(f).as_bytes())
}

/// Write an object, leaving out the keys in `skip`.
fn object<W: Write>(
    map: &serde_json::Map<String, Value>,
    skip: &[&str],
    w: &mut W,
) -> io::Result<()> {
    let mut entries: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .collect();
    // RFC 8785 §3.2.3: sort by UTF-16 code units (keys are unique, so an unstable
    // sort gives the one order). Entries carry their values: no lookup per key.
    entries.sort_unstable_by(|(a, _), (b, _)| {
        if a.is_ascii() && b.is_ascii() {
            a.cmp(b)
        } else {
            a.encode_utf16().cmp(b.encode_utf16())
        }
    });
    w.write_all(b"{")?;
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        string(k, w)?;
        w.write_all(b":")?;
        write(v, w)?;
    }
    w.write_all(b"}")
}

fn string<W: Write>(s: &str, w: &mut W) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Most bytes need no escape: one comparison each before the full match.
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
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
    format!(
        "{}{}",
        crate::canonical::DIGEST_PREFIX,
        hex::encode(w.hasher.finalize())
    )
}

#[cfg(test)]
#[path = "jcs_tests.rs"]
mod tests;
