//! The append-only receipt log: UTF-8 JSON Lines of C(entry), each entry
//! `{log_version: 1, sequence, previous_entry_digest, receipt, entry_digest}`
//! with `entry_digest = D(the other four)`. Every read verifies the chain
//! (what this process verified before is remembered, not redone: only what
//! was appended since is read, `receipts/seen.rs`) and compares it with the
//! signed anchor; every append happens under one interprocess lock across
//! read, verify, replay check, append, re-read and anchor advance, and costs
//! what it appends (the replay and duplicate checks use an index kept with
//! the verified state).
//!
//! A crash between log and anchor leaves an unanchored suffix, a full disk a
//! torn line; opening the log under the lock rolls either back when what is
//! beyond the anchor verifies as the tail of this chain, keeps the removed
//! bytes beside the log and records the rollback in a receipt
//! (`receipts/recover.rs`). Anything else — a rewrite, a rollback, a suffix
//! that does not chain — fails closed as before.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::anchor::{append_line, Anchor};
use super::record;
use super::seen::{Memo, Read};
use crate::exchange::canon::{self, GENESIS_DIGEST};
use crate::exchange::error::{fail, ClError, ClResult};
use crate::signing::{PublicKey, SigningKeyPair};

/// The entry format version.
pub const LOG_VERSION: u64 = 1;
const LOCK_TIMEOUT: Duration = Duration::from_millis(5_000);
const LOCK_RETRY: Duration = Duration::from_millis(10);

/// Logs this process verified, by resolved path: their state and the SHA-256
/// state after their bytes (so the file digest extends without rehashing).
static VERIFIED_LOGS: Memo<(LogState, Sha256)> = Memo::new();

/// A verified log: its entries and the figures the anchor vouches for.
#[derive(Debug, Clone)]
pub struct LogState {
    /// Each entry as stored (`receipt` inside); shared with the process's
    /// memo of verified logs, so handing a state out does not copy it.
    pub entries: Arc<Vec<Value>>,
    pub tail_digest: String,
    pub byte_length: u64,
    pub file_digest: String,
    index: Arc<Index>,
}

/// What an append checks, without a scan of the entries.
#[derive(Debug, Clone, Default)]
struct Index {
    /// Receipt id → position in `entries`.
    ids: HashMap<String, usize>,
    /// `(actor, bundle_ref)` of every successful `bundle.consume`.
    consumed: HashSet<(String, String)>,
}

impl Index {
    fn add(&mut self, at: usize, entry: &Value) {
        let r = &entry["receipt"];
        if let Some(id) = r["id"].as_str() {
            self.ids.entry(id.to_string()).or_insert(at);
        }
        if is_consume(r) {
            self.consumed.insert(consume_key(r));
        }
    }
}

fn consume_key(r: &Value) -> (String, String) {
    let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
    (s("actor"), s("bundle_ref"))
}

impl LogState {
    pub(super) fn empty() -> LogState {
        LogState {
            entries: Arc::default(),
            tail_digest: GENESIS_DIGEST.into(),
            byte_length: 0,
            file_digest: canon::digest_bytes(b""),
            index: Arc::default(),
        }
    }

    /// The receipts, in log order.
    pub fn receipts(&self) -> impl Iterator<Item = &Value> {
        self.entries.iter().map(|e| &e["receipt"])
    }

    /// The entry holding the receipt `id`.
    pub fn entry(&self, id: &str) -> Option<&Value> {
        self.index.ids.get(id).map(|&i| &self.entries[i])
    }
}

/// An opened receipt log with its anchor.
pub struct ReceiptLog {
    pub path: PathBuf,
    pub(super) anchor: Anchor,
    lock_path: PathBuf,
}

