//! Stage 1: the closed shape of the envelope (the JSON Schema's rules,
//! hand-written so every failure names its field and maps to
//! `contract_shape`, except the base64 text of the context which the
//! contract reports as `context_base64` in stage 5).
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde_json::{Map, Value};

use super::{
    Binding, Decision, Failure, FailureCode, Limits, ProviderRef, ReceiptRef, WithholdReason,
    ALGORITHM, CONTEXT_ENCODING, CONTEXT_MEDIA_TYPE, CONTRACT_ID, PROFILE,
};

const TOP: [&str; 13] = [
    "binding",
    "context",
    "contract_id",
    "created_at",
    "decision",
    "expires_at",
    "idempotency_key",
    "nonce",
    "provider",
    "receipt",
    "signature",
    "source_refs",
    "withhold_reason",
];
const PROVIDER: [&str; 3] = ["id", "instance_id", "version"];
const RECEIPT: [&str; 3] = ["contract_id", "id", "sha256"];
const SIGNATURE: [&str; 5] = [
    "algorithm",
    "key_id",
    "profile",
    "signed_payload_sha256",
    "value_base64",
];
const CONTEXT: [&str; 5] = [
    "byte_length",
    "bytes_base64",
    "encoding",
    "media_type",
    "sha256",
];
const REASON: [&str; 2] = ["code", "retryable"];

/// The shape-checked envelope, as typed values.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub provider: ProviderRef,
    pub binding: Binding,
    pub decision: Decision,
    pub context: Option<ContextFields>,
    pub receipt: ReceiptRef,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub nonce: String,
    pub idempotency_key: String,
    pub source_refs: Vec<String>,
    pub withhold_reason: Option<WithholdReason>,
    pub signature: SignatureFields,
}

#[derive(Debug, Clone)]
pub(crate) struct ContextFields {
    pub bytes_base64: String,
    pub byte_length: u64,
    pub sha256: String,
}

#[derive(Debug, Clone)]
pub(crate) struct SignatureFields {
    pub key_id: String,
    pub signed_payload_sha256: String,
    pub value_base64: String,
}

fn shape(field: &str, expected: impl Into<String>, actual: impl Into<String>) -> Failure {
    Failure::new(FailureCode::ContractShape, field, expected, actual)
}

/// A short description of `v` for error messages (values truncated).
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let t: String = s.chars().take(80).collect();
            if t.len() < s.len() {
                format!("{t:?}…")
            } else {
                format!("{t:?}")
            }
        }
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// `value` must be an object with exactly the members `keys`.
fn closed<'a>(
    value: &'a Value,
    field: &str,
    keys: &[&str],
) -> Result<&'a Map<String, Value>, Failure> {
    let map = value.as_object().ok_or_else(|| {
        let at = if field.is_empty() { "/" } else { field };
        shape(at, "an object", describe(value))
    })?;
    if let Some(extra) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        let name: String = extra.chars().take(80).collect();
        return Err(shape(
            &format!("{field}/{}", name.replace('~', "~0").replace('/', "~1")),
            "no undeclared member",
            "an undeclared member",
        ));
    }
    if let Some(missing) = keys.iter().find(|k| !map.contains_key(**k)) {
        return Err(shape(
            &format!("{field}/{missing}"),
            "a required member",
            "nothing",
        ));
    }
    Ok(map)
}

fn string<'a>(map: &'a Map<String, Value>, parent: &str, key: &str) -> Result<&'a str, Failure> {
    let v = &map[key];
    v.as_str()
        .ok_or_else(|| shape(&format!("{parent}/{key}"), "a string", describe(v)))
}

/// Ids are 1..=max characters, start and end with a non-space and contain
/// no line terminator (the schema's `^\S(?:.*\S)?$`). `Err` describes the
/// expectation.
/// An id that breaks the schema's pattern; the message is the expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("1..={max} characters without surrounding whitespace or line breaks")]
pub(crate) struct IdShapeError {
    max: usize,
}

pub(crate) fn check_id(s: &str, max: usize) -> Result<(), IdShapeError> {
    let n = s.chars().count();
    let blank = |c: char| c.is_whitespace() || c == '\u{feff}';
    let ok = (1..=max).contains(&n)
        && !s.starts_with(blank)
        && !s.ends_with(blank)
        && !s.contains(['\n', '\r', '\u{2028}', '\u{2029}']);
    if ok {
        Ok(())
    } else {
        Err(IdShapeError { max })
    }
}

