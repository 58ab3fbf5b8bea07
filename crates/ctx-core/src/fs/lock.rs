//! Exclusive locks. One lock per repository serialises ctx's writers (`add`,
//! `supersede`, key declaration), so two concurrent writes cannot lose an update;
//! appenders (audit log, receipts, caches) lock their own files the same way.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::Mode;

/// The repository's write lock, held until dropped.
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
    path: PathBuf,
}

impl RepoLock {
    /// Take the lock for the repository whose manifest folder is `root`, waiting
    /// for another holder. The lock file lives in the git folder when there is one,
    /// else in the system's temporary folder (named after the repository's path),
    /// so the repository's own files never change.
    pub fn acquire(root: &Path) -> io::Result<RepoLock> {
        let path = crate::git::Git::discover(root)
            .and_then(|g| g.git_path("ctx-write.lock").ok())
            .unwrap_or_else(|| {
                let digest = crate::canonical::sha256_hex(root.to_string_lossy().as_bytes());
                std::env::temp_dir().join(format!("ctx-write-{}.lock", &digest[..16]))
            });
        let file = lock_file(&path, Mode::RepositoryDefault)?;
        Ok(RepoLock { _file: file, path })
    }

    /// Take the lock at a path found earlier by [`RepoLock::acquire`]: a
    /// confined server (which may not run git to find it) keeps the path.
    pub fn acquire_at(path: &Path) -> io::Result<RepoLock> {
        let file = lock_file(path, Mode::RepositoryDefault)?;
        Ok(RepoLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// Where the lock file is.
    pub fn path(&self) -> &Path {
        &self.path
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
