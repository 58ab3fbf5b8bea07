//! git's index file (`gitformat-index`, versions 2 to 4), read directly: what the
//! pre-commit hook needs from it (which files are tracked, their blob ids, and
//! whether the work-tree copy still matches) costs one read and a parse instead
//! of `git ls-files -s` plus `git diff-files`, which stats every tracked file a
//! second time in another process.
//!
//! Only the plain layout is read. Anything that would make a by-path reading
//! wrong (conflict stages, skip-worktree or intent-to-add entries, a split or
//! sparse index, an unknown version) is [`Unsupported`], and the caller asks
//! git instead.

use crate::load::cache::stamp::Stamp;

/// The index says something this reader does not interpret; ask git.
#[derive(Debug, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

/// What git recorded about a file when it last hashed it (each field truncated
/// to 32 bits, as git stores them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatData {
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub ino: u32,
    pub size: u32,
}

/// One stage-0 entry (its path is the key it is listed under).
#[derive(Debug, Clone)]
pub struct Entry {
    /// `0o100644`, `0o100755`, `0o120000` (symbolic link), `0o160000` (submodule).
    pub mode: u32,
    oid: [u8; 32],
    oid_len: u8,
    pub stat: StatData,
}

impl Entry {
    /// An entry as `git ls-files -s` lists it (mode in octal, id in hex); its stat
    /// data is unknown (zero).
    pub fn listed(mode: &str, oid_hex: &str) -> Option<Entry> {
        let mut oid = [0u8; 32];
        let len = oid_hex.len() / 2;
        hex::decode_to_slice(oid_hex, oid.get_mut(..len)?).ok()?;
        Some(Entry {
            mode: u32::from_str_radix(mode, 8).ok()?,
            oid,
            oid_len: u8::try_from(len).ok()?,
            stat: StatData {
                ctime: (0, 0),
                mtime: (0, 0),
                ino: 0,
                size: 0,
            },
        })
    }

    /// The blob id, in hex (what `git cat-file` takes).
    pub fn oid_hex(&self) -> String {
        hex::encode(&self.oid[..usize::from(self.oid_len)])
    }
}

const SECOND: i64 = 1_000_000_000;

fn split_ns(ns: i64) -> (u32, u32) {
    (ns.div_euclid(SECOND) as u32, ns.rem_euclid(SECOND) as u32)
}

impl StatData {
    /// Does the file's stamp still match what git recorded? Nanoseconds count only
    /// where git stored them (a git built without them stores 0). Size and inode
    /// compare in their low 32 bits, as git does.
    pub fn matches(&self, s: &Stamp) -> bool {
        let time = |recorded: (u32, u32), ns: i64| {
            let (sec, nsec) = split_ns(ns);
            recorded.0 == sec && (recorded.1 == 0 || recorded.1 == nsec)
        };
        self.size == s.size as u32
            && self.ino == s.ino as u32
            && time(self.mtime, s.mtime_ns)
            && time(self.ctime, s.ctime_ns)
    }

    /// Was the file modified no earlier than the index was written? Its stat data
    /// then cannot prove the content is what git hashed ("racily clean").
    pub fn racy(&self, index_mtime_ns: i64) -> bool {
        let (sec, nsec) = split_ns(index_mtime_ns);
        if self.mtime.1 == 0 {
            self.mtime.0 >= sec
        } else {
            self.mtime >= (sec, nsec)
        }
    }
}

