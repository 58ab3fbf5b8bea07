//! `ctx audit verify`: the whole chain, every event's schema, and the head,
//! told apart into damage (problems), what the next append repairs by itself
//! (notes), and how to repair either.

use serde_json::{json, Value};

use super::{line_hash, lines, link, recovery, sealed, Entry, Log, EXTENSION};
use crate::canonical;
use crate::error::{Error, Result};

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub entries: u64,
    /// Tampering or damage: the log cannot be trusted.
    pub problems: Vec<String>,
    /// Worth knowing, not a breach (e.g. entries appended after the head).
    pub notes: Vec<String>,
    /// What a killed command or a full disk left (a torn final line, a
    /// half-done write): not a breach, repaired by the next write or `--repair`.
    pub pending: Vec<String>,
}

impl Log {
    /// [`Log::verify`]; with `rehead`, a lost head file (the only problem
    /// found) is re-anchored at the last entry, and a note says that
    /// truncation before now can no longer be detected; with `repair`, what
    /// an interrupted append left is repaired now, as the next append would.
    pub fn verify_and_repair(&self, rehead: bool, repair: bool) -> Result<Report> {
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
        let something = !report.notes.is_empty() || !report.pending.is_empty();
        if repair && report.problems.is_empty() && something && self.path.exists() {
            drop(self.begin()?);
            let after = self.verify()?;
            report.pending.clear();
            report.notes.push(format!(
                "repaired: {} entries, chain and head now agree",
                after.entries
            ));
            report.entries = after.entries;
        }
        Ok(report)
    }

    /// [`Log::verify_and_repair`] without repair.
    pub fn verify_and_rehead(&self, rehead: bool) -> Result<Report> {
        self.verify_and_repair(rehead, false)
    }

    /// Every entry, in file order; a line that is not a JSON object is an
    /// error. A torn final line (an interrupted append) is not an entry.
    pub fn read(&self) -> Result<Vec<Entry>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.path, &e)),
        };
        let whole = whole_lines(&bytes);
        let mut out = Vec::new();
        for (i, line) in lines(whole).into_iter().enumerate() {
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
        let whole = whole_lines(&bytes);
        let torn = bytes.len() - whole.len();
        let mut prev = Value::Null;
        let mut hashes = Vec::new();
        for (i, line) in lines(whole).into_iter().enumerate() {
            let n = i as u64 + 1;
            match canonical::parse_strict(line) {
                Err(e) => r.problems.push(format!("line {n}: not JSON: {e}")),
                Ok(event) => {
                    // A sealed entry (personal vaults) is checked when it is
                    // decrypted; a recovery entry is the chain link alone.
                    let schema = if sealed(&event) || recovery(&event).is_some() {
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
                    if let Some(what) = recovery(&event) {
                        r.notes
                            .push(format!("line {n}: {}", describe_recovery(what)));
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
        let head = match self.read_head() {
            Err(e) => {
                r.problems.push(e.to_string());
                None
            }
            Ok(h) => h,
        };
        match &head {
            None if r.entries > 0 && r.problems.is_empty() => r.problems.push(format!(
                "the head file {} is missing: truncation of the log's tail cannot be ruled out; if you know it was only lost, run `ctx audit verify --rehead`",
                self.head.display()
            )),
            None if r.entries > 0 => r.problems.push(format!(
                "the head file {} is missing: truncation of the log's tail cannot be ruled out",
                self.head.display()
            )),
            None => {}
            Some(h) if h.seq == 0 && h.end != 0 => r
                .problems
                .push("the head records entry 0 ending after byte 0: it was edited".into()),
            Some(h) if h.seq == 0 => {}
            Some(h) if h.seq > r.entries => r.problems.push(format!(
                "the head records {} entries but the log has {}: the log was truncated",
                h.seq, r.entries
            )),
            Some(h) if hashes[h.seq as usize - 1] != h.hash => r.problems.push(format!(
                "entry {} does not have the hash the head records ({}): it was edited or replaced",
                h.seq, h.hash
            )),
            Some(_) => {}
        }
        let anchored = head.as_ref().map_or(0, |h| h.seq);
        if head.is_some() && anchored < r.entries {
            r.notes.push(format!(
                "{} entr{} after the head (an interrupted append, or written by another tool); the next append re-anchors the head",
                r.entries - anchored,
                if r.entries - anchored == 1 { "y" } else { "ies" }
            ));
        }
        if torn > 0 {
            let end = head.as_ref().map_or(0, |h| h.end);
            if head.is_some() && whole.len() as u64 >= end {
                r.pending.push(format!(
                    "a torn final line ({torn} bytes, no newline) after the last whole entry: an append was interrupted (a kill or a full disk); the next append cuts it off and records that, or run `ctx audit verify --repair`"
                ));
            } else {
                r.problems.push("the last line is incomplete (no final newline) and lies within what the head records: the file was truncated".into());
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
        self.write_head(&super::Head {
            format: super::HEAD_FORMAT.into(),
            seq: ls.len() as u64,
            hash: line_hash(last),
            start,
            end,
        })?;
        Ok(ls.len() as u64)
    }
}

/// `bytes` up to and including the last newline.
fn whole_lines(bytes: &[u8]) -> &[u8] {
    match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[],
    }
}

/// A recovery entry's note, for people.
pub fn describe_recovery(what: &Value) -> String {
    let n = what["removed_bytes"].as_u64().unwrap_or(0);
    format!(
        "recovery at {}: {} ({n} bytes, {} removed)",
        what["at"].as_str().unwrap_or("?"),
        what["reason"].as_str().unwrap_or("repaired"),
        what["removed_digest"].as_str().unwrap_or("?")
    )
}
