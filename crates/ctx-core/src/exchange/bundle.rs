//! Bundle issuance (local-core profile §4): a decision that authorizes
//! disclosure, the request it is bound to, and candidate claims become one
//! recipient-bound, single-use, expiring bundle in an Ed25519 envelope.
//!
//! Only claims whose predicate the decision granted survive; provenance
//! leaves as opaque `prov_…` handles (D({"source": S})), so the handle → source
//! map stays with the issuer. The signature covers JCS(bundle) exactly, with
//! no domain prefix, as the profile specifies; the key used must therefore be
//! one that signs nothing else (see [`crate::keys`]).

use std::collections::BTreeMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::Duration;
use serde_json::{json, Map, Value};

use super::canon;
use super::envelope;
use super::error::{fail, ClResult};
use super::evaluate::{State, DECISION_PREFIX};
use super::wire::{self, SpecVersion};
use crate::signing::SigningKeyPair;
use crate::time::Instant;

/// Id prefix of bundles.
pub const BUNDLE_PREFIX: &str = "urn:cl:bundle:";
/// The envelope version this build writes and reads.
pub const ENVELOPE_VERSION: u64 = 1;
/// Default issuer of bundles.
pub const DEFAULT_ISSUER: &str = "urn:cl:bundle-issuer:local";

/// What to issue.
pub struct IssueInput<'a> {
    /// The request as supplied (the decision's `request_digest` must match it).
    pub request: &'a Value,
    /// A finalized decision that grants scope.
    pub decision: &'a Value,
    /// Candidate claims: `{claim, predicate, value, confidence, provenance_refs}`.
    pub claims: &'a [Value],
    pub at: Instant,
    /// `{"id": ...}`; default [`DEFAULT_ISSUER`].
    pub issuer: Option<Value>,
    pub key: &'a SigningKeyPair,
    pub kid: &'a str,
}

/// An issued envelope and the provenance map that must stay with the issuer.
#[derive(Debug, Clone)]
pub struct Issued {
    pub envelope: Value,
    pub bundle_id: String,
    pub subject_alias: String,
    /// Opaque handle → raw source, sorted by handle.
    pub provenance: BTreeMap<String, String>,
}

struct Transforms {
    redacted: Vec<String>,
    truncate: BTreeMap<String, usize>,
    compress: bool,
}

fn parse_transforms(values: &[Value]) -> ClResult<Transforms> {
    let mut t = Transforms {
        redacted: Vec::new(),
        truncate: BTreeMap::new(),
        compress: false,
    };
    if values.len() > 64 {
        return fail(
            "UNSUPPORTED_TRANSFORM",
            "a decision may require at most 64 transforms",
        );
    }
    for v in values {
        let s = v.as_str().unwrap_or("");
        if s == "compress:task-facts" {
            t.compress = true;
        } else if let Some(p) = s.strip_prefix("redact:").filter(|p| canon::is_name(p)) {
            t.redacted.push(p.to_string());
        } else if let Some((p, n)) = s
            .strip_prefix("truncate:")
            .and_then(|r| r.rsplit_once(':'))
            .filter(|(p, _)| canon::is_name(p))
        {
            let n = match n.parse::<usize>() {
                Ok(x) if x > 0 && !n.starts_with('0') => x,
                _ => {
                    return fail(
                        "UNSUPPORTED_TRANSFORM",
                        format!("transform {s:?}: the limit is not a positive integer"),
                    )
                }
            };
            let e = t.truncate.entry(p.to_string()).or_insert(n);
            *e = (*e).min(n);
        } else {
            return fail(
                "UNSUPPORTED_TRANSFORM",
                format!("the issuer does not implement transform {s:?}"),
            );
        }
    }
    Ok(t)
}

/// Keep the first `limit` UTF-16 code units (never splitting a surrogate pair).
fn truncate_utf16(s: &str, limit: usize) -> String {
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let n = c.len_utf16();
        if units + n > limit {
            break;
        }
        units += n;
        end = i + c.len_utf8();
    }
    s[..end].to_string()
}

fn compress(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text members of an object value (a repository object's claim value)
/// that a reduction applies to.
const TEXT_MEMBERS: [&str; 3] = ["title", "summary", "content"];

/// The first sentence of `text` (up to `.`, `!` or `?` before whitespace, or a
/// blank line), whitespace collapsed: the summary form of a text that has none.
fn first_sentence(text: &str) -> String {
    let flat = compress(
        text.split("\n\n")
            .find(|p| !p.trim().is_empty())
            .unwrap_or(""),
    );
    let mut end = flat.len();
    let mut chars = flat.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|(_, n)| n.is_whitespace()) {
            end = i + c.len_utf8();
            break;
        }
    }
    flat[..end].to_string()
}

