//! The consumer side: opening a bundle once (with a durable `bundle.consume`
//! receipt before any context is released), and a session that may read the
//! context, run granted actions and propose memory — nothing else.
//!
//! Replay state is the receipt log itself, so a fresh process (or another
//! consumer on the same store) sees every earlier opening.

use serde_json::{json, Map, Value};

use super::canon;
use super::envelope::{self, Revocation, RevocationCheck, Verified, VerifyInput};
use super::error::{fail, ClError, ClResult};
use super::receipts::{self, log::is_consume, ReceiptDraft, ReceiptLog};
use super::wire::SpecVersion;
use crate::signing::PublicKey;
use crate::time::Instant;

/// Who opens, with which trust and which receipt store.
pub struct Consumer<'a> {
    pub principal: &'a str,
    pub log: &'a ReceiptLog,
    pub trusted: &'a dyn Fn(&str) -> Option<PublicKey>,
    pub legacy_hmac_key: Option<&'a [u8]>,
    pub revocation: Option<RevocationCheck<'a>>,
}

/// An opened bundle.
#[derive(Debug, Clone)]
pub struct Session {
    pub principal: String,
    pub envelope: Value,
    pub bundle: Value,
    pub bundle_id: String,
}

/// How an action ended.
#[derive(Debug, Clone)]
pub enum ExecOutcome {
    /// Ran and succeeded; the completion receipt is durable.
    Success { receipt: Value },
    /// Ran and failed; the failure receipt is durable.
    Failure { receipt: Value },
    /// Ran and succeeded, but the completion receipt could not be stored.
    /// It must be retried (idempotently) before anything depends on it.
    Indeterminate { receipt: Value, error: ClError },
}

impl ExecOutcome {
    /// `success`, `failure` or `indeterminate`, as reported to the user.
    pub fn status(&self) -> &'static str {
        match self {
            ExecOutcome::Success { .. } => "success",
            ExecOutcome::Failure { .. } => "failure",
            ExecOutcome::Indeterminate { .. } => "indeterminate",
        }
    }

    /// The completion (or failure) receipt, stored or waiting to be.
    pub fn receipt(&self) -> &Value {
        match self {
            ExecOutcome::Success { receipt }
            | ExecOutcome::Failure { receipt }
            | ExecOutcome::Indeterminate { receipt, .. } => receipt,
        }
    }
}

/// What an action handler reports back.
pub struct ActionResult {
    pub success: bool,
    /// D or H of what the action produced (never the output itself).
    pub output_digest: String,
}

impl<'a> Consumer<'a> {
    fn verify(&self, text: &[u8], at: Instant) -> ClResult<Verified> {
        let revocation = match self.revocation {
            Some(p) => Revocation::Provider(p),
            None => Revocation::Unchecked,
        };
        envelope::verify(&VerifyInput {
            text,
            recipient: self.principal,
            at,
            trusted: self.trusted,
            legacy_hmac_key: self.legacy_hmac_key,
            revocation,
        })
    }

    fn consumed(&self, bundle_id: &str) -> ClResult<bool> {
        let state = self.log.verify().map_err(|e| {
            ClError::new(
                "RECEIPT_PREFLIGHT_FAILED",
                format!(
                    "the receipt store cannot answer whether this bundle was opened ({}: {})",
                    e.code, e.message
                ),
            )
        })?;
        let consumed = state
            .receipts()
            .any(|r| is_consume(r) && r["actor"] == self.principal && r["bundle_ref"] == bundle_id);
        Ok(consumed)
    }

    /// Open a bundle for the first time: verify, refuse a replay, write the
    /// `bundle.consume` receipt, and only then hand out the session.
    pub fn open(&self, text: &[u8], at: Instant) -> ClResult<Session> {
        let v = self.verify(text, at)?;
        if self.consumed(&v.bundle_id)? {
            return fail("BUNDLE_REPLAY", "this single-use bundle was already opened");
        }
        self.log.preflight()?;
        let b = &v.bundle;
        let receipt = receipts::build(
            &ReceiptDraft {
                operation: "bundle.consume".into(),
                actor: self.principal.into(),
                subject_ref: b["subject_alias"].as_str().unwrap_or_default().into(),
                request_ref: b["request_ref"].as_str().map(str::to_string),
                decision_ref: b["decision_ref"].as_str().map(str::to_string),
                bundle_ref: Some(v.bundle_id.clone()),
                outcome: "success".into(),
                policy_snapshot: b["policy_snapshot"]["digest"].as_str().map(str::to_string),
                input_digest: b["integrity"]["digest"].as_str().map(str::to_string),
                output_digest: Some(canon::digest(
                    &json!({"consumer": self.principal, "state": "opened"}),
                )),
                user_summary: "Opened an authorized scoped context bundle.".into(),
                ..Default::default()
            },
            at,
            SpecVersion::of(b, "bundle")?,
        )?;
        match self.log.append(&receipt) {
            Ok(_) => {}
            Err(e) if e.code == "RECEIPT_REPLAY_CONFLICT" => {
                return fail("BUNDLE_REPLAY", "this single-use bundle was already opened")
            }
            Err(e) => {
                return fail(
                    "BUNDLE_CONSUME_RECEIPT_FAILED",
                    format!("the bundle.consume receipt could not be made durable ({}); nothing was released", e.code),
                )
            }
        }
        Ok(Session {
            principal: self.principal.into(),
            envelope: v.envelope,
            bundle: v.bundle,
            bundle_id: v.bundle_id,
        })
    }

