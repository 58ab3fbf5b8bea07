//! What an interrupted append leaves in the receipt log, rolled back.
//!
//! An append writes the log entry, then the anchor record. A kill between the
//! two leaves an entry the anchor does not vouch for (an unanchored suffix); a
//! short write (a full disk, a kill inside one `write`) leaves a torn line in
//! the log or a torn record in the anchor. None of them was ever acknowledged:
//! the operation the entry records did not return. So when the log is opened
//! (under its lock) and everything beyond the anchor verifies as the tail of
//! this very chain — the anchored bytes hash to the anchor's digest, the extra
//! whole entries chain on from its tail digest and hold valid receipts, at
//! most one torn line follows — it is rolled back:
//!
//! 1. the removed bytes (log and anchor) are appended, base64, to
//!    `<log>.rolled-back.jsonl` beside the log, and synced: nothing is lost;
//! 2. the log and the anchor are cut back to what the anchor vouches for;
//! 3. a `receipt.log.recover` receipt says what was removed and where it is
//!    kept, appended and anchored like any other.
//!
//! Rolling back, rather than anchoring what was found, is deliberate: an
//! entry nobody signed is not evidence, anchoring it would let whoever can
//! write the log have a forged receipt signed, and a rolled-back
//! `bundle.consume` lets its consumer open the bundle it never received (an
//! anchored one would answer `BUNDLE_REPLAY`). Receipts that must survive a
//! crash are written as pending receipts first (`ctx proposals commit`,
//! indeterminate actions) and appended again by the next run.
//!
//! Anything else — fewer entries than anchored, other bytes, a suffix that
//! does not chain — is not a crash's doing: it stays refused.

use base64::Engine;
use serde_json::{json, Value};

use super::log::{LogState, ReceiptLog};
use super::record::{self, ReceiptDraft};
use crate::exchange::canon;
use crate::exchange::error::{ClError, ClResult};
use crate::exchange::wire::SpecVersion;

/// The operation of the receipt that records a rollback.
pub const RECOVER_OPERATION: &str = "receipt.log.recover";

/// May a failed open be the trace of an interrupted append?
pub(super) fn may_repair(e: &ClError) -> bool {
    matches!(
        e.code,
        "RECEIPT_LOG_UNANCHORED_SUFFIX" | "RECEIPT_LOG_TRUNCATED"
    ) || (e.code == "RECEIPT_ANCHOR_INVALID" && e.message.contains("incomplete"))
}

/// Where rolled-back bytes are kept.
pub fn rolled_back_path(log: &std::path::Path) -> std::path::PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "receipts".into());
    log.with_file_name(format!("{stem}.rolled-back.jsonl"))
}

/// What a rollback removes.
struct Rollback {
    /// Anchored bytes and entries of the log.
    anchored: u64,
    anchored_entries: Value,
    /// Whole anchor records kept.
    keep_anchor: usize,
    /// The log's bytes beyond the anchor, and how many whole entries they hold.
    suffix: Vec<u8>,
    removed_entries: usize,
    /// A torn anchor record.
    torn_anchor: Vec<u8>,
}

impl ReceiptLog {
    /// Is what makes the log fail to verify exactly what an interrupted append
    /// leaves (see the module)? Checks only; needs no signing key.
    pub fn crash_leftover(&self) -> bool {
        self.plan_rollback().is_some()
    }

