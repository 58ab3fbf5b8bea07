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
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::canonical;
use crate::error::{Error, Result};
use crate::manifest::Manifest;

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
        let flag = |k: &str| {
            match block.get(k) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(Error::Invalid(format!(
                "{}: audit.{k}: expected true or false, found {other}\n  help: write `{k}: true` to record these events, or remove the line",
                m.file
            ))),
        }
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
        Err(Error::Invalid(format!(
            "{}: audit.sink `{sink}`: {why}\n  help: use a relative file URI inside the repository, e.g. file://./.ctx/audit.jsonl",
            m.file
        )))
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

/// A chain position recorded in the head file.
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
        ext.insert(EXTENSION.into(), json!({ "seq": seq, "prev": self.prev }));
        let line = serde_json::to_string(&event).expect("JSON value");
        let hash = line_hash(line.as_bytes());
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let path = &self.log.path;
        self.file
            .write_all(&bytes)
            .map_err(|e| Error::io(path, &e))?;
        self.file.sync_data().map_err(|e| Error::io(path, &e))?;
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
}

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub entries: u64,
    /// Tampering or damage: the log cannot be trusted.
    pub problems: Vec<String>,
    /// Worth knowing, not a breach (e.g. entries appended after the head).
    pub notes: Vec<String>,
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

    /// [`Log::verify`]; with `rehead`, a lost head file (the only problem
    /// found) is re-anchored at the last entry, and a note says that
    /// truncation before now can no longer be detected.
    pub fn verify_and_rehead(&self, rehead: bool) -> Result<Report> {
        let mut report = self.verify()?;
        let only_head_missing = report.problems.len() == 1
            && report.problems[0].contains("head file")
            && report.problems[0].contains("missing");
        if rehead && only_head_missing {
            let n = self.rehead()?;
            report.problems.clear();
            report.notes.push(format!(
                "head re-anchored at entry {n}; truncation before now cannot be detected"
            ));
        }
        Ok(report)
    }

    pub fn head_path(&self) -> &Path {
        &self.head
    }

    /// Append one event (its `extensions.ctx.audit` is set here). Fails,
    /// writing nothing, when the chain or the head is damaged.
    pub fn append(&self, event: Value) -> Result<Entry> {
        self.begin()?.append(event)
    }

    /// Lock the log and verify the chain it would extend. The returned
    /// [`Appender`] holds the lock until it is dropped, so a caller can
    /// check the log, produce its output, and then append, with no other
    /// writer in between.
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
        let (seq, prev, len) = self.check_chain(&mut file)?;
        Ok(Appender {
            log: self.clone(),
            file,
            seq,
            prev,
            len,
        })
    }

    /// Verify the whole chain before extending it: every line links to the
    /// one before (`seq`, `prev`), the head's entry is where the head says
    /// with the hash it records, and the file ends with a whole line.
    /// Returns the last `(seq, hash)` and the file length.
    ///
    /// Why the whole chain and not just the tail against the head: an
    /// in-place edit of a middle line (same length, so every offset still
    /// matches) is only visible by hashing that line, and appending to such
    /// a log would bury the damage under fresh, valid-looking entries; a
    /// "full check only while small" threshold would reopen exactly that
    /// hole for large logs. The check streams the file once (SHA-256 per
    /// line, plus a parse that materialises only the chain link), so it is
    /// linear and holds one line in memory. Measured on the shared 2-core
    /// machine under load (release build, `ctx resolve` with reads audited):
    /// 25,000 events (13 MB) add about 0.18 s per command, 100,000 events
    /// (54 MB) about 0.5 s. Logs that grow beyond that are meant to be
    /// rotated: move the log and its head away together (and keep them);
    /// the next append starts a new chain.
    fn check_chain(&self, file: &mut File) -> Result<(u64, Value, u64)> {
        let len = file
            .metadata()
            .map_err(|e| Error::io(&self.path, &e))?
            .len();
        let damaged = |why: String| {
            Error::Invalid(format!(
                "{}: {why}; refusing to append to a damaged audit log\n  help: run `ctx audit verify` to see what changed",
                self.path.display()
            ))
        };
        let head = self.read_head()?;
        if head.is_none() && len > 0 {
            return Err(damaged(format!(
                "the head file {} is missing, so truncation could not be detected",
                self.head.display()
            )));
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&self.path, &e))?;
        let mut reader = BufReader::with_capacity(1 << 16, &*file);
        let mut line = Vec::new();
        let (mut seq, mut prev, mut offset) = (0u64, Value::Null, 0u64);
        let mut head_seen = false;
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io(&self.path, &e))?;
            if n == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                return Err(damaged("the last line is incomplete".into()));
            }
            let body = &line[..line.len() - 1];
            let at = seq + 1;
            let Some((s, p)) = link(body) else {
                return Err(damaged(format!("entry {at} has no chain link")));
            };
            if s != at {
                return Err(damaged(format!(
                    "entry {at} records seq {s}: an entry was deleted, inserted or moved"
                )));
            }
            if p != prev {
                return Err(damaged(format!(
                    "entry {at} does not link to the hash of entry {seq}: entry {seq} was edited or replaced"
                )));
            }
            let hash = line_hash(body);
            if let Some(h) = &head {
                if h.seq == at {
                    head_seen = true;
                    if h.start != offset || h.end != offset + n as u64 || h.hash != hash {
                        return Err(damaged(format!(
                            "entry {} is not where the head says or has another hash: the log was edited",
                            h.seq
                        )));
                    }
                }
            }
            seq = at;
            prev = json!(hash);
            offset += n as u64;
        }
        if let Some(h) = &head {
            if !head_seen {
                return Err(damaged(format!(
                    "the log is shorter than its head records (entry {} ends at byte {}, the file has {len} bytes): it was truncated",
                    h.seq, h.end
                )));
            }
        }
        Ok((seq, prev, offset))
    }

    fn read_head(&self) -> Result<Option<Head>> {
        let bytes = match std::fs::read(&self.head) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&self.head, &e)),
        };
        let head: Head = canonical::parse_strict(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
            .map_err(|e| {
                Error::Invalid(format!(
                    "{}: not an audit head file: {e}",
                    self.head.display()
                ))
            })?;
        if head.format != HEAD_FORMAT {
            return Err(Error::Invalid(format!(
                "{}: format: expected {HEAD_FORMAT:?}, found {:?}",
                self.head.display(),
                head.format
            )));
        }
        Ok(Some(head))
    }

    fn write_head(&self, head: &Head) -> Result<()> {
        let mut text = serde_json::to_string(head).expect("JSON value");
        text.push('\n');
        crate::fs::write_atomic(
            &self.head,
            text.as_bytes(),
            crate::fs::Mode::Preserve,
            crate::fs::Existing::Replace,
        )
        .map_err(|e| Error::io(&self.head, &e))
    }

    /// Every entry, in file order; a line that is not a JSON object is an error.
    pub fn read(&self) -> Result<Vec<Entry>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.path, &e)),
        };
        let mut out = Vec::new();
        for (i, line) in lines(&bytes).into_iter().enumerate() {
            let event = canonical::parse_strict(line)
                .map_err(|e| Error::Invalid(format!("{}:{}: {e}", self.path.display(), i + 1)))?;
            let seq = link(line).map_or(0, |(s, _)| s);
            out.push(Entry {
                seq,
                hash: line_hash(line),
                event,
            });
        }
        Ok(out)
    }

    /// Check the whole chain, each event's schema, and the head.
    pub fn verify(&self) -> Result<Report> {
        let mut r = Report::default();
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&self.path, &e)),
        };
        if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
            r.problems.push("the last line is incomplete (no final newline): an append was cut short or the file was truncated".into());
        }
        let mut prev = Value::Null;
        let mut hashes = Vec::new();
        for (i, line) in lines(&bytes).into_iter().enumerate() {
            let n = i as u64 + 1;
            match canonical::parse_strict(line) {
                Err(e) => r.problems.push(format!("line {n}: not JSON: {e}")),
                Ok(event) => {
                    // A sealed entry (personal vaults) is checked when it is decrypted.
                    let schema = if sealed(&event) {
                        Vec::new()
                    } else {
                        crate::schema::check(crate::schema::Kind::AuditEvent, &event)
                    };
                    for v in schema {
                        r.problems.push(format!(
                            "line {n}: not a valid audit event: {}: {}",
                            if v.field.is_empty() {
                                "(root)"
                            } else {
                                &v.field
                            },
                            v.message
                        ));
                    }
                    match link(line) {
                        None => r
                            .problems
                            .push(format!("line {n}: no extensions.{EXTENSION} chain link")),
                        Some((seq, p)) => {
                            if seq != n {
                                r.problems.push(format!("line {n}: seq is {seq}, expected {n}: an entry was deleted, inserted or moved before it"));
                            }
                            if p != prev {
                                r.problems.push(format!("line {n}: prev is {p}, expected {prev} (the hash of line {}): the previous entry was edited, deleted or moved", n - 1));
                            }
                        }
                    }
                }
            }
            prev = json!(line_hash(line));
            hashes.push(line_hash(line));
            r.entries = n;
        }
        match self.read_head() {
            Err(e) => r.problems.push(e.to_string()),
            Ok(None) if r.entries > 0 => r.problems.push(format!(
                "the head file {} is missing: truncation of the log's tail cannot be ruled out",
                self.head.display()
            )),
            Ok(None) => {}
            Ok(Some(h)) => {
                if h.seq > r.entries {
                    r.problems.push(format!(
                        "the head records {} entries but the log has {}: the log was truncated",
                        h.seq, r.entries
                    ));
                } else if h.seq == 0 || hashes[h.seq as usize - 1] != h.hash {
                    r.problems.push(format!(
                        "entry {} does not have the hash the head records ({}): it was edited or replaced",
                        h.seq, h.hash
                    ));
                } else if h.seq < r.entries {
                    r.notes.push(format!(
                        "{} entr{} after the head (an interrupted append, or written by another tool); the next append re-anchors the head",
                        r.entries - h.seq,
                        if r.entries - h.seq == 1 { "y" } else { "ies" }
                    ));
                }
            }
        }
        Ok(r)
    }

    /// Re-anchor the head at the log's last entry after the chain verified
    /// (used when a head was lost; truncation before now goes unnoticed).
    pub fn rehead(&self) -> Result<u64> {
        let bytes = std::fs::read(&self.path).map_err(|e| Error::io(&self.path, &e))?;
        let ls = lines(&bytes);
        let Some(last) = ls.last() else {
            return Ok(0);
        };
        let end = bytes.len() as u64;
        let start = end - last.len() as u64 - 1;
        self.write_head(&Head {
            format: HEAD_FORMAT.into(),
            seq: ls.len() as u64,
            hash: line_hash(last),
            start,
            end,
        })?;
        Ok(ls.len() as u64)
    }
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

mod events;
pub mod render;
#[cfg(test)]
mod tests;

pub use events::{bundle_event, conflict_events, objects_event, Actor};
