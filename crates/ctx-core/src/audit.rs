//! The audit log: append-only, hash-chained JSON Lines.
//!
//! Each line is one OpenContext audit event (valid against
//! `audit-event.schema.json`) carrying its place in the chain in its own
//! namespaced extension, `extensions: { ctx.audit: { seq, prev } }`: `seq`
//! counts from 1 and `prev` is `sha256:<hex>` of the exact bytes of the
//! previous line (`null` on the first). Editing, deleting or reordering a
//! line therefore breaks the next line's `prev` or `seq`.
//!
//! A chain alone cannot reveal that its *last* lines were cut off, so the
//! log has a small head file beside it (`audit.jsonl` → `audit.head`) that
//! records the last entry's seq, hash and byte range. The head is rewritten
//! atomically after every append; a log shorter than its head, or whose
//! entry at the head's position has another hash, was truncated or edited.
//! (Putting the head inside each entry could not help: the truncated log
//! would still end in a self-consistent entry.) What neither can catch is a
//! writer who rewrites log *and* head consistently; committing both to git,
//! or copying the head elsewhere, anchors them.
//!
//! Appenders take an exclusive lock on the log file, verify the whole chain
//! and the head (see [`Log::begin`] for why the whole chain), write the
//! whole line with one `write` on an `O_APPEND` handle, fsync, then replace
//! the head: concurrent processes never interleave partial lines, and a
//! damaged log is never extended (fail closed).
//!
//! Which events are written is the manifest's `audit` block ([`Config`]);
//! commands record through [`crate::evidence::record()`], never here directly.
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::canonical;
use crate::error::{Error, Result};
use crate::manifest::Manifest;

/// A misconfigured or damaged audit log. Auditing fails closed: the command
/// that would have been recorded does not run.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AuditError {
    #[error("{file}: audit.{key}: expected true or false, found {found}")]
    #[diagnostic(help("write `{key}: true` to record these events, or remove the line"))]
    Flag {
        file: String,
        key: String,
        found: String,
    },
    #[error("{file}: audit.sink `{sink}`: {why}")]
    #[diagnostic(help(
        "use a relative file URI inside the repository, e.g. file://./.ctx/audit.jsonl"
    ))]
    Sink {
        file: String,
        sink: String,
        why: String,
    },
    #[error("{}: {why}; refusing to append to a damaged audit log", path.display())]
    #[diagnostic(help("run `ctx audit verify` to see what changed"))]
    Damaged { path: PathBuf, why: String },
}

/// The extension member holding the chain link.
pub const EXTENSION: &str = "ctx.audit";
/// Default log location, relative to the repository root.
pub const DEFAULT_LOG: &str = ".ctx/audit.jsonl";
const HEAD_FORMAT: &str = "ctx.audit-head.v1";

/// Which events the manifest's `audit` block enables, and where they go.
#[derive(Debug, Clone)]
pub struct Config {
    pub context_reads: bool,
    pub context_writes: bool,
    pub decisions: bool,
    pub conflicts: bool,
    pub log: Log,
}

impl Config {
    /// `None` when the manifest has no `audit` block or enables nothing.
    /// A `sink` ctx cannot write to, or a flag that is present but not a
    /// boolean, is an error: a configured audit trail is never silently
    /// dropped (fail closed).
    pub fn from_manifest(m: &Manifest) -> Result<Option<Config>> {
        let Some(block) = m.raw.get("audit") else {
            return Ok(None);
        };
        let Some(block) = block.as_object() else {
            return Err(Error::Invalid(format!(
                "{}: audit: expected a mapping of flags (context_reads, context_writes, decisions, conflicts, sink), found {block}",
                m.file
            )));
        };
        let flag = |k: &str| match block.get(k) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(Error::from(AuditError::Flag {
                file: m.file.clone(),
                key: k.to_string(),
                found: other.to_string(),
            })),
        };
        let sink = match block.get("sink") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                return Err(Error::Invalid(format!(
                    "{}: audit.sink: expected a file:// URI string, found {other}",
                    m.file
                )))
            }
        };
        let c = Config {
            context_reads: flag("context_reads")?,
            context_writes: flag("context_writes")?,
            decisions: flag("decisions")?,
            conflicts: flag("conflicts")?,
            log: Log::new(sink_path(m, sink)?),
        };
        let any = c.context_reads || c.context_writes || c.decisions || c.conflicts;
        Ok(any.then_some(c))
    }
}

