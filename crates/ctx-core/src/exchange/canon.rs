//! The local-core profile's canonical values, hashes, record ids and times.
//!
//! C(value): compact JSON, member names sorted by UTF-16 code units, numbers as
//! ECMAScript prints binary64 values. D(value) = `sha256:` + hex SHA-256 of C.
//! A finalized record carries `id = prefix + hex(D(unsigned))` and
//! `integrity = {algorithm: "sha-256", digest: D(unsigned)}`. Signatures cover
//! the same bytes (RFC 8785 JCS agrees with C for every value Rust can hold:
//! Rust strings cannot contain lone surrogates).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Number, Value};

use super::error::{fail, ClResult};
use crate::time::Instant;

/// `sha256:` followed by 64 zeroes: the previous digest of the first log entry.
pub const GENESIS_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Largest integer a binary64 holds exactly, as in ECMAScript.
const EXACT_LIMIT: u64 = 1 << 53;

/// Whether some number would print differently once read as a binary64
/// (integers beyond 2^53, negative zero): then C needs a normalised copy.
fn needs_binary64(v: &Value) -> bool {
    match v {
        Value::Number(n) => number_needs_binary64(n),
        Value::Array(a) => a.iter().any(needs_binary64),
        Value::Object(m) => m.values().any(needs_binary64),
        _ => false,
    }
}

fn number_needs_binary64(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        u > EXACT_LIMIT
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs() > EXACT_LIMIT
    } else {
        n.as_f64() == Some(0.0)
    }
}

fn to_binary64(v: &Value) -> Value {
    match v {
        Value::Number(n) if number_needs_binary64(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f == 0.0 {
                Value::from(0)
            } else {
                Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(to_binary64).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), to_binary64(x))).collect())
        }
        other => other.clone(),
    }
}

/// C(value) as UTF-8 bytes.
pub fn canonical_bytes(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    if needs_binary64(v) {
        crate::jcs::write(&to_binary64(v), &mut out)
    } else {
        crate::jcs::write(v, &mut out)
    }
    .expect("writing to a Vec cannot fail");
    out
}

/// C(value) as text.
pub fn canonical_text(v: &Value) -> String {
    String::from_utf8(canonical_bytes(v)).expect("canonical JSON is UTF-8")
}

/// D(value): streamed into the hasher, no intermediate buffer.
pub fn digest(v: &Value) -> String {
    if needs_binary64(v) {
        crate::jcs::sha256(&to_binary64(v))
    } else {
        crate::jcs::sha256(v)
    }
}

/// H(bytes): the one digest function ([`crate::canonical::digest`]).
pub fn digest_bytes(bytes: &[u8]) -> String {
    crate::canonical::digest(bytes)
}

