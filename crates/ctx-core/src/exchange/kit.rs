//! The conformance kit's adapter contract (`context-layer-conformance-adapter/1`):
//! one JSON request in, one JSON result out, eleven operations. Each operation
//! calls the same library functions the `ctx` commands use; only the inputs
//! (synthetic keys, policies and claims supplied by the harness) differ.

use serde_json::{json, Value};

use super::bundle::{self, IssueInput};
use super::canon;
use super::consumer::Consumer;
use super::error::{fail, ClError, ClResult};
use super::evaluate::{self, ApprovalVerifier, EvaluateInput, Preflight};
use super::policy::{is_valid_purpose_code, Policy};
use super::proposal;
use super::receipts::{self, ReceiptDraft, ReceiptLog};
use super::schema::{self, ClKind};
use super::wire::SpecVersion;
use crate::signing::{PublicKey, SigningKeyPair};
use crate::time::Instant;

/// The adapter contract version the kit speaks.
pub const ADAPTER_VERSION: &str = "context-layer-conformance-adapter/1";

/// Handle one request line; always returns the response object.
pub fn handle_line(line: &str) -> Value {
    match crate::json::parse(line.trim_end()) {
        Ok(input) => match handle(&input) {
            Ok(result) => json!({"ok": true, "result": result}),
            Err(e) => json!({"ok": false, "error": {"code": e.code, "message": e.message}}),
        },
        Err(e) => {
            json!({"ok": false, "error": {"code": "INVALID_ADAPTER_INPUT", "message": e.message}})
        }
    }
}

fn usage<T>(msg: impl Into<String>) -> ClResult<T> {
    fail("INVALID_ADAPTER_INPUT", msg)
}

fn clock(input: &Value) -> ClResult<Instant> {
    input["clock"]
        .as_str()
        .and_then(canon::parse_time)
        .ok_or_else(|| {
            ClError::new(
                "INVALID_ADAPTER_INPUT",
                "`clock` must be an RFC 3339 timestamp",
            )
        })
}

fn seed(hex_text: &Value, what: &str) -> ClResult<[u8; 32]> {
    let bytes = hex_text
        .as_str()
        .and_then(|s| hex::decode(s).ok())
        .filter(|b| b.len() == 32)
        .ok_or_else(|| {
            ClError::new(
                "INVALID_ADAPTER_INPUT",
                format!("`{what}` must be 64 hex characters"),
            )
        })?;
    let mut out = [0u8; 32];
    out.copy_from_slice(&bytes);
    Ok(out)
}

/// Dispatch one operation.
pub fn handle(input: &Value) -> ClResult<Value> {
    if input["adapter_version"] != ADAPTER_VERSION {
        return usage(format!("adapter_version must be {ADAPTER_VERSION:?}"));
    }
    match input["operation"].as_str().unwrap_or("") {
        "validate_schema" => {
            let kind = input["schema_name"]
                .as_str()
                .and_then(ClKind::parse)
                .filter(|k| *k != ClKind::MinimumRevealResponse)
                .ok_or_else(|| ClError::new("INVALID_ADAPTER_INPUT", "unknown schema_name"))?;
            Ok(json!({"valid": schema::is_valid(kind, &input["value"])}))
        }
        "canonicalize" => Ok(json!({
            "canonical_json": canon::canonical_text(&input["value"]),
            "digest": canon::digest(&input["value"]),
        })),
        "finalize_record" => {
            let Some(unsigned) = input["unsigned"].as_object() else {
                return usage("`unsigned` must be an object");
            };
            if unsigned.contains_key("id") || unsigned.contains_key("integrity") {
                return fail(
                    "INVALID_UNSIGNED_RECORD",
                    "an unsigned record must omit `id` and `integrity`",
                );
            }
            let Some(prefix) = input["id_prefix"].as_str().filter(|p| !p.is_empty()) else {
                return fail(
                    "INVALID_ID_PREFIX",
                    "`id_prefix` must be a non-empty string",
                );
            };
            Ok(canon::finalize(unsigned.clone(), prefix))
        }
        "purpose_code" => {
            Ok(json!({"valid": input["value"].as_str().is_some_and(is_valid_purpose_code)}))
        }
        "evaluate_policy" => {
            Ok(evaluate_op(input, input["receipt_preflight"] == "available")?.decision)
        }
        "issue_bundle" => issue_op(input),
        "verify_envelope" => {
            let store = TempStore::new()?;
            let c = consumer_input(input)?;
            c.with(&store, |consumer| consumer.open(c.text.as_bytes(), c.at))?;
            Ok(json!({"accepted": true}))
        }
        "replay" => {
            let store = TempStore::new()?;
            let c = consumer_input(input)?;
            let first = c.with(&store, |consumer| {
                consumer.open(c.text.as_bytes(), c.at)?;
                Ok(consumer.open(c.text.as_bytes(), c.at).err())
            })?;
            // A fresh consumer over the same receipt state.
            let restart = c.with(&store, |consumer| {
                Ok(consumer.open(c.text.as_bytes(), c.at).err())
            })?;
            let code = |e: Option<ClError>| e.map_or(Value::Null, |e| json!(e.code));
            Ok(
                json!({"first_accepted": true, "second_error": code(first), "restart_error": code(restart)}),
            )
        }
        "memory_proposal" => {
            let store = TempStore::new()?;
            let c = consumer_input(input)?;
            let candidate = &input["proposal"];
            c.with(&store, |consumer| {
                let session = consumer.open(c.text.as_bytes(), c.at)?;
                proposal::propose(&session, &store.log, candidate, c.at, consumer.revocation)
            })
        }
        "validate_proposal" => {
            proposal::validate(&input["proposal"])?;
            Ok(json!({"valid": true}))
        }
        "receipt_log" => receipt_log_op(input),
        other => fail(
            "UNSUPPORTED_OPERATION",
            format!("operation {other:?} is not supported"),
        ),
    }
}

