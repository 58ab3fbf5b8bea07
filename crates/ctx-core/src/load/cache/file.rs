//! The cache file: a header, then self-checking segments.
//!
//! ```text
//! header    "ctx-parse-cache" 0x08 (16 bytes) · salt (32 bytes)
//! segment   "SEG\0" · count u32 · index, meta, structured and prose lengths u32
//!           · snapshot i64 (ns) · XXH3-128 of each of the four regions (salted)
//!           · index · meta region · structured region · prose region
//! ```
//!
//! Little-endian integers. The index lists the segment's records (path, key,
//! source, and where each record's blobs are); a record's meta blob holds its
//! object (without content; its document beside it) and findings, its content
//! blob the content: in the structured region for fields, in the prose region for
//! text. Regions are read and checked separately: a load first reads every index,
//! then only the meta regions of segments holding results it uses, and of the
//! content only what it keeps — validate reads structured content and never a byte of prose, which is
//! most of a repository. Each checksum is salted, so a segment another build wrote
//! never passes.
//!
//! New results are appended as one more segment under the cache's lock; a rewrite
//! replaces the file atomically. A segment that is truncated or fails a checksum
//! is ignored (the others still count) and the next save rewrites the file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

const MAGIC: &[u8; 16] = b"ctx-parse-cache\x08";
const HEADER: u64 = 16 + 32;
const SEGMENT_MAGIC: &[u8; 4] = b"SEG\0";
const REGIONS: usize = 4;
/// Bytes of one region's checksum.
const SUM: usize = 16;
const SEGMENT_HEADER: usize = 4 + 4 + 4 * REGIONS + 8 + SUM * REGIONS;
/// A segment is cut once its meta and content regions pass this many bytes, so
/// reads parallelise and a damaged segment loses little.
pub const SEGMENT_TARGET: usize = 4 << 20;

/// What the file must have been written by; see [`super::salt`].
pub type Salt = [u8; 32];

/// The four regions of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Index = 0,
    Meta = 1,
    /// Content with fields (structured), which checks read.
    Structured = 2,
    /// Text content (a Markdown body), read only by commands that print content.
    Prose = 3,
}

/// A region's checksum: XXH3-128 over the salt, the region's place and its bytes.
/// It guards against torn writes and damage (anyone who can write the git
/// directory can also replace its hooks, so a keyed hash would add nothing), and
/// hashes the hundreds of megabytes a large repository's cache holds at memory
/// speed, where SHA-256 cost 5-7% of a warm load.
fn checksum(salt: &Salt, region: Region, count: u32, snapshot: i64, bytes: &[u8]) -> [u8; SUM] {
    let mut h = Xxh3::new();
    h.update(salt);
    h.update(&[region as u8]);
    h.update(&count.to_le_bytes());
    h.update(&snapshot.to_le_bytes());
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
    h.digest128().to_le_bytes()
}

/// A byte range inside a region.
pub type Span = (u32, u32);

/// One segment being filled: records go to the index, their blobs to the regions.
#[derive(Default)]
pub struct SegmentWriter {
    index: Vec<u8>,
    meta: Vec<u8>,
    structured: Vec<u8>,
    prose: Vec<u8>,
    count: u32,
}

