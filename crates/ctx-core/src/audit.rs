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
//! Appenders take an exclusive lock on the log file, check the tail against
//! the head, write the whole line with one `write` on an `O_APPEND` handle,
//! fsync, then replace the head: concurrent processes never interleave
//! partial lines, and a damaged log is never extended (fail closed).
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
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
    /// A `sink` ctx cannot write to is an error, so a configured audit trail
    /// is never silently dropped.
    pub fn from_manifest(m: &Manifest) -> Result<Option<Config>> {
        let Some(block) = m.raw.get("audit").and_then(Value::as_object) else {
            return Ok(None);
        };
        let flag = |k: &str| block.get(k).and_then(Value::as_bool).unwrap_or(false);
        let c = Config {
            context_reads: flag("context_reads"),
            context_writes: flag("context_writes"),
            decisions: flag("decisions"),
            conflicts: flag("conflicts"),
            log: Log::new(sink_path(m, block.get("sink").and_then(Value::as_str))?),
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

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn head_path(&self) -> &Path {
        &self.head
    }

    /// Append one event (its `extensions.ctx.audit` is set here). Fails,
    /// writing nothing, when the log does not match its head.
    pub fn append(&self, event: Value) -> Result<Entry> {
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
        let (seq, prev, len) = self.tail(&mut file)?;
        let mut event = event;
        let obj = event
            .as_object_mut()
            .ok_or_else(|| Error::Invalid("an audit event must be a JSON object".into()))?;
        let ext = obj
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(ext) = ext.as_object_mut() {
            ext.insert(EXTENSION.into(), json!({ "seq": seq + 1, "prev": prev }));
        }
        let line = serde_json::to_string(&event).expect("JSON value");
        let hash = line_hash(line.as_bytes());
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        file.write_all(&bytes).map_err(|e| io(&self.path, e))?;
        file.sync_data().map_err(|e| io(&self.path, e))?;
        let head = Head {
            format: HEAD_FORMAT.into(),
            seq: seq + 1,
            hash: hash.clone(),
            start: len,
            end: len + bytes.len() as u64,
        };
        self.write_head(&head)?;
        Ok(Entry {
            seq: seq + 1,
            hash,
            event,
        })
    }

    /// The last chain position `(seq, hash)` of a log that matches its
    /// head, and the file length. Entries after the head (an append that
    /// crashed before updating the head) are accepted if they chain on.
    fn tail(&self, file: &mut File) -> Result<(u64, Value, u64)> {
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
        let (mut seq, mut prev, from) = match self.read_head()? {
            None if len == 0 => (0, Value::Null, 0),
            None => {
                return Err(damaged(format!(
                    "the head file {} is missing, so truncation could not be detected",
                    self.head.display()
                )))
            }
            Some(h) => {
                if len < h.end || h.end < h.start + 1 {
                    return Err(damaged(format!(
                        "the log is shorter than its head records (entry {} ends at byte {}, the file has {len} bytes): it was truncated",
                        h.seq, h.end
                    )));
                }
                let last =
                    read_range(file, h.start, h.end).map_err(|e| Error::io(&self.path, &e))?;
                let ok = last.last() == Some(&b'\n')
                    && line_hash(&last[..last.len() - 1]) == h.hash
                    && (h.start == 0
                        || read_range(file, h.start - 1, h.start)
                            .map(|b| b == b"\n")
                            .unwrap_or(false));
                if !ok {
                    return Err(damaged(format!(
                        "entry {} is not where the head says or has another hash: the log was edited",
                        h.seq
                    )));
                }
                (h.seq, json!(h.hash), h.end)
            }
        };
        if from < len {
            let rest = read_range(file, from, len).map_err(|e| Error::io(&self.path, &e))?;
            if rest.last() != Some(&b'\n') {
                return Err(damaged("the last line is incomplete".into()));
            }
            for line in rest[..rest.len() - 1].split(|b| *b == b'\n') {
                let (s, p) = link(line).ok_or_else(|| {
                    damaged(format!(
                        "entry {} after the head has no chain link",
                        seq + 1
                    ))
                })?;
                if s != seq + 1 || p != prev {
                    return Err(damaged(format!(
                        "entry {} after the head does not chain on",
                        seq + 1
                    )));
                }
                seq = s;
                prev = json!(line_hash(line));
            }
        }
        Ok((seq, prev, len))
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
                    for v in crate::schema::check(crate::schema::Kind::AuditEvent, &event) {
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

/// Complete lines (without their newline); a final partial line is included.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() && bytes.len() <= 1 {
        return Vec::new();
    }
    body.split(|b| *b == b'\n').collect()
}

/// `(seq, prev)` of a line's chain link.
fn link(line: &[u8]) -> Option<(u64, Value)> {
    let v: Value = canonical::parse_strict(line).ok()?;
    let l = v.get("extensions")?.get(EXTENSION)?;
    let seq = l.get("seq")?.as_u64()?;
    let prev = l.get("prev")?.clone();
    (prev.is_null() || prev.is_string()).then_some((seq, prev))
}

fn read_range(file: &mut File, start: u64, end: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; (end - start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// The audit event for a compiled bundle (`context.resolve` or
/// `context.bundle`), from the bundle alone: actor = the consumer, the ids
/// of the included objects, the bundle id, digest and object count.
pub fn bundle_event(event: &str, bundle: &Value, at: &str) -> Value {
    let consumer = &bundle["consumer"];
    let mut actor = Map::new();
    actor.insert(
        "type".into(),
        consumer.get("type").cloned().unwrap_or(json!("role")),
    );
    let id = consumer
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    actor.insert("id".into(), json!(id));
    if let Some(roles) = consumer
        .get("roles")
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    {
        actor.insert("roles".into(), roles.clone());
    }
    let mut ids: Vec<&str> = bundle["objects"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o.get("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    ids.dedup();
    let included = ids.len();
    let excluded = bundle["excluded"].as_array().map_or(0, Vec::len);
    let mut e = Map::new();
    e.insert("opencontext".into(), json!(crate::SPEC_VERSION));
    e.insert("event".into(), json!(event));
    e.insert("at".into(), json!(at));
    e.insert("actor".into(), Value::Object(actor));
    if let Some(t) = bundle.get("task").and_then(Value::as_str) {
        e.insert("task".into(), json!(t));
    }
    e.insert("objects".into(), json!(ids));
    e.insert(
        "bundle".into(),
        json!({
            "bundle_id": bundle["bundle_id"],
            "digest": bundle["digest"],
            "object_count": included,
        }),
    );
    let (outcome, reason) = match (included, excluded) {
        (_, 0) => ("allowed", None),
        (0, n) => (
            "denied",
            Some(format!("all {n} candidate objects were excluded")),
        ),
        (_, n) => ("partial", Some(format!("{n} objects excluded"))),
    };
    e.insert("outcome".into(), json!(outcome));
    if let Some(r) = reason {
        e.insert("reason".into(), json!(r));
    }
    if let Some(ns) = bundle
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|ns| valid_namespace(ns))
    {
        e.insert("namespace".into(), json!(ns));
    }
    Value::Object(e)
}

/// `context.conflict` events for the conflict warnings of a bundle.
pub fn conflict_events(bundle: &Value, at: &str) -> Vec<Value> {
    let base = bundle_event("context.conflict", bundle, at);
    bundle["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| {
            w.get("code")
                .and_then(Value::as_str)
                .is_some_and(|c| c.starts_with("conflict-"))
        })
        .map(|w| {
            let mut e = base.clone();
            let o = e.as_object_mut().expect("object");
            o.remove("bundle");
            o.remove("outcome");
            o.insert(
                "objects".into(),
                json!(w
                    .get("id")
                    .and_then(Value::as_str)
                    .into_iter()
                    .collect::<Vec<_>>()),
            );
            o.insert("reason".into(), w["message"].clone());
            e
        })
        .collect()
}

/// The audit-event schema's namespace pattern `^[a-z0-9][a-z0-9-]*$`.
fn valid_namespace(ns: &str) -> bool {
    ns.as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests;