struct Attested(String);

impl ApprovalVerifier for Attested {
    fn verify(&self, approval: &Value, request_digest: &str, policy_digest: &str) -> bool {
        approval["id"] == self.0.as_str()
            && approval["request_digest"] == request_digest
            && approval["policy_digest"] == policy_digest
    }
}

struct Rejecting;

impl ApprovalVerifier for Rejecting {
    fn verify(&self, _: &Value, _: &str, _: &str) -> bool {
        false
    }
}

fn evaluate_op(input: &Value, preflight_ok: bool) -> ClResult<evaluate::Evaluation> {
    let policy = Policy::from_value(&input["policy"])?;
    let approval = input.get("approval").filter(|a| !a.is_null());
    let attested = Attested(
        approval
            .and_then(|a| a["id"].as_str())
            .unwrap_or_default()
            .to_string(),
    );
    let verifier: Option<&dyn ApprovalVerifier> = match input["approval_verifier"].as_str() {
        Some("authenticated") => Some(&attested),
        Some("rejected") => Some(&Rejecting),
        _ => None,
    };
    evaluate::evaluate(&EvaluateInput {
        request: &input["request"],
        policy: &policy,
        at: clock(input)?,
        approval,
        verifier,
        preflight: if preflight_ok {
            Preflight::Available
        } else {
            Preflight::Absent
        },
        version: SpecVersion::V02,
    })
}

fn issue_op(input: &Value) -> ClResult<Value> {
    let eval = evaluate_op(input, true)?;
    let key = SigningKeyPair::from_seed(&seed(&input["synthetic_seed_hex"], "synthetic_seed_hex")?);
    let Some(kid) = input["key_id"].as_str() else {
        return usage("`key_id` must be a string");
    };
    let claims = input["claims"].as_array().cloned().unwrap_or_default();
    let issued = bundle::issue(&IssueInput {
        request: &input["request"],
        decision: &eval.decision,
        claims: &claims,
        at: clock(input)?,
        issuer: None,
        key: &key,
        kid,
    })?;
    Ok(issued.envelope)
}

/// A fresh, isolated receipt store in a temporary folder (removed on drop).
struct TempStore {
    _dir: tempfile::TempDir,
    log: ReceiptLog,
    log_path: std::path::PathBuf,
    anchor_path: std::path::PathBuf,
    key: SigningKeyPair,
}

impl TempStore {
    fn new() -> ClResult<TempStore> {
        let key = SigningKeyPair::generate()
            .map_err(|e| ClError::new("RECEIPT_STORE_UNAVAILABLE", e.to_string()))?;
        Self::with_key(key)
    }

    fn with_key(key: SigningKeyPair) -> ClResult<TempStore> {
        let dir = tempfile::tempdir()
            .map_err(|e| ClError::new("RECEIPT_STORE_UNAVAILABLE", e.to_string()))?;
        let log_path = dir.path().join("receipts.jsonl");
        let anchor_path = dir.path().join("receipts.anchor.jsonl");
        let log = ReceiptLog::open(&log_path, Some((anchor_path.clone(), key.clone())))?;
        Ok(TempStore {
            _dir: dir,
            log,
            log_path,
            anchor_path,
            key,
        })
    }

