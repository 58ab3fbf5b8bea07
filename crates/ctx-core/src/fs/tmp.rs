//! Where ctx stages what it is about to write, and how what a killed ctx left
//! behind is found and removed.
//!
//! - A file inside a repository (the nearest folder above it with a manifest)
//!   is staged in that repository's `.ctx/tmp/`, a folder whose own
//!   `.gitignore` ignores it whole: git never shows a staged file, and one
//!   folder holds everything a run may leave. A target on another file system
//!   than that folder, one inside a `.git` folder, or one outside any
//!   repository is staged beside itself as `.ctx-tmp-<pid>-<random>`.
//! - Every staged name carries the pid of the process that made it. A later
//!   run removes the names of processes that are gone (never those of a live
//!   one, never its own): [`sweep`] for a repository's `.ctx/tmp/` (the
//!   repository lock's holder, `validate`, `private status` run it), and a
//!   sibling write sweeps its own folder first.
//! - Interrupted transactions (`*.txn` journals, [`super::txn`]) are left to
//!   their recovery; the sweep removes only what no journal names.
//! - Older ctx versions staged beside the target as `.ctx-XXXXXX.tmp` (six
//!   letters or digits, no pid). A writer removes those of the folder it writes
//!   into (`sweep_legacy`, once per folder and process) when no live process
//!   holds them open, the only way left to tell that their writer is gone.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The staging folder, relative to the manifest folder.
pub const DIR: &str = ".ctx/tmp";
/// Prefix of a file staged beside its target.
pub const SIBLING_PREFIX: &str = ".ctx-tmp-";
/// What `.ctx/tmp/.gitignore` says.
const IGNORE: &[u8] =
    b"# ctx: files being written, and what a killed ctx left behind. Never committed.\n*\n";

/// The staging folder for writes into `target_dir`: `Some(.ctx/tmp)` of its
/// repository, or None (stage beside the target). Remembered per folder.
pub(crate) fn staging_dir(target_dir: &Path) -> Option<PathBuf> {
    static SEEN: Mutex<Option<HashMap<PathBuf, Option<PathBuf>>>> = Mutex::new(None);
    let abs = std::path::absolute(target_dir).ok()?;
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let map = seen.get_or_insert_with(HashMap::new);
    if let Some(hit) = map.get(&abs) {
        if hit.as_ref().is_none_or(|d| d.is_dir()) {
            return hit.clone();
        }
    }
    let found = find_staging(&abs);
    map.insert(abs, found.clone());
    found
}

fn find_staging(dir: &Path) -> Option<PathBuf> {
    if dir.components().any(|c| c.as_os_str() == ".git") {
        return None;
    }
    let root = dir.ancestors().find(|d| {
        crate::init::MANIFEST_NAMES
            .iter()
            .any(|m| d.join(m).is_file())
    })?;
    let staging = root.join(DIR);
    prepare(&staging).ok()?;
    same_device(&staging, dir).then_some(staging)
}

/// Create `.ctx/tmp/` with its `.gitignore` (idempotent).
pub fn prepare(staging: &Path) -> io::Result<()> {
    std::fs::create_dir_all(staging)?;
    let ignore = staging.join(".gitignore");
    if std::fs::read(&ignore).ok().as_deref() != Some(IGNORE) {
        // Not through write_atomic: that would stage into this very folder.
        // A torn `.gitignore` is rewritten on the next run; it holds no data.
        std::fs::write(&ignore, IGNORE)?;
    }
    Ok(())
}

fn same_device(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

/// A fresh staged name in `dir`: `<pid>-<random>.<ext>` in a staging folder,
/// `.ctx-tmp-<pid>-<random>` beside a target.
pub(crate) fn fresh_name(sibling: bool, ext: &str) -> String {
    let mut r = [0u8; 8];
    if getrandom::fill(&mut r).is_err() {
        // Not a secret, only a name: the clock keeps it unique enough.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        r = t.to_le_bytes();
    }
    let pid = std::process::id();
    if sibling {
        format!("{SIBLING_PREFIX}{pid}-{}", hex::encode(r))
    } else {
        format!("{pid}-{}.{ext}", hex::encode(r))
    }
}

/// The pid a staged name was made by.
pub(crate) fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(SIBLING_PREFIX).unwrap_or(name);
    let (pid, tail) = rest.split_once('-')?;
    (!tail.is_empty()).then(|| pid.parse().ok()).flatten()
}

