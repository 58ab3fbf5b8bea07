//! The vault's audit trail: every grant, read, write, denial, expiry and revocation,
//! with consumer, scope and time — never a value — in the hash-chained log of
//! [`crate::audit`], at `.ctx/personal/audit.jsonl`.
//!
//! It lives inside the encrypted part: each event is an OpenContext audit event,
//! sealed with age to the vault's derived `audit` key, and the log line carries only
//! the ciphertext and the chain link:
//!
//! ```json
//! {"extensions":{"ctx.personal":{"sealed":"<base64 age>"},"ctx.audit":{"seq":7,"prev":"sha256:…"}}}
//! ```
//!
//! Sealing needs only the public key, so events are appended while the vault is
//! locked too (a wrong password); reading them needs the unlocked vault (or the
//! exported `audit` identity and the `age` CLI). The chain and head are checked
//! without any key (`ctx audit verify` on the file), so a cut or edited line shows.
//!
//! Anyone can seal to the public key and recompute a keyless chain, so while the
//! vault is unlocked each line also carries `mac`: a tag under the vault's MAC key
//! over its sequence number, its link to the line before and its ciphertext
//! ([`super::integrity`]); and the vault's index pins the last entry after every
//! append. At unlock [`check`] reports an entry whose tag fails, an untagged entry
//! after the pinned one that is not a failed unlock (the only event written while
//! locked), and a log cut below (or rewritten at) the pinned entry.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::audit::{Appender, Log};
use crate::error::{Error, Result};
use crate::private::config::Recipient;
use crate::private::Keyring;

use super::integrity::{AuditHead, MacKey};
use super::ledger::{self, Shared};

mod check;
#[cfg(test)]
mod tests;

pub use check::check;
use check::{last_link, line_tag, lines, link_text, Tagged};

pub const FILE: &str = "audit.jsonl";

/// Seed 004's audit actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Unlock,
    Lock,
    Grant,
    Read,
    Write,
    Delete,
    Deny,
    Expire,
    Revoke,
    Register,
    Deregister,
    Approve,
    Sensitivity,
    Export,
    Import,
    /// A file of the vault refused at unlock (planted, changed, put back, gone).
    Integrity,
    /// A vault from before authentication reviewed and authenticated.
    Upgrade,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Unlock => "UNLOCK",
            Action::Lock => "LOCK",
            Action::Grant => "GRANT",
            Action::Read => "READ",
            Action::Write => "WRITE",
            Action::Delete => "DELETE",
            Action::Deny => "DENY",
            Action::Expire => "EXPIRE",
            Action::Revoke => "REVOKE",
            Action::Register => "REGISTER",
            Action::Deregister => "DEREGISTER",
            Action::Approve => "APPROVE",
            Action::Sensitivity => "SENSITIVITY",
            Action::Export => "EXPORT",
            Action::Import => "IMPORT",
            Action::Integrity => "INTEGRITY",
            Action::Upgrade => "UPGRADE",
        }
    }

    /// The OpenContext event name (the audit schema's closed list).
    fn event(self) -> &'static str {
        match self {
            Action::Read | Action::Export => "context.read",
            Action::Write | Action::Delete | Action::Sensitivity | Action::Import => {
                "context.write"
            }
            Action::Deny | Action::Integrity => "context.denied",
            _ => "decision.record",
        }
    }
}

/// One thing that happened. `consumer` is `user` for the vault's own session.
#[derive(Debug, Clone)]
pub struct Entry {
    pub action: Action,
    pub consumer: String,
    pub fields: Vec<String>,
    pub scope: Vec<String>,
    pub allowed: bool,
    /// Ids, codes and counts only: never a value.
    pub detail: Option<String>,
    /// The value a write or delete replaced: its version, writer, time and tier,
    /// and the value itself sealed to the field's category (`sealed`, armored age).
    pub previous: Option<Value>,
}

impl Entry {
    pub fn new(action: Action, consumer: &str) -> Entry {
        Entry {
            action,
            consumer: consumer.to_string(),
            fields: Vec::new(),
            scope: Vec::new(),
            allowed: true,
            detail: None,
            previous: None,
        }
    }

    pub fn previous(mut self, p: Option<Value>) -> Entry {
        self.previous = p;
        self
    }