/// Apply `compress:task-facts` and `truncate` to a claim's value (seed 000
/// §8.2 step 6, §11.3: what is disclosed is reduced, not only the claim's
/// label). A string is compressed and truncated like claim text. An object
/// (a repository object) is reduced in its text members: compression keeps
/// a summary form only — its `summary`, else the first sentence of its text
/// `content` — and drops `content`; truncation cuts each text member. What
/// cannot be reduced as asked (structured content, or a list of values) is an
/// error: it is never disclosed whole instead.
fn reduce_value(
    value: Value,
    compress_to_summary: bool,
    limit: Option<usize>,
) -> Result<Value, String> {
    if !compress_to_summary && limit.is_none() {
        return Ok(value);
    }
    match value {
        // A string value is a fact already (the profile compresses only claim
        // text); it is truncated like claim text.
        Value::String(s) => Ok(Value::String(match limit {
            Some(n) => truncate_utf16(&s, n),
            None => s,
        })),
        Value::Object(mut m) => {
            if compress_to_summary {
                let summary = match (m.get("summary"), m.get("content")) {
                    (Some(Value::String(s)), _) => compress(s),
                    (_, Some(Value::String(c))) => first_sentence(c),
                    (_, None) => String::new(),
                    (_, Some(_)) => {
                        return Err("compress:task-facts cannot summarise structured content and the object has no `summary`".into())
                    }
                };
                m.remove("content");
                m.remove("content_type");
                if summary.is_empty() {
                    m.remove("summary");
                } else {
                    m.insert("summary".into(), Value::String(summary));
                }
            }
            if let Some(n) = limit {
                for k in TEXT_MEMBERS {
                    match m.get(k) {
                        Some(Value::String(s)) => {
                            let t = truncate_utf16(s, n);
                            m.insert(k.into(), Value::String(t));
                        }
                        None | Some(Value::Null) => {}
                        Some(_) => {
                            return Err(format!(
                                "truncate cannot cut the structured `{k}` of the value"
                            ))
                        }
                    }
                }
            }
            Ok(Value::Object(m))
        }
        Value::Array(_) => Err("a list value cannot be reduced as the decision requires".into()),
        other => Ok(other),
    }
}

fn sorted_unique(v: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    out
}

/// The subject alias a bundle (and its receipts) use instead of the subject.
pub fn subject_alias(subject_ref: &Value, request_ref: &Value, recipient: &str) -> String {
    let d = canon::digest(&json!({
        "subject_ref": subject_ref,
        "request_ref": request_ref,
        "recipient": recipient,
    }));
    format!("urn:cl:alias:{}", canon::hex_part(&d))
}