/// Resolve `audit.sink` (a `file://` URI relative to the repository root)
/// or the default location. Absolute paths, other schemes and paths leaving
/// the repository are refused.
pub fn sink_path(m: &Manifest, sink: Option<&str>) -> Result<PathBuf> {
    let Some(sink) = sink else {
        return Ok(m.root.join(DEFAULT_LOG));
    };
    let bad = |why: &str| {
        Err(AuditError::Sink {
            file: m.file.clone(),
            sink: sink.to_string(),
            why: why.to_string(),
        }
        .into())
    };
    let Some(rel) = sink.strip_prefix("file://") else {
        return bad("ctx writes audit events only to file:// sinks");
    };
    let rel = rel.strip_prefix("./").unwrap_or(rel);
    if rel.is_empty() || rel.starts_with('/') || rel.contains('\\') || rel.contains('%') {
        return bad("expected a relative path without escapes");
    }
    if rel.split('/').any(|s| s == ".." || s.is_empty()) {
        return bad("the path must stay inside the repository");
    }
    Ok(m.root.join(rel))
}

/// One line of the log.
#[derive(Debug, Clone)]
pub struct Entry {
    pub seq: u64,
    /// `sha256:<hex>` of the line's bytes.
    pub hash: String,
    pub event: Value,
}

/// A chain position recorded in the head file. A log ctx creates starts with
/// the head at entry 0 (`seq` 0, empty `hash`, `start` = `end` = 0), written
/// before the first line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    format: String,
    seq: u64,
    hash: String,
    /// Byte offset of the last entry's first byte, and one past its newline.
    start: u64,
    end: u64,
}

impl Head {
    fn genesis() -> Head {
        Head {
            format: HEAD_FORMAT.into(),
            seq: 0,
            hash: String::new(),
            start: 0,
            end: 0,
        }
    }
}

/// A hash-chained JSON Lines log and its head file.
#[derive(Debug, Clone)]
pub struct Log {
    path: PathBuf,
    head: PathBuf,
}

/// A locked log whose chain was verified; appends extend it. Dropping it
/// releases the lock.
#[derive(Debug)]
pub struct Appender {
    log: Log,
    file: File,
    seq: u64,
    prev: Value,
    len: u64,
}

impl Appender {
    /// Append one event (its `extensions.ctx.audit` link is set here):
    /// one `write` of the whole line on an `O_APPEND` handle, fsync, then
    /// the head is replaced atomically.
    pub fn append(&mut self, event: Value) -> Result<Entry> {
        self.append_linked(event, None)
    }

    /// Append `event` with `extra` added to its chain link.
    fn append_linked(&mut self, event: Value, extra: Option<(&str, Value)>) -> Result<Entry> {
        let mut event = event;
        let obj = event
            .as_object_mut()
            .ok_or_else(|| Error::Invalid("an audit event must be a JSON object".into()))?;
        let ext = obj
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(ext) = ext.as_object_mut() else {
            return Err(Error::Invalid(
                "an audit event's `extensions` must be an object".into(),
            ));
        };
        let seq = self.seq + 1;
        let mut link = json!({ "seq": seq, "prev": self.prev });
        if let Some((k, v)) = extra {
            link[k] = v;
        }
        ext.insert(EXTENSION.into(), link);
        let line = serde_json::to_string(&event).expect("JSON value");
        let hash = line_hash(line.as_bytes());
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let path = &self.log.path;
        if let Err(e) = crate::fs::failpoint::write_all("audit.append", &mut self.file, &bytes)
            .and_then(|()| self.file.sync_data())
        {
            // A full disk may have taken part of the line: cut it off again,
            // so this process leaves the log as it found it.
            let _ = self.file.set_len(self.len);
            let _ = self.file.sync_data();
            return Err(Error::io(path, &e));
        }
        crate::fs::failpoint::hit("audit.appended");
        let head = Head {
            format: HEAD_FORMAT.into(),
            seq,
            hash: hash.clone(),
            start: self.len,
            end: self.len + bytes.len() as u64,
        };
        self.log.write_head(&head)?;
        self.seq = seq;
        self.prev = json!(hash);
        self.len = head.end;
        Ok(Entry { seq, hash, event })
    }

