//! The request keyring: which provider and instance this server answers for,
//! and the one or two request keys it accepts. One folder (mode 0700) holds
//!
//! - `keyring.json` (0600): `{"format": "ctx.request-keyring.v1", "profile":
//!   "atmem-hmac-sha256-v1", "provider_id", "instance_id", "keys": [{"key_id",
//!   "secret_file", "valid_until"}]}` — one or two keys; exactly one has
//!   `valid_until: null` (the active key), the other is the previous key,
//!   accepted while the clock is before its `valid_until` (Unix seconds);
//! - one secret file per key (0600, owner only, a plain file name in this
//!   folder): the 32-byte secret as canonical standard base64 and a newline;
//! - the nonce ledger ([`super::Ledger`]) and the lock files.
//!
//! Changes (init, rotate, revoke) take `keyring.lock` and replace
//! `keyring.json` atomically; the server reads it again for every request, so
//! a rotation or revocation applies to the next request without a restart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::message::is_id;
use super::{Ledger, MAX_OVERLAP_SECS, PROFILE};
use crate::fs::{self, Existing, Mode};

pub const KEYRING_FILE: &str = "keyring.json";
const LOCK_FILE: &str = "keyring.lock";
const FORMAT: &str = "ctx.request-keyring.v1";
const MAX_KEYRING_BYTES: u64 = 64 * 1024;

/// A request-authentication folder that cannot be used, and how to fix it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SetupError {
    pub path: PathBuf,
    pub message: String,
    pub help: String,
}

impl SetupError {
    pub(super) fn new(path: &Path, message: impl Into<String>, help: impl Into<String>) -> Self {
        SetupError {
            path: path.to_path_buf(),
            message: message.into(),
            help: help.into(),
        }
    }
}

impl From<SetupError> for crate::error::Error {
    fn from(e: SetupError) -> Self {
        crate::error::Error::InvalidHint {
            message: e.to_string(),
            help: e.help,
        }
    }
}

const SETUP_HELP: &str =
    "create the folder with `ctx provider auth init --auth DIR` (see docs/provider.md)";

/// One request key as the keyring lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    pub key_id: String,
    /// A file name in the keyring's folder.
    pub secret_file: String,
    /// None: the active key. Some(t): accepted while now < t.
    pub valid_until: Option<i64>,
}

/// The parsed `keyring.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyring {
    format: String,
    profile: String,
    pub provider_id: String,
    pub instance_id: String,
    pub keys: Vec<KeyEntry>,
}

/// A key just created: what the host registers (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub key_id: String,
    /// Absolute path of the secret file.
    pub secret_file: PathBuf,
    /// When the previous key stops being accepted (rotation with an overlap).
    pub previous: Option<(String, i64)>,
    /// Keys no longer accepted after this change (their files are removed).
    pub dropped: Vec<String>,
}

impl Keyring {
    /// Read and check `<dir>/keyring.json` and the folder's permissions.
    pub fn load(dir: &Path) -> Result<Keyring, SetupError> {
        check_private_dir(dir)?;
        let path = dir.join(KEYRING_FILE);
        let bytes = read_private(&path, MAX_KEYRING_BYTES)?;
        let bad = |m: String| SetupError::new(&path, m, SETUP_HELP);
        let value = crate::canonical::parse_strict(&bytes).map_err(|e| bad(e.to_string()))?;
        let ring: Keyring = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        ring.check().map_err(bad)?;
        Ok(ring)
    }

    fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "format: expected {FORMAT:?}, found {:?}",
                self.format
            ));
        }
        if self.profile != PROFILE {
            return Err(format!(
                "profile: expected {PROFILE:?}, found {:?}",
                self.profile
            ));
        }
        for (field, id) in [
            ("provider_id", &self.provider_id),
            ("instance_id", &self.instance_id),
        ] {
            if !is_id(id) {
                return Err(format!(
                    "{field}: expected 1-256 of [A-Za-z0-9_.:-], found {id:?}"
                ));
            }
        }
        if !(1..=2).contains(&self.keys.len()) {
            return Err(format!(
                "keys: expected one or two keys, found {}",
                self.keys.len()
            ));
        }
        let active = self.keys.iter().filter(|k| k.valid_until.is_none()).count();
        if active != 1 {
            return Err(format!(
                "keys: expected exactly one active key (valid_until null), found {active}"
            ));
        }
        if self.keys.len() == 2 && self.keys[0].key_id == self.keys[1].key_id {
            return Err(format!(
                "keys: key id {:?} is listed twice",
                self.keys[0].key_id
            ));
        }
        for k in &self.keys {
            if !is_id(&k.key_id) {
                return Err(format!(
                    "keys: key_id expected 1-256 of [A-Za-z0-9_.:-], found {:?}",
                    k.key_id
                ));
            }
            if !is_plain_name(&k.secret_file) {
                return Err(format!(
                    "keys: secret_file {:?} must be a file name in the keyring's folder",
                    k.secret_file
                ));
            }
            if matches!(k.valid_until, Some(t) if t <= 0) {
                return Err(format!(
                    "keys: valid_until of {:?} must be positive Unix seconds or null",
                    k.key_id
                ));
            }
        }
        Ok(())
    }

    pub fn active(&self) -> &KeyEntry {
        self.keys
            .iter()
            .find(|k| k.valid_until.is_none())
            .expect("checked at load")
    }

    /// The key `key_id` if it is accepted at `now`: the active key, or the
    /// previous one before its `valid_until`.
    pub fn accepted(&self, key_id: &str, now: i64) -> Option<&KeyEntry> {
        self.keys
            .iter()
            .find(|k| k.key_id == key_id && k.valid_until.is_none_or(|t| now < t))
    }

    fn write(&self, dir: &Path) -> Result<(), SetupError> {
        let path = dir.join(KEYRING_FILE);
        let text = serde_json::to_string_pretty(self).expect("JSON") + "\n";
        fs::write_atomic(&path, text.as_bytes(), Mode::Private, Existing::Replace)
            .map_err(|e| io(&path, &e))
    }
}

/// Read a key's 32-byte secret from its file in `dir`.
pub fn read_secret(
    dir: &Path,
    entry: &KeyEntry,
) -> Result<zeroize::Zeroizing<[u8; 32]>, SetupError> {
    let path = dir.join(&entry.secret_file);
    let raw = zeroize::Zeroizing::new(read_private(&path, 128)?);
    let text = std::str::from_utf8(&raw).ok();
    let text = text.map(|t| t.strip_suffix('\n').unwrap_or(t));
    let decoded = text.and_then(|t| crate::signing::decode_base64_strict(t).ok());
    match decoded.map(zeroize::Zeroizing::new) {
        Some(b) if b.len() == 32 => {
            let mut out = zeroize::Zeroizing::new([0u8; 32]);
            out.copy_from_slice(&b);
            Ok(out)
        }
        _ => Err(SetupError::new(
            &path,
            "expected a 32-byte secret as canonical standard base64 (44 characters) and a newline",
            "rotate to a fresh key with `ctx provider auth rotate`",
        )),
    }
}

/// Create a new folder (or an empty one) with a first key, the keyring and an
/// empty nonce ledger.
pub fn init(dir: &Path, provider_id: &str, instance_id: &str) -> Result<Issued, SetupError> {
    for (what, id) in [("--provider", provider_id), ("--instance", instance_id)] {
        if !is_id(id) {
            return Err(SetupError::new(
                dir,
                format!("{what}: expected 1-256 of [A-Za-z0-9_.:-], found {id:?}"),
                "choose an id of letters, digits and _ . : -",
            ));
        }
    }
    // Checked before the folder is made private, and again under the lock.
    if dir.exists() {
        refuse_unless_empty(dir)?;
    }
    make_private_dir(dir)?;
    let _lock = lock(dir)?;
    refuse_unless_empty(dir)?;
    Ledger::create(dir)?;
    let key = new_key(dir)?;
    let ring = Keyring {
        format: FORMAT.into(),
        profile: PROFILE.into(),
        provider_id: provider_id.into(),
        instance_id: instance_id.into(),
        keys: vec![key.clone()],
    };
    ring.write(dir)?;
    Ok(issued(dir, &key, None, Vec::new()))
}

