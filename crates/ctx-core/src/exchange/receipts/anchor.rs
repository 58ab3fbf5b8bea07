//! The receipt-log anchor (local-core profile §5, anchor version 2): a
//! separate JSON Lines chain of signed statements "the log had N entries,
//! this many bytes, this tail". A log changed without its anchor is caught:
//! fewer entries is a rollback, more an unanchored suffix, the same count with
//! other bytes a rewrite. (Replacing both files with an older authentic pair
//! is not caught; that needs an external checkpoint.)
//!
//! The genesis record is written atomically (a staged file renamed into
//! place, never created empty and then filled), so a kill during the first
//! write leaves no anchor or a whole one; each later record is one append,
//! cut back again when a full disk takes part of it. A record torn by a kill
//! is cut off by the log's recovery (`receipts/recover.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::log::LogState;
use super::seen::{Memo, Read};
use crate::exchange::canon;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::signing::{PublicKey, Signature, SigningKeyPair};

/// The anchor format version this build writes (version 1 is migration input only).
pub const ANCHOR_VERSION: u64 = 2;

/// `ed25519:` + 86 zeroes: the genesis record's previous signature (a sentinel).
pub fn genesis_previous_sig() -> String {
    format!("ed25519:{}", "0".repeat(86))
}

/// Anchor chains this process verified, by path, log and key: their records.
static VERIFIED_ANCHORS: Memo<Arc<Vec<Value>>> = Memo::new();

/// Where the anchor lives and who signs it.
pub struct Anchor {
    pub path: PathBuf,
    pub log_id: String,
    public: PublicKey,
    /// None: verify only (`ctx audit verify` on a machine without the key).
    key: Option<SigningKeyPair>,
}

const MEMBERS: [&str; 9] = [
    "anchor_version",
    "log_id",
    "anchor_sequence",
    "entries",
    "tail_digest",
    "byte_length",
    "file_digest",
    "previous_sig",
    "sig",
];

impl Anchor {
    /// `log_path` must be the absolute, resolved log path: it names the log.
    pub fn new(path: PathBuf, log_path: &Path, key: SigningKeyPair) -> Anchor {
        let log_id = canon::digest(&json!({"receipt_log_path": log_path.to_string_lossy()}));
        Anchor {
            path,
            log_id,
            public: key.public_key(),
            key: Some(key),
        }
    }

    /// An anchor that can only be verified, against its declared public key.
    pub fn verifier(path: PathBuf, log_path: &Path, public: PublicKey) -> Anchor {
        let log_id = canon::digest(&json!({"receipt_log_path": log_path.to_string_lossy()}));
        Anchor {
            path,
            log_id,
            public,
            key: None,
        }
    }

    pub fn public_key(&self) -> PublicKey {
        self.public
    }

    fn sign(&self, unsigned: &Map<String, Value>) -> ClResult<String> {
        let Some(key) = &self.key else {
            return fail(
                "RECEIPT_ANCHOR_REQUIRED",
                "the anchor key is not available here: this receipt log can be verified, not appended to",
            );
        };
        let sig = crate::signing::sign_bytes(
            &canon::canonical_bytes(&Value::Object(unsigned.clone())),
            key,
        );
        Ok(format!(
            "ed25519:{}",
            URL_SAFE_NO_PAD.encode(sig.to_bytes())
        ))
    }

    fn record(&self, sequence: u64, state: &LogState, previous_sig: String) -> ClResult<Value> {
        let mut m = Map::new();
        m.insert("anchor_version".into(), json!(ANCHOR_VERSION));
        m.insert("log_id".into(), json!(self.log_id));
        m.insert("anchor_sequence".into(), json!(sequence));
        m.insert("entries".into(), json!(state.entries.len()));
        m.insert("tail_digest".into(), json!(state.tail_digest));
        m.insert("byte_length".into(), json!(state.byte_length));
        m.insert("file_digest".into(), json!(state.file_digest));
        m.insert("previous_sig".into(), json!(previous_sig));
        let sig = self.sign(&m)?;
        m.insert("sig".into(), json!(sig));
        Ok(Value::Object(m))
    }