/// Holds the log's interprocess lock until dropped.
pub(super) struct LockGuard(#[allow(dead_code)] File);

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
    /// neither file exists), repairing what an interrupted append left.
    /// `anchor` is `(anchor path, anchor signing key)`; without it the log
    /// refuses to open: an unanchored log proves nothing.
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
        match log.check_or_create() {
            Ok(()) => {}
            Err(e) if super::recover::may_repair(&e) => log.repair(&e)?,
            Err(e) => return Err(e),
        }
        Ok(log)
    }

    /// The log at `log_path` with its anchor, for verification only (no
    /// lock file is created, nothing is repaired or appended): what
    /// `ctx audit verify` and `ctx doctor` check with the anchor's declared
    /// public key, on a machine that does not hold the anchor key. The flag
    /// says whether a failure is exactly what an interrupted append leaves.
    pub fn inspect(
        log_path: &Path,
        anchor_path: &Path,
        public: PublicKey,
    ) -> (ClResult<LogState>, bool) {
        let path = log_path
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .map_or_else(
                || log_path.to_path_buf(),
                |p| p.join(log_path.file_name().unwrap_or_default()),
            );
        let log = ReceiptLog {
            lock_path: PathBuf::new(),
            anchor: Anchor::verifier(anchor_path.to_path_buf(), &path, public),
            path,
        };
        log.forget();
        log.anchor.forget();
        let verdict = log.verified().map(|(state, _)| state);
        let leftover = verdict.is_err() && log.crash_leftover();
        (verdict, leftover)
    }

    /// Verify the log against its anchor, or create new, empty storage.
    fn check_or_create(&self) -> ClResult<()> {
        let state = self.read_log()?;
        match self.anchor.read()? {
            Some(records) => self.anchor.check(&records, &state),
            None if state.entries.is_empty() && state.byte_length == 0 => {
                self.anchor.create_genesis(&state)
            }
            None => fail(
                "RECEIPT_ANCHOR_MISSING",
                format!(
                    "{}: the receipt log has entries but its anchor {} is missing; a missing anchor never bootstraps a non-empty log",
                    self.path.display(),
                    self.anchor.path.display()
                ),
            ),
        }
    }

    /// The anchor file's path.
    pub fn anchor_path(&self) -> &Path {
        &self.anchor.path
    }

    pub(super) fn lock(&self) -> ClResult<LockGuard> {
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

    /// Read and verify every entry (not the anchor). What this process
    /// verified before is not verified again (`receipts/seen.rs`): only the
    /// entries appended since are read, parsed and chained on.
    pub(super) fn read_log(&self) -> ClResult<LogState> {
        let key = self.path.to_string_lossy().into_owned();
        let reading = VERIFIED_LOGS.read(&key, &self.path).map_err(|e| {
            ClError::new(
                "RECEIPT_STORE_UNAVAILABLE",
                format!("{}: cannot read the receipt log: {e}", self.path.display()),
            )
        })?;
        let Some(reading) = reading else {
            return Ok(LogState::empty());
        };
        let broken = |code: &'static str, why: String| {
            ClError::new(code, format!("{}: {why}", self.path.display()))
        };
        let truncated = || {
            broken(
                "RECEIPT_LOG_TRUNCATED",
                "the log does not end at an entry boundary".into(),
            )
        };
        let (state, hasher, tail) = match reading.read {
            Read::Same(v, tail) => (v.0, v.1, tail),
            Read::Grew {
                value: (mut state, mut hasher),
                from,
                appended,
            } => {
                if appended.last() != Some(&b'\n') {
                    return Err(truncated());
                }
                Self::extend(&mut state, &appended, &broken)?;
                hasher.update(&appended);
                state.byte_length = from + appended.len() as u64;
                state.file_digest = digest_of(&hasher);
                (state, hasher, appended)
            }
            Read::Whole(bytes) if bytes.is_empty() => {
                (LogState::empty(), Sha256::new(), Vec::new())
            }
            Read::Whole(bytes) => {
                if bytes.last() != Some(&b'\n') {
                    return Err(truncated());
                }
                let mut state = LogState::empty();
                Self::extend(&mut state, &bytes, &broken)?;
                let mut hasher = Sha256::new();
                hasher.update(&bytes);
                state.byte_length = bytes.len() as u64;
                state.file_digest = digest_of(&hasher);
                (state, hasher, bytes)
            }
        };
        VERIFIED_LOGS.keep(key, reading.stamp, &tail, (state.clone(), hasher));
        Ok(state)
    }

    /// Forget what this process verified of the log (it was cut back).
    pub(super) fn forget(&self) {
        VERIFIED_LOGS.forget(&self.path.to_string_lossy());
    }

    /// Verify `appended` (whole lines) as the entries after `state`'s and
    /// chain them on (the entries and tail; the caller updates the byte figures).
    pub(super) fn extend(
        state: &mut LogState,
        appended: &[u8],
        broken: &dyn Fn(&'static str, String) -> ClError,
    ) -> ClResult<()> {
        let text = std::str::from_utf8(appended)
            .map_err(|_| broken("RECEIPT_LOG_INVALID_JSON", "the log is not UTF-8".into()))?;
        let mut previous = std::mem::take(&mut state.tail_digest);
        let entries = Arc::make_mut(&mut state.entries);
        let index = Arc::make_mut(&mut state.index);
        for line in text[..text.len() - 1].split('\n') {
            let n = entries.len() + 1;
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
            index.add(entries.len(), &entry);
            entries.push(entry);
        }
        state.tail_digest = previous;
        Ok(())
    }

    /// Verify the log against its anchor and return it.
    pub fn verify(&self) -> ClResult<LogState> {
        let _g = self.lock()?;
        self.verified().map(|(state, _)| state)
    }

    /// [`ReceiptLog::verify`] from the first byte, ignoring what this
    /// process verified before (`ctx receipts verify`, `ctx audit verify`).
    pub fn verify_full(&self) -> ClResult<LogState> {
        let _g = self.lock()?;
        self.forget();
        self.anchor.forget();
        self.verified().map(|(state, _)| state)
    }

    /// The verified log and the anchor records it matches.
    pub(super) fn verified(&self) -> ClResult<(LogState, Arc<Vec<Value>>)> {
        let state = self.read_log()?;
        match self.anchor.read()? {
            Some(records) => {
                self.anchor.check(&records, &state)?;
                Ok((state, records))
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
        self.append_locked(receipt)
    }

    /// [`ReceiptLog::append`] with the lock held.
    pub(super) fn append_locked(&self, receipt: &Value) -> ClResult<Value> {
        let (state, records) = self.verified()?;
        if let Some(existing) = receipt["id"].as_str().and_then(|id| state.entry(id)) {
            return Ok(existing.clone());
        }
        if is_consume(receipt) && state.index.consumed.contains(&consume_key(receipt)) {
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
        let expected_len = state.entries.len() + 1;
        // The re-read extends the remembered entries in place only if no
        // other copy of them is alive.
        drop(state);
        append_line(
            &self.path,
            &canon::canonical_text(&entry),
            "receipts.append",
        )?;
        crate::fs::failpoint::hit("receipts.appended");
        let next = self.read_log()?;
        if next.entries.len() != expected_len || next.tail_digest != digest {
            return fail(
                "RECEIPT_LOG_APPEND_AMBIGUOUS",
                "the receipt log append did not produce the expected state",
            );
        }
        self.anchor.advance(&records, &next)?;
        crate::fs::failpoint::hit("receipts.anchored");
        Ok(entry)
    }
}

fn digest_of(hasher: &Sha256) -> String {
    format!(
        "{}{}",
        crate::canonical::DIGEST_PREFIX,
        hex::encode(hasher.clone().finalize())
    )
}

/// A successful `bundle.consume` receipt.
pub fn is_consume(r: &Value) -> bool {
    r["operation"] == "bundle.consume" && r["outcome"] == "success"
}

#[cfg(test)]
mod tests;
