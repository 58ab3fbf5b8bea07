//! Retention of issued bundles (seed 000 §11.7, §12, §13.2): the issuer's
//! stored copy of a bundle is plaintext context, so once nobody may use it —
//! expired, revoked, or its source object deleted from the repository — the
//! copy is replaced by a purged record that keeps only non-content evidence:
//! ids, recipient, alias, times, the policy snapshot, the bundle's digest and
//! the digest of the envelope that was stored. Consumption, replay and
//! revocation are facts of the receipt log, which holds no payloads and is
//! kept whole (receipts are the append-only evidence, §13.5). The provenance
//! map (handle → source reference) stays: a commit must still prove which
//! sources a proposal names; it holds references, never text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Exchange;
use crate::exchange::canon;
use crate::exchange::error::{ClError, ClResult};
use crate::exchange::state::{self, Kind};
use crate::time::Instant;

/// Why a bundle's plaintext was purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PurgeReason {
    Expired,
    Revoked,
    SourceDeleted,
}

impl PurgeReason {
    /// The error a consumer gets for a purged bundle.
    pub fn error(self, bundle_id: &str) -> ClError {
        match self {
            PurgeReason::Expired => ClError::new(
                "BUNDLE_EXPIRED",
                format!("bundle {bundle_id} has expired; its context was deleted"),
            ),
            PurgeReason::Revoked => ClError::new(
                "BUNDLE_REVOKED",
                format!("bundle {bundle_id} was revoked; its context was deleted"),
            ),
            PurgeReason::SourceDeleted => ClError::new(
                "BUNDLE_PURGED",
                format!("a source of bundle {bundle_id} was deleted, and so was its context; make a new request"),
            ),
        }
    }
}

/// The members of a stored bundle that survive a purge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleEvidence {
    pub spec_version: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub recipient: String,
    pub subject_alias: String,
    #[serde(default)]
    pub request_ref: Option<String>,
    #[serde(default)]
    pub decision_ref: Option<String>,
    pub issued_at: String,
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub policy_snapshot: Option<Value>,
    pub integrity: Value,
}

/// When and why a stored bundle was purged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Purge {
    pub at: String,
    pub reason: PurgeReason,
    /// sha256 of the envelope file that was replaced.
    pub envelope_digest: String,
}

/// A stored bundle as retention sees it: the envelope's bundle (only the
/// members above are read) and, once purged, why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredBundle {
    pub bundle: BundleEvidence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purged: Option<Purge>,
}

impl StoredBundle {
    /// Read a stored envelope or purged record.
    pub fn parse(stored: &Value) -> ClResult<StoredBundle> {
        serde_json::from_value(stored.clone()).map_err(|e| {
            ClError::new(
                "STATE_UNAVAILABLE",
                format!("a stored bundle is not an envelope nor a purged record: {e}"),
            )
        })
    }
}

/// What one purge pass did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PurgeReport {
    /// `(bundle id, reason)`, in file order.
    pub purged: Vec<(String, PurgeReason)>,
    /// Bundles whose plaintext is kept (still usable).
    pub kept: usize,
}

/// Why `b` may no longer be used at `at`, if so.
fn reason(
    ex: &Exchange<'_>,
    b: &BundleEvidence,
    revoked: &dyn Fn(&str) -> ClResult<bool>,
    at: Instant,
) -> ClResult<Option<PurgeReason>> {
    let expired = b
        .expires_at
        .as_deref()
        .and_then(canon::parse_time)
        .is_some_and(|t| t <= at);
    if expired {
        return Ok(Some(PurgeReason::Expired));
    }
    if revoked(&b.id)? {
        return Ok(Some(PurgeReason::Revoked));
    }
    let map_path = ex.state.path(Kind::Provenance, &state::name_of(&b.id));
    let map: std::collections::BTreeMap<String, String> = match std::fs::read(&map_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", map_path.display()))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
        Err(e) => {
            return Err(ClError::new(
                "STATE_UNAVAILABLE",
                format!("{}: {e}", map_path.display()),
            ))
        }
    };
    let deleted = map.values().any(|source| {
        source.strip_prefix("ctx:object:").is_some_and(|key| {
            let id = key.split_once('@').map_or(key, |(id, _)| id);
            !ex.repo.objects.iter().any(|o| o.id == id)
        })
    });
    Ok(deleted.then_some(PurgeReason::SourceDeleted))
}

/// Purge every stored bundle nobody may use any more. Takes the write lock.
pub fn purge(ex: &Exchange<'_>, at: Instant) -> ClResult<PurgeReport> {
    let log = ex.optional_log().transpose()?;
    let state = match &log {
        Some(l) => Some(l.verify()?),
        None => None,
    };
    let revoked = |id: &str| -> ClResult<bool> {
        Ok(state.as_ref().is_some_and(|s| {
            s.receipts().any(|r| {
                r["operation"] == "bundle.revoke"
                    && r["bundle_ref"] == id
                    && r["outcome"] == "success"
            })
        }))
    };
    let _lock = ex.state.lock()?;
    let at = canon::to_ms(at);
    let mut report = PurgeReport::default();
    for (path, stored) in ex.state.all(Kind::Bundle)? {
        let s = StoredBundle::parse(&stored)?;
        if s.purged.is_some() {
            continue;
        }
        let Some(why) = reason(ex, &s.bundle, &revoked, at)? else {
            report.kept += 1;
            continue;
        };
        let bytes = std::fs::read(&path)
            .map_err(|e| ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", path.display())))?;
        let record = StoredBundle {
            bundle: s.bundle.clone(),
            purged: Some(Purge {
                at: canon::iso_ms(&at),
                reason: why,
                envelope_digest: format!(
                    "sha256:{}",
                    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))
                ),
            }),
        };
        let mut out = serde_json::to_vec_pretty(&record).expect("JSON");
        out.push(b'\n');
        crate::fs::write_atomic(
            &path,
            &out,
            crate::fs::Mode::RepositoryDefault,
            crate::fs::Existing::Replace,
        )
        .map_err(|e| {
            ClError::new(
                "STATE_UNAVAILABLE",
                format!("{}: cannot write: {e}", path.display()),
            )
        })?;
        report.purged.push((s.bundle.id, why));
    }
    Ok(report)
}

/// The purge reason of a stored bundle, if it was purged.
pub fn purged(stored: &Value) -> Option<PurgeReason> {
    StoredBundle::parse(stored).ok()?.purged.map(|p| p.reason)
}
