//! Writes of several files, and the audit events that record them, as one
//! transaction: a kill at any point leaves the old state, or a state the next
//! writer completes to the new one.
//!
//! 1. Every file is staged (filled, synced; [`super::tmp`]) and every
//!    precondition checked (a new file must not exist, a replaced one must
//!    still hold the bytes it was planned from). A kill here leaves staged
//!    files only, which the next run sweeps: the old state.
//! 2. A journal, `.ctx/tmp/<pid>-<random>.txn`, is written atomically: which
//!    staged file goes where, and the audit events still to append. This is
//!    the commit point.
//! 3. The staged files are renamed into place in order, their folders synced,
//!    then the events are appended, then the journal is removed.
//!
//! A journal whose process is gone is rolled forward by [`recover`], which the
//! holder of the repository lock runs before anything else: each staged file
//! still there is renamed into place (if its target still holds what the plan
//! expected), then the events the audit log does not have yet are appended,
//! marked as recovered. A target changed by hand since the kill stops the
//! recovery: the journal becomes `<id>.txn-conflict`, kept with its staged
//! files for a person to look at ([`pending`] lists it; `ctx doctor` and
//! `ctx audit verify` report it), and writing goes on.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{atomic, failpoint, tmp, Mode};
use crate::canonical;

/// A journal's file name ends with this.
pub const JOURNAL_EXT: &str = ".txn";
/// A journal whose recovery met a target changed since.
pub const CONFLICT_EXT: &str = ".txn-conflict";
const FORMAT: &str = "ctx.txn.v1";

/// Evidence committed with a transaction's files: what the journal keeps so a
/// recovery can commit it, and how it is committed now.
pub trait Evidence {
    /// `{"log": path, "after": seq, "events": [...]}` (see
    /// [`crate::audit::recover::complete`]), or None when nothing is due.
    fn journal(&self) -> Option<Value>;
    fn commit(self) -> crate::error::Result<()>;
}

