//! The append-only receipt log: UTF-8 JSON Lines of C(entry), each entry
//! `{log_version: 1, sequence, previous_entry_digest, receipt, entry_digest}`
//! with `entry_digest = D(the other four)`. Every read verifies the whole
//! chain and compares it with the signed anchor; every append happens under
//! one interprocess lock across read, verify, replay check, append, re-read
//! and anchor advance. A crash between log and anchor leaves an unanchored
//! suffix, and the store then refuses to work (fail closed).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant as Clock};

use serde_json::{json, Map, Value};

use super::anchor::{append_line, Anchor};
use super::record;
use crate::exchange::canon::{self, GENESIS_DIGEST};
use crate::exchange::error::{fail, ClError, ClResult};
use crate::signing::SigningKeyPair;

/// The entry format version.
pub const LOG_VERSION: u64 = 1;
const LOCK_TIMEOUT: Duration = Duration::from_millis(5_000);
const LOCK_RETRY: Duration = Duration::from_millis(10);

/// A verified log: its entries and the figures the anchor vouches for.
#[derive(Debug, Clone)]
pub struct LogState {
    /// Each entry as stored (`receipt` inside).
    pub entries: Vec<Value>,
    pub tail_digest: String,
    pub byte_length: u64,
    pub file_digest: String,
}

impl LogState {
    fn empty() -> LogState {
        LogState {
            entries: Vec::new(),
            tail_digest: GENESIS_DIGEST.into(),
            byte_length: 0,
            file_digest: canon::digest_bytes(b""),
        }
    }

    /// The receipts, in log order.
    pub fn receipts(&self) -> impl Iterator<Item = &Value> {
        self.entries.iter().map(|e| &e["receipt"])
    }
}

/// An opened receipt log with its anchor.
pub struct ReceiptLog {
    pub path: PathBuf,
    anchor: Anchor,
    lock_path: PathBuf,
}

/// Holds the log's interprocess lock until dropped.
struct LockGuard(#[allow(dead_code)] File);

fn resolved(path: &Path) -> ClResult<PathBuf> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| {
        ClError::new(
            "RECEIPT_STORE_UNAVAILABLE",
            format!(
                "{}: cannot create the receipt folder: {e}",
                parent.display()
            ),
        )
    })?;
    let parent = parent.canonicalize().map_err(|e| {
        ClError::new(
            "RECEIPT_STORE_UNAVAILABLE",
            format!("{}: {e}", parent.display()),
        )
    })?;
    Ok(parent.join(path.file_name().unwrap_or_default()))
}

impl ReceiptLog {
    /// Open (creating new, empty storage with a signed genesis anchor if
    /// neither file exists). `anchor` is `(anchor path, anchor signing key)`;
    /// without it the log refuses to open: an unanchored log proves nothing.
    pub fn open(
        log_path: &Path,
        anchor: Option<(PathBuf, SigningKeyPair)>,
    ) -> ClResult<ReceiptLog> {
        let Some((anchor_path, key)) = anchor else {
            return fail(
                "RECEIPT_ANCHOR_REQUIRED",
                "a durable receipt log needs an authenticated anchor: configure an anchor key (ctx.exchange.receipts.anchor_key)",
            );
        };
        let path = resolved(log_path)?;
        let anchor_path = resolved(&anchor_path)?;
        if anchor_path == path {
            return fail(
                "INVALID_RECEIPT_ANCHOR_PATH",
                "the receipt log and its anchor must be different files",
            );
        }
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        let log = ReceiptLog {
            lock_path: path.with_file_name(lock_name),
            anchor: Anchor::new(anchor_path, &path, key),
            path,
        };
        let _g = log.lock()?;
        let state = log.read_log()?;
        match log.anchor.read()? {
            Some(records) => log.anchor.check(&records, &state)?,
            None if state.entries.is_empty() && state.byte_length == 0 => {
                log.anchor.create_genesis(&state)?
            }
            None => {
                return fail(
                    "RECEIPT_ANCHOR_MISSING",
                    format!(
                        "{}: the receipt log has entries but its anchor {} is missing; a missing anchor never bootstraps a non-empty log",
                        log.path.display(),
                        log.anchor.path.display()
                    ),
                )
            }
        }
        Ok(log)
    }

    /// The anchor file's path.
    pub fn anchor_path(&self) -> &Path {
        &self.anchor.path
    }

