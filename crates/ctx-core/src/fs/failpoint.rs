//! Injected crashes for the crash tests: every write point of every writing
//! command calls [`hit`] (or writes through [`write_all`]) with a stable name,
//! and a test arms one of them through the environment:
//!
//! - `CTX_FAILPOINT=NAME` kills the process (SIGKILL: no destructors, no
//!   flushes, like a power cut for everything not yet synced) the first time
//!   it reaches `NAME`; `NAME@N` the N-th time.
//! - `CTX_FAILPOINT=NAME:short` (at a [`write_all`] point) writes the first
//!   half of the bytes, syncs them, then kills: a torn record.
//! - `CTX_FAILPOINT=NAME:enospc` writes half and returns `ENOSPC`, as a full
//!   disk does; the process goes on and must clean up after itself.
//! - `CTX_FAILPOINT_TRACE=FILE` appends every point reached, one name a
//!   line, so a test can list a command's write points and then kill it at
//!   each one in turn.
//!
//! Compiled in only with debug assertions (what `cargo test` builds): a
//! release build has no failpoints and pays nothing for them.

use std::io::{self, Write};

/// Reach the failpoint `name`.
#[inline]
pub fn hit(name: &'static str) {
    #[cfg(debug_assertions)]
    armed::reach(name, None);
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// Write `bytes` to `w` at the failpoint `name`: a plain `write_all`,
/// unless the point is armed for a short write.
#[inline]
pub fn write_all(name: &'static str, w: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    #[cfg(debug_assertions)]
    if let Some(short) = armed::reach(name, Some(bytes.len())) {
        w.write_all(&bytes[..short])?;
        w.flush()?;
        return armed::after_short(w);
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
    w.write_all(bytes)
}

#[cfg(debug_assertions)]
mod armed {
    use std::io::{self, Write};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Action {
        Kill,
        Short,
        Enospc,
    }

    struct Armed {
        name: String,
        nth: u32,
        action: Action,
    }

    fn armed() -> Option<&'static Armed> {
        static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
        ARMED
            .get_or_init(|| {
                let spec = std::env::var("CTX_FAILPOINT").ok()?;
                let (spec, action) = match spec.rsplit_once(':') {
                    Some((s, "short")) => (s.to_string(), Action::Short),
                    Some((s, "enospc")) => (s.to_string(), Action::Enospc),
                    _ => (spec, Action::Kill),
                };
                let (name, nth) = match spec.rsplit_once('@') {
                    Some((n, k)) => (n.to_string(), k.parse().ok()?),
                    None => (spec, 1),
                };
                Some(Armed { name, nth, action })
            })
            .as_ref()
    }

    fn trace(name: &str) {
        static TRACE: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
        let Some(path) =
            TRACE.get_or_init(|| std::env::var_os("CTX_FAILPOINT_TRACE").map(Into::into))
        else {
            return;
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{name}\n").as_bytes());
        }
    }

    /// Count a visit; kill when armed to, or return how many bytes a
    /// short write at this point keeps.
    pub(super) fn reach(name: &str, write: Option<usize>) -> Option<usize> {
        trace(name);
        let a = armed()?;
        if a.name != name {
            return None;
        }
        static SEEN: AtomicU32 = AtomicU32::new(0);
        if SEEN.fetch_add(1, Ordering::SeqCst) + 1 != a.nth {
            return None;
        }
        match (a.action, write) {
            (Action::Short | Action::Enospc, Some(len)) => Some(len / 2),
            _ => kill(),
        }
    }

    /// What follows a short write: death, or a full disk's error.
    pub(super) fn after_short(w: &mut dyn Write) -> io::Result<()> {
        match armed().map(|a| a.action) {
            Some(Action::Enospc) => Err(io::Error::from_raw_os_error(28)),
            _ => {
                let _ = w.flush();
                kill()
            }
        }
    }

    fn kill() -> ! {
        #[cfg(unix)]
        // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        std::process::abort()
    }
}
