//! Signed receipts: a record that ctx produced a given bundle, for whom,
//! under which manifest, signed by a key the repository declares.
//!
//! A receipt follows the Context Layer Protocol `receipt` object (seed 000
//! §6.1, §7.8): operation, actor, consumer, bundle_ref, started/completed
//! times, outcome, policy_snapshot (digest of the manifest bytes),
//! input_digest (digest of the request), output_digest (the bundle digest)
//! and a user_summary made of counts only. It never holds content, task
//! text, secrets or raw payloads (§11.8): verifying a receipt does not
//! disclose what the bundle said.
//!
//! Signature: Ed25519 over `"ctx.receipt.v1" ‖ 0x00 ‖ JCS(receipt without
//! its signature member)` (the scheme of the delegated-provider contract
//! §4). The id is derived from the signed body, so two receipts never share
//! an id. The receipt also pins the bundle's volatile members (bundle_id,
//! generated_at, as_of) that the bundle digest leaves out, so a change to any
//! value of a bundle file is detected.
//!
//! Corrections never edit a receipt: a new receipt `supersedes` the earlier
//! id (§7.8, §13.5), and the store is append-only ([`Store`]).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::canonical;
use crate::signing::{self, PublicKey, Signature, SigningKeyPair};

/// Signing domain of ctx receipts.
pub const DOMAIN: &str = "ctx.receipt.v1";
/// `spec_version` of the Context Layer Protocol draft the shape follows.
pub const SPEC_VERSION: &str = "context-layer/0.1-draft";
/// Extension member pinning the bundle's volatile fields.
pub const BUNDLE_EXTENSION: &str = "ctx.bundle";
const ID_PREFIX: &str = "urn:ctx:receipt:";
const ACTOR_PREFIX: &str = "urn:ctx:key:";

mod error;
pub mod query;
pub mod store;
#[cfg(test)]
mod tests;

pub use error::ReceiptError;
pub use store::Store;

/// What a receipt records (everything except the signature and derived id).
#[derive(Debug, Clone)]
pub struct Draft<'a> {
    /// `context.bundle` or `context.resolve`.
    pub operation: &'a str,
    pub bundle: &'a Value,
    pub started_at: String,
    pub completed_at: String,
    /// The exact manifest bytes the bundle was resolved under.
    pub manifest_bytes: &'a [u8],
    /// The request parameters; only their digest is recorded.
    pub request: &'a Value,
    /// Format name and exact bytes of the rendering handed to the user.
    pub rendering: Option<(&'a str, &'a [u8])>,
    pub supersedes: Option<String>,
}

/// Build and sign a receipt with `key` declared as `key_id`.
pub fn sign(draft: &Draft<'_>, key_id: &str, key: &SigningKeyPair) -> Result<Value, ReceiptError> {
    let b = draft.bundle;
    let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let stats = b.get("stats").cloned().unwrap_or(Value::Null);
    let n = |k: &str| stats.get(k).and_then(Value::as_u64).unwrap_or(0);
    let consumer = b.get("consumer").cloned().unwrap_or(Value::Null);
    let who = format!(
        "{} `{}`",
        consumer
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("consumer"),
        consumer.get("id").and_then(Value::as_str).unwrap_or("?")
    );
    let summary =
        format!(
        "Compiled bundle {} for {who}: {} objects included, {} excluded, {} redacted, {} warnings.",
        s("bundle_id"),
        n("included"),
        n("excluded"),
        n("redacted"),
        b.get("warnings").and_then(Value::as_array).map_or(0, Vec::len)
    );
    let mut pinned = Map::new();
    pinned.insert("namespace".into(), json!(s("namespace")));
    pinned.insert("generated_at".into(), json!(s("generated_at")));
    pinned.insert("as_of".into(), json!(s("as_of")));
    if let Some((format, bytes)) = draft.rendering {
        pinned.insert(
            "rendering".into(),
            json!({ "format": format, "sha256": canonical::sha256_hex(bytes) }),
        );
    }
    let mut r = Map::new();
    r.insert("spec_version".into(), json!(SPEC_VERSION));
    r.insert("type".into(), json!("receipt"));
    r.insert("id".into(), json!(""));
    r.insert("created_at".into(), json!(draft.completed_at));
    r.insert(
        "issuer".into(),
        json!({ "id": format!("urn:ctx:receipt-writer:ctx/{}", env!("CARGO_PKG_VERSION")) }),
    );
    r.insert("operation".into(), json!(draft.operation));
    r.insert("actor".into(), json!(format!("{ACTOR_PREFIX}{key_id}")));
    r.insert("consumer".into(), consumer);
    r.insert("bundle_ref".into(), json!(s("bundle_id")));
    r.insert("started_at".into(), json!(draft.started_at));
    r.insert("completed_at".into(), json!(draft.completed_at));
    r.insert("outcome".into(), json!("success"));
    r.insert(
        "policy_snapshot".into(),
        json!(canonical::digest(draft.manifest_bytes)),
    );
    r.insert(
        "input_digest".into(),
        json!(canonical::digest_value(draft.request)
            .map_err(|e| ReceiptError::Sign(e.to_string()))?),
    );
    r.insert("output_digest".into(), json!(s("digest")));
    r.insert("user_summary".into(), json!(summary));
    if let Some(prev) = &draft.supersedes {
        r.insert("supersedes".into(), json!(prev));
    }
    r.insert(
        "extensions".into(),
        json!({ BUNDLE_EXTENSION: Value::Object(pinned) }),
    );
    let mut r = Value::Object(r);
    r["id"] = json!(derived_id(&r)?);
    let sig = signing::sign(DOMAIN, &r, key).map_err(|e| ReceiptError::Sign(e.to_string()))?;
    r["signature"] = json!({
        "algorithm": "ed25519",
        "profile": DOMAIN,
        "key_id": key_id,
        "value_base64": sig.to_base64(),
    });
    Ok(r)
}