    fn plan_rollback(&self) -> Option<Rollback> {
        let anchor_bytes = std::fs::read(&self.anchor.path).ok()?;
        let keep_anchor = anchor_bytes.iter().rposition(|b| *b == b'\n')? + 1;
        let records = self
            .anchor
            .verify_bytes(&anchor_bytes[..keep_anchor])
            .ok()?;
        let last = records.last()?;
        let anchored = last["byte_length"].as_u64()?;
        let log_bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(_) => return None,
        };
        if (log_bytes.len() as u64) < anchored {
            return None;
        }
        let (prefix, suffix) = log_bytes.split_at(anchored as usize);
        if canon::digest_bytes(prefix) != last["file_digest"].as_str()? {
            return None;
        }
        let broken = |code: &'static str, why: String| ClError::new(code, why);
        let mut state = LogState::empty();
        if !prefix.is_empty() {
            ReceiptLog::extend(&mut state, prefix, &broken).ok()?;
        }
        if state.tail_digest != last["tail_digest"].as_str()? {
            return None;
        }
        let whole = suffix
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        if whole > 0 {
            ReceiptLog::extend(&mut state, &suffix[..whole], &broken).ok()?;
        }
        let torn_anchor = anchor_bytes[keep_anchor..].to_vec();
        if suffix.is_empty() && torn_anchor.is_empty() {
            return None; // nothing beyond the anchor: not this module's case
        }
        Some(Rollback {
            anchored,
            anchored_entries: last["entries"].clone(),
            keep_anchor,
            removed_entries: suffix[..whole].iter().filter(|b| **b == b'\n').count(),
            suffix: suffix.to_vec(),
            torn_anchor,
        })
    }

    /// Roll back what lies beyond the anchor (see the module), or return
    /// `cause` when that is not what an interrupted append leaves. The
    /// caller holds the log's lock.
    pub(super) fn repair(&self, cause: &ClError) -> ClResult<()> {
        let Some(r) = self.plan_rollback() else {
            return Err(cause.clone());
        };
        let unavailable = |p: &std::path::Path, e: std::io::Error| {
            ClError::new("RECEIPT_STORE_UNAVAILABLE", format!("{}: {e}", p.display()))
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        let kept = rolled_back_path(&self.path);
        let at = canon::to_ms(chrono::Utc::now());
        let removed_digest = canon::digest_bytes(&r.suffix);
        let record = json!({
            "at": canon::iso_ms(&at),
            "anchored_entries": r.anchored_entries,
            "anchored_bytes": r.anchored,
            "removed_entries": r.removed_entries,
            "removed_digest": removed_digest,
            "removed_base64": b64.encode(&r.suffix),
            "anchor_removed_base64": b64.encode(&r.torn_anchor),
        });
        super::anchor::append_line(&kept, &record.to_string(), "receipts.rollback")?;
        let anchor_path = self.anchor.path.clone();
        for (path, len) in [
            (&self.path, r.anchored),
            (&anchor_path, r.keep_anchor as u64),
        ] {
            if let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) {
                f.set_len(len)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| unavailable(path, e))?;
            }
        }
        self.forget();
        self.anchor.forget();
        crate::fs::failpoint::hit("receipts.rolled-back");
        let whole = r.suffix.len() - r.suffix.iter().rev().take_while(|b| **b != b'\n').count();
        let torn = r.suffix.len() - whole;
        let what = match (r.removed_entries, torn) {
            (0, 0) => "a torn anchor record".to_string(),
            (n, 0) => format!("{n} unanchored entr{}", if n == 1 { "y" } else { "ies" }),
            (0, t) => format!("a torn line ({t} bytes)"),
            (n, t) => format!("{n} unanchored entries and a torn line ({t} bytes)"),
        };
        let name = kept
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let receipt = record::build(
            &ReceiptDraft {
                operation: RECOVER_OPERATION.into(),
                actor: record::DEFAULT_ISSUER.into(),
                subject_ref: "urn:cl:alias:receipt-log".into(),
                outcome: "success".into(),
                user_summary: format!(
                    "Rolled back {what} an interrupted append left beyond the anchor; the removed bytes are kept in {name}."
                ),
                metadata: crate::exchange::ops::meta(&[
                    ("removed_entries", &r.removed_entries.to_string()),
                    ("removed_bytes", &r.suffix.len().to_string()),
                    ("removed_digest", &removed_digest),
                    ("kept_in", &name),
                ]),
                ..Default::default()
            },
            at,
            SpecVersion::V02,
        )?;
        self.append_locked(&receipt).map(|_| ())
    }
}