    pub fn fields<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Entry {
        self.fields = ids.into_iter().map(Into::into).collect();
        self
    }

    pub fn scope(mut self, scope: &[String]) -> Entry {
        self.scope = scope.to_vec();
        self
    }

    pub fn denied(mut self) -> Entry {
        self.allowed = false;
        self
    }

    pub fn detail(mut self, d: impl Into<String>) -> Entry {
        self.detail = Some(d.into());
        self
    }

    /// The OpenContext audit event for this entry.
    pub fn event(&self, at: &str, namespace: &str) -> Value {
        let mut fields = self.fields.clone();
        fields.sort();
        fields.dedup();
        let mut e = Map::new();
        e.insert("opencontext".into(), json!(crate::SPEC_VERSION));
        e.insert("event".into(), json!(self.action.event()));
        e.insert("at".into(), json!(at));
        e.insert(
            "actor".into(),
            if self.consumer == "user" {
                json!({"type": "human", "id": "user"})
            } else {
                json!({"type": "agent", "id": self.consumer})
            },
        );
        e.insert("objects".into(), json!(fields));
        e.insert(
            "outcome".into(),
            json!(if self.allowed { "allowed" } else { "denied" }),
        );
        if let Some(d) = &self.detail {
            e.insert("reason".into(), json!(d));
        }
        e.insert("namespace".into(), json!(namespace));
        let mut p = Map::new();
        p.insert("action".into(), json!(self.action.as_str()));
        if !self.scope.is_empty() {
            p.insert("scope".into(), json!(self.scope));
        }
        if let Some(prev) = &self.previous {
            p.insert("previous".into(), prev.clone());
        }
        let mut ext = Map::new();
        ext.insert(super::EXTENSION.into(), Value::Object(p));
        e.insert("extensions".into(), Value::Object(ext));
        Value::Object(e)
    }
}

pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The open log: locked for this process (one server per vault), its chain checked once.
pub struct SealedLog {
    appender: Appender,
    recipient: Recipient,
    namespace: String,
    file: PathBuf,
    /// The last entry's sequence number and hash: what the next line links to.
    last: (u64, Value),
    /// While unlocked: the index that tags lines and pins the last one.
    ledger: Option<Shared>,
}

impl SealedLog {
    /// Lock the log and verify its chain (a damaged log is never extended).
    pub fn open(file: &Path, recipient: &str, namespace: &str) -> Result<SealedLog> {
        let (recipient, _) =
            Recipient::parse(recipient).map_err(|e| Error::Invalid(e.to_string()))?;
        let appender = Log::new(file.to_path_buf()).begin()?;
        let last = last_link(file)?;
        Ok(SealedLog {
            appender,
            recipient,
            namespace: namespace.to_string(),
            file: file.to_path_buf(),
            last,
            ledger: None,
        })
    }

    /// Tag lines with (and pin them in) this index from now on; `None` at lock.
    pub fn attach(&mut self, ledger: Option<Shared>) {
        self.ledger = ledger;
    }

    /// The entry the index would pin now.
    pub fn head(&self) -> Option<AuditHead> {
        match &self.last {
            (0, _) => None,
            (seq, Value::String(hash)) => Some(AuditHead {
                seq: *seq,
                hash: hash.clone(),
            }),
            _ => None,
        }
    }

    /// Seal and append one entry (written and synced before this returns); while
    /// unlocked it is tagged and the index pins it.
    pub fn append(&mut self, entry: &Entry, at: &str) -> Result<u64> {
        let event = entry.event(at, &self.namespace);
        let plain = zeroize::Zeroizing::new(serde_json::to_vec(&event).expect("JSON"));
        let sealed = seal(&plain, &self.recipient)?;
        let (seq, prev) = (self.last.0 + 1, link_text(&self.last.1));
        let mut inner = json!({ "sealed": sealed });
        let guard = self.ledger.as_ref().map(ledger::lock);
        if let Some(l) = &guard {
            inner["mac"] = json!(line_tag(l.key(), seq, &prev, &sealed));
        }
        let line = json!({"extensions": {(super::EXTENSION): inner}});
        let written = self.appender.append(line)?;
        if written.seq != seq {
            return Err(Error::Invalid(format!(
                "{}: entry {} was appended where {seq} was expected",
                self.file.display(),
                written.seq
            )));
        }
        self.last = (written.seq, json!(written.hash));
        if let Some(mut l) = guard {
            let head = self.head();
            l.commit(|ix, _| ix.audit = head)?;
        }
        Ok(written.seq)
    }
}