/// Is process `pid` gone? Unknown counts as alive: never remove what may be in use.
pub(crate) fn gone(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 performs the existence and permission check only.
        let r = unsafe { libc::kill(pid, 0) };
        r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// What a sweep left and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Staged files of dead processes removed.
    pub removed: Vec<PathBuf>,
    /// Journals of dead processes still waiting for their recovery.
    pub journals: Vec<PathBuf>,
}

/// Remove the staged files of dead processes from the repository's `.ctx/tmp/`
/// (`root` is the manifest folder). Journals and the files they name are kept
/// for [`super::txn::recover`]. Never fails: a sweep is housekeeping.
pub fn sweep(root: &Path) -> Swept {
    let dir = root.join(DIR);
    let mut out = Swept::default();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return out;
    };
    let mut dead = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if owner(name).is_some_and(gone) {
            dead.push((name.to_string(), e.path()));
        }
    }
    let named = super::txn::named_by_journals(&dir);
    for (name, path) in dead {
        if name.ends_with(super::txn::JOURNAL_EXT) || name.ends_with(super::txn::CONFLICT_EXT) {
            out.journals.push(path);
        } else if !named.contains(&path) && remove(&path) {
            out.removed.push(path);
        }
    }
    out
}

/// Remove `.ctx-tmp-<pid>-…` files of dead processes from `dir` (the folder
/// of a target outside any repository's staging folder).
pub(crate) fn sweep_siblings(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(SIBLING_PREFIX) && owner(name).is_some_and(gone) {
            remove(&e.path());
        }
    }
}

/// Is `name` what an older ctx staged beside a target (tempfile's
/// `.ctx-XXXXXX.tmp`)? Today's sibling names (`.ctx-tmp-<pid>-…`) are longer.
pub(crate) fn is_legacy(name: &str) -> bool {
    name.strip_prefix(".ctx-")
        .and_then(|r| r.strip_suffix(".tmp"))
        .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Remove the legacy staged files ([`is_legacy`]) of `dir` that no live
/// process holds open. Once per folder and process; where open files cannot
/// be listed, nothing is removed.
pub(crate) fn sweep_legacy(dir: &Path) {
    static DONE: Mutex<Option<std::collections::HashSet<PathBuf>>> = Mutex::new(None);
    let Ok(abs) = std::path::absolute(dir) else {
        return;
    };
    if !DONE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(Default::default)
        .insert(abs)
    {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let strays: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_legacy))
        .map(|e| e.path())
        .collect();
    if strays.is_empty() {
        return;
    }
    let Some(open) = open_files() else {
        return;
    };
    for p in strays {
        if file_id(&p).is_some_and(|id| !open.contains(&id)) {
            remove(&p);
        }
    }
}

/// A file's identity (device, inode).
fn file_id(p: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(p).ok()?;
        m.is_file().then(|| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        None
    }
}

/// The files every live process holds open, from `/proc/<pid>/fd`; None when
/// that cannot be known (no `/proc`, or a `ctx` process whose descriptors
/// this user may not read): unknown counts as in use.
fn open_files() -> Option<std::collections::HashSet<(u64, u64)>> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let mut open = std::collections::HashSet::new();
    for proc in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = proc.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let fds = match std::fs::read_dir(proc.path().join("fd")) {
            Ok(fds) => fds,
            Err(_) => {
                let comm = std::fs::read_to_string(proc.path().join("comm")).unwrap_or_default();
                if comm.trim_end() == "ctx" {
                    return None;
                }
                continue;
            }
        };
        // A descriptor's link resolves to the open file itself (renamed or not).
        open.extend(fds.flatten().filter_map(|fd| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let m = std::fs::metadata(fd.path()).ok()?;
                m.is_file().then(|| (m.dev(), m.ino()))
            }
            #[cfg(not(unix))]
            {
                let _ = fd;
                None
            }
        }));
    }
    Some(open)
}

