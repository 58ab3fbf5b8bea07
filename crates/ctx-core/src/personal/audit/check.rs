//! Checking the sealed log at unlock, and what [`super::tail`] says of each line:
//! a line's tag (over its sequence number, its link and its ciphertext), the entry
//! the vault's index pins, and the one kind of line a locked vault writes untagged.

use std::path::Path;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::personal::integrity::{AuditHead, MacKey};
use crate::personal::ledger::Problem;
use crate::private::Keyring;

use super::unseal;

/// `null` or `sha256:…`: the previous line's link as the tag covers it.
pub(super) fn link_text(prev: &Value) -> String {
    match prev {
        Value::String(s) => s.clone(),
        _ => "null".into(),
    }
}

pub(super) fn line_tag(key: &MacKey, seq: u64, prev: &str, sealed: &str) -> String {
    key.tag_parts(
        "audit",
        &[
            seq.to_string().as_bytes(),
            prev.as_bytes(),
            sealed.as_bytes(),
        ],
    )
}

/// The sequence number and hash of the log's last line (`(0, null)` when empty).
pub(super) fn last_link(file: &Path) -> Result<(u64, Value)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, Value::Null)),
        Err(e) => return Err(Error::io(file, &e)),
    };
    let len = f.metadata().map_err(|e| Error::io(file, &e))?.len();
    // The last line is short (one sealed event); read more only when it is not.
    let mut window = 64 * 1024u64;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start))
            .map_err(|e| Error::io(file, &e))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(|e| Error::io(file, &e))?;
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if body.is_empty() {
            return Ok((0, Value::Null));
        }
        match body.iter().rposition(|b| *b == b'\n') {
            Some(i) => return last_of(file, &body[i + 1..]),
            None if start == 0 => return last_of(file, body),
            None => window *= 4,
        }
    }
}

fn last_of(file: &Path, line: &[u8]) -> Result<(u64, Value)> {
    let v: Value = serde_json::from_slice(line)
        .map_err(|_| Error::Invalid(format!("{}: the last line is not JSON", file.display())))?;
    let seq = v["extensions"]["ctx.audit"]["seq"]
        .as_u64()
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{}: the last line has no chain link",
                file.display()
            ))
        })?;
    Ok((seq, json!(crate::canonical::digest(line))))
}

/// What a log line's authentication says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tagged {
    Valid,
    Untagged,
    Wrong,
}

/// One line of the log, as [`check`] and [`tail`] read it.
pub(super) struct Line {
    pub(super) seq: u64,
    hash: String,
    pub(super) sealed: Option<String>,
    pub(super) tagged: Tagged,
}

pub(super) fn lines(bytes: &[u8], key: Option<&MacKey>) -> Vec<Line> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(n, raw)| {
            let v: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
            let link = &v["extensions"]["ctx.audit"];
            let seq = link["seq"].as_u64().unwrap_or(n as u64 + 1);
            let inner = &v["extensions"][crate::personal::EXTENSION];
            let sealed = inner["sealed"].as_str().map(str::to_string);
            let tagged = match (inner["mac"].as_str(), key, &sealed) {
                (None, _, _) => Tagged::Untagged,
                (Some(t), Some(k), Some(s))
                    if k.check_parts(
                        "audit",
                        &[
                            seq.to_string().as_bytes(),
                            link_text(&link["prev"]).as_bytes(),
                            s.as_bytes(),
                        ],
                        t,
                    ) =>
                {
                    Tagged::Valid
                }
                _ => Tagged::Wrong,
            };
            Line {
                seq,
                hash: crate::canonical::digest(raw),
                sealed,
                tagged,
            }
        })
        .collect()
}

/// Check the log at unlock against the entry the index pins (`head`): what failed.
pub fn check(file: &Path, ring: &Keyring, key: &MacKey, head: Option<&AuditHead>) -> Vec<Problem> {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return vec![problem(format!("the log cannot be read ({e})"))];
        }
    };
    let all = lines(&bytes, Some(key));
    let mut out = Vec::new();
    if let Some(h) = head {
        match all.iter().find(|l| l.seq == h.seq) {
            None => out.push(problem(format!(
                "the log ends at entry {} but the vault's index pins entry {}: entries were cut off",
                all.last().map_or(0, |l| l.seq),
                h.seq
            ))),
            Some(l) if l.hash != h.hash => out.push(problem(format!(
                "entry {} is not the one the vault's index pins: the log was rewritten",
                h.seq
            ))),
            Some(_) => {}
        }
    }
    let pinned = head.map_or(0, |h| h.seq);
    for l in &all {
        match l.tagged {
            Tagged::Wrong => out.push(problem(format!(
                "entry {} fails authentication: it was written or changed without the vault's key",
                l.seq
            ))),
            Tagged::Untagged if l.seq > pinned && !failed_unlock(l, ring) => {
                out.push(problem(format!(
                    "entry {} was not written by the vault: it has no authentication tag and is not a failed unlock",
                    l.seq
                )))
            }
            _ => {}
        }
    }
    out
}

/// An untagged entry is legitimate only as what a locked vault writes: a refused unlock.
fn failed_unlock(l: &Line, ring: &Keyring) -> bool {
    l.sealed
        .as_deref()
        .and_then(|s| unseal(s, ring).ok())
        .is_some_and(|e| {
            e["extensions"][crate::personal::EXTENSION]["action"] == "UNLOCK"
                && e["outcome"] == "denied"
        })
}

fn problem(error: String) -> Problem {
    Problem {
        file: ".ctx/personal/audit.jsonl".into(),
        field: None,
        error,
        fix: "keep a copy of the log for investigation; entries that fail are shown as not authenticated, and the vault pins the log again from this unlock on".into(),
    }
}
