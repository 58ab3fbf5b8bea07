//! Reading the files a command line names: relative to the current folder, with a
//! missing file reported as "not found" (exit 3) rather than an I/O failure.

use std::path::{Path, PathBuf};

use ctx_core::error::{Error, Result};

/// `path` as given, or joined to the current folder when relative.
pub fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The bytes of a file; a missing one is `NotFound`.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::NotFound(format!("{}: no such file", path.display()))
        }
        _ => Error::io(path, &e),
    })
}