/// Remove a regular file (never a folder or what a link points to).
fn remove(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() || m.file_type().is_symlink() => std::fs::remove_file(path).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        let n = fresh_name(false, "tmp");
        assert_eq!(owner(&n), Some(std::process::id()));
        assert!(n.ends_with(".tmp"));
        let s = fresh_name(true, "tmp");
        assert!(s.starts_with(SIBLING_PREFIX));
        assert_eq!(owner(&s), Some(std::process::id()));
        assert_eq!(owner(".gitignore"), None);
        assert_eq!(owner("write.lock"), None);
        assert!(!gone(std::process::id()), "our own files are never swept");
    }

    #[test]
    fn files_inside_a_repository_are_staged_in_its_ignored_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("opencontext.yaml"), "x").unwrap();
        std::fs::create_dir_all(root.join("context/deep")).unwrap();
        let s = staging_dir(&root.join("context/deep")).unwrap();
        assert_eq!(s, root.join(DIR));
        assert_eq!(std::fs::read(s.join(".gitignore")).unwrap(), IGNORE);
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        assert_eq!(staging_dir(&root.join(".git/hooks")), None);
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(staging_dir(outside.path()), None);
    }

    #[test]
    fn a_sweep_removes_only_what_dead_processes_left() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join(DIR);
        prepare(&tmp).unwrap();
        // pid 2^22+1 is above Linux's pid_max default: no such process.
        let dead = tmp.join("4194305-00aa.tmp");
        let mine = tmp.join(fresh_name(false, "tmp"));
        std::fs::write(&dead, "x").unwrap();
        std::fs::write(&mine, "x").unwrap();
        std::fs::write(tmp.join("write.lock"), "").unwrap();
        let swept = sweep(dir.path());
        assert_eq!(swept.removed, vec![dead.clone()]);
        assert!(!dead.exists() && mine.exists() && tmp.join("write.lock").exists());
        assert!(tmp.join(".gitignore").exists());
    }

    #[test]
    fn legacy_names_are_exactly_what_older_versions_staged() {
        assert!(is_legacy(".ctx-Ab3dE9.tmp"));
        assert!(
            !is_legacy(".ctx-notes.tmp"),
            "five characters: not tempfile's"
        );
        assert!(!is_legacy(".ctx-back_up.tmp"));
        assert!(!is_legacy(&fresh_name(true, "tmp")));
        assert!(!is_legacy(&format!("{}.tmp", fresh_name(true, "tmp"))));
        assert!(!is_legacy(".ctx-Ab3dE9.tmp.bak"));
    }

    /// A stray an older ctx left is removed by the next writer of its folder,
    /// unless a live process still holds it open (a write in progress).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_legacy_stray_goes_only_when_nobody_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let left = dir.path().join(".ctx-Ab3dE9.tmp");
        let held = dir.path().join(".ctx-Zz9yY8.tmp");
        let user = dir.path().join(".ctx-notes.tmp");
        for p in [&left, &held, &user] {
            std::fs::write(p, "x").unwrap();
        }
        // Another process holds `held` open as its stdin until we end it.
        let mut holder = std::process::Command::new("sleep")
            .arg("60")
            .stdin(std::fs::File::open(&held).unwrap())
            .spawn()
            .unwrap();
        sweep_legacy(dir.path());
        let (left_gone, held_kept, user_kept) = (!left.exists(), held.exists(), user.exists());
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(left_gone, "an abandoned legacy stray is removed");
        assert!(held_kept, "one a live process holds open stays");
        assert!(user_kept, "a name that is not ctx's stays");
    }
}