fn seal(plain: &[u8], r: &Recipient) -> Result<String> {
    use std::io::Write;
    let enc = age::Encryptor::with_recipients(std::iter::once(r.as_dyn()))
        .map_err(|e| Error::Invalid(format!("cannot seal an audit event: {e}")))?;
    let mut out = Vec::with_capacity(plain.len() + 256);
    let mut w = enc
        .wrap_output(&mut out)
        .map_err(|e| Error::Invalid(format!("cannot seal an audit event: {e}")))?;
    w.write_all(plain)
        .and_then(|()| w.finish().map(|_| ()))
        .map_err(|e| Error::Invalid(format!("cannot seal an audit event: {e}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(out))
}

/// Why one line of the sealed log does not open (shown in its place by [`tail`]).
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("not a sealed entry")]
    NotSealed,
    #[error("not base64")]
    NotBase64,
    #[error(transparent)]
    Identity(#[from] crate::private::IdentityError),
    #[error(transparent)]
    Decrypt(#[from] age::DecryptError),
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

fn unseal(b64: &str, ring: &Keyring) -> std::result::Result<Value, EntryError> {
    use std::io::Read;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| EntryError::NotBase64)?;
    let keys = ring.keys()?;
    let d = age::Decryptor::new(&bytes[..])?;
    let mut r = d.decrypt(keys.iter().map(|k| k.identity() as &dyn age::Identity))?;
    let mut plain = zeroize::Zeroizing::new(Vec::new());
    r.read_to_end(&mut plain)?;
    Ok(serde_json::from_slice(&plain)?)
}

/// The last `limit` entries, oldest first, decrypted. A line that does not open is
/// reported as such (with its sequence number), never skipped silently. With the
/// vault's MAC key, each entry says whether its tag holds
/// (`extensions.ctx.personal.authenticated`).
pub fn tail(file: &Path, limit: usize, ring: &Keyring, key: Option<&MacKey>) -> Result<Vec<Value>> {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(file, &e)),
    };
    let all = lines(&bytes, key);
    let start = all.len().saturating_sub(limit);
    let mut out = Vec::new();
    for l in all.iter().skip(start) {
        let opened = l
            .sealed
            .as_deref()
            .ok_or(EntryError::NotSealed)
            .and_then(|s| unseal(s, ring));
        out.push(match opened {
            Ok(mut e) => {
                e["seq"] = json!(l.seq);
                if key.is_some() {
                    e["extensions"][super::EXTENSION]["authenticated"] =
                        json!(l.tagged == Tagged::Valid);
                }
                e
            }
            Err(why) => json!({"seq": l.seq, "error": format!("entry cannot be opened: {why}")}),
        });
    }
    Ok(out)
}

/// How many entries the log holds, read without any key (0 when there is no log).
pub fn count(file: &Path) -> Result<usize> {
    match std::fs::read(file) {
        Ok(b) => Ok(lines(&b, None).len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Error::io(file, &e)),
    }
}

/// Seed 004's one-line form: `AT  ACTION  consumer  fields|scope  detail`.
pub fn line(e: &Value) -> String {
    let p = &e["extensions"][super::EXTENSION];
    let what = match e["objects"].as_array().filter(|a| !a.is_empty()) {
        Some(a) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        None => p["scope"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
    };
    format!(
        "{}  {:<11} {:<20} {}{}{}",
        e["at"].as_str().unwrap_or("?"),
        p["action"].as_str().unwrap_or("?"),
        e["actor"]["id"].as_str().unwrap_or("?"),
        what,
        e["reason"]
            .as_str()
            .map(|r| format!("  ({r})"))
            .unwrap_or_default(),
        if p["authenticated"] == false {
            "  [not authenticated]"
        } else {
            ""
        }
    ) + &match p["previous"]["version"].as_u64() {
        Some(v) => format!(
            "  [replaced version {v} by {}, kept sealed]",
            p["previous"]["written_by"].as_str().unwrap_or("?")
        ),
        None => String::new(),
    }
}