impl SegmentWriter {
    /// Append one record: `meta` and `content` blobs (the content in the prose
    /// region when `prose`), and the index entry that `head` makes from where they
    /// landed. A record whose entry cannot be encoded is left out (false): it is
    /// simply parsed again next time.
    pub fn push<T: serde::Serialize>(
        &mut self,
        meta: &[u8],
        content: &[u8],
        prose: bool,
        head: impl FnOnce(Span, Span) -> T,
    ) -> bool {
        let span = |region: &Vec<u8>, blob: &[u8]| -> Option<Span> {
            Some((
                u32::try_from(region.len()).ok()?,
                u32::try_from(blob.len()).ok()?,
            ))
        };
        let text = if prose {
            &mut self.prose
        } else {
            &mut self.structured
        };
        let (Some(m), Some(c)) = (span(&self.meta, meta), span(text, content)) else {
            return false;
        };
        let before = self.index.len();
        match postcard::to_extend(&head(m, c), std::mem::take(&mut self.index)) {
            Ok(index) => self.index = index,
            Err(_) => {
                // `to_extend` consumed the buffer; this is rare (an unencodable key).
                self.index = Vec::with_capacity(before);
                return false;
            }
        }
        self.meta.extend_from_slice(meta);
        text.extend_from_slice(content);
        self.count += 1;
        true
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes held so far (for cutting segments).
    pub fn len(&self) -> usize {
        self.regions().iter().map(|(_, v)| v.len()).sum()
    }

    fn regions(&self) -> [(Region, &Vec<u8>); REGIONS] {
        [
            (Region::Index, &self.index),
            (Region::Meta, &self.meta),
            (Region::Structured, &self.structured),
            (Region::Prose, &self.prose),
        ]
    }

    /// The finished segment, header and regions.
    pub fn finish(self, salt: &Salt, snapshot_ns: i64) -> Vec<u8> {
        let len = |v: &Vec<u8>| u32::try_from(v.len()).expect("segments stay far below 4 GiB");
        let mut out = Vec::with_capacity(SEGMENT_HEADER + self.len());
        out.extend_from_slice(SEGMENT_MAGIC);
        out.extend_from_slice(&self.count.to_le_bytes());
        let regions = self.regions();
        for (_, v) in regions {
            out.extend_from_slice(&len(v).to_le_bytes());
        }
        out.extend_from_slice(&snapshot_ns.to_le_bytes());
        for (region, v) in regions {
            out.extend_from_slice(&checksum(salt, region, self.count, snapshot_ns, v));
        }
        for (_, v) in regions {
            out.extend_from_slice(v);
        }
        out
    }
}

/// Where one segment is, from its header.
#[derive(Debug, Clone)]
pub struct Segment {
    at: u64,
    pub count: u32,
    lens: [u32; REGIONS],
    pub snapshot_ns: i64,
    sums: [[u8; SUM]; REGIONS],
}

impl Segment {
    fn start(&self, region: Region) -> u64 {
        let mut at = self.at + SEGMENT_HEADER as u64;
        for r in 0..region as usize {
            at += u64::from(self.lens[r]);
        }
        at
    }

    fn end(&self) -> u64 {
        self.start(Region::Prose) + u64::from(self.lens[Region::Prose as usize])
    }
}

/// An open cache file whose header this build accepts.
pub struct CacheFile {
    file: File,
    salt: Salt,
    /// Segments whose headers are whole, in file order.
    pub segments: Vec<Segment>,
    /// Something after the last whole segment (a torn append, damage): rewrite.
    pub damaged: bool,
}

impl CacheFile {
    /// Open the cache at `path`: None when there is no usable file (missing,
    /// unreadable, or written by another build or format).
    pub fn open(path: &Path, salt: &Salt) -> Option<CacheFile> {
        let file = File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let mut header = [0u8; HEADER as usize];
        read_at(&file, &mut header, 0).ok()?;
        if &header[..16] != MAGIC || &header[16..] != salt {
            return None;
        }
        let mut segments = Vec::new();
        let mut damaged = false;
        let mut at = HEADER;
        while at < len {
            let mut h = [0u8; SEGMENT_HEADER];
            if at + SEGMENT_HEADER as u64 > len || read_at(&file, &mut h, at).is_err() {
                damaged = true;
                break;
            }
            let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
            let sums_at = 8 + 4 * REGIONS + 8;
            let sum = |i: usize| -> [u8; SUM] {
                h[sums_at + SUM * i..sums_at + SUM * (i + 1)]
                    .try_into()
                    .expect("SUM bytes")
            };
            let s = Segment {
                at,
                count: word(4),
                lens: std::array::from_fn(|i| word(8 + 4 * i)),
                snapshot_ns: i64::from_le_bytes(
                    h[sums_at - 8..sums_at].try_into().expect("8 bytes"),
                ),
                sums: std::array::from_fn(sum),
            };
            if &h[..4] != SEGMENT_MAGIC || s.end() > len {
                damaged = true;
                break;
            }
            at = s.end();
            segments.push(s);
        }
        Some(CacheFile {
            file,
            salt: *salt,
            segments,
            damaged,
        })
    }

