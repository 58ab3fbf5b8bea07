//! The index of an unlocked vault ([`super::integrity`]), held once and shared by
//! everything that writes the vault: field writes ([`super::vault`]), the token
//! store ([`super::state`]) and the audit log ([`super::audit`]). Every change goes
//! through [`Ledger::commit`]: the generation moves on, the index is tagged and
//! written, and this device's record of the highest generation follows.
//!
//! A writer takes the ledger's lock, writes its file with [`Ledger::next`] and
//! commits that generation before it lets go, so at most one file is ever ahead
//! of the index (the write a crash interrupted).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};

use super::integrity::{self, Index, MacKey, Seen, INDEX_FILE};

pub type Shared = Arc<Mutex<Ledger>>;

/// Lock a shared ledger (a poisoned one is still the last state that was saved).
pub fn lock(s: &Shared) -> MutexGuard<'_, Ledger> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Ledger {
    key: MacKey,
    index: Index,
    file: PathBuf,
    seen: Option<PathBuf>,
}

/// A vault file that failed at unlock: never served, reported to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, relative to the manifest folder.
    pub file: String,
    /// The field it would hold, when the file is a field's.
    pub field: Option<String>,
    /// What failed (ids and reasons, never a value).
    pub error: String,
    /// How to recover.
    pub fix: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} ({})", self.file, self.error, self.fix)
    }
}

impl Ledger {
    /// The index of a vault at unlock, checked against this device's record.
    pub fn open(state_dir: &Path, key: MacKey, vault: &str, seen: &Seen) -> Result<Ledger> {
        let file = state_dir.join(INDEX_FILE);
        let seen = seen.path(vault);
        let saw = match &seen {
            Some(p) => integrity::read_seen(p)?,
            None => None,
        };
        let Some(index) = integrity::load_index(&file, &key, vault)? else {
            return Err(match saw {
                Some(g) => Error::InvalidHint {
                    message: format!(
                        "{} is missing, but this device has seen generation {g} of this vault: the index was deleted, so no file of the vault can be trusted",
                        file.display()
                    ),
                    help: "restore the vault's folder (its index and files together) from a backup you trust".into(),
                },
                None => Error::InvalidHint {
                    message: format!(
                        "{} is missing: this vault was made before ctx authenticated a vault's files (or its index was deleted), so nothing in it is served",
                        file.display()
                    ),
                    help: "run `ctx private upgrade-vault` to review its fields, consumers and tokens and authenticate them".into(),
                },
            });
        };
        if let (Some(g), Some(p)) = (saw, &seen) {
            if index.generation < g {
                return Err(Error::InvalidHint {
                    message: format!(
                        "{} is at generation {} but this device has seen generation {g}: the vault's folder was rolled back to an earlier state",
                        file.display(),
                        index.generation
                    ),
                    help: format!(
                        "if you restored it from a backup on purpose, delete {} and unlock again; otherwise restore the newest copy you have",
                        p.display()
                    ),
                });
            }
        }
        Ok(Ledger {
            key,
            index,
            file,
            seen,
        })
    }

    /// A new index (a new vault, or one being upgraded); nothing is written yet.
    pub fn create(state_dir: &Path, key: MacKey, vault: &str, seen: &Seen) -> Ledger {
        Ledger {
            key,
            index: Index::new(vault),
            file: state_dir.join(INDEX_FILE),
            seen: seen.path(vault),
        }
    }

    pub fn key(&self) -> &MacKey {
        &self.key
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The generation the next commit will have: what a file written now carries.
    pub fn next(&self) -> u64 {
        self.index.generation + 1
    }

    /// Move to the next generation with `change` applied; write the index and
    /// this device's record. Returns the new generation.
    pub fn commit(&mut self, change: impl FnOnce(&mut Index, u64)) -> Result<u64> {
        let g = self.next();
        let mut next = self.index.clone();
        next.generation = g;
        change(&mut next, g);
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        }
        integrity::save_index(&self.file, &self.key, &next)?;
        self.index = next;
        if let Some(p) = &self.seen {
            integrity::write_seen(p, &self.index.vault, self.index.generation)?;
        }
        Ok(self.index.generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    #[test]
    fn commits_move_on_and_an_older_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Seen::At(dir.path().join("v.seen"));
        let key = || MacKey::new(Zeroizing::new([5; 32]));
        let e = Ledger::open(dir.path(), key(), "v", &seen).err().unwrap();
        assert!(
            e.help().unwrap().contains("ctx private upgrade-vault"),
            "{e}"
        );
        let mut l = Ledger::create(dir.path(), key(), "v", &seen);
        assert_eq!(l.next(), 1);
        let g = l
            .commit(|ix, g| {
                ix.files.insert("personal/a/b.json".into(), g);
            })
            .unwrap();
        assert_eq!(g, 1);
        let old = std::fs::read(dir.path().join(INDEX_FILE)).unwrap();
        l.commit(|ix, _| ix.state = Some(1)).unwrap();
        let l2 = Ledger::open(dir.path(), key(), "v", &seen).unwrap();
        assert_eq!(l2.index().generation, 2);
        assert_eq!(l2.index().files["personal/a/b.json"], 1);
        // The index put back as it was one commit ago: authentic, but older.
        std::fs::write(dir.path().join(INDEX_FILE), &old).unwrap();
        let e = Ledger::open(dir.path(), key(), "v", &seen).err().unwrap();
        assert!(e.to_string().contains("rolled back"), "{e}");
        assert!(e.help().unwrap().contains("v.seen"));
        // Deleted: this device knows the vault had an index.
        std::fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
        let e = Ledger::open(dir.path(), key(), "v", &seen).err().unwrap();
        assert!(e.to_string().contains("was deleted"), "{e}");
    }
}