    /// Read and verify the whole anchor chain. `Ok(None)`: there is no anchor
    /// file. Records this process already verified (same bytes, same key)
    /// are not verified again; see `receipts/seen.rs`.
    pub fn read(&self) -> ClResult<Option<Arc<Vec<Value>>>> {
        let public = self.public_key();
        let key = self.memo_key();
        let unavailable = |e: std::io::Error| {
            ClError::new(
                "RECEIPT_STORE_UNAVAILABLE",
                format!(
                    "{}: cannot read the receipt anchor: {e}",
                    self.path.display()
                ),
            )
        };
        let Some(reading) = VERIFIED_ANCHORS
            .read(&key, &self.path)
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let invalid = |why: String| {
            ClError::new(
                "RECEIPT_ANCHOR_INVALID",
                format!(
                    "{}: {why}; the receipt log cannot be trusted until this is resolved",
                    self.path.display()
                ),
            )
        };
        let (records, tail) = match reading.read {
            Read::Same(records, tail) => (records, tail),
            Read::Grew {
                value: mut records,
                appended,
                ..
            } => {
                let text = whole_text(&appended, &invalid)?;
                self.extend(Arc::make_mut(&mut records), text, &public, &invalid)?;
                (records, appended)
            }
            Read::Whole(bytes) => {
                if bytes.is_empty() {
                    return Err(invalid(
                        "the anchor file exists but is empty (corruption, not new storage)".into(),
                    ));
                }
                let text = whole_text(&bytes, &invalid)?;
                let mut records = Arc::default();
                self.extend(Arc::make_mut(&mut records), text, &public, &invalid)?;
                (records, bytes)
            }
        };
        VERIFIED_ANCHORS.keep(key, reading.stamp, &tail, records.clone());
        Ok(Some(records))
    }

