//! One receipt: references, digests and a short summary, never payloads.

use serde_json::{json, Map, Value};

use crate::exchange::canon;
use crate::exchange::error::{fail, ClResult};
use crate::exchange::schema::{self, ClKind};
use crate::exchange::wire::{self, SpecVersion};
use crate::time::Instant;

/// Id prefix of receipts.
pub const RECEIPT_PREFIX: &str = "urn:cl:receipt:";
/// Default receipt writer.
pub const DEFAULT_ISSUER: &str = "urn:cl:receipt-writer:local";

/// What a receipt records. Optional references default to null, digests to D(null).
#[derive(Debug, Clone, Default)]
pub struct ReceiptDraft {
    pub operation: String,
    pub actor: String,
    /// A `urn:cl:alias:` subject alias (never the subject itself).
    pub subject_ref: String,
    pub request_ref: Option<String>,
    pub decision_ref: Option<String>,
    pub bundle_ref: Option<String>,
    pub started_at: Option<Instant>,
    pub completed_at: Option<Instant>,
    /// `success`, `failure` or `indeterminate`.
    pub outcome: String,
    pub policy_snapshot: Option<String>,
    pub input_digest: Option<String>,
    pub output_digest: Option<String>,
    pub user_summary: String,
    /// Up to 16 short string values under name keys.
    pub metadata: Map<String, Value>,
    /// The receipt this one corrects.
    pub supersedes_ref: Option<String>,
    pub issuer: Option<String>,
}

/// Build and finalize a receipt at `at`; checked before it is returned.
pub fn build(d: &ReceiptDraft, at: Instant, version: SpecVersion) -> ClResult<Value> {
    let at = canon::to_ms(at);
    let opt = |x: &Option<String>| x.as_ref().map_or(Value::Null, |s| json!(s));
    let digest_or_null = |x: &Option<String>| -> ClResult<Value> {
        match x {
            None => Ok(json!(canon::digest(&Value::Null))),
            Some(s) if canon::is_digest(s) => Ok(json!(s)),
            Some(_) => fail(
                "INVALID_DIGEST",
                "receipt digests must be sha256:<64 lowercase hex>",
            ),
        }
    };
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("receipt"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert(
        "issuer".into(),
        json!({"id": d.issuer.as_deref().unwrap_or(DEFAULT_ISSUER)}),
    );
    m.insert("operation".into(), json!(d.operation));
    m.insert("actor".into(), json!(d.actor));
    m.insert("subject_ref".into(), json!(d.subject_ref));
    m.insert("request_ref".into(), opt(&d.request_ref));
    m.insert("decision_ref".into(), opt(&d.decision_ref));
    m.insert("bundle_ref".into(), opt(&d.bundle_ref));
    m.insert(
        "started_at".into(),
        json!(canon::iso_ms(&canon::to_ms(d.started_at.unwrap_or(at)))),
    );
    m.insert(
        "completed_at".into(),
        json!(canon::iso_ms(&canon::to_ms(d.completed_at.unwrap_or(at)))),
    );
    m.insert("outcome".into(), json!(d.outcome));
    m.insert("policy_snapshot".into(), opt(&d.policy_snapshot));
    m.insert("input_digest".into(), digest_or_null(&d.input_digest)?);
    m.insert("output_digest".into(), digest_or_null(&d.output_digest)?);
    m.insert("payload_included".into(), json!(false));
    m.insert("user_summary".into(), json!(d.user_summary));
    m.insert("metadata".into(), Value::Object(d.metadata.clone()));
    if let Some(s) = &d.supersedes_ref {
        m.insert("supersedes_ref".into(), json!(s));
    }
    let r = canon::finalize(wire::to_wire(m, version), RECEIPT_PREFIX);
    validate(&r)?;
    Ok(r)
}

/// The profile's receipt checks: integrity, version, times, digests, no
/// payload, no raw-vault or credential material, closed shape.
pub fn validate(r: &Value) -> ClResult<()> {
    canon::verify_record(r, RECEIPT_PREFIX, "receipt")?;
    let core = wire::to_core(r)?;
    if core.get("type").and_then(Value::as_str) != Some("receipt") {
        return fail("INVALID_RECEIPT", "receipt: `type` must be \"receipt\"");
    }
    if core.get("payload_included") != Some(&json!(false)) {
        return fail(
            "RECEIPT_PAYLOAD_FORBIDDEN",
            "receipts must declare payload_included: false",
        );
    }
    if let Some(what) = canon::forbidden_material(r) {
        return fail(
            "RECEIPT_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the receipt contains {what}"),
        );
    }
    if let Some(why) = schema::summary(ClKind::Receipt, &core) {
        return fail(
            "INVALID_RECEIPT",
            format!("receipt does not have the closed shape: {why}"),
        );
    }
    let t = |k: &str| core[k].as_str().and_then(canon::parse_time);
    match (t("started_at"), t("completed_at")) {
        (Some(s), Some(c)) if c >= s => Ok(()),
        (Some(_), Some(_)) => fail(
            "INVALID_RECEIPT_TIME_RANGE",
            "a receipt cannot complete before it starts",
        ),
        _ => fail(
            "INVALID_DATE_TIME",
            "receipt times must be RFC 3339 timestamps",
        ),
    }
}
