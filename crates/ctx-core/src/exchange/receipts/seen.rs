//! What this process has already verified of an append-only file (the receipt
//! log, its anchor), so that an operation costs what was appended since, not
//! the whole file.
//!
//! Each verified file is remembered with its stamp (device, inode, length,
//! modification and change times) and the last bytes verified. A later read
//! stats the file first:
//!
//! - the same stamp: nothing changed, nothing is read;
//! - the same file, longer, still holding the remembered last bytes at the
//!   remembered end: only the bytes appended since are read and verified;
//! - anything else (shorter, another inode, other bytes at the boundary): the
//!   file is read and verified from its first line, as on a first read.
//!
//! What this gives up, on purpose: an in-place edit of bytes *before* the
//! boundary that also grows the file, or one that keeps size and both times
//! (within one tick of the file system's clock), is not seen by a process that
//! verified the file before. The signed anchor still vouches for the whole
//! file's digest, so every full verification — a new process, `ctx receipts
//! verify`, `ctx audit verify` — reports such an edit as a rewrite.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read as _, Seek, SeekFrom};
use std::path::Path;
use std::sync::Mutex;

/// How many files one process remembers at most.
const FILES: usize = 8;
/// How many verified bytes before the boundary a partial read re-checks.
const BOUNDARY: u64 = 64;

/// A file's identity and state as `stat` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    pub(super) len: u64,
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Stamp {
                dev: m.dev(),
                ino: m.ino(),
                len: m.len(),
                mtime: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                ctime: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let t = |x: io::Result<std::time::SystemTime>| {
                x.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128)
            };
            Stamp {
                dev: 0,
                ino: 0,
                len: m.len(),
                mtime: t(m.modified()),
                ctime: t(m.created()),
            }
        }
    }

    fn same_file(&self, o: &Stamp) -> bool {
        self.dev == o.dev && self.ino == o.ino
    }
}

struct Seen<T> {
    stamp: Stamp,
    /// The last (up to [`BOUNDARY`]) bytes verified.
    tail: Vec<u8>,
    value: T,
}

/// A file read against what was verified of it.
pub(super) enum Read<T> {
    /// Unchanged since it was verified to `value`; `tail` is what to keep again.
    Same(T, Vec<u8>),
    /// `value` covers the first `from` bytes; `appended` followed them.
    Grew {
        value: T,
        from: u64,
        appended: Vec<u8>,
    },
    /// Not remembered, or changed otherwise: the whole file.
    Whole(Vec<u8>),
}

/// A file that was read: what it holds relative to the memo, and its stamp.
pub(super) struct Reading<T> {
    pub read: Read<T>,
    pub stamp: Stamp,
}

/// A process-wide memo of verified files, by a key naming the file and
/// everything its verification depends on besides its bytes.
pub(super) struct Memo<T>(Mutex<BTreeMap<String, Seen<T>>>);

impl<T> Memo<T> {
    pub(super) const fn new() -> Memo<T> {
        Memo(Mutex::new(BTreeMap::new()))
    }

    /// Read `path` against what was verified of `key`. The entry leaves the
    /// memo either way, so the caller holds the only copy of its value (and
    /// can extend it in place) and a verification that fails leaves nothing
    /// behind: the next read starts from the top. `Ok(None)`: no such file.
    pub(super) fn read(&self, key: &str, path: &Path) -> io::Result<Option<Reading<T>>> {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.forget(key);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let stamp = Stamp::of(&f.metadata()?);
        let seen = self.take(key);
        let read = match seen {
            Some(s) if s.stamp == stamp => Read::Same(s.value, s.tail),
            Some(s) if s.stamp.same_file(&stamp) && stamp.len > s.stamp.len => {
                let from = s.stamp.len;
                let back = (s.tail.len() as u64).min(from);
                f.seek(SeekFrom::Start(from - back))?;
                let mut bytes = vec![0u8; (stamp.len - from + back) as usize];
                f.read_exact(&mut bytes)?;
                if bytes[..back as usize] == s.tail[s.tail.len() - back as usize..] {
                    bytes.drain(..back as usize);
                    Read::Grew {
                        value: s.value,
                        from,
                        appended: bytes,
                    }
                } else {
                    Read::Whole(read_whole(&mut f, stamp.len)?)
                }
            }
            _ => Read::Whole(read_whole(&mut f, stamp.len)?),
        };
        Ok(Some(Reading { read, stamp }))
    }

    /// Remember that the file, at `stamp`, ending in `tail`, verified to `value`.
    /// A server has one log; a process that opens many (the conformance
    /// suite's temporary stores) forgets them all once it holds [`FILES`].
    pub(super) fn keep(&self, key: String, stamp: Stamp, tail: &[u8], value: T) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= FILES {
            map.clear();
        }
        let keep = tail.len().saturating_sub(BOUNDARY as usize);
        map.insert(
            key,
            Seen {
                stamp,
                tail: tail[keep..].to_vec(),
                value,
            },
        );
    }

    /// Forget `key` (its file was rewritten by this process).
    pub(super) fn forget(&self, key: &str) {
        self.take(key);
    }

    fn take(&self, key: &str) -> Option<Seen<T>> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(key)
    }
}

/// The first `len` bytes of `f` (what its stamp describes).
fn read_whole(f: &mut File, len: u64) -> io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(0))?;
    let mut bytes = vec![0u8; len as usize];
    f.read_exact(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(p: &Path) -> Stamp {
        Stamp::of(&std::fs::metadata(p).unwrap())
    }

    #[test]
    fn only_what_was_appended_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, b"x\ny\n").unwrap();
        let m: Memo<u32> = Memo::new();
        assert!(matches!(m.read("a", &p).unwrap().unwrap().read, Read::Whole(b) if b == b"x\ny\n"));
        m.keep("a".into(), stamp_of(&p), b"x\ny\n", 2);
        assert!(matches!(
            m.read("a", &p).unwrap().unwrap().read,
            Read::Same(2, _)
        ));
        assert!(
            matches!(m.read("a", &p).unwrap().unwrap().read, Read::Whole(_)),
            "a hit is taken out"
        );
        m.keep("a".into(), stamp_of(&p), b"x\ny\n", 2);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"z\n"))
            .unwrap();
        match m.read("a", &p).unwrap().unwrap().read {
            Read::Grew {
                value,
                from,
                appended,
            } => assert_eq!((value, from, appended), (2, 4, b"z\n".to_vec())),
            _ => panic!("expected a partial read"),
        }
    }

    #[test]
    fn a_shorter_or_rewritten_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, b"x\ny\n").unwrap();
        let m: Memo<u32> = Memo::new();
        m.keep("a".into(), stamp_of(&p), b"x\ny\n", 2);
        std::fs::write(&p, b"x\n").unwrap();
        assert!(matches!(m.read("a", &p).unwrap().unwrap().read, Read::Whole(b) if b == b"x\n"));
        std::fs::write(&p, b"x\ny\n").unwrap();
        m.keep("a".into(), stamp_of(&p), b"x\ny\n", 2);
        // Longer, but the remembered last bytes are not where they were.
        std::fs::write(&p, b"x\nY\nz\n").unwrap();
        assert!(matches!(
            m.read("a", &p).unwrap().unwrap().read,
            Read::Whole(_)
        ));
        assert!(m.read("b", &dir.path().join("none")).unwrap().is_none());
    }
}