/// Rolled-back records kept beside the log at `log` (for `ctx audit verify`).
pub fn rolled_back(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(rolled_back_path(log))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::signing::SigningKeyPair;

    fn receipt(n: u32) -> Value {
        let at = crate::time::parse_timestamp("2026-01-01T00:00:00Z").unwrap();
        record::build(
            &ReceiptDraft {
                operation: "policy.evaluate".into(),
                actor: format!("urn:agent:crash-{n}"),
                subject_ref: "urn:cl:alias:crash".into(),
                outcome: "success".into(),
                user_summary: "Crash test receipt.".into(),
                ..Default::default()
            },
            at,
            SpecVersion::V02,
        )
        .unwrap()
    }

    /// The files after three appends and after a fourth.
    struct Store {
        _dir: tempfile::TempDir,
        log: PathBuf,
        anchor: PathBuf,
        key: SigningKeyPair,
        three: (Vec<u8>, Vec<u8>),
        four: (Vec<u8>, Vec<u8>),
    }

    fn store() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("receipts.jsonl");
        let anchor = dir.path().join("receipts.anchor.jsonl");
        let key = SigningKeyPair::generate().unwrap();
        let l = ReceiptLog::open(&log, Some((anchor.clone(), key.clone()))).unwrap();
        for n in 0..3 {
            l.append(&receipt(n)).unwrap();
        }
        let read = |p: &Path| std::fs::read(p).unwrap();
        let three = (read(&log), read(&anchor));
        l.append(&receipt(3)).unwrap();
        let four = (read(&log), read(&anchor));
        Store {
            _dir: dir,
            log,
            anchor,
            key,
            three,
            four,
        }
    }

    impl Store {
        fn set(&self, log: &[u8], anchor: &[u8]) {
            std::fs::write(&self.log, log).unwrap();
            std::fs::write(&self.anchor, anchor).unwrap();
        }
        fn open(&self) -> ClResult<ReceiptLog> {
            ReceiptLog::open(&self.log, Some((self.anchor.clone(), self.key.clone())))
        }
    }

    /// After a rollback the log holds the anchored entries and the recovery
    /// receipt, anchored; the removed bytes are kept.
    fn rolled_back_to_three(s: &Store, removed: &[u8]) {
        let log = s.open().expect("a crash's leftover is repaired");
        let state = log.verify_full().unwrap();
        assert_eq!(state.entries.len(), 4);
        let r = &state.entries[3]["receipt"];
        assert_eq!(r["operation"], RECOVER_OPERATION);
        assert!(std::fs::read(&s.log).unwrap().starts_with(&s.three.0));
        let kept = rolled_back(&s.log);
        assert_eq!(kept.len(), 1);
        let b64 = base64::engine::general_purpose::STANDARD;
        let bytes = b64
            .decode(kept[0]["removed_base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(bytes, removed);
        assert_eq!(kept[0]["anchored_entries"], 3);
    }

    #[test]
    fn a_kill_between_log_and_anchor_is_rolled_back() {
        let s = store();
        s.set(&s.four.0, &s.three.1);
        assert!(ReceiptLog::inspect(&s.log, &s.anchor, s.key.public_key()).1);
        rolled_back_to_three(&s, &s.four.0[s.three.0.len()..]);
    }

    #[test]
    fn a_torn_log_line_is_rolled_back() {
        let s = store();
        let half = s.three.0.len() + (s.four.0.len() - s.three.0.len()) / 2;
        s.set(&s.four.0[..half], &s.three.1);
        rolled_back_to_three(&s, &s.four.0[s.three.0.len()..half]);
    }

    #[test]
    fn a_torn_anchor_record_is_cut_and_its_entry_rolled_back() {
        let s = store();
        let half = s.three.1.len() + (s.four.1.len() - s.three.1.len()) / 2;
        s.set(&s.four.0, &s.four.1[..half]);
        rolled_back_to_three(&s, &s.four.0[s.three.0.len()..]);
    }

    #[test]
    fn what_a_crash_cannot_leave_stays_refused() {
        let s = store();
        // An unanchored entry that does not chain (edited).
        let mut edited = s.four.0.clone();
        let at = s.three.0.len() + 40;
        edited[at] = if edited[at] == b'a' { b'b' } else { b'a' };
        s.set(&edited, &s.three.1);
        assert!(!ReceiptLog::inspect(&s.log, &s.anchor, s.key.public_key()).1);
        assert!(s.open().is_err());
        // Anchored entries removed: a rollback, never repaired.
        s.set(&s.three.0, &s.four.1);
        assert_eq!(s.open().err().unwrap().code, "RECEIPT_LOG_ROLLBACK");
        assert!(rolled_back(&s.log).is_empty());
    }

    #[test]
    fn remembered_appends_agree_with_a_full_verification() {
        let s = store();
        s.set(&s.four.0, &s.four.1);
        let log = s.open().unwrap();
        // The log is remembered: an unchanged file is not read again, and an
        // append reads back only its own line.
        assert_eq!(log.verify().unwrap().entries.len(), 4);
        log.append(&receipt(9)).unwrap();
        assert_eq!(log.verify().unwrap().entries.len(), 5);
        assert_eq!(log.verify_full().unwrap().entries.len(), 5);
    }
}