    /// The log this appender extends.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// The seq of the last entry (0 for an empty log).
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

fn line_hash(line: &[u8]) -> String {
    canonical::digest(line)
}

impl Log {
    pub fn new(path: PathBuf) -> Log {
        let head = path.with_extension("head");
        Log { path, head }
    }

    /// The log the manifest's `audit.sink` names (or the default), whether
    /// or not any event is enabled: what `ctx audit show|verify` read.
    pub fn for_manifest(m: &Manifest) -> Result<Log> {
        let sink = m
            .raw
            .get("audit")
            .and_then(|a| a.get("sink"))
            .and_then(Value::as_str);
        Ok(Log::new(sink_path(m, sink)?))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn head_path(&self) -> &Path {
        &self.head
    }

    /// Append one event (its `extensions.ctx.audit` is set here). Fails,
    /// writing nothing, when the chain or the head is damaged.
    pub fn append(&self, event: Value) -> Result<Entry> {
        self.begin()?.append(event)
    }

    /// Lock the log and verify the chain it would extend, repairing what an
    /// interrupted append left ([`recover`]). The returned [`Appender`]
    /// holds the lock until it is dropped, so a caller can check the log,
    /// produce its output, and then append, with no other writer in between.
    pub fn begin(&self) -> Result<Appender> {
        let io = |p: &Path, e: std::io::Error| Error::io(p, &e);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| io(&self.path, e))?;
        crate::fs::lock_open(&file).map_err(|e| io(&self.path, e))?;
        let len = file.metadata().map_err(|e| io(&self.path, e))?.len();
        if len == 0 && !self.head.exists() {
            // A new log: its head comes first, so no kill leaves lines without one.
            self.write_head(&Head::genesis())?;
        }
        let tail = self.check_chain(&mut file)?;
        let mut a = Appender {
            log: self.clone(),
            file,
            seq: tail.seq,
            prev: tail.prev,
            len: tail.len,
        };
        if let Some(torn) = tail.torn {
            recover::cut_torn(&mut a, torn)?;
        }
        Ok(a)
    }
}

/// Where a verified chain ends.
struct Tail {
    seq: u64,
    prev: Value,
    /// One past the last whole line.
    len: u64,
    /// A torn final line after everything the head vouches for.
    torn: Option<recover::Torn>,
}

/// Is this line a sealed (age-encrypted) event of a personal vault's log?
/// Only its chain link is in clear; see `crate::personal::audit`.
pub fn sealed(event: &Value) -> bool {
    event.as_object().is_some_and(|o| {
        o.len() == 1
            && o.get("extensions")
                .and_then(Value::as_object)
                .is_some_and(|e| {
                    e.len() == 2 && e.contains_key(EXTENSION) && e.contains_key("ctx.personal")
                })
    })
}

/// Complete lines (without their newline); a final partial line is included.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() && bytes.len() <= 1 {
        return Vec::new();
    }
    body.split(|b| *b == b'\n').collect()
}

/// `(seq, prev)` of a line's chain link. Only the link is materialised:
/// serde skips every other member without building values, which keeps
/// the appender's full-chain check cheap.
fn link(line: &[u8]) -> Option<(u64, Value)> {
    #[derive(serde::Deserialize)]
    struct Line {
        extensions: Option<Extensions>,
    }
    #[derive(serde::Deserialize)]
    struct Extensions {
        #[serde(rename = "ctx.audit")]
        link: Option<Link>,
    }
    #[derive(serde::Deserialize)]
    struct Link {
        seq: u64,
        /// Required: `null` on the first entry, else a hash string.
        prev: Value,
    }
    let l = serde_json::from_slice::<Line>(line)
        .ok()?
        .extensions?
        .link?;
    (l.prev.is_null() || l.prev.is_string()).then_some((l.seq, l.prev))
}

/// The repair a recovery entry records (see [`recover`]), when `event` is one.
pub fn recovery(event: &Value) -> Option<&Value> {
    let o = event.as_object()?;
    let ext = o.get("extensions")?.as_object()?;
    (o.len() == 1 && ext.len() == 1)
        .then(|| ext.get(EXTENSION)?.get("recovery"))
        .flatten()
}

mod chain;
mod events;
pub mod recover;
pub mod render;
pub mod repository;
#[cfg(test)]
mod tests;
mod verify;

pub use events::{bundle_event, conflict_events, objects_event, Actor};
pub use recover::complete;
pub use verify::Report;