/// No evidence.
impl Evidence for () {
    fn journal(&self) -> Option<Value> {
        None
    }
    fn commit(self) -> crate::error::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The target must not exist.
    Create,
    /// The target must still hold the bytes digested in `old`.
    Replace,
    /// Whatever the target holds is replaced (a `-o FILE` output).
    Put,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Replace => "replace",
            Kind::Put => "put",
        }
    }
    fn parse(s: &str) -> Option<Kind> {
        match s {
            "create" => Some(Kind::Create),
            "replace" => Some(Kind::Replace),
            "put" => Some(Kind::Put),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Staged {
    target: PathBuf,
    staged: tempfile::TempPath,
    kind: Kind,
    old: Option<String>,
    new: String,
}

/// Why a transaction did not complete.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    /// A new file's target exists: nothing was written.
    #[error("{}: already exists", .0.display())]
    Exists(PathBuf),
    /// A replaced file changed since it was planned: nothing was written.
    #[error("{}: changed while ctx was writing it", .0.display())]
    Changed(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// The files are in place but their evidence could not be committed yet;
    /// the journal stays, and the next writer commits it.
    #[error("the files were written, but their audit events could not be recorded yet (the next write records them): {0}")]
    Evidence(crate::error::Error),
}

impl TxnError {
    fn io(path: &Path, source: io::Error) -> TxnError {
        TxnError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A transaction being built over the repository whose manifest folder is `root`.
#[derive(Debug)]
pub struct Txn {
    root: PathBuf,
    files: Vec<Staged>,
}

impl Txn {
    pub fn new(root: &Path) -> Txn {
        Txn {
            root: root.to_path_buf(),
            files: Vec::new(),
        }
    }

    /// Stage a new file: at commit, `target` must not exist.
    pub fn create(&mut self, target: &Path, bytes: &[u8], mode: Mode) -> Result<(), TxnError> {
        self.stage(target, Kind::Create, None, mode, |f| f.write_all(bytes))
    }

    /// Stage a replacement: at commit, `target` must still hold `expected`.
    pub fn replace(
        &mut self,
        target: &Path,
        expected: &[u8],
        bytes: &[u8],
        mode: Mode,
    ) -> Result<(), TxnError> {
        self.replace_digest(target, &canonical::digest(expected), bytes, mode)
    }

    /// [`Txn::replace`] given the digest (`sha256:<hex>`) of the expected bytes.
    pub fn replace_digest(
        &mut self,
        target: &Path,
        expected: &str,
        bytes: &[u8],
        mode: Mode,
    ) -> Result<(), TxnError> {
        let old = Some(expected.to_string());
        self.stage(target, Kind::Replace, old, mode, |f| f.write_all(bytes))
    }

    /// Stage a file that replaces whatever `target` holds, filled by `fill`.
    pub fn put_with(
        &mut self,
        target: &Path,
        mode: Mode,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), TxnError> {
        self.stage(target, Kind::Put, None, mode, fill)
    }

    fn stage(
        &mut self,
        target: &Path,
        kind: Kind,
        old: Option<String>,
        mode: Mode,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), TxnError> {
        let mut hasher = DigestWriter::default();
        let tmp = atomic::prepare(target, mode, |f| {
            let mut both = Tee(f, &mut hasher);
            fill(&mut both)
        })
        .map_err(|e| TxnError::io(target, e))?;
        self.files.push(Staged {
            target: target.to_path_buf(),
            staged: tmp.into_temp_path(),
            kind,
            old,
            new: hasher.finish(),
        });
        Ok(())
    }

    /// Check, journal, rename, commit `evidence`, forget the journal.
    pub fn commit(self, evidence: impl Evidence) -> Result<(), TxnError> {
        for f in &self.files {
            check(f.kind, &f.target, f.old.as_deref(), &f.new)?;
        }
        failpoint::hit("txn.staged");
        if self.files.is_empty() {
            return evidence.commit().map_err(TxnError::Evidence);
        }
        let staging = self.root.join(tmp::DIR);
        tmp::prepare(&staging).map_err(|e| TxnError::io(&staging, e))?;
        let journal = staging.join(tmp::fresh_name(false, &JOURNAL_EXT[1..]));
        let doc = self.journal(&staging, evidence.journal());
        let bytes = serde_json::to_vec(&doc).expect("JSON value");
        atomic::write_atomic(&journal, &bytes, Mode::Private, atomic::Existing::Refuse)
            .map_err(|e| TxnError::io(&journal, e))?;
        failpoint::hit("txn.journal");
        let mut dirs = BTreeSet::new();
        let mut files = self.files.into_iter();
        let mut placed = 0usize;
        while let Some(f) = files.next() {
            let target = f.target.clone();
            let done = check(f.kind, &target, f.old.as_deref(), &f.new).and_then(|()| {
                match f.kind {
                    Kind::Create => f.staged.persist_noclobber(&target),
                    Kind::Replace | Kind::Put => f.staged.persist(&target),
                }
                .map_err(|e| {
                    // The staged file must outlive a failed rename: the journal names it.
                    let _ = e.path.keep();
                    TxnError::io(&target, e.error)
                })
            });
            if let Err(e) = done {
                if placed == 0 {
                    // Nothing moved: as if the transaction never began.
                    let _ = std::fs::remove_file(&journal);
                } else {
                    // Someone wrote a target without the lock: keep the rest for a person.
                    for rest in files {
                        let _ = rest.staged.keep();
                    }
                    let _ = std::fs::rename(&journal, journal.with_extension(&CONFLICT_EXT[1..]));
                }
                return Err(e);
            }
            placed += 1;
            failpoint::hit("txn.rename");
            dirs.insert(atomic::folder(&target));
        }
        for d in &dirs {
            atomic::sync_dir(d).map_err(|e| TxnError::io(d, e))?;
        }
        failpoint::hit("txn.applied");
        if let Err(e) = evidence.commit() {
            // The files are in place; the next writer appends the events. The
            // journal is handed over now (a live pid's journals are never recovered).
            let _ = std::fs::rename(&journal, staging.join(format!("0-{}", file_name(&journal))));
            return Err(TxnError::Evidence(e));
        }
        failpoint::hit("txn.recorded");
        let _ = std::fs::remove_file(&journal);
        Ok(())
    }

    fn journal(&self, staging: &Path, evidence: Option<Value>) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .map(|f| {
                json!({
                    "target": portable(&self.root, &f.target),
                    "staged": portable(staging, &f.staged),
                    "kind": f.kind.as_str(),
                    "old": f.old,
                    "new": f.new,
                })
            })
            .collect();
        let mut evidence = evidence;
        if let Some(log) = evidence.as_mut().and_then(|e| e.get_mut("log")) {
            if let Some(p) = log.as_str() {
                *log = Value::from(portable(&self.root, Path::new(p)));
            }
        }
        json!({"format": FORMAT, "files": files, "audit": evidence})
    }
}

/// Is `target` as a step of `kind` expects it?
fn check(kind: Kind, target: &Path, old: Option<&str>, new: &str) -> Result<(), TxnError> {
    match kind {
        Kind::Put => Ok(()),
        Kind::Create => match std::fs::symlink_metadata(target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(TxnError::io(target, e)),
            Ok(_) => Err(TxnError::Exists(target.to_path_buf())),
        },
        Kind::Replace => {
            let have = std::fs::read(target).map_err(|e| TxnError::io(target, e))?;
            let have = canonical::digest(&have);
            if Some(have.as_str()) == old || have == new {
                Ok(())
            } else {
                Err(TxnError::Changed(target.to_path_buf()))
            }
        }
    }
}

/// A path relative to `base` when inside it (so a moved repository still
/// recovers), else absolute.
fn portable(base: &Path, p: &Path) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    match abs.strip_prefix(&base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => abs.to_string_lossy().into_owned(),
    }
}

fn resolve(base: &Path, s: &str) -> PathBuf {
    let p = Path::new(s);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// What a recovery did with one journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// Rolled forward: `files` renamed into place now, `events` appended now.
    Completed {
        journal: PathBuf,
        files: usize,
        events: usize,
    },
    /// Kept as `<id>.txn-conflict`: `why` says which target changed.
    Conflict { journal: PathBuf, why: String },
}

/// Roll forward every journal of a dead process in the repository at `root`,
/// then sweep what is left. The caller holds the repository lock. Never
/// fails: what cannot be completed is kept and reported.
pub fn recover(root: &Path) -> Vec<Recovered> {
    let staging = root.join(tmp::DIR);
    let mut out = Vec::new();
    for journal in dead_journals(&staging) {
        match roll_forward(root, &staging, &journal) {
            Ok((files, events)) => {
                let _ = std::fs::remove_file(&journal);
                out.push(Recovered::Completed {
                    journal,
                    files,
                    events,
                });
            }
            Err(why) => {
                let kept = journal.with_extension(&CONFLICT_EXT[1..]);
                let _ = std::fs::rename(&journal, &kept);
                out.push(Recovered::Conflict { journal: kept, why });
            }
        }
    }
    if !out.is_empty() {
        let _ = atomic::sync_dir(&staging);
    }
    tmp::sweep(root);
    out
}

fn dead_journals(staging: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(staging) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_str().unwrap_or("");
            name.ends_with(JOURNAL_EXT) && tmp::owner(name).is_some_and(abandoned)
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// A journal no live process will finish: its process is gone, or it was
/// handed over (pid 0) by one whose evidence could not be committed.
fn abandoned(pid: u32) -> bool {
    pid == 0 || tmp::gone(pid)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read_journal(journal: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(journal).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("not a journal: {e}"))?;
    if v["format"] != FORMAT {
        return Err(format!(
            "format: expected {FORMAT:?}, found {}",
            v["format"]
        ));
    }
    Ok(v)
}

fn roll_forward(root: &Path, staging: &Path, journal: &Path) -> Result<(usize, usize), String> {
    let v = read_journal(journal)?;
    let mut renamed = 0;
    let mut dirs = BTreeSet::new();
    for f in v["files"].as_array().into_iter().flatten() {
        let (Some(target), Some(staged), Some(kind), Some(new)) = (
            f["target"].as_str(),
            f["staged"].as_str(),
            f["kind"].as_str().and_then(Kind::parse),
            f["new"].as_str(),
        ) else {
            return Err("a file entry is incomplete".into());
        };
        let (target, staged) = (resolve(root, target), resolve(staging, staged));
        if std::fs::symlink_metadata(&staged).is_err() {
            continue; // renamed before the kill
        }
        let applied = std::fs::read(&target)
            .map(|b| canonical::digest(&b) == new)
            .unwrap_or(false);
        if applied {
            // A no-clobber rename by link leaves both names for a moment.
            let _ = std::fs::remove_file(&staged);
            continue;
        }
        check(kind, &target, f["old"].as_str(), new).map_err(|e| {
            format!(
                "{e} since the interrupted write was planned; its new content is kept in {}",
                staged.display()
            )
        })?;
        std::fs::rename(&staged, &target).map_err(|e| format!("{}: {e}", target.display()))?;
        dirs.insert(atomic::folder(&target));
        renamed += 1;
    }
    for d in &dirs {
        let _ = atomic::sync_dir(d);
    }
    let events = match v.get("audit").filter(|a| !a.is_null()) {
        Some(a) => crate::audit::complete(root, a).map_err(|e| e.to_string())?,
        None => 0,
    };
    Ok((renamed, events))
}

/// The staged files the journals in `staging` name (kept by the sweep).
pub(crate) fn named_by_journals(staging: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(staging) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_str().unwrap_or("");
        if !(name.ends_with(JOURNAL_EXT) || name.ends_with(CONFLICT_EXT)) {
            continue;
        }
        if let Ok(v) = read_journal(&e.path()) {
            for f in v["files"].as_array().into_iter().flatten() {
                if let Some(s) = f["staged"].as_str() {
                    out.insert(resolve(staging, s));
                }
            }
        }
    }
    out
}

/// An interrupted transaction still on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    pub journal: PathBuf,
    /// The targets it writes, as the journal names them.
    pub targets: Vec<String>,
    /// Kept after a conflict (a person must decide), or waiting for the next writer.
    pub conflict: bool,
}

/// Journals of dead processes, and conflicts, in the repository at `root`.
pub fn pending(root: &Path) -> Vec<Interrupted> {
    let staging = root.join(tmp::DIR);
    let Ok(entries) = std::fs::read_dir(&staging) else {
        return Vec::new();
    };
    let mut out: Vec<Interrupted> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let conflict = name.ends_with(CONFLICT_EXT);
            let waiting = name.ends_with(JOURNAL_EXT) && tmp::owner(&name).is_some_and(abandoned);
            if !(conflict || waiting) {
                return None;
            }
            let targets = read_journal(&e.path())
                .map(|v| {
                    v["files"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|f| f["target"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            Some(Interrupted {
                journal: e.path(),
                targets,
                conflict,
            })
        })
        .collect();
    out.sort_by(|a, b| a.journal.cmp(&b.journal));
    out
}

/// Hashes what passes through it.
#[derive(Default)]
struct DigestWriter(sha2::Sha256);

impl DigestWriter {
    fn finish(self) -> String {
        use sha2::Digest;
        format!(
            "{}{}",
            canonical::DIGEST_PREFIX,
            hex::encode(self.0.finalize())
        )
    }
}

struct Tee<'a>(&'a mut dyn Write, &'a mut DigestWriter);

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        sha2::Digest::update(&mut self.1 .0, &buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests;