/// The 64 hex characters of a `sha256:` digest.
pub fn hex_part(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

/// Is `s` a `sha256:` + 64 lowercase hex digest?
pub fn is_digest(s: &str) -> bool {
    s.len() == 71
        && s.starts_with("sha256:")
        && s[7..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Finalize an unsigned record: add `id` and `integrity` (which `unsigned` must not hold).
pub fn finalize(mut unsigned: Map<String, Value>, prefix: &str) -> Value {
    unsigned.remove("id");
    unsigned.remove("integrity");
    let d = digest(&Value::Object(unsigned.clone()));
    unsigned.insert(
        "id".into(),
        Value::from(format!("{prefix}{}", hex_part(&d))),
    );
    unsigned.insert(
        "integrity".into(),
        serde_json::json!({"algorithm": "sha-256", "digest": d}),
    );
    Value::Object(unsigned)
}

/// The record without `id` and `integrity`.
pub fn unsigned_part(record: &Map<String, Value>) -> Map<String, Value> {
    let mut m = record.clone();
    m.remove("id");
    m.remove("integrity");
    m
}

/// Recompute a finalized record's digest and id.
pub fn verify_record(record: &Value, prefix: &str, what: &str) -> ClResult<()> {
    let Some(map) = record.as_object() else {
        return fail("INVALID_RECORD", format!("{what}: expected a JSON object"));
    };
    let integrity = map.get("integrity").and_then(Value::as_object);
    let algorithm = integrity
        .and_then(|i| i.get("algorithm"))
        .and_then(Value::as_str);
    if algorithm != Some("sha-256") {
        return fail(
            "INVALID_RECORD_INTEGRITY",
            format!("{what}: `integrity.algorithm` must be \"sha-256\" (the record is not a finalized local-core record)"),
        );
    }
    let d = digest(&Value::Object(unsigned_part(map)));
    let expected_id = format!("{prefix}{}", hex_part(&d));
    let stored_digest = integrity
        .and_then(|i| i.get("digest"))
        .and_then(Value::as_str);
    let stored_id = map.get("id").and_then(Value::as_str);
    if stored_digest != Some(d.as_str()) || stored_id != Some(expected_id.as_str()) {
        return fail(
            "RECORD_INTEGRITY_MISMATCH",
            format!("{what}: its canonical digest or id does not match its contents (it was changed after it was made)"),
        );
    }
    Ok(())
}

/// An instant as the profile writes it: UTC with exactly three fractional digits.
pub fn iso_ms(t: &Instant) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Truncate to whole milliseconds (the profile's clock resolution).
pub fn to_ms(t: Instant) -> Instant {
    DateTime::<Utc>::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

/// Parse an RFC 3339 date-time strictly: `T` separator, seconds present, a
/// `Z` or `±hh:mm` offset with hours 00-23 and minutes 00-59.
pub fn parse_time(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    if !s.is_ascii() || b.len() < 20 || !(b[10] == b'T' || b[10] == b't') {
        return None;
    }
    let tail = &s[19..];
    let offset = if let Some(i) = tail.find(['Z', 'z', '+', '-']) {
        &tail[i..]
    } else {
        return None;
    };
    if offset.len() == 6 {
        let (h, m) = (&offset[1..3], &offset[4..6]);
        let hh: u32 = h.parse().ok()?;
        let mm: u32 = m.parse().ok()?;
        if hh > 23 || mm > 59 || offset.as_bytes()[3] != b':' {
            return None;
        }
    } else if !(offset == "Z" || offset == "z") {
        return None;
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Is `s` a profile name: lowercase segments joined by `.`, `_` or `-`?
pub fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b[0].is_ascii_lowercase() {
        return false;
    }
    let mut prev_sep = false;
    for &c in &b[1..] {
        let sep = matches!(c, b'.' | b'_' | b'-');
        if sep {
            if prev_sep {
                return false;
            }
        } else if !(c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return false;
        }
        prev_sep = sep;
    }
    !prev_sep
}

/// Member names that must never appear in an object leaving the vault:
/// raw-vault handles, direct-write members and credential fields.
fn forbidden_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    let k = k.as_str();
    const EXACT: &[&str] = &[
        "passphrase",
        "password",
        "authorization",
        "credential",
        "credentials",
        "secret",
        "token",
        "cookie",
        "cookies",
        "api_key",
        "apikey",
        "client_assertion",
        "clientassertion",
        "connection_string",
        "connectionstring",
        "database_url",
        "databaseurl",
    ];
    if EXACT.contains(&k) {
        return true;
    }
    let strip = |s: &str| s.replace('_', "");
    let flat = strip(k);
    // raw payload / source / vault, and raw or direct vault handles.
    if ["rawpayload", "rawsource", "rawvault"].contains(&flat.as_str()) {
        return true;
    }
    for lead in ["direct", "raw"] {
        for tail in ["write", "object", "data", "ref", "id"] {
            if flat == format!("{lead}vault{tail}") {
                return true;
            }
        }
    }
    for lead in [
        "encryption",
        "private",
        "secret",
        "signing",
        "serviceaccount",
        "sshprivate",
    ] {
        if flat == format!("{lead}key") {
            return true;
        }
    }
    for lead in [
        "access",
        "refresh",
        "session",
        "auth",
        "oauth",
        "bearer",
        "id",
        "private",
        "personalaccess",
        "csrf",
    ] {
        if flat == format!("{lead}token") {
            return true;
        }
    }
    for lead in ["client", "consumer", "webhook"] {
        if flat == format!("{lead}secret") {
            return true;
        }
    }
    false
}

/// Find raw-vault material or a credential member anywhere in `v`. Returns a
/// description that names the member or marker, never the value.
pub fn forbidden_material(v: &Value) -> Option<String> {
    fn walk(v: &Value, path: &mut String) -> Option<String> {
        match v {
            Value::String(s) if s.to_ascii_lowercase().contains("vault://") => Some(format!(
                "a raw `vault://` reference at {}",
                if path.is_empty() { "/" } else { path }
            )),
            Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                let r = walk(x, path);
                path.truncate(len);
                r
            }),
            Value::Object(m) => m.iter().find_map(|(k, x)| {
                let len = path.len();
                path.push('/');
                path.push_str(k);
                let r = if forbidden_key(k) {
                    Some(format!("a forbidden member `{k}` at {path}"))
                } else if k.to_ascii_lowercase().contains("vault://") {
                    Some(format!(
                        "a raw `vault://` reference in a member name at {path}"
                    ))
                } else {
                    walk(x, path)
                };
                path.truncate(len);
                r
            }),
            _ => None,
        }
    }
    walk(v, &mut String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn binary64_numbers_print_as_ecmascript_does() {
        let v: Value = serde_json::from_str(
            "[9007199254740992, 100000000000000000000, 1e21, -0.0, 42.5, 9007199254740993]",
        )
        .unwrap();
        assert_eq!(
            canonical_text(&v),
            "[9007199254740992,100000000000000000000,1e+21,0,42.5,9007199254740992]"
        );
    }

    #[test]
    fn records_round_trip_and_detect_changes() {
        let mut m = Map::new();
        m.insert("type".into(), json!("test_vector"));
        let r = finalize(m, "urn:cl:test:");
        verify_record(&r, "urn:cl:test:", "record").unwrap();
        let mut bad = r.clone();
        bad["type"] = json!("other");
        assert_eq!(
            verify_record(&bad, "urn:cl:test:", "record")
                .unwrap_err()
                .code,
            "RECORD_INTEGRITY_MISMATCH"
        );
    }

    #[test]
    fn strict_times() {
        assert!(parse_time("2030-01-01T00:00:00Z").is_some());
        assert!(parse_time("2030-01-01T00:00:00.123+05:30").is_some());
        for bad in [
            "2030-01-01T00:00:00+00:60",
            "2030-01-01T00:00:00+24:00",
            "2030-01-01T00:00:00",
            "2030-01-01 00:00:00Z",
            "2030-02-30T00:00:00Z",
            "2030-01-01T00:00:0é+00:00",
        ] {
            assert!(parse_time(bad).is_none(), "{bad}");
        }
        let t = parse_time("2030-01-01T12:00:00Z").unwrap();
        assert_eq!(iso_ms(&t), "2030-01-01T12:00:00.000Z");
    }

    #[test]
    fn names_and_forbidden_members() {
        assert!(
            is_name("file.text") && is_name("prov_ab12") && !is_name("File") && !is_name("a..b")
        );
        assert!(forbidden_material(&json!({"a": {"raw_vault_write": 1}})).is_some());
        assert!(forbidden_material(&json!({"a": ["vault://x"]})).is_some());
        assert!(forbidden_material(&json!({"Access-Token": 1})).is_some());
        assert!(forbidden_material(&json!({"tokens": 1, "note": "vaults"})).is_none());
    }
}
