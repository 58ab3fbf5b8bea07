//! Stage 9: acceptance state shared by every process that uses the same
//! directory. One exclusive `flock` on `<dir>/lock` serialises the
//! read-check-write; the state file is replaced atomically (temp file,
//! fsync, rename, directory fsync), so a crash leaves the old or the new
//! state, never a torn one.
//!
//! Keys are stored as SHA-256 hashes, not raw ids: the state file need not
//! become a second copy of user and session identifiers. Entries are never
//! pruned: dropping an expired turn would let a second result be accepted
//! for it.
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Acceptance, Failure, FailureCode};
use crate::canonical;

const STATE_FILE: &str = "acceptances.json";
const LOCK_FILE: &str = "lock";
const FORMAT: &str = "ctx.provider-acceptance-state.v1";

/// The state directory could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[error("acceptance state {path}: {message}")]
pub struct StateError {
    pub path: PathBuf,
    pub message: String,
}

/// A handle on an acceptance-state directory. Handles are cheap; any
/// number of handles in any number of processes may share one directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

/// The three reservation keys of one result (raw; hashed before storing).
pub(crate) struct AcceptKeys {
    /// JCS of the binding.
    pub turn: String,
    /// `instance_id ‖ NUL ‖ nonce`.
    pub nonce: String,
    /// `instance_id ‖ NUL ‖ idempotency_key`.
    pub idempotency: String,
}

/// On-disk form: key hash → SHA-256 of the accepted envelope's JCS.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    format: String,
    turns: BTreeMap<String, String>,
    nonces: BTreeMap<String, String>,
    idempotency_keys: BTreeMap<String, String>,
}

/// Where acceptance state lives when the host names no folder: per repository
/// under `.ctx/provider-state/` (beside receipts and the audit log), or per user
/// under `$XDG_STATE_HOME/ctx/provider-state` (else `~/.local/state/…`, else
/// `%LOCALAPPDATA%\ctx\provider-state`). Relative XDG and HOME values are
/// ignored, as the XDG specification asks. None when no user folder is known.
pub fn default_state_dir(repository: Option<&Path>) -> Option<PathBuf> {
    if let Some(root) = repository {
        return Some(root.join(".ctx").join("provider-state"));
    }
    let abs = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = abs(std::env::var_os("XDG_STATE_HOME"))
        .or_else(|| abs(std::env::var_os("HOME")).map(|h| h.join(".local").join("state")))
        .or_else(|| abs(std::env::var_os("LOCALAPPDATA")))?;
    Some(base.join("ctx").join("provider-state"))
}

impl StateDir {
    /// Open (creating with mode 0700 if needed) a state directory.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StateError> {
        let dir = dir.into();
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| err(&dir, e))?;
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Number of turns with an accepted result.
    pub fn accepted_turns(&self) -> Result<usize, StateError> {
        let _lock = self.lock()?;
        Ok(self.read()?.turns.len())
    }

    /// Reserve the turn, nonce and idempotency key for `digest`, or report
    /// which one already belongs to a different result.
    pub(crate) fn accept(&self, keys: &AcceptKeys, digest: &str) -> Result<Acceptance, Failure> {
        let unavailable = |e: StateError| {
            Failure::new(
                FailureCode::StateUnavailable,
                "acceptance state",
                "a readable and writable state directory",
                e.to_string(),
            )
        };
        let _lock = self.lock().map_err(unavailable)?;
        let mut state = self.read().map_err(unavailable)?;
        let turn = canonical::sha256_hex(keys.turn.as_bytes());
        let nonce = canonical::sha256_hex(keys.nonce.as_bytes());
        let idem = canonical::sha256_hex(keys.idempotency.as_bytes());
        let slots = [
            (
                &state.turns,
                &turn,
                FailureCode::Turn,
                "/binding",
                "the bound turn",
            ),
            (
                &state.nonces,
                &nonce,
                FailureCode::Nonce,
                "/nonce",
                "the nonce",
            ),
            (
                &state.idempotency_keys,
                &idem,
                FailureCode::Idempotency,
                "/idempotency_key",
                "the idempotency key",
            ),
        ];
        let mut seen = false;
        for (map, key, code, field, what) in slots {
            match map.get(key) {
                Some(stored) if stored != digest => {
                    return Err(Failure::new(
                        code,
                        field,
                        format!("{what} not yet used by another accepted result"),
                        format!("already used by result sha256 {stored}"),
                    ));
                }
                Some(_) => seen = true,
                None => {}
            }
        }
        let complete = state.turns.contains_key(&turn)
            && state.nonces.contains_key(&nonce)
            && state.idempotency_keys.contains_key(&idem);
        if !complete {
            state.turns.insert(turn, digest.to_owned());
            state.nonces.insert(nonce, digest.to_owned());
            state.idempotency_keys.insert(idem, digest.to_owned());
            self.write(&state).map_err(unavailable)?;
        }
        Ok(if seen {
            Acceptance::IdempotentRetry
        } else {
            Acceptance::New
        })
    }

    /// Exclusive lock, released when the returned file is dropped.
    fn lock(&self) -> Result<File, StateError> {
        let path = self.dir.join(LOCK_FILE);
        crate::fs::lock_file(&path, crate::fs::Mode::Private).map_err(|e| err(&path, e))
    }

    fn read(&self) -> Result<State, StateError> {
        let path = self.dir.join(STATE_FILE);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(State {
                    format: FORMAT.into(),
                    ..State::default()
                });
            }
            Err(e) => return Err(err(&path, e)),
        };
        let value = canonical::parse_strict(&bytes).map_err(|e| err(&path, e))?;
        let state: State = serde_json::from_value(value).map_err(|e| err(&path, e))?;
        if state.format != FORMAT {
            return Err(err(
                &path,
                format!("expected format {FORMAT:?}, found {:?}", state.format),
            ));
        }
        Ok(state)
    }

    fn write(&self, state: &State) -> Result<(), StateError> {
        let path = self.dir.join(STATE_FILE);
        let mut bytes = serde_json::to_vec_pretty(state).map_err(|e| err(&path, e))?;
        bytes.push(b'\n');
        crate::fs::write_atomic(
            &path,
            &bytes,
            crate::fs::Mode::Private,
            crate::fs::Existing::Replace,
        )
        .map_err(|e| err(&path, e))
    }
}

fn err(path: &Path, e: impl std::fmt::Display) -> StateError {
    StateError {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