    /// One region of one segment, read and checked; None if it fails its checksum.
    pub fn read(&self, segment: usize, region: Region) -> Option<Vec<u8>> {
        let s = self.segments.get(segment)?;
        let mut bytes = vec![0u8; s.lens[region as usize] as usize];
        read_at(&self.file, &mut bytes, s.start(region)).ok()?;
        (checksum(&self.salt, region, s.count, s.snapshot_ns, &bytes) == s.sums[region as usize])
            .then_some(bytes)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::Seek;
    // A shared cursor: one positioned read at a time.
    static SEEK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = SEEK.lock();
    let mut f = file;
    f.seek(io::SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// Replace the cache file with what `fill` writes after the header, atomically
/// (readers see the old file or the new one).
pub fn write(
    path: &Path,
    salt: &Salt,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    crate::fs::write_atomic_with(
        path,
        crate::fs::Mode::RepositoryDefault,
        crate::fs::Existing::Replace,
        |w| {
            w.write_all(MAGIC)?;
            w.write_all(salt)?;
            fill(w)
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
    let mut header = [0u8; HEADER as usize];
    if f.read_exact(&mut header).is_err() || &header[..16] != MAGIC || &header[16..] != salt {
        return Ok(false);
    }
    // Segment by segment (never all of them copied into one buffer): a reader
    // sees whole segments, or a short tail it ignores.
    for s in segments {
        f.write_all(s)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(salt: &Salt, items: &[&str], snapshot: i64) -> Vec<u8> {
        let mut w = SegmentWriter::default();
        for i in items {
            // Longer names stand for prose, so both content regions are exercised.
            let prose = i.len() > 1;
            assert!(w.push(i.as_bytes(), b"c", prose, |m, c| (i.to_string(), m, c)));
        }
        w.finish(salt, snapshot)
    }

    fn items(f: &CacheFile, seg: usize) -> Option<Vec<String>> {
        let index = f.read(seg, Region::Index)?;
        let meta = f.read(seg, Region::Meta)?;
        let mut rest = &index[..];
        let mut out = Vec::new();
        for _ in 0..f.segments[seg].count {
            let ((name, m, _), r): ((String, Span, Span), _) =
                postcard::take_from_bytes(rest).ok()?;
            rest = r;
            let blob = &meta[m.0 as usize..(m.0 + m.1) as usize];
            assert_eq!(blob, name.as_bytes());
            out.push(name);
        }
        Some(out)
    }

    #[test]
    fn segments_round_trip_append_and_survive_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c");
        let salt = [7u8; 32];
        let first = segment(&salt, &["a", "bb"], 5);
        write(&p, &salt, |w| w.write_all(&first)).unwrap();
        assert!(append(&p, &salt, &[segment(&salt, &["c"], 9)]).unwrap());
        let f = CacheFile::open(&p, &salt).unwrap();
        assert!(!f.damaged);
        assert_eq!(f.segments.len(), 2);
        assert_eq!(f.segments[1].snapshot_ns, 9);
        assert_eq!(items(&f, 0).unwrap(), ["a", "bb"]);
        assert_eq!(items(&f, 1).unwrap(), ["c"]);
        // Another build's salt: nothing is used, nothing is appended.
        let other = [8u8; 32];
        assert!(CacheFile::open(&p, &other).is_none());
        assert!(!append(&p, &other, &[segment(&other, &["x"], 1)]).unwrap());
        // A flipped byte in the last segment's content: only that region fails.
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        let f = CacheFile::open(&p, &salt).unwrap();
        assert!(items(&f, 1).is_some());
        assert!(f.read(1, Region::Structured).is_none());
        assert_eq!(f.read(1, Region::Prose).unwrap(), b"");
        assert_eq!(f.read(0, Region::Structured).unwrap(), b"c");
        assert_eq!(f.read(0, Region::Prose).unwrap(), b"c");
        // Truncated in the middle of a segment header or region: the whole segments remain.
        for cut in [n - 1, n - 30, first.len() + HEADER as usize + 10] {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let f = CacheFile::open(&p, &salt).unwrap();
            assert!(f.damaged, "cut at {cut}");
            assert_eq!(f.segments.len(), 1);
        }
        std::fs::write(&p, &bytes[..10]).unwrap();
        assert!(
            CacheFile::open(&p, &salt).is_none(),
            "a torn header is no cache"
        );
    }
}
