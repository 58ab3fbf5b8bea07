//! Where a host has verified context written (`provider verify --context-out`).
//! The file is claimed *before* verification: created empty and exclusively, so
//! an existing file is refused untouched and an unwritable folder is found
//! before the turn is reserved in the acceptance state. The verified bytes then
//! replace the placeholder atomically; a placeholder that is never filled (a
//! rejection, a withholding, an error) is removed when the claim is dropped.

use std::io;
use std::path::{Path, PathBuf};

/// A claimed, still empty output file.
#[derive(Debug)]
pub struct ContextFile {
    path: PathBuf,
    filled: bool,
}

impl ContextFile {
    /// Create `path` empty (mode 0600), failing with `AlreadyExists` if it exists.
    pub fn claim(path: PathBuf) -> io::Result<ContextFile> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&path)?;
        Ok(ContextFile {
            path,
            filled: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write the exact bytes over the placeholder (temporary file and rename).
    pub fn fill(mut self, bytes: &[u8]) -> io::Result<()> {
        crate::fs::write_atomic(
            &self.path,
            bytes,
            crate::fs::Mode::Preserve,
            crate::fs::Existing::Replace,
        )?;
        self.filled = true;
        Ok(())
    }
}

impl Drop for ContextFile {
    fn drop(&mut self) {
        if !self.filled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_exclusively_and_cleans_up_unless_filled() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("taken.md");
        std::fs::write(&taken, "mine").unwrap();
        let e = ContextFile::claim(taken.clone()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
        let gone = dir.path().join("gone.md");
        drop(ContextFile::claim(gone.clone()).unwrap());
        assert!(!gone.exists());
        let kept = dir.path().join("kept.md");
        ContextFile::claim(kept.clone())
            .unwrap()
            .fill(b"exact\r\nbytes")
            .unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"exact\r\nbytes");
        assert!(ContextFile::claim(dir.path().join("no/such/folder.md")).is_err());
    }
}
