//! The one place plaintext of a private file touches a file system: the
//! folder `ctx private edit` hands to the editor (an editor needs a file).
//!
//! - It is a fresh `0700` folder in `$XDG_RUNTIME_DIR` or `/dev/shm`
//!   (memory-backed, so nothing reaches a disk), else the system temporary
//!   folder with a warning; never inside the repository.
//! - Its name carries the owning process id (`ctx-edit-<pid>-<random>`).
//!   When ctx ends normally, or by SIGINT/SIGTERM/SIGHUP while the editor
//!   runs, every file in it (the plaintext and whatever the editor left
//!   beside it: swap, backup) is overwritten and the folder is removed.
//! - A ctx killed outright (SIGKILL, power loss) cannot clean up, so every
//!   later ctx run that touches private collections — `private *`,
//!   `validate` (and so the hook), `resolve`/`bundle`/`export` when they
//!   look for an identity — calls [`sweep_stale`]: folders of this user
//!   whose process is gone are wiped the same way. Folders of live
//!   processes are never touched.
//!
//! What remains outside ctx's reach: files an editor writes elsewhere
//! (a persistent undo history, a session file), and a memory-backed
//! folder's pages in swap. Configure the editor accordingly.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const PREFIX: &str = "ctx-edit-";

/// A private folder for plaintext, wiped and removed on drop.
#[derive(Debug)]
pub struct PlaintextDir {
    dir: Option<tempfile::TempDir>,
    memory: bool,
}

/// Where plaintext folders may live, most private first: `(folder, memory-backed)`.
fn bases() -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        out.push((x, true));
    }
    out.push((PathBuf::from("/dev/shm"), true));
    out.push((std::env::temp_dir(), false));
    out
}

impl PlaintextDir {
    /// A fresh folder outside `repo`, memory-backed when the system has one.
    pub fn create(repo: &Path) -> Result<PlaintextDir> {
        let prefix = format!("{PREFIX}{}-", std::process::id());
        for (base, memory) in bases() {
            let Ok(real) = base.canonicalize() else {
                continue;
            };
            if !real.is_dir() || real.starts_with(repo) {
                continue;
            }
            if let Ok(dir) = tempfile::Builder::new().prefix(&prefix).tempdir_in(&real) {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                        .map_err(|e| Error::io(dir.path(), &e))?;
                }
                return Ok(PlaintextDir {
                    dir: Some(dir),
                    memory,
                });
            }
        }
        Err(Error::Invalid(
            "no private temporary folder outside the repository is available for editing".into(),
        ))
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().map(|d| d.path()).unwrap_or(Path::new(""))
    }

    /// Memory-backed (`$XDG_RUNTIME_DIR`, `/dev/shm`), or a disk folder.
    pub fn memory_backed(&self) -> bool {
        self.memory
    }

    /// Create `name` in the folder, mode 0600, holding `bytes`.
    pub fn write_new(&self, name: &std::ffi::OsStr, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.path().join(name);
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&path).map_err(|e| Error::io(&path, &e))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io(&path, &e))?;
        Ok(path)
    }
}

impl Drop for PlaintextDir {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            wipe_tree(dir.path());
            let _ = dir.close();
        }
    }
}

/// Overwrite every regular file under `dir` with zeros (symlinks are not
/// followed), then remove the folder.
fn wipe_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => wipe_tree(&path),
                Ok(m) if m.is_file() => {
                    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
                        let _ = f.write_all(&vec![0u8; m.len() as usize]);
                        let _ = f.sync_all();
                    }
                }
                _ => {}
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Remove the plaintext folders of this user's ctx processes that are
/// gone; returns how many. Never fails: a sweep is housekeeping.
pub fn sweep_stale() -> usize {
    let mut swept = 0;
    for (base, _) in bases() {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let path = e.path();
            if pid != std::process::id() && is_ours(&path) && !process_alive(pid) {
                wipe_tree(&path);
                swept += 1;
            }
        }
    }
    swept
}

/// A real folder (not a symlink) owned by the current user.
fn is_ours(path: &Path) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !m.is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        m.uid() == unsafe { libc::geteuid() }
    }
    #[cfg(not(unix))]
    true
}

/// Is process `pid` still running? Unknown counts as alive (never sweep
/// a folder that may be in use).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 performs the existence and permission check only.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_private_and_wiped_on_drop() {
        let repo = tempfile::tempdir().unwrap();
        let d = PlaintextDir::create(repo.path()).unwrap();
        let name = d.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("ctx-edit-{}-", std::process::id())));
        let f = d.write_new("p.md".as_ref(), b"secret").unwrap();
        std::fs::write(d.path().join(".p.md.swp"), b"secret too").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!((mode(d.path()), mode(&f)), (0o700, 0o600));
        }
        let path = d.path().to_path_buf();
        drop(d);
        assert!(!path.exists());
    }

    #[test]
    fn liveness_is_conservative() {
        assert!(process_alive(std::process::id()));
        assert!(
            process_alive(u32::MAX),
            "an unrepresentable pid counts as alive"
        );
    }
}