/// Set up `dir` with the given key as the active one (conformance fixtures
/// and tests, where the secret is published).
pub(super) fn install(
    dir: &Path,
    provider_id: &str,
    instance_id: &str,
    key_id: &str,
    secret: &[u8; 32],
) -> Result<(), SetupError> {
    make_private_dir(dir)?;
    Ledger::create(dir)?;
    let secret_file = format!("{key_id}.key");
    let path = dir.join(&secret_file);
    let text = zeroize::Zeroizing::new(crate::signing::encode_base64(secret) + "\n");
    fs::create_new(&path, text.as_bytes(), Mode::Private).map_err(|e| io(&path, &e))?;
    let ring = Keyring {
        format: FORMAT.into(),
        profile: PROFILE.into(),
        provider_id: provider_id.into(),
        instance_id: instance_id.into(),
        keys: vec![KeyEntry {
            key_id: key_id.into(),
            secret_file,
            valid_until: None,
        }],
    };
    ring.check()
        .map_err(|m| SetupError::new(dir, m, SETUP_HELP))?;
    ring.write(dir)
}

/// Activate a fresh key. The previous active key stays accepted for
/// `overlap_secs` (0-300) after `now`; any older key is dropped, so at most
/// two keys are ever accepted. The nonce ledger is untouched.
pub fn rotate(dir: &Path, overlap_secs: i64, now: i64) -> Result<Issued, SetupError> {
    if !(0..=MAX_OVERLAP_SECS).contains(&overlap_secs) {
        return Err(SetupError::new(
            dir,
            format!("--overlap: expected 0-{MAX_OVERLAP_SECS} seconds, found {overlap_secs}"),
            "the profile lets the previous key live at most 300 seconds",
        ));
    }
    let _lock = lock(dir)?;
    let mut ring = Keyring::load(dir)?;
    let previous = ring.active().clone();
    let key = new_key(dir)?;
    let mut dropped: Vec<KeyEntry> = ring
        .keys
        .iter()
        .filter(|k| k.key_id != previous.key_id)
        .cloned()
        .collect();
    let mut keys = vec![key.clone()];
    let kept = if overlap_secs > 0 {
        let until = now + overlap_secs;
        keys.push(KeyEntry {
            valid_until: Some(until),
            ..previous.clone()
        });
        Some((previous.key_id.clone(), until))
    } else {
        dropped.push(previous);
        None
    };
    ring.keys = keys;
    ring.write(dir)?;
    remove_secrets(dir, &dropped);
    let names = dropped.into_iter().map(|k| k.key_id).collect();
    Ok(issued(dir, &key, kept, names))
}

/// Stop accepting the previous key now (the active key cannot be revoked:
/// rotate first).
pub fn revoke(dir: &Path, key_id: &str) -> Result<(), SetupError> {
    let _lock = lock(dir)?;
    let mut ring = Keyring::load(dir)?;
    let path = dir.join(KEYRING_FILE);
    if ring.active().key_id == key_id {
        return Err(SetupError::new(
            &path,
            format!("{key_id} is the active key"),
            "rotate to a new key first (`ctx provider auth rotate`), then revoke this one",
        ));
    }
    let Some(pos) = ring.keys.iter().position(|k| k.key_id == key_id) else {
        let known: Vec<&str> = ring.keys.iter().map(|k| k.key_id.as_str()).collect();
        return Err(SetupError::new(
            &path,
            format!("no key {key_id:?} (keys: {})", known.join(", ")),
            "name a key id the keyring lists",
        ));
    };
    let gone = ring.keys.remove(pos);
    ring.write(dir)?;
    remove_secrets(dir, &[gone]);
    Ok(())
}

fn issued(
    dir: &Path,
    key: &KeyEntry,
    previous: Option<(String, i64)>,
    dropped: Vec<String>,
) -> Issued {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    Issued {
        key_id: key.key_id.clone(),
        secret_file: abs.join(&key.secret_file),
        previous,
        dropped,
    }
}