    fn lock(&self) -> ClResult<LockGuard> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.lock_path)
            .map_err(|e| {
                ClError::new(
                    "RECEIPT_STORE_UNAVAILABLE",
                    format!(
                        "{}: cannot open the receipt lock: {e}",
                        self.lock_path.display()
                    ),
                )
            })?;
        let start = Clock::now();
        loop {
            match fs4::FileExt::try_lock(&f) {
                Ok(()) => return Ok(LockGuard(f)),
                Err(_) if start.elapsed() < LOCK_TIMEOUT => std::thread::sleep(LOCK_RETRY),
                Err(_) => {
                    return fail(
                        "RECEIPT_LOCK_TIMEOUT",
                        format!(
                            "{}: another process held the receipt lock for 5 s",
                            self.lock_path.display()
                        ),
                    )
                }
            }
        }
    }

    /// Read and verify every entry (not the anchor).
    fn read_log(&self) -> ClResult<LogState> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LogState::empty()),
            Err(e) => {
                return fail(
                    "RECEIPT_STORE_UNAVAILABLE",
                    format!("{}: cannot read the receipt log: {e}", self.path.display()),
                )
            }
        };
        if bytes.is_empty() {
            return Ok(LogState::empty());
        }
        let broken = |code: &'static str, why: String| {
            ClError::new(code, format!("{}: {why}", self.path.display()))
        };
        if bytes.last() != Some(&b'\n') {
            return Err(broken(
                "RECEIPT_LOG_TRUNCATED",
                "the log does not end at an entry boundary".into(),
            ));
        }
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| broken("RECEIPT_LOG_INVALID_JSON", "the log is not UTF-8".into()))?;
        let mut entries = Vec::new();
        let mut previous = GENESIS_DIGEST.to_string();
        for (i, line) in text[..text.len() - 1].split('\n').enumerate() {
            let n = i + 1;
            let entry: Value = crate::json::parse(line).map_err(|_| {
                broken(
                    "RECEIPT_LOG_INVALID_JSON",
                    format!("entry {n} is not valid JSON"),
                )
            })?;
            let Some(m) = entry.as_object() else {
                return Err(broken(
                    "RECEIPT_LOG_INVALID_ENTRY",
                    format!("entry {n} is not an object"),
                ));
            };
            let mut unsigned = m.clone();
            let stored = unsigned.remove("entry_digest");
            let expected = canon::digest(&Value::Object(unsigned));
            let chained = m.get("log_version") == Some(&json!(LOG_VERSION))
                && m.get("sequence") == Some(&json!(n))
                && m.get("previous_entry_digest").and_then(Value::as_str)
                    == Some(previous.as_str())
                && stored.as_ref().and_then(Value::as_str) == Some(expected.as_str());
            if !chained {
                return Err(broken(
                    "RECEIPT_LOG_CHAIN_MISMATCH",
                    format!("entry {n} breaks the hash chain (changed, reordered or inserted)"),
                ));
            }
            record::validate(&m["receipt"])
                .map_err(|e| broken(e.code, format!("entry {n}: {}", e.message)))?;
            previous = expected;
            entries.push(entry);
        }
        Ok(LogState {
            entries,
            tail_digest: previous,
            byte_length: bytes.len() as u64,
            file_digest: canon::digest_bytes(&bytes),
        })
    }

    /// Verify the log against its anchor and return it.
    pub fn verify(&self) -> ClResult<LogState> {
        let _g = self.lock()?;
        self.verified()
    }

    fn verified(&self) -> ClResult<LogState> {
        let state = self.read_log()?;
        match self.anchor.read()? {
            Some(records) => {
                self.anchor.check(&records, &state)?;
                Ok(state)
            }
            None => fail(
                "RECEIPT_ANCHOR_MISSING",
                format!(
                    "{}: the receipt anchor is missing",
                    self.anchor.path.display()
                ),
            ),
        }
    }

    /// The receipt path is usable right now (readable, verified, anchored).
    pub fn preflight(&self) -> ClResult<()> {
        self.verify().map(|_| ()).map_err(|e| {
            ClError::new(
                "RECEIPT_PREFLIGHT_FAILED",
                format!(
                    "the required receipt store is not available ({}: {})",
                    e.code, e.message
                ),
            )
        })
    }

    /// Append one receipt durably and advance the anchor. A second successful
    /// `bundle.consume` of one bundle by one actor is `RECEIPT_REPLAY_CONFLICT`.
    /// An identical receipt (same id) already in the log is not added twice.
    pub fn append(&self, receipt: &Value) -> ClResult<Value> {
        record::validate(receipt)?;
        let _g = self.lock()?;
        let state = self.verified()?;
        let records = self.anchor.read()?.unwrap_or_default();
        if let Some(existing) = state
            .entries
            .iter()
            .find(|e| e["receipt"]["id"] == receipt["id"])
        {
            return Ok(existing.clone());
        }
        if is_consume(receipt)
            && state.receipts().any(|r| {
                is_consume(r)
                    && r["actor"] == receipt["actor"]
                    && r["bundle_ref"] == receipt["bundle_ref"]
            })
        {
            return fail(
                "RECEIPT_REPLAY_CONFLICT",
                "this bundle's consumption was already recorded for this actor",
            );
        }
        let mut unsigned = Map::new();
        unsigned.insert("log_version".into(), json!(LOG_VERSION));
        unsigned.insert("sequence".into(), json!(state.entries.len() + 1));
        unsigned.insert("previous_entry_digest".into(), json!(state.tail_digest));
        unsigned.insert("receipt".into(), receipt.clone());
        let digest = canon::digest(&Value::Object(unsigned.clone()));
        unsigned.insert("entry_digest".into(), json!(digest));
        let entry = Value::Object(unsigned);
        append_line(&self.path, &canon::canonical_text(&entry), false)?;
        let next = self.read_log()?;
        if next.entries.len() != state.entries.len() + 1 || next.tail_digest != digest {
            return fail(
                "RECEIPT_LOG_APPEND_AMBIGUOUS",
                "the receipt log append did not produce the expected state",
            );
        }
        self.anchor.advance(&records, &next)?;
        Ok(entry)
    }
}

/// A successful `bundle.consume` receipt.
pub fn is_consume(r: &Value) -> bool {
    r["operation"] == "bundle.consume" && r["outcome"] == "success"
}