fn id(map: &Map<String, Value>, parent: &str, key: &str, max: usize) -> Result<String, Failure> {
    let s = string(map, parent, key)?;
    check_id(s, max).map_err(|why| {
        shape(
            &format!("{parent}/{key}"),
            why.to_string(),
            describe(&map[key]),
        )
    })?;
    Ok(s.to_owned())
}

fn pattern(
    map: &Map<String, Value>,
    parent: &str,
    key: &str,
    re: &Regex,
    expected: &str,
) -> Result<String, Failure> {
    let s = string(map, parent, key)?;
    if re.is_match(s) {
        Ok(s.to_owned())
    } else {
        Err(shape(
            &format!("{parent}/{key}"),
            expected,
            describe(&map[key]),
        ))
    }
}

fn constant(map: &Map<String, Value>, parent: &str, key: &str, want: &str) -> Result<(), Failure> {
    if map[key].as_str() == Some(want) {
        Ok(())
    } else {
        Err(shape(
            &format!("{parent}/{key}"),
            format!("{want:?}"),
            describe(&map[key]),
        ))
    }
}

struct Patterns {
    sha256: Regex,
    nonce: Regex,
    idempotency: Regex,
    signature: Regex,
    reason: Regex,
    timestamp: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        sha256: Regex::new(r"^[0-9a-f]{64}$").expect("regex"),
        nonce: Regex::new(r"^[A-Za-z0-9_-]{22,128}$").expect("regex"),
        idempotency: Regex::new(r"^dcp-[0-9a-f]{64}$").expect("regex"),
        signature: Regex::new(r"^[A-Za-z0-9+/]{86}==$").expect("regex"),
        reason: Regex::new(r"^[A-Z][A-Z0-9_]{2,63}$").expect("regex"),
        timestamp: Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$")
            .expect("regex"),
    })
}

fn timestamp(map: &Map<String, Value>, key: &str) -> Result<DateTime<Utc>, Failure> {
    const EXPECTED: &str = "an RFC 3339 UTC timestamp ending in Z";
    let field = format!("/{key}");
    let s = string(map, "", key)?;
    if !patterns().timestamp.is_match(s) || !leap_second_allowed(s) {
        return Err(shape(&field, EXPECTED, describe(&map[key])));
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| shape(&field, EXPECTED, format!("{} ({e})", describe(&map[key]))))
}

/// RFC 3339 (§5.7) allows second `60` only for a leap second: in UTC that is
/// 23:59:60 on the last day of a month. Anywhere else it names no instant.
/// `s` already matches the UTC timestamp pattern.
fn leap_second_allowed(s: &str) -> bool {
    if &s[17..19] != "60" {
        return true;
    }
    let last_day_of_month = chrono::NaiveDate::parse_from_str(&s[..10], "%Y-%m-%d")
        .ok()
        .and_then(|d| d.succ_opt())
        .is_some_and(|next| chrono::Datelike::day(&next) == 1);
    &s[11..16] == "23:59" && last_day_of_month
}