/// Parse an index file whose object ids are `oid_len` bytes (20 for SHA-1, 32 for
/// SHA-256) into its entries, each with its path relative to the work tree's top
/// level (`/`-separated). The trailing checksum is not verified: git replaces the index
/// atomically, and a damaged one makes the caller's git fallback fail loudly.
pub fn parse(bytes: &[u8], oid_len: usize) -> Result<Vec<(String, Entry)>, Unsupported> {
    if oid_len != 20 && oid_len != 32 {
        return Err(Unsupported("object id length"));
    }
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err(Unsupported("not an index file"));
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err(Unsupported("index version"));
    }
    let count = r.u32()? as usize;
    let end = bytes
        .len()
        .checked_sub(oid_len)
        .ok_or(Unsupported("truncated"))?;
    let mut entries = Vec::with_capacity(count.min(bytes.len() / 62));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let mut word = [0u32; 10];
        for w in &mut word {
            *w = r.u32()?;
        }
        let mut oid = [0u8; 32];
        oid[..oid_len].copy_from_slice(r.take(oid_len)?);
        let flags = r.u16()?;
        if flags & 0x3000 != 0 {
            return Err(Unsupported("an unmerged entry (conflict stages)"));
        }
        if flags & 0x4000 != 0 {
            if version < 3 {
                return Err(Unsupported("extended flags in a version 2 index"));
            }
            // skip-worktree, intent-to-add and bits not yet defined.
            if r.u16()? != 0 {
                return Err(Unsupported("skip-worktree or intent-to-add entries"));
            }
        }
        let path = if version == 4 {
            let strip = r.varint()?;
            let keep = previous
                .len()
                .checked_sub(strip)
                .ok_or(Unsupported("bad path compression"))?;
            previous.truncate(keep);
            previous.extend_from_slice(r.until_nul()?);
            previous.clone()
        } else {
            let name = r.until_nul()?.to_vec();
            // 1 to 8 NULs pad the entry to a multiple of eight bytes.
            let len = r.at - start;
            r.take(len.next_multiple_of(8) - len)?;
            name
        };
        if r.at > end {
            return Err(Unsupported("truncated"));
        }
        let path = String::from_utf8(path).map_err(|_| Unsupported("a path that is not UTF-8"))?;
        let mode = word[6];
        if mode & 0o170000 == 0o040000 {
            return Err(Unsupported("a sparse index"));
        }
        entries.push((
            path,
            Entry {
                mode,
                oid,
                oid_len: oid_len as u8,
                stat: StatData {
                    ctime: (word[0], word[1]),
                    mtime: (word[2], word[3]),
                    ino: word[5],
                    size: word[9],
                },
            },
        ));
    }
    // Extensions: a split index keeps entries in another file; the others are caches.
    while r.at + 8 <= end {
        let sig = r.take(4)?;
        if sig == b"link" || sig == b"sdir" {
            return Err(Unsupported("a split or sparse index"));
        }
        let len = r.u32()? as usize;
        r.take(len)?;
    }
    Ok(entries)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Unsupported> {
        let end = self.at.checked_add(n).ok_or(Unsupported("truncated"))?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or(Unsupported("truncated"))?;
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, Unsupported> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u16(&mut self) -> Result<u16, Unsupported> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn until_nul(&mut self) -> Result<&'a [u8], Unsupported> {
        let rest = &self.bytes[self.at..];
        let n = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or(Unsupported("truncated"))?;
        self.at += n + 1;
        Ok(&rest[..n])
    }

    /// git's offset varint (`varint.c`): each continuation adds one before shifting,
    /// so every value has exactly one encoding.
    fn varint(&mut self) -> Result<usize, Unsupported> {
        let mut b = self.take(1)?[0];
        let mut v = usize::from(b & 0x7f);
        while b & 0x80 != 0 {
            b = self.take(1)?[0];
            v = v
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .ok_or(Unsupported("bad path compression"))?
                | usize::from(b & 0x7f);
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Every index version git writes parses to what `git ls-files -s` lists.
    #[test]
    fn agrees_with_ls_files_in_every_version() {
        if !crate::git::available() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        // A path that shares little with a long one before it: v4 strips over 128 bytes.
        let long = format!("context/{}.md", "l".repeat(150));
        for p in [
            long.as_str(),
            "context/m.md",
            "a.md",
            "context/one.md",
            "context/one-two.md",
            "context/deep/x/y/long-name-for-prefix-compression.yaml",
            "context/deep/x/y/long-name-for-prefix-compressions.yaml",
            "zé.md",
        ] {
            let f = d.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, p).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.md", d.join("link.md")).unwrap();
        git(d, &["add", "-A"]);
        for version in ["2", "3", "4"] {
            git(d, &["update-index", "--index-version", version]);
            let bytes = std::fs::read(d.join(".git/index")).unwrap();
            let entries = parse(&bytes, 20).unwrap();
            let got: String = entries
                .iter()
                .map(|(path, e)| format!("{:o} {} 0\t{path}\n", e.mode, e.oid_hex()))
                .collect();
            let want = git(d, &["ls-files", "-s"]).replace("\"z\\303\\251.md\"", "zé.md");
            assert_eq!(got, want, "index version {version}");
            // The recorded stat data matches the files as they are.
            for (path, e) in entries.iter().filter(|(_, e)| e.mode != 0o120000) {
                let s = Stamp::read(&d.join(path)).unwrap();
                assert!(e.stat.matches(&s), "{path}");
                let mut touched = s;
                touched.mtime_ns += SECOND;
                assert!(!e.stat.matches(&touched));
                let mut grown = s;
                grown.size += 1;
                assert!(!e.stat.matches(&grown));
            }
        }
        // Conflicts and intent-to-add entries are left to git.
        std::fs::write(d.join("new.md"), "n").unwrap();
        git(d, &["add", "-N", "new.md"]);
        let bytes = std::fs::read(d.join(".git/index")).unwrap();
        assert!(parse(&bytes, 20).is_err());
    }

    #[test]
    fn damage_is_unsupported_never_a_panic() {
        assert!(parse(b"", 20).is_err());
        assert!(parse(b"DIRC\0\0\0\x05\0\0\0\0", 20).is_err());
        let mut header = b"DIRC\0\0\0\x02\0\0\0\x09".to_vec();
        header.extend([0u8; 20]);
        assert!(
            parse(&header, 20).is_err(),
            "nine entries promised, none there"
        );
        for n in 0..header.len() {
            let _ = parse(&header[..n], 20);
        }
    }

    #[test]
    fn racy_compares_with_the_index_write_time() {
        let stat = |m: (u32, u32)| StatData {
            ctime: m,
            mtime: m,
            ino: 1,
            size: 1,
        };
        let index = 100 * SECOND + 500;
        assert!(!stat((99, 999_999_999)).racy(index));
        assert!(stat((100, 500)).racy(index));
        assert!(!stat((100, 499)).racy(index));
        // Whole seconds only: the same second is racy.
        assert!(stat((100, 0)).racy(index));
        assert!(!stat((99, 0)).racy(index));
    }
}
