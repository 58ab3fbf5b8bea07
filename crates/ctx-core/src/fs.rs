//! Files: atomic writes. Every file ctx writes goes through here.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` through a temporary file in the same folder and a rename,
/// so readers never see a partial file. With `replace == false` an existing file is
/// never overwritten.
pub fn write_atomic(path: &Path, bytes: &[u8], replace: bool) -> io::Result<()> {
    write_atomic_with(path, replace, |f| f.write_all(bytes))
}

/// Like [`write_atomic`], with the content produced by `fill`.
pub fn write_atomic_with(
    path: &Path,
    replace: bool,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir: PathBuf = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".ctx-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    fill(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    if replace {
        tmp.persist(path).map_err(|e| e.error)?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| e.error)?;
    }
    Ok(())
}