    fn memo_key(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.path.display(),
            self.log_id,
            self.public_key().to_base64()
        )
    }

    /// Forget what this process verified of the anchor (it was cut back).
    pub(super) fn forget(&self) {
        VERIFIED_ANCHORS.forget(&self.memo_key());
    }

    /// Verify `bytes` (whole records) as a complete anchor chain.
    pub(super) fn verify_bytes(&self, bytes: &[u8]) -> ClResult<Vec<Value>> {
        let invalid = |why: String| {
            ClError::new(
                "RECEIPT_ANCHOR_INVALID",
                format!("{}: {why}", self.path.display()),
            )
        };
        let text = whole_text(bytes, &invalid)?;
        let mut records = Vec::new();
        self.extend(&mut records, text, &self.public_key(), &invalid)?;
        Ok(records)
    }

    /// Verify `text` (whole records) as the records after `records` and add them.
    fn extend(
        &self,
        records: &mut Vec<Value>,
        text: &str,
        public: &PublicKey,
        invalid: &dyn Fn(String) -> ClError,
    ) -> ClResult<()> {
        let mut previous = records
            .last()
            .and_then(|r| r["sig"].as_str())
            .map_or_else(genesis_previous_sig, str::to_string);
        for line in text[..text.len() - 1].split('\n') {
            let i = records.len();
            let v: Value = serde_json::from_str(line)
                .map_err(|_| invalid(format!("record {} is not JSON", i + 1)))?;
            let m = v
                .as_object()
                .filter(|m| m.len() == MEMBERS.len() && MEMBERS.iter().all(|k| m.contains_key(*k)))
                .ok_or_else(|| {
                    invalid(format!(
                        "record {} does not have exactly the anchor members",
                        i + 1
                    ))
                })?;
            if m["anchor_version"] != json!(ANCHOR_VERSION) {
                return Err(invalid(format!(
                    "record {} has anchor_version {} (only {ANCHOR_VERSION} is read; a chain cannot mix versions)",
                    i + 1,
                    m["anchor_version"]
                )));
            }
            if canon::canonical_text(&v) != line {
                return Err(invalid(format!(
                    "record {} is not in canonical form",
                    i + 1
                )));
            }
            if m["log_id"] != json!(self.log_id) {
                return Err(invalid(format!("record {} anchors another log", i + 1)));
            }
            if m["anchor_sequence"] != json!(i) || m["entries"] != json!(i) {
                return Err(invalid(format!("record {} is out of sequence", i + 1)));
            }
            if m["previous_sig"] != json!(previous) {
                return Err(invalid(format!(
                    "record {} does not chain to the previous one",
                    i + 1
                )));
            }
            let sig = m["sig"].as_str().unwrap_or("");
            let mut unsigned = m.clone();
            unsigned.remove("sig");
            let ok = sig
                .strip_prefix("ed25519:")
                .filter(|s| s.len() == 86)
                .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
                .and_then(|b| Signature::from_bytes(&b).ok())
                .is_some_and(|s| {
                    crate::signing::verify_bytes(
                        &canon::canonical_bytes(&Value::Object(unsigned)),
                        &s,
                        public,
                    )
                    .is_ok()
                });
            if !ok {
                return fail(
                    "RECEIPT_ANCHOR_SIGNATURE_INVALID",
                    format!(
                        "{}: record {} is not signed by the configured anchor key",
                        self.path.display(),
                        i + 1
                    ),
                );
            }
            previous = sig.to_string();
            records.push(v);
        }
        Ok(())
    }

    /// Compare a verified log with the newest anchor record.
    pub fn check(&self, records: &[Value], state: &LogState) -> ClResult<()> {
        let Some(last) = records.last() else {
            return fail("RECEIPT_ANCHOR_INVALID", "the anchor holds no record");
        };
        let anchored = last["entries"].as_u64().unwrap_or(0) as usize;
        let have = state.entries.len();
        if have < anchored {
            return fail(
                "RECEIPT_LOG_ROLLBACK",
                format!("the receipt log has {have} entries but its anchor vouches for {anchored}: entries were removed"),
            );
        }
        if have > anchored {
            return fail(
                "RECEIPT_LOG_UNANCHORED_SUFFIX",
                format!("the receipt log has {have} entries but its anchor vouches for {anchored}: the last {} were never anchored", have - anchored),
            );
        }
        if last["byte_length"] != json!(state.byte_length)
            || last["file_digest"] != json!(state.file_digest)
            || last["tail_digest"] != json!(state.tail_digest)
        {
            return fail(
                "RECEIPT_LOG_REWRITE",
                "the receipt log holds as many entries as its anchor vouches for, but different bytes: it was rewritten",
            );
        }
        Ok(())
    }

    /// Write the genesis record for new, empty storage: atomically, and never
    /// over an existing anchor.
    pub fn create_genesis(&self, empty: &LogState) -> ClResult<()> {
        let rec = self.record(0, empty, genesis_previous_sig())?;
        let mut line = canon::canonical_text(&rec).into_bytes();
        line.push(b'\n');
        crate::fs::write_atomic(
            &self.path,
            &line,
            crate::fs::Mode::Private,
            crate::fs::Existing::Refuse,
        )
        .map_err(|e| {
            ClError::new(
                "RECEIPT_STORE_UNAVAILABLE",
                format!("{}: cannot create the anchor: {e}", self.path.display()),
            )
        })
    }

    /// Append the record for `next`, chained to `records`' last.
    pub fn advance(&self, records: &[Value], next: &LogState) -> ClResult<()> {
        let prev = records
            .last()
            .and_then(|r| r["sig"].as_str())
            .map(str::to_string)
            .unwrap_or_else(genesis_previous_sig);
        let rec = self.record(records.len() as u64, next, prev)?;
        append_line(&self.path, &canon::canonical_text(&rec), "receipts.anchor")
    }
}

/// `bytes` as whole UTF-8 lines (ending in a newline).
fn whole_text<'a>(bytes: &'a [u8], invalid: &dyn Fn(String) -> ClError) -> ClResult<&'a str> {
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("not UTF-8".into()))?;
    if !text.ends_with('\n') {
        return Err(invalid("the last anchor record is incomplete".into()));
    }
    Ok(text)
}

/// Append one line and flush it to disk, at the failpoint `point`. A write
/// that fails (a full disk) is cut back off, so the file stays as it was.
pub fn append_line(path: &Path, line: &str, point: &'static str) -> ClResult<()> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let io = |e: std::io::Error| {
        ClError::new(
            "RECEIPT_STORE_UNAVAILABLE",
            format!("{}: cannot append: {e}", path.display()),
        )
    };
    let mut f = o.open(path).map_err(io)?;
    let before = f.metadata().map_err(io)?.len();
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    if let Err(e) =
        crate::fs::failpoint::write_all(point, &mut f, &bytes).and_then(|()| f.sync_all())
    {
        let _ = f.set_len(before);
        let _ = f.sync_all();
        return Err(io(e));
    }
    Ok(())
}