/// `urn:ctx:receipt:` + 32 hex characters of SHA-256 over the JCS form of
/// the receipt without `id` and `signature`.
fn derived_id(r: &Value) -> Result<String, ReceiptError> {
    let mut body = r.as_object().cloned().unwrap_or_default();
    body.remove("id");
    body.remove("signature");
    let d = canonical::digest_value(&Value::Object(body))
        .map_err(|e| ReceiptError::Sign(e.to_string()))?;
    Ok(format!(
        "{ID_PREFIX}{}",
        &d["sha256:".len().."sha256:".len() + 32]
    ))
}

/// One reason a receipt or bundle did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub expected: String,
    pub actual: String,
}

impl Problem {
    pub fn new(field: &str, expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.field, self.expected, self.actual
        )
    }
}

/// A receipt whose signature verified under a trusted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub id: String,
    pub key_id: String,
    pub bundle_ref: String,
    pub output_digest: String,
    pub supersedes: Option<String>,
    pub policy_snapshot: String,
}

fn str_field<'a>(r: &'a Value, field: &str) -> Result<&'a str, Problem> {
    match r.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(other) => Err(Problem::new(field, "a non-empty string", other.to_string())),
        None => Err(Problem::new(field, "a non-empty string", "nothing")),
    }
}

