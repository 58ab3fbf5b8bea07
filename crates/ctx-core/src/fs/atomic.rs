//! Atomic writes: a staged file (in the repository's `.ctx/tmp/`, else beside the
//! target: [`super::tmp`]), filled, synced, given its final mode, renamed over the
//! target, and the folder synced. Readers never see a partial file, a crash leaves
//! either the old file or the new one, and what a crash leaves staged is named so
//! that git ignores it and the next run removes it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Which permission bits a written file gets. Chosen by the caller for each write,
/// so a repository file and a private key can never be confused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replacing a file keeps its mode; a new file gets [`Mode::RepositoryDefault`].
    /// For files people own and edit: context files, the manifest, exports, `-o` output.
    Preserve,
    /// What an editor gives a new file: 0666 less the umask, whatever the old file had.
    RepositoryDefault,
    /// 0600: keys, identities, plaintext, replay state. Never readable by others,
    /// not even while the file is being filled.
    Private,
    /// 0777 less the umask: scripts git runs (the pre-commit hook).
    Executable,
}

/// What to do when the target already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it (atomically).
    Replace,
    /// Fail with [`io::ErrorKind::AlreadyExists`]; the existing file is untouched.
    Refuse,
}

/// Why [`replace_if_unchanged`] did not write.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    /// The file no longer holds the bytes the caller planned from.
    #[error("the file changed while ctx was writing it; nothing was replaced")]
    Changed,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Write `bytes` to `path` atomically with `mode`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Mode, existing: Existing) -> io::Result<()> {
    write_atomic_with(path, mode, existing, |f| f.write_all(bytes))
}

/// Like [`write_atomic`], with the content produced by `fill` (streamed: a large
/// bundle is never held twice in memory).
pub fn write_atomic_with(
    path: &Path,
    mode: Mode,
    existing: Existing,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = prepare(path, mode, fill)?;
    super::failpoint::hit("atomic.staged");
    match existing {
        Existing::Replace => tmp.persist(path).map_err(|e| e.error)?,
        Existing::Refuse => tmp.persist_noclobber(path).map_err(|e| e.error)?,
    };
    super::failpoint::hit("atomic.renamed");
    sync_dir(&folder(path))
}

/// Replace `path` with `bytes` only if it still holds `expected`, so an edit made
/// since the caller read the file is never lost. The new content is fully written
/// and synced before the comparison, which keeps the window as small as it can be;
/// callers that race with other ctx writers also hold the repository lock.
pub fn replace_if_unchanged(
    path: &Path,
    expected: &[u8],
    bytes: &[u8],
    mode: Mode,
) -> Result<(), ReplaceError> {
    let tmp = prepare(path, mode, |f| f.write_all(bytes))?;
    if std::fs::read(path)? != expected {
        return Err(ReplaceError::Changed);
    }
    super::failpoint::hit("atomic.staged");
    tmp.persist(path).map_err(|e| e.error)?;
    super::failpoint::hit("atomic.renamed");
    sync_dir(&folder(path))?;
    Ok(())
}

/// Create `path` in place (not through a rename) with `mode`, failing if it exists.
/// For files inside a folder nobody else can enter, such as the plaintext an editor
/// opens: the file must keep its name and inode for the editor's whole session.
pub fn create_new(path: &Path, bytes: &[u8], mode: Mode) -> io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(creation_bits(mode));
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    sync_dir(&folder(path))
}

/// Flush a folder's entries (a rename or a new name) to disk. Filesystems that
/// cannot sync a folder are not an error: there is nothing more to do on them.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        match std::fs::File::open(dir).and_then(|d| d.sync_all()) {
            Ok(()) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// The folder a path is in.
pub(crate) fn folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The mode bits a file is created with; the kernel removes the umask from them.
/// Preserved modes start private and are widened to the old file's mode once filled.
fn creation_bits(mode: Mode) -> u32 {
    match mode {
        Mode::Preserve | Mode::Private => 0o600,
        Mode::RepositoryDefault => 0o666,
        Mode::Executable => 0o777,
    }
}