/// A random key id and secret, the secret written to a new 0600 file.
fn new_key(dir: &Path) -> Result<KeyEntry, SetupError> {
    let mut b = zeroize::Zeroizing::new([0u8; 44]);
    getrandom::fill(&mut b[..])
        .map_err(|e| SetupError::new(dir, format!("random source failed: {e}"), "try again"))?;
    let key_id = format!("request-{}", hex::encode(&b[32..]));
    let text = zeroize::Zeroizing::new(crate::signing::encode_base64(&b[..32]) + "\n");
    let secret_file = format!("{key_id}.key");
    let path = dir.join(&secret_file);
    fs::create_new(&path, text.as_bytes(), Mode::Private).map_err(|e| io(&path, &e))?;
    Ok(KeyEntry {
        key_id,
        secret_file,
        valid_until: None,
    })
}

fn remove_secrets(dir: &Path, keys: &[KeyEntry]) {
    for k in keys {
        let _ = std::fs::remove_file(dir.join(&k.secret_file));
    }
}

fn lock(dir: &Path) -> Result<std::fs::File, SetupError> {
    let path = dir.join(LOCK_FILE);
    fs::lock_file(&path, Mode::Private).map_err(|e| io(&path, &e))
}

pub(super) fn io(path: &Path, e: &std::io::Error) -> SetupError {
    let help = match e.kind() {
        std::io::ErrorKind::NotFound => SETUP_HELP,
        _ => "check the folder's permissions and free space",
    };
    SetupError::new(path, e.to_string(), help)
}

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn refuse_unless_empty(dir: &Path) -> Result<(), SetupError> {
    let mut entries = std::fs::read_dir(dir).map_err(|e| io(dir, &e))?;
    if entries.any(|e| e.map(|e| e.file_name() != LOCK_FILE).unwrap_or(true)) {
        return Err(SetupError::new(
            dir,
            "is not empty: request authentication is already set up here, or the folder holds other files",
            "rotate keys with `ctx provider auth rotate`; to start over (after losing the ledger, say), move the folder away, run init again and register the new key with the host",
        ));
    }
    Ok(())
}

/// Create `dir` if needed and close it to others (0700). Only called on a
/// new or empty folder.
fn make_private_dir(dir: &Path) -> Result<(), SetupError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).map_err(|e| io(dir, &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io(dir, &e))?;
    }
    check_private_dir(dir)
}

/// The folder is a real folder, owned by this user and closed to others.
pub(super) fn check_private_dir(dir: &Path) -> Result<(), SetupError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| io(dir, &e))?;
    if !meta.is_dir() {
        return Err(SetupError::new(
            dir,
            format!("is {}, not a folder", fs::kind(&meta)),
            SETUP_HELP,
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.mode() & 0o077 != 0 || meta.uid() != euid() {
            return Err(SetupError::new(
                dir,
                format!(
                    "must be owned by you and closed to others (mode 0700), found mode {:04o}",
                    meta.mode() & 0o7777
                ),
                "run `chmod 700` on the folder",
            ));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Read a secret-bearing file: a regular file (never through a symbolic link),
/// owned by this user, closed to others, at most `limit` bytes.
pub(super) fn read_private(path: &Path, limit: u64) -> Result<Vec<u8>, SetupError> {
    use std::io::Read;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = opts.open(path).map_err(|e| io(path, &e))?;
    let meta = f.metadata().map_err(|e| io(path, &e))?;
    let private_help = "it must be your own regular file with mode 0600 (`chmod 600`)";
    if !meta.is_file() {
        return Err(SetupError::new(
            path,
            format!("is {}, not a regular file", fs::kind(&meta)),
            private_help,
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.mode() & 0o077 != 0 || meta.uid() != euid() || meta.nlink() != 1 {
            return Err(SetupError::new(
                path,
                format!(
                    "must be owned by you, closed to others and not hard-linked, found mode {:04o}",
                    meta.mode() & 0o7777
                ),
                private_help,
            ));
        }
    }
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io(path, &e))?;
    if buf.len() as u64 > limit {
        return Err(SetupError::new(
            path,
            format!("is over the {limit}-byte limit"),
            private_help,
        ));
    }
    Ok(buf)
}
