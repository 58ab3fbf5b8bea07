//! The receipt store: a folder of receipt files (default `.ctx/receipts/`,
//! meant to be committed). Append-only: files are created with no-clobber
//! renames and never rewritten; a correction is a new file whose receipt
//! `supersedes` the wrong one. Signing the same bundle content again (a new
//! run) is a new receipt, not a correction. One lock (on the folder)
//! serialises writers, so two concurrent corrections cannot both supersede
//! the same receipt (a fork).
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ReceiptError;

const LOCK_FILE: &str = ".lock";

/// A receipt folder.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// A receipt file and its parsed content (or why it could not be read).
pub type Entry = (PathBuf, Result<Value, ReceiptError>);

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every `*.json` file in the folder, sorted by name. A missing folder
    /// is an empty store.
    pub fn scan(&self) -> Result<Vec<Entry>, ReceiptError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ReceiptError::file(&self.dir, e)),
        };
        let mut paths: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        paths.sort();
        Ok(paths
            .into_iter()
            .map(|p| {
                let v = super::read_json(&p).map(|(_, v)| v);
                (p, v)
            })
            .collect())
    }

    /// Every receipt in the store; any unreadable file is an error (a
    /// store that cannot be read completely is not trusted to be complete).
    pub fn all(&self) -> Result<Vec<(PathBuf, Value)>, ReceiptError> {
        self.scan()?
            .into_iter()
            .map(|(p, v)| v.map(|v| (p, v)))
            .filter(|r| !matches!(r, Ok((_, v)) if v.get("type").and_then(Value::as_str) != Some("receipt")))
            .collect()
    }

    /// The receipts that name `bundle_id`.
    pub fn for_bundle(&self, bundle_id: &str) -> Result<Vec<(PathBuf, Value)>, ReceiptError> {
        Ok(self
            .all()?
            .into_iter()
            .filter(|(_, v)| v.get("bundle_ref").and_then(Value::as_str) == Some(bundle_id))
            .collect())
    }

    /// Add a receipt as `<bundle_ref>.json` (or `.2.json`, … when that
    /// bundle was already signed). A receipt that `supersedes` another must
    /// name a receipt in this store that nothing supersedes yet, so
    /// corrections form chains, never forks. Returns the new file's path.
    pub fn append(&self, receipt: &Value) -> Result<PathBuf, ReceiptError> {
        let text = super::to_pretty(receipt);
        loop {
            let placed = self.place(receipt)?;
            match write_new(&placed.path, text.as_bytes()) {
                Ok(()) => return Ok(placed.path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(ReceiptError::file(&placed.path, e)),
            }
        }
    }

    /// Check that `receipt` may be added and choose its file, under the
    /// store's lock (held by the returned [`Placed`] until it is dropped):
    /// for a caller that writes the file in a transaction with its product.
    pub fn place(&self, receipt: &Value) -> Result<Placed, ReceiptError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| ReceiptError::file(&self.dir, e))?;
        let lock = self.lock()?;
        if let Some(target) = receipt.get("supersedes").and_then(Value::as_str) {
            let all = self.all()?;
            let by = supersessions(&all)?;
            if !all
                .iter()
                .any(|(_, v)| v.get("id").and_then(Value::as_str) == Some(target))
            {
                return Err(ReceiptError::NoSuchTarget {
                    target: target.to_string(),
                    dir: self.dir.clone(),
                });
            }
            if let Some(other) = by.get(target) {
                return Err(ReceiptError::AlreadyCorrected {
                    target: target.to_string(),
                    by: other.clone(),
                });
            }
        }
        let bundle_id = receipt
            .get("bundle_ref")
            .and_then(Value::as_str)
            .unwrap_or("receipt");
        let mut n = 1u32;
        loop {
            let name = if n == 1 {
                format!("{bundle_id}.json")
            } else {
                format!("{bundle_id}.{n}.json")
            };
            n += 1;
            let path = self.dir.join(name);
            if !path.exists() {
                return Ok(Placed { path, _lock: lock });
            }
        }
    }

    /// Exclusive lock on the folder itself where the platform allows it
    /// (no stray lock file among committed receipts), else on a lock file.
    fn lock(&self) -> Result<File, ReceiptError> {
        #[cfg(unix)]
        if let Ok(dir) = File::open(&self.dir) {
            crate::fs::lock_open(&dir).map_err(|e| ReceiptError::file(&self.dir, e))?;
            return Ok(dir);
        }
        let path = self.dir.join(LOCK_FILE);
        crate::fs::lock_file(&path, crate::fs::Mode::RepositoryDefault)
            .map_err(|e| ReceiptError::file(&path, e))
    }
}

/// A receipt's file, chosen under the store's lock, which it holds.
#[derive(Debug)]
pub struct Placed {
    pub path: PathBuf,
    _lock: File,
}

/// Superseded receipt id → the id of the receipt that corrects it. A
/// receipt corrected twice (a fork) is an error.
pub fn supersessions(
    receipts: &[(PathBuf, Value)],
) -> Result<BTreeMap<String, String>, ReceiptError> {
    let mut by = BTreeMap::new();
    for (_, v) in receipts {
        let (Some(id), Some(target)) = (
            v.get("id").and_then(Value::as_str),
            v.get("supersedes").and_then(Value::as_str),
        ) else {
            continue;
        };
        if let Some(first) = by.insert(target.to_string(), id.to_string()) {
            if first != id {
                return Err(ReceiptError::Forked {
                    target: target.to_string(),
                    first,
                    second: id.to_string(),
                });
            }
        }
    }
    Ok(by)
}

/// Create `path` with `bytes` atomically; fails if it exists. Receipts are meant
/// to be committed and read by CI: they get the mode an editor gives a new file.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::fs::write_atomic(
        path,
        bytes,
        crate::fs::Mode::RepositoryDefault,
        crate::fs::Existing::Refuse,
    )
}
