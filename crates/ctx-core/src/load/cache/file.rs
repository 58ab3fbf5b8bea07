//! The cache file: a header, then self-checking segments of records.
//!
//! ```text
//! header   "ctx-parse-cache" 0x02 (16 bytes) · salt (32 bytes)
//! segment  "SEG" 0x00 · payload length u32 · record count u32 · snapshot i64 (ns)
//!          · SHA-256(salt · length · count · snapshot · payload) (32 bytes) · payload
//! ```
//!
//! Little-endian integers; the payload is records in postcard, one after another.
//! Segments are independent: new results are appended as one more segment under
//! the cache's lock, and a rewrite replaces the file atomically. A segment that is
//! truncated, damaged or written by another build fails its checksum and ends the
//! read: everything before it is still used, and the next save rewrites the file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 16] = b"ctx-parse-cache\x02";
const HEADER: usize = 16 + 32;
const SEGMENT_MAGIC: &[u8; 4] = b"SEG\0";
const SEGMENT_HEADER: usize = 4 + 4 + 4 + 8 + 32;
/// A segment's payload is cut after this many bytes (so reads parallelise and a
/// damaged segment loses little); one record may be larger.
pub const SEGMENT_TARGET: usize = 2 << 20;

/// What the file must have been written by; see [`super::salt`].
pub type Salt = [u8; 32];

fn checksum(salt: &Salt, len: u32, count: u32, snapshot: i64, payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(len.to_le_bytes());
    h.update(count.to_le_bytes());
    h.update(snapshot.to_le_bytes());
    h.update(payload);
    h.finalize().into()
}

/// One segment being filled.
#[derive(Default)]
pub struct SegmentWriter {
    payload: Vec<u8>,
    count: u32,
}