    fn reopen(&self) -> ClResult<ReceiptLog> {
        ReceiptLog::open(
            &self.log_path,
            Some((self.anchor_path.clone(), self.key.clone())),
        )
    }
}

struct ConsumerInput {
    text: String,
    at: Instant,
    recipient: String,
    kid: String,
    key: PublicKey,
    revocation: String,
    legacy: Option<Vec<u8>>,
}

fn revocation_mode(mode: &str) -> impl Fn(&str, &str) -> ClResult<bool> + '_ {
    move |_, _| match mode {
        "clear" => Ok(false),
        "revoked" => Ok(true),
        _ => fail(
            "REVOCATION_PROVIDER_FAILED",
            "the revocation provider failed",
        ),
    }
}

impl ConsumerInput {
    /// Run `f` with a consumer reading a fresh view of the store's log.
    fn with<T>(
        &self,
        store: &TempStore,
        f: impl FnOnce(&Consumer<'_>) -> ClResult<T>,
    ) -> ClResult<T> {
        let log = store.reopen()?;
        let trusted = |kid: &str| (kid == self.kid).then_some(self.key);
        let revocation = revocation_mode(&self.revocation);
        let consumer = Consumer {
            principal: &self.recipient,
            log: &log,
            trusted: &trusted,
            legacy_hmac_key: self.legacy.as_deref(),
            revocation: Some(&revocation),
        };
        f(&consumer)
    }
}

fn consumer_input(input: &Value) -> ClResult<ConsumerInput> {
    let key_hex = input["public_key_hex"].as_str().unwrap_or("");
    let key = hex::decode(key_hex)
        .ok()
        .and_then(|b| PublicKey::from_bytes(&b).ok())
        .ok_or_else(|| {
            ClError::new(
                "INVALID_ADAPTER_INPUT",
                "`public_key_hex` must be a 32-byte Ed25519 key",
            )
        })?;
    let legacy = if input["legacy_hmac"] == true {
        Some(
            seed(
                &input["synthetic_legacy_key_hex"],
                "synthetic_legacy_key_hex",
            )?
            .to_vec(),
        )
    } else {
        None
    };
    Ok(ConsumerInput {
        text: serde_json::to_string(&input["envelope"]).unwrap_or_default(),
        at: clock(input)?,
        recipient: input["recipient"].as_str().unwrap_or("").to_string(),
        kid: input["key_id"].as_str().unwrap_or("").to_string(),
        key,
        revocation: input["revocation"].as_str().unwrap_or("clear").to_string(),
        legacy,
    })
}

fn receipt_log_op(input: &Value) -> ClResult<Value> {
    let at = clock(input)?;
    let key = SigningKeyPair::from_seed(&seed(&input["synthetic_seed_hex"], "synthetic_seed_hex")?);
    let ops: Vec<&str> = input["operations"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let store = TempStore::with_key(key)?;
    for op in &ops {
        let r = receipts::build(
            &ReceiptDraft {
                operation: op.to_string(),
                actor: "urn:agent:synthetic-receipt-vector".into(),
                subject_ref: "urn:cl:alias:synthetic-receipt-vector".into(),
                outcome: "success".into(),
                user_summary: "Synthetic test-only receipt vector.".into(),
                ..Default::default()
            },
            at,
            SpecVersion::V02,
        )?;
        store.log.append(&r)?;
    }
    let log_jsonl = std::fs::read_to_string(&store.log_path)
        .map_err(|e| ClError::new("RECEIPT_STORE_UNAVAILABLE", e.to_string()))?;
    let anchor_jsonl = std::fs::read_to_string(&store.anchor_path)
        .map_err(|e| ClError::new("RECEIPT_STORE_UNAVAILABLE", e.to_string()))?;
    let missing_anchor_error = ReceiptLog::open(&store.log_path, None)
        .err()
        .map(|e| e.code);
    let first_line = log_jsonl
        .split_inclusive('\n')
        .next()
        .unwrap_or("")
        .to_string();
    std::fs::write(&store.log_path, first_line)
        .map_err(|e| ClError::new("RECEIPT_STORE_UNAVAILABLE", e.to_string()))?;
    let rollback_error = store.reopen().err().map(|e| e.code);
    Ok(json!({
        "log_path": store.log.path.to_string_lossy(),
        "log_jsonl": log_jsonl,
        "anchor_jsonl": anchor_jsonl,
        "missing_anchor_error": missing_anchor_error,
        "rollback_error": rollback_error,
    }))
}
