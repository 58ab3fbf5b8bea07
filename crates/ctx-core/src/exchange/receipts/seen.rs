//! What this process has already verified of an append-only file (the receipt
//! log, its anchor). Both only ever grow, so a later read whose bytes begin
//! with exactly the bytes verified before needs to verify only what was
//! appended. Anything else (a shorter file, or other earlier bytes: a
//! rollback or a rewrite) misses, and the file is verified from its first
//! line as on a first read. The verdict is therefore the same as verifying in
//! full every time; only the cost differs, which matters to a long-running
//! server whose every call reads a log that grows with every call.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// How many files one process remembers at most.
const FILES: usize = 8;

struct Seen<T> {
    bytes: Vec<u8>,
    value: T,
}

/// A process-wide memo of verified files, by a key naming the file and
/// everything its verification depends on besides its bytes.
pub(super) struct Memo<T>(Mutex<BTreeMap<String, Seen<T>>>);

impl<T> Memo<T> {
    pub(super) const fn new() -> Memo<T> {
        Memo(Mutex::new(BTreeMap::new()))
    }

    /// Take out what was verified of `key`, and how many leading bytes of
    /// `bytes` it covers, when `bytes` starts with exactly those bytes. The
    /// entry leaves the memo either way (a miss is stale; a hit comes back
    /// through [`Memo::keep`] once its extension verified), so the caller
    /// holds the only copy and can extend it in place, and a verification
    /// that fails leaves nothing behind: the next read starts from the top.
    pub(super) fn take(&self, key: &str, bytes: &[u8]) -> Option<(usize, T)> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let seen = map.remove(key)?;
        bytes
            .starts_with(&seen.bytes)
            .then_some((seen.bytes.len(), seen.value))
    }

    /// Remember that `bytes` verified to `value`. A server has one log; a
    /// process that opens many (the conformance suite's temporary stores)
    /// forgets them all once it holds [`FILES`], so the memo stays small.
    pub(super) fn keep(&self, key: String, bytes: Vec<u8>, value: T) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= FILES {
            map.clear();
        }
        map.insert(key, Seen { bytes, value });
    }
}

#[cfg(test)]
mod tests {
    use super::Memo;

    #[test]
    fn only_an_exact_prefix_hits() {
        let m: Memo<u32> = Memo::new();
        let keep = |m: &Memo<u32>| m.keep("a".into(), b"x\ny\n".to_vec(), 2);
        assert_eq!(m.take("a", b"x\n"), None);
        keep(&m);
        assert_eq!(m.take("a", b"x\ny\n"), Some((4, 2)));
        assert_eq!(m.take("a", b"x\ny\n"), None, "a hit is taken out");
        keep(&m);
        assert_eq!(m.take("a", b"x\ny\nz\n"), Some((4, 2)));
        keep(&m);
        assert_eq!(m.take("b", b"x\ny\n"), None, "another file misses");
        assert_eq!(m.take("a", b"x\n"), None, "a rollback misses");
        assert_eq!(m.take("a", b"x\ny\n"), None, "and forgets");
        keep(&m);
        assert_eq!(m.take("a", b"x\nY\nz\n"), None, "a rewrite misses");
        keep(&m);
        assert_eq!(m.take("a", b"x\nY\n"), None, "so does a same-length edit");
    }
}