impl SegmentWriter {
    /// Append one record. A record that cannot be encoded is left out (and
    /// reported as false): it will simply be parsed again next time.
    pub fn push<T: serde::Serialize>(&mut self, record: &T) -> bool {
        let before = self.payload.len();
        match postcard::to_extend(record, std::mem::take(&mut self.payload)) {
            Ok(p) => {
                self.payload = p;
                self.count += 1;
                true
            }
            Err(_) => {
                // `to_extend` consumed the buffer; rebuilding it is rare and cheap enough.
                self.payload = Vec::with_capacity(before);
                false
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn len(&self) -> usize {
        self.payload.len()
    }

    /// The finished segment, header and payload.
    pub fn finish(self, salt: &Salt, snapshot_ns: i64) -> Vec<u8> {
        let len = u32::try_from(self.payload.len()).expect("segments stay far below 4 GiB");
        let mut out = Vec::with_capacity(SEGMENT_HEADER + self.payload.len());
        out.extend_from_slice(SEGMENT_MAGIC);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&snapshot_ns.to_le_bytes());
        out.extend_from_slice(&checksum(salt, len, self.count, snapshot_ns, &self.payload));
        out.extend_from_slice(&self.payload);
        out
    }
}

/// A segment that passed its checksum: its payload, record count and snapshot.
pub struct RawSegment<'a> {
    pub payload: &'a [u8],
    pub count: u32,
    pub snapshot_ns: i64,
}

/// What reading a cache file gave.
pub struct Loaded<T> {
    /// Decoded segments, in file order (later records win).
    pub segments: Vec<T>,
    /// Some segment was truncated, damaged or undecodable: rewrite the file.
    pub damaged: bool,
}

/// Read the cache file at `path` and decode its segments in parallel with
/// `decode` (None = undecodable). Returns None when there is no usable file:
/// missing, unreadable, or written by another build or format.
pub fn read<T: Send>(
    path: &Path,
    salt: &Salt,
    decode: impl Fn(RawSegment<'_>) -> Option<T> + Sync,
) -> Option<Loaded<T>> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut header = [0u8; HEADER];
    read_at(&file, &mut header, 0).ok()?;
    if &header[..16] != MAGIC || &header[16..] != salt {
        return None;
    }
    // Walk the segment headers; each payload is read and checked in parallel below.
    let mut spans = Vec::new();
    let mut damaged = false;
    let mut at = HEADER as u64;
    while at < len {
        let mut h = [0u8; SEGMENT_HEADER];
        if at + SEGMENT_HEADER as u64 > len || read_at(&file, &mut h, at).is_err() {
            damaged = true;
            break;
        }
        let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        let payload_len = word(4);
        let end = at + SEGMENT_HEADER as u64 + u64::from(payload_len);
        if &h[..4] != SEGMENT_MAGIC || end > len {
            damaged = true;
            break;
        }
        spans.push((at, h));
        at = end;
    }
    let decoded: Vec<Option<T>> = spans
        .par_iter()
        .map(|(at, h)| {
            let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
            let (payload_len, count) = (word(4), word(8));
            let snapshot_ns = i64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
            let mut payload = vec![0u8; payload_len as usize];
            read_at(&file, &mut payload, at + SEGMENT_HEADER as u64).ok()?;
            if checksum(salt, payload_len, count, snapshot_ns, &payload)[..] != h[20..] {
                return None;
            }
            decode(RawSegment {
                payload: &payload,
                count,
                snapshot_ns,
            })
        })
        .collect();
    let mut segments = Vec::with_capacity(decoded.len());
    for d in decoded {
        match d {
            Some(s) => segments.push(s),
            // Later segments may restate what a damaged one held; keep reading them,
            // but rewrite the file.
            None => damaged = true,
        }
    }
    Some(Loaded { segments, damaged })
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::Seek;
    // One handle per call: positioned reads without sharing a cursor between threads.
    let mut f = file.try_clone()?;
    let _guard = SEEK.lock();
    f.seek(io::SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(not(unix))]
static SEEK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Replace the cache file with `segments`, atomically (readers see the old file or the new one).
pub fn write(path: &Path, salt: &Salt, segments: &[Vec<u8>]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::fs::write_atomic_with(
        path,
        crate::fs::Mode::RepositoryDefault,
        crate::fs::Existing::Replace,
        |w| {
            w.write_all(MAGIC)?;
            w.write_all(salt)?;
            for s in segments {
                w.write_all(s)?;
            }
            Ok(())
        },
    )
}

/// Append `segments` to the cache file, if it is still one this build wrote.
/// Returns false (and writes nothing) when it is not. The caller holds the lock.
pub fn append(path: &Path, salt: &Salt, segments: &[Vec<u8>]) -> io::Result<bool> {
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut header = [0u8; HEADER];
    if f.read_exact(&mut header).is_err() || &header[..16] != MAGIC || &header[16..] != salt {
        return Ok(false);
    }
    let mut all = Vec::with_capacity(segments.iter().map(Vec::len).sum());
    for s in segments {
        all.extend_from_slice(s);
    }
    // One write: a reader sees whole segments, or a short tail it ignores.
    f.write_all(&all)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(salt: &Salt, items: &[&str], snapshot: i64) -> Vec<u8> {
        let mut w = SegmentWriter::default();
        for i in items {
            assert!(w.push(i));
        }
        w.finish(salt, snapshot)
    }

    fn decode(s: RawSegment<'_>) -> Option<(i64, Vec<String>)> {
        let mut rest = s.payload;
        let mut out = Vec::new();
        for _ in 0..s.count {
            let (v, r) = postcard::take_from_bytes::<String>(rest).ok()?;
            out.push(v);
            rest = r;
        }
        rest.is_empty().then_some((s.snapshot_ns, out))
    }

    #[test]
    fn segments_round_trip_append_and_stop_at_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c");
        let salt = [7u8; 32];
        write(&p, &salt, &[segment(&salt, &["a", "b"], 5)]).unwrap();
        assert!(append(&p, &salt, &[segment(&salt, &["c"], 9)]).unwrap());
        let r = read(&p, &salt, decode).unwrap();
        assert!(!r.damaged);
        assert_eq!(
            r.segments,
            vec![(5, vec!["a".into(), "b".into()]), (9, vec!["c".into()])]
        );
        // Another build's salt: nothing is used, nothing is appended.
        let other = [8u8; 32];
        assert!(read(&p, &other, decode).is_none());
        assert!(!append(&p, &other, &[segment(&other, &["x"], 1)]).unwrap());
        // A flipped byte in the last segment: the first is still used.
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        let r = read(&p, &salt, decode).unwrap();
        assert!(r.damaged);
        assert_eq!(r.segments.len(), 1);
        // Truncated in the middle of a segment header or payload.
        for cut in [n - 1, n - 3, HEADER + 10] {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let r = read(&p, &salt, decode).unwrap();
            assert!(r.damaged, "cut at {cut}");
        }
        std::fs::write(&p, &bytes[..10]).unwrap();
        assert!(
            read(&p, &salt, decode).is_none(),
            "a torn header is no cache"
        );
    }
}
