//! Bounded reads of regular files. Opening a FIFO waits for a writer and reading a
//! device may never end, so anything that is not a regular file is refused before
//! a byte is read; regular files are read up to a size limit.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A FIFO, device, socket or folder where a file was expected.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is {len} bytes, over the {limit}-byte limit")]
    TooLarge { len: u64, limit: u64 },
    #[error("it grew over the {0}-byte limit while being read")]
    Grew(u64),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What kind of thing `meta` describes, in words for a message.
pub fn kind(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_file() {
        return "a regular file";
    }
    if ft.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

/// Open `path` for reading only if it is a regular file (links followed). The type
/// is checked before opening and again on the open handle, and the open itself
/// cannot block, so swapping in a FIFO between the two checks gains nothing.
pub fn open_regular(path: &Path) -> Result<(File, u64), ReadError> {
    let before = std::fs::metadata(path)?;
    if !before.is_file() {
        return Err(ReadError::NotRegular(kind(&before)));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = opts.open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind(&meta)));
    }
    Ok((f, meta.len()))
}

/// Read a regular file of at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (f, len) = open_regular(path)?;
    if len > limit {
        return Err(ReadError::TooLarge { len, limit });
    }
    let mut buf = Vec::with_capacity(len as usize + 1);
    f.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(ReadError::Grew(limit));
    }
    Ok(buf)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refuses_fifos_without_blocking_and_bounds_size() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        match read_regular(&fifo, 10) {
            Err(ReadError::NotRegular(k)) => assert!(k.contains("FIFO"), "{k}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read_regular(dir.path(), 10),
            Err(ReadError::NotRegular("a folder"))
        ));
        let f = dir.path().join("a.md");
        std::fs::write(&f, "0123456789ab").unwrap();
        assert!(matches!(
            read_regular(&f, 10),
            Err(ReadError::TooLarge { len: 12, limit: 10 })
        ));
        assert_eq!(read_regular(&f, 12).unwrap(), b"0123456789ab");
    }
}