    /// Continue a session opened earlier (another process): the envelope is
    /// verified again and must have been opened by this principal.
    pub fn resume(&self, text: &[u8], at: Instant) -> ClResult<Session> {
        let v = self.verify(text, at)?;
        if !self.consumed(&v.bundle_id)? {
            return fail(
                "SESSION_NOT_OPEN",
                "this bundle has not been opened by this recipient; run `ctx exchange open` first",
            );
        }
        Ok(Session {
            principal: self.principal.into(),
            envelope: v.envelope,
            bundle: v.bundle,
            bundle_id: v.bundle_id,
        })
    }
}

impl Session {
    /// A receipt draft about this bundle.
    pub fn draft(&self, operation: &str, outcome: &str, summary: &str) -> ReceiptDraft {
        let b = &self.bundle;
        ReceiptDraft {
            operation: operation.into(),
            actor: self.principal.clone(),
            subject_ref: b["subject_alias"].as_str().unwrap_or_default().into(),
            request_ref: b["request_ref"].as_str().map(str::to_string),
            decision_ref: b["decision_ref"].as_str().map(str::to_string),
            bundle_ref: Some(self.bundle_id.clone()),
            outcome: outcome.into(),
            policy_snapshot: b["policy_snapshot"]["digest"].as_str().map(str::to_string),
            user_summary: summary.into(),
            ..Default::default()
        }
    }

    pub fn version(&self) -> SpecVersion {
        SpecVersion::of(&self.bundle, "bundle").unwrap_or_default()
    }

    /// What a handler sees: context and instructions, kept apart.
    pub fn handler_input(&self, capability: &str) -> Value {
        let b = &self.bundle;
        let mut m = Map::new();
        m.insert("subject_alias".into(), b["subject_alias"].clone());
        m.insert("purpose_code".into(), b["purpose_code"].clone());
        if let Some(p) = b.get("purpose") {
            m.insert("purpose".into(), p.clone());
        }
        m.insert("task".into(), b["task"].clone());
        m.insert("instructions".into(), b["instructions"].clone());
        m.insert("context".into(), b["context"].clone());
        m.insert("capability".into(), json!(capability));
        m.insert("expires_at".into(), b["expires_at"].clone());
        Value::Object(m)
    }

    /// Is the session still usable at `at` (expiry and revocation rechecked)?
    pub fn assert_active(
        &self,
        at: Instant,
        revocation: Option<RevocationCheck<'_>>,
    ) -> ClResult<()> {
        let expires = self.bundle["expires_at"]
            .as_str()
            .and_then(canon::parse_time);
        if expires.is_none_or(|e| e <= canon::to_ms(at)) {
            return fail("BUNDLE_EXPIRED", "the bundle has expired");
        }
        if let Some(p) = revocation {
            match p(
                &self.bundle_id,
                self.bundle["decision_ref"].as_str().unwrap_or(""),
            ) {
                Ok(false) => {}
                Ok(true) => return fail("BUNDLE_REVOKED", "the bundle has been revoked"),
                Err(e) => {
                    return fail(
                        "REVOCATION_CHECK_FAILED",
                        format!("revocation status could not be verified ({e})"),
                    )
                }
            }
        }
        Ok(())
    }

    /// Is `capability` granted, and covered by the receipt contract? Text in
    /// the context never changes the answer: only the signed capability list counts.
    pub fn check_capability(&self, capability: &str) -> ClResult<()> {
        let has = |k: &Value| {
            k.as_array()
                .is_some_and(|a| a.iter().any(|x| x == capability))
        };
        if !has(&self.bundle["capabilities"]) {
            return fail(
                "CAPABILITY_NOT_GRANTED",
                format!(
                    "the bundle does not grant `{capability}` (granted: {})",
                    self.bundle["capabilities"]
                ),
            );
        }
        if !has(&self.bundle["receipt_contract"]["required_operations"]) {
            return fail(
                "CAPABILITY_RECEIPT_NOT_AUTHORIZED",
                format!("the bundle's receipt contract does not cover `{capability}`"),
            );
        }
        Ok(())
    }

    /// Run a granted action: preflight first (nothing runs without a usable
    /// receipt path), then the handler, then a durable completion receipt.
    pub fn execute(
        &self,
        log: &ReceiptLog,
        capability: &str,
        at: Instant,
        revocation: Option<RevocationCheck<'_>>,
        handler: impl FnOnce(&Value) -> ActionResult,
        now: impl Fn() -> Instant,
    ) -> ClResult<ExecOutcome> {
        self.check_capability(capability)?;
        self.assert_active(at, revocation)?;
        log.preflight()?;
        let input = self.handler_input(capability);
        let started = now();
        let result = handler(&input);
        let completed = now();
        let mut meta = Map::new();
        meta.insert("capability".into(), json!(capability));
        let (outcome, summary) = if result.success {
            ("success", "Authorized action completed.")
        } else {
            ("failure", "Authorized action failed.")
        };
        let mut d = self.draft(capability, outcome, summary);
        d.started_at = Some(started);
        d.completed_at = Some(completed.max(started));
        d.input_digest = Some(canon::digest(&input));
        d.output_digest = Some(result.output_digest);
        d.metadata = meta;
        let receipt = receipts::build(&d, completed.max(started), self.version())?;
        match log.append(&receipt) {
            Ok(_) if result.success => Ok(ExecOutcome::Success { receipt }),
            Ok(_) => Ok(ExecOutcome::Failure { receipt }),
            Err(e) if result.success => Ok(ExecOutcome::Indeterminate { receipt, error: e }),
            Err(e) => fail(
                "ACTION_FAILURE_RECEIPT_PERSIST_FAILED",
                format!(
                    "the action failed and its failure receipt could not be stored ({}: {})",
                    e.code, e.message
                ),
            ),
        }
    }
}
