//! Exclusive locks. One lock per repository serialises ctx's writers (`add`,
//! `supersede`, `promote`, `private`, proposals, exchange state, key
//! declaration), so two concurrent writes cannot lose an update; appenders
//! (audit log, receipts, caches) lock their own files the same way.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::Mode;

/// Where a repository's write lock lives, relative to its manifest folder.
/// Derived from the folder alone — not from whether `git` runs, not from
/// the environment — so every writer of one repository meets every other.
pub const LOCK_FILE: &str = ".ctx/tmp/write.lock";

/// The repository's write lock, held until dropped.
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
    path: PathBuf,
}

impl RepoLock {
    /// Take the lock for the repository whose manifest folder is `root`,
    /// waiting for another holder, then finish what killed writers left
    /// (interrupted transactions, staged files: [`super::txn::recover`]).
    pub fn acquire(root: &Path) -> io::Result<RepoLock> {
        let staging = root.join(super::tmp::DIR);
        super::tmp::prepare(&staging)?;
        let lock = RepoLock::acquire_at(&root.join(LOCK_FILE))?;
        super::txn::recover(root);
        Ok(lock)
    }

    /// The lock file of the repository at `root` ([`LOCK_FILE`]).
    pub fn path_for(root: &Path) -> PathBuf {
        root.join(LOCK_FILE)
    }

    /// Take the lock at a path found earlier by [`RepoLock::path_for`]: a
    /// confined server keeps the path. (Recovery is the caller's:
    /// [`super::txn::recover`].)
    pub fn acquire_at(path: &Path) -> io::Result<RepoLock> {
        super::failpoint::hit("lock.wait");
        let file = lock_file(path, Mode::RepositoryDefault)?;
        Ok(RepoLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// Take the lock if nobody holds it (None when someone does).
    pub fn try_acquire(root: &Path) -> io::Result<Option<RepoLock>> {
        let path = root.join(LOCK_FILE);
        let staging = root.join(super::tmp::DIR);
        super::tmp::prepare(&staging)?;
        let mut o = std::fs::OpenOptions::new();
        o.create(true).truncate(false).read(true).write(true);
        let f = o.open(&path)?;
        match fs4::FileExt::try_lock(&f) {
            Ok(()) => Ok(Some(RepoLock { _file: f, path })),
            Err(fs4::TryLockError::WouldBlock) => Ok(None),
            Err(fs4::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Where the lock file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Housekeeping for a command that does not write the repository (`validate`,
/// `private status`, `audit verify`): when a killed writer left an interrupted
/// transaction and no writer is at work, complete it now; sweep staged files of
/// dead processes either way. Best effort: a read-only checkout stays untouched.
pub fn tidy(root: &Path) {
    let staging = root.join(super::tmp::DIR);
    if !staging.is_dir() {
        return;
    }
    let swept = super::tmp::sweep(root);
    if swept.journals.is_empty() {
        return;
    }
    if let Ok(Some(_lock)) = RepoLock::try_acquire(root) {
        super::txn::recover(root);
    }
}

/// Open (creating, never truncating) `path` and take an exclusive lock on it,
/// waiting for another holder. Released when the file is dropped.
pub fn lock_file(path: &Path, mode: Mode) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).truncate(false).read(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(match mode {
            Mode::Private => 0o600,
            _ => 0o666,
        });
    }
    #[cfg(not(unix))]
    let _ = mode;
    let f = o.open(path)?;
    fs4::FileExt::lock(&f)?;
    Ok(f)
}

/// Take an exclusive lock on an open file (a folder handle, or the file being appended to).
pub fn lock_open(file: &File) -> io::Result<()> {
    fs4::FileExt::lock(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_found_from_the_folder_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let lock = RepoLock::acquire(dir.path()).unwrap();
        assert_eq!(lock.path(), dir.path().join(LOCK_FILE));
        assert_eq!(RepoLock::path_for(dir.path()), dir.path().join(LOCK_FILE));
        assert!(RepoLock::try_acquire(dir.path()).unwrap().is_none(), "held");
        drop(lock);
        assert!(RepoLock::try_acquire(dir.path()).unwrap().is_some());
    }
}