/// A filled, synced staged file for `path` (on its file system, named after this
/// process: [`super::tmp`]) that already has its final mode. Removed if dropped.
pub(crate) fn prepare(
    path: &Path,
    mode: Mode,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<tempfile::NamedTempFile> {
    let dir = folder(path);
    // Read before creating anything, so a Preserve of a new file takes the default.
    let old = match mode {
        Mode::Preserve => std::fs::metadata(path).ok().map(|m| m.permissions()),
        _ => None,
    };
    let staging = super::tmp::staging_dir(&dir);
    if staging.is_none() {
        super::tmp::sweep_siblings(&dir);
    }
    super::tmp::sweep_legacy(&dir);
    let pid = std::process::id();
    let sibling = format!("{}{pid}-", super::tmp::SIBLING_PREFIX);
    let staged = format!("{pid}-");
    let bits = match (mode, &old) {
        (Mode::Preserve, None) => creation_bits(Mode::RepositoryDefault),
        _ => creation_bits(mode),
    };
    let create = |prefix: &str, dir: &Path| {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(bits));
        }
        builder.tempfile_in(dir)
    };
    let mut tmp = match &staging {
        // The staging folder may have been removed since it was found.
        Some(s) => create(&staged, s).or_else(|_| create(&sibling, &dir))?,
        None => create(&sibling, &dir)?,
    };
    fill(tmp.as_file_mut())?;
    if let Some(perms) = old {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn private_files_are_0600_and_preserve_keeps_the_old_mode() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.pem");
        write_atomic(&key, b"secret", Mode::Private, Existing::Refuse).unwrap();
        assert_eq!(mode_of(&key), 0o600);
        let err = write_atomic(&key, b"again", Mode::Private, Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&key).unwrap(), b"secret");

        let doc = dir.path().join("a.md");
        std::fs::write(&doc, "old").unwrap();
        std::fs::set_permissions(&doc, Permissions::from_mode(0o640)).unwrap();
        write_atomic(&doc, b"new", Mode::Preserve, Existing::Replace).unwrap();
        assert_eq!(mode_of(&doc), 0o640);
        assert_eq!(std::fs::read(&doc).unwrap(), b"new");
    }

    #[test]
    fn repository_files_and_scripts_take_the_umask_and_create_new_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        std::fs::write(&probe, "").unwrap();
        // What this process's umask makes of 0666: what an editor would create.
        let editor = mode_of(&probe);
        let doc = dir.path().join("new.md");
        write_atomic(&doc, b"x", Mode::RepositoryDefault, Existing::Refuse).unwrap();
        assert_eq!(mode_of(&doc), editor);
        let fresh = dir.path().join("fresh.md");
        write_atomic(&fresh, b"x", Mode::Preserve, Existing::Replace).unwrap();
        assert_eq!(
            mode_of(&fresh),
            editor,
            "Preserve of a new file is the default"
        );
        let hook = dir.path().join("hook");
        write_atomic(&hook, b"#!/bin/sh\n", Mode::Executable, Existing::Replace).unwrap();
        assert_eq!(mode_of(&hook), editor | ((editor & 0o444) >> 2));
        let plain = dir.path().join("plain.md");
        create_new(&plain, b"secret", Mode::Private).unwrap();
        assert_eq!(mode_of(&plain), 0o600);
        assert_eq!(
            create_new(&plain, b"again", Mode::Private)
                .unwrap_err()
                .kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    #[test]
    fn replace_if_unchanged_refuses_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.yaml");
        std::fs::write(&p, "a").unwrap();
        let e = replace_if_unchanged(&p, b"b", b"c", Mode::Preserve).unwrap_err();
        assert!(matches!(e, ReplaceError::Changed));
        assert_eq!(std::fs::read(&p).unwrap(), b"a");
        replace_if_unchanged(&p, b"a", b"c", Mode::Preserve).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"c");
        // No temporary file is left behind either way.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn writes_in_a_repository_stage_in_its_ignored_folder_and_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("opencontext.yaml"), "x").unwrap();
        std::fs::create_dir_all(root.join("context")).unwrap();
        let doc = root.join("context/a.md");
        write_atomic(&doc, b"a", Mode::Preserve, Existing::Refuse).unwrap();
        assert_eq!(std::fs::read(&doc).unwrap(), b"a");
        let staged: Vec<_> = std::fs::read_dir(root.join(super::super::tmp::DIR))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(staged, vec![std::ffi::OsString::from(".gitignore")]);
        assert_eq!(std::fs::read_dir(root.join("context")).unwrap().count(), 1);
    }
}