/// Issue a signed envelope. Nothing is written; the caller records receipts.
pub fn issue(input: &IssueInput<'_>) -> ClResult<Issued> {
    let decision = input.decision;
    canon::verify_record(decision, DECISION_PREFIX, "decision")?;
    let version = SpecVersion::of(decision, "decision")?;
    let d = wire::to_core(decision)?;
    if d.get("type").and_then(Value::as_str) != Some("policy_decision") {
        return fail(
            "INVALID_POLICY_DECISION",
            "the decision is not a policy_decision",
        );
    }
    if d.get("request_digest").and_then(Value::as_str)
        != Some(canon::digest(input.request).as_str())
    {
        return fail(
            "DECISION_REQUEST_MISMATCH",
            "the decision is bound to a different request (request_digest differs); evaluate this request again",
        );
    }
    let state = d
        .get("decision")
        .and_then(Value::as_str)
        .and_then(State::parse);
    if !state.is_some_and(State::grants) {
        return fail(
            "DECISION_DOES_NOT_AUTHORIZE_BUNDLE",
            format!(
                "the decision is `{}`; only allow and allow_with_reductions authorize a bundle",
                d.get("decision").and_then(Value::as_str).unwrap_or("?")
            ),
        );
    }
    let req = wire::to_core(input.request)?;
    let at = canon::to_ms(input.at);
    let time = |v: &Value, k: &str, what: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .and_then(canon::parse_time)
            .ok_or_else(|| {
                super::error::ClError::new(
                    "INVALID_DATE_TIME",
                    format!("{what}.{k} is not an RFC 3339 timestamp"),
                )
            })
    };
    let request_expiry = time(&req, "expires_at", "request")?;
    let decision_expiry = time(&d, "expires_at", "decision")?;
    let retention_seconds = d
        .get("retention")
        .and_then(|r| r.get("max_seconds"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0 && *n <= 86_400);
    let Some(retention_seconds) = retention_seconds else {
        return fail(
            "INVALID_DECISION_RETENTION",
            "the decision's retention must be a positive number of seconds",
        );
    };
    let expiry = request_expiry
        .min(decision_expiry)
        .min(at + Duration::seconds(retention_seconds as i64));
    if expiry <= at {
        return fail(
            "BUNDLE_AUTHORIZATION_EXPIRED",
            format!(
                "the authorization expired at {}; evaluate the request again",
                canon::iso_ms(&expiry)
            ),
        );
    }
    let granted: Vec<&str> = d
        .get("granted_selectors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("predicate").and_then(Value::as_str))
        .collect();
    let transforms = parse_transforms(
        d.get("transform_requirements")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    )?;
    let mut provenance_map = BTreeMap::new();
    let mut provenance = Map::new();
    let mut context: Vec<(Vec<u8>, Value)> = Vec::new();
    for (i, c) in input.claims.iter().enumerate() {
        let Some(predicate) = c.get("predicate").and_then(Value::as_str) else {
            continue;
        };
        if !granted.contains(&predicate) || transforms.redacted.iter().any(|r| r == predicate) {
            continue;
        }
        let sources: Vec<&str> = c
            .get("provenance_refs")
            .or_else(|| c.get("provenance_handles"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        if sources.is_empty() {
            return fail(
                "CLAIM_PROVENANCE_REQUIRED",
                format!("claim {i} (predicate `{predicate}`) has no provenance; every disclosed claim must keep it"),
            );
        }
        let mut handles = Vec::new();
        for s in sources {
            let hex = canon::hex_part(&canon::digest(&json!({"source": s}))).to_string();
            let handle = format!("prov_{hex}");
            provenance.insert(
                handle.clone(),
                json!({"kind": "opaque_vault_reference", "ref": format!("urn:cl:provenance:{hex}")}),
            );
            provenance_map.insert(handle.clone(), s.to_string());
            handles.push(handle);
        }
        let Some(text) = c
            .get("claim")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return fail(
                "INVALID_STRING",
                format!("claim {i}: `claim` must be a non-empty string"),
            );
        };
        let confidence = c.get("confidence").and_then(Value::as_f64);
        let Some(confidence) = confidence.filter(|x| x.is_finite() && (0.0..=1.0).contains(x))
        else {
            return fail(
                "INVALID_CLAIM_CONFIDENCE",
                format!("claim {i}: confidence must be a number from 0 to 1"),
            );
        };
        let limit = transforms.truncate.get(predicate).copied();
        let mut text = if transforms.compress {
            compress(text)
        } else {
            text.to_string()
        };
        if let Some(n) = limit {
            text = truncate_utf16(&text, n);
        }
        let value = reduce_value(
            c.get("value").cloned().unwrap_or(Value::Null),
            transforms.compress,
            limit,
        )
        .map_err(|why| {
            super::error::ClError::new(
                "UNSUPPORTED_TRANSFORM",
                format!("claim {i} (predicate `{predicate}`): {why}; the issuer refuses rather than disclose more than the decision allows"),
            )
        })?;
        let item = json!({
            "claim": text,
            "predicate": predicate,
            "value": value,
            "confidence": c.get("confidence").cloned().unwrap_or(json!(confidence)),
            "provenance_handles": sorted_unique(handles.into_iter()),
        });
        context.push((canon::canonical_bytes(&item), item));
    }
    context.sort_by(|a, b| {
        let (x, y) = (String::from_utf8_lossy(&a.0), String::from_utf8_lossy(&b.0));
        x.encode_utf16().cmp(y.encode_utf16())
    });
    if context.is_empty() {
        return fail(
            "NO_CONTEXT_GRANTED",
            "no granted claims were available for the bundle",
        );
    }
    let Some(recipient) = req
        .get("recipient")
        .and_then(|r| r.get("principal"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return fail("INVALID_REQUEST", "request.recipient.principal is missing");
    };
    let alias = subject_alias(
        req.get("subject_ref").unwrap_or(&Value::Null),
        req.get("id").unwrap_or(&Value::Null),
        recipient,
    );
    let capabilities = sorted_unique(
        d.get("granted_actions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string),
    );
    let required_ops = sorted_unique(
        std::iter::once("bundle.consume".to_string()).chain(capabilities.iter().cloned()),
    );
    let Some(purpose_code) = req.get("purpose_code").and_then(Value::as_str) else {
        return fail("INVALID_REQUEST", "request.purpose_code is missing");
    };
    let task = match req.get("task") {
        Some(t) => {
            json!({"kind": t.get("kind").cloned().unwrap_or(Value::Null), "user_visible": t.get("user_visible").cloned().unwrap_or(Value::Null)})
        }
        None => return fail("INVALID_TASK", "request.task is missing"),
    };
    let issuer = input
        .issuer
        .clone()
        .unwrap_or_else(|| json!({"id": DEFAULT_ISSUER}));
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("scoped_context_bundle"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert("issuer".into(), issuer);
    m.insert("subject_alias".into(), json!(alias));
    m.insert(
        "request_ref".into(),
        req.get("id").cloned().unwrap_or(Value::Null),
    );
    m.insert("request_digest".into(), d["request_digest"].clone());
    m.insert("decision_ref".into(), decision["id"].clone());
    m.insert(
        "decision_digest".into(),
        decision["integrity"]["digest"].clone(),
    );
    m.insert(
        "policy_snapshot".into(),
        d.get("policy_snapshot").cloned().unwrap_or(Value::Null),
    );
    m.insert("recipient".into(), json!(recipient));
    m.insert("purpose_code".into(), json!(purpose_code));
    if let Some(p) = req.get("purpose") {
        m.insert("purpose".into(), p.clone());
    }
    m.insert("task".into(), task);
    m.insert("issued_at".into(), json!(canon::iso_ms(&at)));
    m.insert("expires_at".into(), json!(canon::iso_ms(&expiry)));
    m.insert("single_use".into(), json!(true));
    m.insert(
        "context".into(),
        Value::Array(context.into_iter().map(|(_, v)| v).collect()),
    );
    m.insert("provenance".into(), Value::Object(provenance));
    m.insert(
        "instructions".into(),
        d.get("bundle_instructions").cloned().unwrap_or(json!([])),
    );
    m.insert("capabilities".into(), json!(capabilities));
    m.insert(
        "restrictions".into(),
        json!({
            "onward_disclosure": d.get("onward_disclosure").cloned().unwrap_or(json!("forbidden")),
            "memory_write": "proposal_only",
            "raw_vault_resolution": "forbidden",
            "retention_seconds": retention_seconds,
        }),
    );
    m.insert(
        "retention".into(),
        d.get("retention").cloned().unwrap_or(Value::Null),
    );
    m.insert(
        "receipt_contract".into(),
        json!({
            "required": d.get("receipt_requirement").and_then(|r| r.get("required")).and_then(Value::as_bool).unwrap_or(true),
            "required_operations": required_ops,
        }),
    );
    let bundle = canon::finalize(wire::to_wire(m, version), BUNDLE_PREFIX);
    envelope::check_bundle(&bundle, None, None)?;
    let sig = crate::signing::sign_bytes(&canon::canonical_bytes(&bundle), input.key);
    let envelope = json!({
        "envelope_version": ENVELOPE_VERSION,
        "bundle": bundle,
        "authentication": {
            "algorithm": "Ed25519",
            "kid": input.kid,
            "sig": URL_SAFE_NO_PAD.encode(sig.to_bytes()),
        },
    });
    if let Some(what) = canon::forbidden_material(&envelope) {
        return fail(
            "BUNDLE_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the envelope would contain {what}; nothing was issued"),
        );
    }
    Ok(Issued {
        bundle_id: envelope["bundle"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        subject_alias: alias,
        provenance: provenance_map,
        envelope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_truncation_never_splits_a_pair() {
        assert_eq!(truncate_utf16("a😀b", 2), "a");
        assert_eq!(truncate_utf16("a😀b", 3), "a😀");
        assert_eq!(compress("  a \n\t b  "), "a b");
    }

    #[test]
    fn reductions_apply_to_what_a_value_discloses() {
        let object = json!({"id": "p.r", "title": "Refund policy", "content": "Refunds within 30 days. Ask support.\n\nMore.", "content_type": "text/markdown"});
        let cut = reduce_value(object.clone(), false, Some(3)).unwrap();
        assert_eq!(cut["content"], "Ref");
        assert_eq!(cut["title"], "Ref");
        assert_eq!(cut["id"], "p.r");
        let short = reduce_value(object.clone(), true, None).unwrap();
        assert_eq!(short["summary"], "Refunds within 30 days.");
        assert!(short.get("content").is_none() && short.get("content_type").is_none());
        let mut with_summary = object.clone();
        with_summary["summary"] = json!("  Thirty   days. ");
        assert_eq!(
            reduce_value(with_summary, true, None).unwrap()["summary"],
            "Thirty days."
        );
        let structured = json!({"id": "p.r", "content": {"days": 30}});
        assert!(reduce_value(structured.clone(), true, None).is_err());
        assert!(reduce_value(structured.clone(), false, Some(3)).is_err());
        assert_eq!(
            reduce_value(structured.clone(), false, None).unwrap(),
            structured
        );
        assert!(reduce_value(json!(["a"]), false, Some(1)).is_err());
        assert_eq!(
            reduce_value(json!(" a  b "), true, Some(2)).unwrap(),
            json!(" a")
        );
        assert_eq!(first_sentence("v1.2 is out! Next"), "v1.2 is out!");
    }
}
