//! What the file system says about a file, cheaply: one `stat`. Two reads of a file
//! with the same stamp see the same bytes, except for the "racy" case git knows
//! well: a file changed again within the file system's timestamp granularity
//! keeps its stamp. A stamp too close to the moment its parse was taken is
//! therefore never trusted, and the file is read again.

use std::fs::Metadata;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// How close to a snapshot a change must be to count as racy, for file systems
/// with sub-second timestamps. They come from the kernel's coarse clock, which lags
/// the real clock by at most one tick (a few milliseconds).
pub const RACY_MARGIN_NS: i64 = 100_000_000;

/// The same for timestamps in whole seconds (FAT rounds to two, HFS+ and some
/// network file systems to one): a stamp without nanoseconds gets this margin.
pub const COARSE_RACY_MARGIN_NS: i64 = 3_000_000_000;

/// Identity and state of one file: size, modification and change times with
/// nanoseconds, inode and device. `ctime` changes on every write and cannot be set
/// back by `touch`, so an edit that keeps size and mtime is still seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

impl Stamp {
    /// The stamp of a regular file (links followed); None for anything else.
    pub fn of(meta: &Metadata) -> Option<Stamp> {
        if !meta.is_file() {
            return None;
        }
        Stamp::of_any(meta)
    }

    /// The stamp of whatever `meta` describes (a link's own, given `symlink_metadata`).
    pub fn of_any(meta: &Metadata) -> Option<Stamp> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Stamp {
                size: meta.size(),
                mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
                ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
                ino: meta.ino(),
                dev: meta.dev(),
            })
        }
        #[cfg(not(unix))]
        {
            let t = meta.modified().ok().map(ns_since_epoch)?;
            Some(Stamp {
                size: meta.len(),
                mtime_ns: t,
                ctime_ns: t,
                ino: 0,
                dev: 0,
            })
        }
    }

    /// Stat `path` (links followed).
    pub fn read(path: &std::path::Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().as_ref().and_then(Stamp::of)
    }

    /// Was this stamp taken too close to `snapshot_ns` (when the parse it keys was
    /// started) to prove the file has not changed since?
    pub fn racy(&self, snapshot_ns: i64) -> bool {
        const SECOND: i64 = 1_000_000_000;
        let fine = self.mtime_ns % SECOND != 0 || self.ctime_ns % SECOND != 0;
        let margin = if fine {
            RACY_MARGIN_NS
        } else {
            COARSE_RACY_MARGIN_NS
        };
        self.mtime_ns.max(self.ctime_ns) >= snapshot_ns.saturating_sub(margin)
    }
}

/// The stamps of the files `path` gives for each of `items` (None where
/// [`Stamp::read`] gives None), in parallel, in order. On Unix each folder is
/// opened once per batch and its files are stat-ed relative to it (`fstatat`): the
/// kernel then resolves one name per file instead of every component of its path,
/// which was a tenth of a warm load at 100k files.
pub fn read_many<T: Sync>(
    items: &[T],
    path: impl Fn(&T) -> &std::path::Path + Sync,
) -> Vec<Option<Stamp>> {
    use rayon::prelude::*;
    items
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            let mut folder = at::Folder::default();
            chunk
                .iter()
                .map(|t| folder.stamp(path(t)))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(unix)]
mod at {
    use std::ffi::CString;
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    use std::path::{Path, PathBuf};

    use super::Stamp;

    /// The folder opened last, reused while files come from it.
    #[derive(Default)]
    pub struct Folder {
        open: Option<(PathBuf, File)>,
    }

    impl Folder {
        pub fn stamp(&mut self, path: &Path) -> Option<Stamp> {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Stamp::read(path);
            };
            if self.open.as_ref().is_none_or(|(p, _)| p != parent) {
                self.open = File::open(parent).ok().map(|f| (parent.to_path_buf(), f));
            }
            let Some((_, dir)) = &self.open else {
                return Stamp::read(path);
            };
            let name = CString::new(name.as_bytes()).ok()?;
            // SAFETY: `stat` is plain data that fstatat fills in; both pointers are
            // valid for the call and the folder's descriptor is open.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, 0) } != 0 {
                return None;
            }
            of_stat(&st)
        }
    }

    /// The same stamp [`Stamp::of`] gives for this file's metadata.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn of_stat(st: &libc::stat) -> Option<Stamp> {
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000) + n;
        Some(Stamp {
            size: st.st_size as u64,
            mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
            ino: st.st_ino as u64,
            dev: st.st_dev as u64,
        })
    }
}

#[cfg(not(unix))]
mod at {
    use std::path::Path;

    use super::Stamp;

    #[derive(Default)]
    pub struct Folder;

    impl Folder {
        pub fn stamp(&mut self, path: &Path) -> Option<Stamp> {
            Stamp::read(path)
        }
    }
}

/// Nanoseconds since the Unix epoch (negative before it, saturating far away).
pub fn ns_since_epoch(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

/// Now, as [`ns_since_epoch`]: taken before any file is looked at.
pub fn now_ns() -> i64 {
    ns_since_epoch(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racy_means_changed_within_the_margin_of_the_snapshot() {
        let s = |m: i64, c: i64| Stamp {
            size: 1,
            mtime_ns: m,
            ctime_ns: c,
            ino: 1,
            dev: 1,
        };
        let snap = 1_000 * COARSE_RACY_MARGIN_NS + 12_345;
        let old = snap - RACY_MARGIN_NS - 1;
        assert!(!s(old, old).racy(snap));
        // Same tick, or after: racy, whichever time moved.
        assert!(s(snap - RACY_MARGIN_NS, 7).racy(snap));
        assert!(s(7, snap).racy(snap));
        assert!(s(snap + 5, 7).racy(snap));
        // An mtime set into the past (`touch -d`) does not hide a recent change.
        assert!(s(7, snap - 1).racy(snap));
        // Whole-second timestamps get the coarse margin.
        let second = (snap / 1_000_000_000 - 2) * 1_000_000_000;
        assert!(s(second, second).racy(snap));
        assert!(!s(
            second - COARSE_RACY_MARGIN_NS,
            second - COARSE_RACY_MARGIN_NS
        )
        .racy(snap));
    }

    #[test]
    fn stamps_follow_writes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        std::fs::write(&p, "one").unwrap();
        let a = Stamp::read(&p).unwrap();
        assert_eq!(a.size, 3);
        assert_eq!(Stamp::read(&p), Some(a));
        std::fs::write(&p, "two!").unwrap();
        assert_ne!(Stamp::read(&p), Some(a));
        assert_eq!(Stamp::read(dir.path()), None, "folders have no stamp");
        let other = dir.path().join("other");
        std::fs::write(&other, "x").unwrap();
        let missing = dir.path().join("missing");
        let paths = [
            p.as_path(),
            dir.path(),
            other.as_path(),
            missing.as_path(),
            p.as_path(),
        ];
        let many = read_many(&paths, |p| p);
        let one: Vec<_> = paths.iter().map(|q| Stamp::read(q)).collect();
        assert_eq!(many, one, "read_many stamps as read does");
        assert!(many[0].is_some() && many[2].is_some());
    }
}
