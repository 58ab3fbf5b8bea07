//! Step 5: the durable nonce ledger. `(provider, instance, nonce)` is reserved
//! at most once for as long as the request could still be accepted, across
//! threads, processes and restarts.
//!
//! `nonces.json` (0600) is read, checked and replaced atomically (temporary
//! file, fsync, rename) under an exclusive lock on `nonces.lock`, so concurrent
//! reservations are serialised and a crash leaves the old or the new ledger.
//! Only identity, nonce and expiry are stored, never bodies, signatures or
//! secrets. Entries whose expiry has passed are pruned (a request that old
//! fails the time check anyway), so the file holds at most the requests of
//! the last 30 seconds, and never more than [`MAX_LIVE_NONCES`].
//!
//! Fail closed: a missing, unreadable or damaged ledger, a clock earlier than
//! the highest one seen (the high-water mark), or a full ledger rejects the
//! request. The ledger is created only by `init`, never on demand, so a
//! deleted ledger is noticed rather than silently replaced by an empty one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::keyring::{io, read_private, SetupError};
use super::MAX_LIVE_NONCES;
use crate::fs::{self, Existing, Mode};

pub const LEDGER_FILE: &str = "nonces.json";
const LOCK_FILE: &str = "nonces.lock";
const FORMAT: &str = "ctx.request-nonces.v1";
/// Room for a full ledger of ids at their longest.
const MAX_LEDGER_BYTES: u64 = 96 * 1024 * 1024;

/// Why a reservation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("nonce already used (a replay)")]
    Replay,
    #[error("request expired while waiting for the ledger (now {now}, expires {expires})")]
    Expired { now: i64, expires: i64 },
    #[error("the clock ({now}) is behind the ledger's high-water mark ({high_water})")]
    ClockRollback { now: i64, high_water: i64 },
    #[error("ledger full ({0} live nonces)")]
    Full(usize),
    #[error("{0}")]
    Storage(String),
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    provider_id: String,
    instance_id: String,
    nonce: String,
    expires: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    format: String,
    high_water: i64,
    nonces: Vec<Entry>,
}

/// The ledger in one request-authentication folder.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
    lock: PathBuf,
    capacity: usize,
}

type Key = (String, String, String);

impl Ledger {
    /// Write an empty ledger (refusing to replace one).
    pub(super) fn create(dir: &Path) -> Result<(), SetupError> {
        let path = dir.join(LEDGER_FILE);
        let empty = State {
            format: FORMAT.into(),
            high_water: 0,
            nonces: Vec::new(),
        };
        let text = serde_json::to_string(&empty).expect("JSON") + "\n";
        fs::write_atomic(&path, text.as_bytes(), Mode::Private, Existing::Refuse)
            .map_err(|e| io(&path, &e))
    }

    /// Open the ledger of `dir`, which must exist and be intact.
    pub fn open(dir: &Path) -> Result<Ledger, SetupError> {
        let l = Ledger {
            path: dir.join(LEDGER_FILE),
            lock: dir.join(LOCK_FILE),
            capacity: MAX_LIVE_NONCES,
        };
        l.read().map_err(|e| {
            SetupError::new(
                &l.path,
                format!("nonce ledger unusable: {e}"),
                "a lost or damaged ledger can no longer prove which requests were seen: move the folder away, run `ctx provider auth init` for fresh credentials and register the new key with the host (the old keys go with the old folder)",
            )
        })?;
        Ok(l)
    }

    /// A smaller capacity (tests).
    pub fn with_capacity(mut self, capacity: usize) -> Ledger {
        self.capacity = capacity.min(MAX_LIVE_NONCES);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reserve `(provider, instance, nonce)` until `expires`. `clock` is read
    /// under the lock, so the high-water mark only ever sees increasing times.
    pub fn reserve(
        &self,
        provider_id: &str,
        instance_id: &str,
        nonce: &str,
        expires: i64,
        clock: &dyn Fn() -> i64,
    ) -> Result<(), LedgerError> {
        let storage = |e: &dyn std::fmt::Display| LedgerError::Storage(e.to_string());
        let _lock = fs::lock_file(&self.lock, Mode::Private).map_err(|e| storage(&e))?;
        let (high_water, mut live) = self.read().map_err(LedgerError::Storage)?;
        let now = clock();
        if now < high_water {
            return Err(LedgerError::ClockRollback { now, high_water });
        }
        if now >= expires {
            return Err(LedgerError::Expired { now, expires });
        }
        live.retain(|_, e| *e > now);
        let key = (
            provider_id.to_string(),
            instance_id.to_string(),
            nonce.to_string(),
        );
        if live.contains_key(&key) {
            return Err(LedgerError::Replay);
        }
        if live.len() >= self.capacity {
            return Err(LedgerError::Full(live.len()));
        }
        live.insert(key, expires);
        self.write(now, &live).map_err(|e| storage(&e))
    }

    /// How many nonces are stored (pruned or not).
    pub fn stored(&self) -> Result<usize, String> {
        Ok(self.read()?.1.len())
    }

    fn read(&self) -> Result<(i64, BTreeMap<Key, i64>), String> {
        let bytes = read_private(&self.path, MAX_LEDGER_BYTES).map_err(|e| e.message)?;
        let value = crate::canonical::parse_strict(&bytes).map_err(|e| e.to_string())?;
        let state: State = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if state.format != FORMAT {
            return Err(format!(
                "format: expected {FORMAT:?}, found {:?}",
                state.format
            ));
        }
        let mut live = BTreeMap::new();
        for e in state.nonces {
            let key = (e.provider_id, e.instance_id, e.nonce);
            if live.insert(key, e.expires).is_some() {
                return Err("a nonce is listed twice".into());
            }
        }
        Ok((state.high_water, live))
    }

    fn write(&self, high_water: i64, live: &BTreeMap<Key, i64>) -> std::io::Result<()> {
        let state = State {
            format: FORMAT.into(),
            high_water,
            nonces: live
                .iter()
                .map(|((p, i, n), e)| Entry {
                    provider_id: p.clone(),
                    instance_id: i.clone(),
                    nonce: n.clone(),
                    expires: *e,
                })
                .collect(),
        };
        let text = serde_json::to_string(&state).expect("JSON") + "\n";
        fs::write_atomic(
            &self.path,
            text.as_bytes(),
            Mode::Private,
            Existing::Replace,
        )
    }
}