/// Verify a receipt: shape, derived id, and the signature under a key
/// from `trusted` (the manifest's `ctx.keys`).
pub fn verify(r: &Value, trusted: &BTreeMap<String, PublicKey>) -> Result<Verified, Problem> {
    if r.get("type").and_then(Value::as_str) != Some("receipt") {
        return Err(Problem::new(
            "type",
            "\"receipt\"",
            r.get("type").map_or("nothing".into(), Value::to_string),
        ));
    }
    if r.get("spec_version").and_then(Value::as_str) != Some(SPEC_VERSION) {
        return Err(Problem::new(
            "spec_version",
            format!("{SPEC_VERSION:?}"),
            r.get("spec_version")
                .map_or("nothing".into(), Value::to_string),
        ));
    }
    let sig = r
        .get("signature")
        .and_then(Value::as_object)
        .ok_or_else(|| Problem::new("signature", "an object", "nothing (unsigned receipt)"))?;
    for (k, want) in [("algorithm", "ed25519"), ("profile", DOMAIN)] {
        let got = sig.get(k).and_then(Value::as_str).unwrap_or("");
        if got != want {
            return Err(Problem::new(
                &format!("signature.{k}"),
                format!("{want:?}"),
                format!("{got:?}"),
            ));
        }
    }
    if let Some(k) = sig
        .keys()
        .find(|k| !["algorithm", "profile", "key_id", "value_base64"].contains(&k.as_str()))
    {
        return Err(Problem::new(
            "signature",
            "members algorithm, profile, key_id, value_base64",
            format!("unknown member {k:?}"),
        ));
    }
    let key_id = sig.get("key_id").and_then(Value::as_str).unwrap_or("");
    let actor = str_field(r, "actor")?;
    if actor != format!("{ACTOR_PREFIX}{key_id}") {
        return Err(Problem::new(
            "actor",
            format!("\"{ACTOR_PREFIX}{key_id}\" (the signing key)"),
            format!("{actor:?}"),
        ));
    }
    let Some(public) = trusted.get(key_id) else {
        return Err(Problem::new(
            "signature.key_id",
            format!(
                "a key declared in the manifest's ctx.keys ({})",
                if trusted.is_empty() {
                    "none declared".to_string()
                } else {
                    trusted.keys().cloned().collect::<Vec<_>>().join(", ")
                }
            ),
            format!("{key_id:?}"),
        ));
    };
    let value = Signature::from_base64(
        sig.get("value_base64")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
    .map_err(|e| {
        Problem::new(
            "signature.value_base64",
            "a canonical base64 Ed25519 signature",
            e.to_string(),
        )
    })?;
    let mut body = r.clone();
    body.as_object_mut().expect("object").remove("signature");
    signing::verify(DOMAIN, &body, &value, public).map_err(|_| {
        Problem::new(
            "signature",
            format!(
                "a valid Ed25519 signature by `{key_id}` ({})",
                public.fingerprint()
            ),
            "a signature that does not verify (the receipt was altered or signed by another key)",
        )
    })?;
    let id = str_field(r, "id")?;
    let derived = derived_id(r)
        .map_err(|e| Problem::new("id", "a canonicalisable receipt", e.to_string()))?;
    if id != derived {
        return Err(Problem::new("id", derived, id));
    }
    let supersedes = match r.get("supersedes") {
        None => None,
        Some(Value::String(s)) if s.starts_with(ID_PREFIX) => Some(s.clone()),
        Some(other) => {
            return Err(Problem::new(
                "supersedes",
                "a receipt id",
                other.to_string(),
            ))
        }
    };
    Ok(Verified {
        id: id.to_string(),
        key_id: key_id.to_string(),
        bundle_ref: str_field(r, "bundle_ref")?.to_string(),
        output_digest: str_field(r, "output_digest")?.to_string(),
        supersedes,
        policy_snapshot: str_field(r, "policy_snapshot")?.to_string(),
    })
}

/// [`verify`] under the manifest's `ctx.keys`, naming a declared but
/// malformed signing key (its id, the manifest field, expected and actual)
/// instead of calling it undeclared.
pub fn verify_trusted(r: &Value, trusted: &crate::keys::Trusted) -> Result<Verified, Problem> {
    let key_id = r
        .get("signature")
        .and_then(|s| s.get("key_id"))
        .and_then(Value::as_str);
    if let Some(bad) = key_id.and_then(|id| trusted.malformed(id)) {
        return Err(Problem::new(
            &format!(
                "signature.key_id `{}` is declared in {} but malformed: {}",
                bad.id, bad.file, bad.field
            ),
            bad.expected.clone(),
            bad.actual.clone(),
        ));
    }
    verify(r, &trusted.keys)
}

/// Check a bundle on its own: its digest recomputes and its `bundle_id` is
/// the one ctx derives from that digest. Returns the digest.
pub fn check_bundle(bundle: &Value) -> Result<String, Problem> {
    let stored = match bundle.get("digest") {
        Some(Value::String(s)) => s.as_str(),
        other => {
            return Err(Problem::new(
                "digest",
                "a sha256:<hex> string",
                other.map_or("nothing".into(), Value::to_string),
            ))
        }
    };
    let digest = crate::bundle::digest(bundle);
    if stored != digest {
        return Err(Problem::new(
            "digest",
            format!("{digest} (what the bundle's content hashes to)"),
            format!("{stored}: the content was changed after the bundle was compiled"),
        ));
    }
    let id = bundle
        .get("bundle_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    let want = canonical::bundle_id(&digest);
    if id != want {
        return Err(Problem::new("bundle_id", want, format!("{id:?}")));
    }
    Ok(digest)
}

/// Check that a verified receipt describes exactly this bundle: id, digest
/// and the pinned volatile members.
pub fn check_link(receipt: &Value, bundle: &Value) -> Result<(), Problem> {
    let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let pairs = [
        (
            "bundle_ref",
            get(receipt, "bundle_ref"),
            "bundle_id",
            get(bundle, "bundle_id"),
        ),
        (
            "output_digest",
            get(receipt, "output_digest"),
            "digest",
            get(bundle, "digest"),
        ),
    ];
    for (rf, rv, bf, bv) in pairs {
        if rv != bv {
            return Err(Problem::new(
                &format!("bundle {bf}"),
                format!("{rv:?} (receipt {rf})"),
                format!("{bv:?}"),
            ));
        }
    }
    let pinned = receipt
        .get("extensions")
        .and_then(|e| e.get(BUNDLE_EXTENSION))
        .cloned()
        .unwrap_or(Value::Null);
    for k in ["namespace", "generated_at", "as_of"] {
        let want = get(&pinned, k);
        let got = get(bundle, k);
        if want != got {
            return Err(Problem::new(
                &format!("bundle {k}"),
                format!("{want:?} (pinned by the receipt)"),
                format!("{got:?}"),
            ));
        }
    }
    Ok(())
}

/// Whether `bytes` are exactly the rendering the receipt recorded (`None`
/// when it recorded none).
pub fn same_rendering(receipt: &Value, bytes: &[u8]) -> Option<bool> {
    let want = receipt
        .get("extensions")?
        .get(BUNDLE_EXTENSION)?
        .get("rendering")?
        .get("sha256")?
        .as_str()?;
    Some(want == canonical::sha256_hex(bytes))
}

/// Pretty JSON with members in JCS order, for files people read and commit.
pub fn to_pretty(r: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut s = serde_json::to_string_pretty(&sorted(r)).expect("JSON value");
    s.push('\n');
    s
}

/// Parse a receipt or bundle file strictly (duplicate keys refused).
pub fn read_json(path: &Path) -> Result<(Vec<u8>, Value), ReceiptError> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReceiptError::NoFile {
            path: path.to_path_buf(),
        },
        _ => ReceiptError::file(path, e),
    })?;
    let v = canonical::parse_strict(&bytes).map_err(|e| ReceiptError::file(path, e))?;
    Ok((bytes, v))
}

/// The default receipt folder of a repository.
pub fn default_dir(root: &Path) -> PathBuf {
    root.join(".ctx").join("receipts")
}