/// Check the closed shape; on success return the typed envelope.
pub(crate) fn check_shape(value: &Value, limits: &Limits) -> Result<Envelope, Failure> {
    let p = patterns();
    let top = closed(value, "", &TOP)?;
    constant(top, "", "contract_id", CONTRACT_ID)?;

    let prov = closed(&top["provider"], "/provider", &PROVIDER)?;
    let provider = ProviderRef {
        id: id(prov, "/provider", "id", 256)?,
        version: id(prov, "/provider", "version", 256)?,
        instance_id: id(prov, "/provider", "instance_id", 256)?,
    };

    let bind = closed(&top["binding"], "/binding", &Binding::FIELDS)?;
    let binding = Binding {
        run_id: id(bind, "/binding", "run_id", 256)?,
        turn_id: id(bind, "/binding", "turn_id", 256)?,
        session_id: id(bind, "/binding", "session_id", 256)?,
        agent_id: id(bind, "/binding", "agent_id", 256)?,
        user_id: id(bind, "/binding", "user_id", 256)?,
        workspace_id: id(bind, "/binding", "workspace_id", 256)?,
    };

    let decision = match top["decision"].as_str() {
        Some("inject") => Decision::Inject,
        Some("withhold") => Decision::Withhold,
        _ => {
            return Err(shape(
                "/decision",
                "\"inject\" or \"withhold\"",
                describe(&top["decision"]),
            ));
        }
    };

    let rec = closed(&top["receipt"], "/receipt", &RECEIPT)?;
    let receipt = ReceiptRef {
        id: id(rec, "/receipt", "id", 512)?,
        contract_id: id(rec, "/receipt", "contract_id", 256)?,
        sha256: pattern(
            rec,
            "/receipt",
            "sha256",
            &p.sha256,
            "64 lowercase hex digits",
        )?,
    };

    let created_at = timestamp(top, "created_at")?;
    let expires_at = timestamp(top, "expires_at")?;
    let nonce = pattern(
        top,
        "",
        "nonce",
        &p.nonce,
        "22..=128 characters of [A-Za-z0-9_-]",
    )?;
    let idempotency_key = pattern(
        top,
        "",
        "idempotency_key",
        &p.idempotency,
        "\"dcp-\" and 64 lowercase hex digits",
    )?;

    let refs = top["source_refs"]
        .as_array()
        .ok_or_else(|| shape("/source_refs", "an array", describe(&top["source_refs"])))?;
    if refs.len() > 32 {
        return Err(shape(
            "/source_refs",
            "at most 32 items",
            refs.len().to_string(),
        ));
    }
    let mut source_refs: Vec<String> = Vec::with_capacity(refs.len());
    for (i, r) in refs.iter().enumerate() {
        let field = format!("/source_refs/{i}");
        let s = r
            .as_str()
            .ok_or_else(|| shape(&field, "a string", describe(r)))?;
        check_id(s, 512).map_err(|why| shape(&field, why.to_string(), describe(r)))?;
        if source_refs.iter().any(|seen| seen == s) {
            return Err(shape(
                &field,
                "unique items",
                format!("a repeat of {}", describe(r)),
            ));
        }
        source_refs.push(s.to_owned());
    }

    let sig = closed(&top["signature"], "/signature", &SIGNATURE)?;
    constant(sig, "/signature", "algorithm", ALGORITHM)?;
    constant(sig, "/signature", "profile", PROFILE)?;
    let signature = SignatureFields {
        key_id: id(sig, "/signature", "key_id", 256)?,
        signed_payload_sha256: pattern(
            sig,
            "/signature",
            "signed_payload_sha256",
            &p.sha256,
            "64 lowercase hex digits",
        )?,
        value_base64: pattern(
            sig,
            "/signature",
            "value_base64",
            &p.signature,
            "86 base64 characters and \"==\" (64 bytes)",
        )?,
    };

    let (context, withhold_reason) = match decision {
        Decision::Inject => {
            if !top["withhold_reason"].is_null() {
                return Err(shape(
                    "/withhold_reason",
                    "null for an inject result",
                    describe(&top["withhold_reason"]),
                ));
            }
            (Some(context(&top["context"], limits)?), None)
        }
        Decision::Withhold => {
            if !top["context"].is_null() {
                return Err(shape(
                    "/context",
                    "null for a withhold result",
                    describe(&top["context"]),
                ));
            }
            let r = closed(&top["withhold_reason"], "/withhold_reason", &REASON)?;
            let code = pattern(
                r,
                "/withhold_reason",
                "code",
                &p.reason,
                "^[A-Z][A-Z0-9_]{2,63}$",
            )?;
            let retryable = r["retryable"].as_bool().ok_or_else(|| {
                shape(
                    "/withhold_reason/retryable",
                    "a boolean",
                    describe(&r["retryable"]),
                )
            })?;
            (None, Some(WithholdReason { code, retryable }))
        }
    };

    Ok(Envelope {
        provider,
        binding,
        decision,
        context,
        receipt,
        created_at,
        expires_at,
        nonce,
        idempotency_key,
        source_refs,
        withhold_reason,
        signature,
    })
}

fn context(value: &Value, limits: &Limits) -> Result<ContextFields, Failure> {
    let c = closed(value, "/context", &CONTEXT)?;
    constant(c, "/context", "encoding", CONTEXT_ENCODING)?;
    constant(c, "/context", "media_type", CONTEXT_MEDIA_TYPE)?;
    // Only the type here: the text itself is checked in the context stage.
    let bytes_base64 = string(c, "/context", "bytes_base64")?.to_owned();
    let max = limits.max_context_bytes();
    let byte_length = c["byte_length"]
        .as_u64()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            shape(
                "/context/byte_length",
                format!("an integer in 1..={max}"),
                describe(&c["byte_length"]),
            )
        })?;
    let sha256 = pattern(
        c,
        "/context",
        "sha256",
        &patterns().sha256,
        "64 lowercase hex digits",
    )?;
    Ok(ContextFields {
        bytes_base64,
        byte_length,
        sha256,
    })
}
