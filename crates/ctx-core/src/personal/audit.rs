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

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::audit::{Appender, Log};
use crate::error::{Error, Result};
use crate::private::config::Recipient;
use crate::private::Keyring;

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
        }
    }

    /// The OpenContext event name (the audit schema's closed list).
    fn event(self) -> &'static str {
        match self {
            Action::Read | Action::Export => "context.read",
            Action::Write | Action::Delete | Action::Sensitivity | Action::Import => {
                "context.write"
            }
            Action::Deny => "context.denied",
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
        }
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
}

impl SealedLog {
    /// Lock the log and verify its chain (a damaged log is never extended).
    pub fn open(file: &Path, recipient: &str, namespace: &str) -> Result<SealedLog> {
        let (recipient, _) =
            Recipient::parse(recipient).map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(SealedLog {
            appender: Log::new(file.to_path_buf()).begin()?,
            recipient,
            namespace: namespace.to_string(),
        })
    }

    /// Seal and append one entry (written and synced before this returns).
    pub fn append(&mut self, entry: &Entry, at: &str) -> Result<u64> {
        let event = entry.event(at, &self.namespace);
        let plain = zeroize::Zeroizing::new(serde_json::to_vec(&event).expect("JSON"));
        let sealed = seal(&plain, &self.recipient)?;
        let line = json!({"extensions": {(super::EXTENSION): {"sealed": sealed}}});
        Ok(self.appender.append(line)?.seq)
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
/// reported as such (with its sequence number), never skipped silently.
pub fn tail(file: &Path, limit: usize, ring: &Keyring) -> Result<Vec<Value>> {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(file, &e)),
    };
    let lines: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(limit);
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate().skip(start) {
        let v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
        let seq = v["extensions"]["ctx.audit"]["seq"]
            .as_u64()
            .unwrap_or(n as u64 + 1);
        let opened = v["extensions"][super::EXTENSION]["sealed"]
            .as_str()
            .ok_or(EntryError::NotSealed)
            .and_then(|s| unseal(s, ring));
        out.push(match opened {
            Ok(mut e) => {
                e["seq"] = json!(seq);
                e
            }
            Err(why) => json!({"seq": seq, "error": format!("entry cannot be opened: {why}")}),
        });
    }
    Ok(out)
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
        "{}  {:<11} {:<20} {}{}",
        e["at"].as_str().unwrap_or("?"),
        p["action"].as_str().unwrap_or("?"),
        e["actor"]["id"].as_str().unwrap_or("?"),
        what,
        e["reason"]
            .as_str()
            .map(|r| format!("  ({r})"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_entries_chain_and_open_only_with_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        let id = age::x25519::Identity::generate();
        let r = id.to_public().to_string();
        let mut log = SealedLog::open(&file, &r, "me").unwrap();
        log.append(
            &Entry::new(Action::Grant, "tax-agent").scope(&["identity.*".into()]),
            "2026-03-15T10:32:00Z",
        )
        .unwrap();
        log.append(
            &Entry::new(Action::Read, "tax-agent").fields(["identity.full_name"]),
            "2026-03-15T10:32:05Z",
        )
        .unwrap();
        drop(log);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("tax-agent") && !text.contains("identity"),
            "{text}"
        );
        let report = Log::new(file.clone()).verify().unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.entries, 2);
        let ring = Keyring::from_keys(vec![crate::private::identity::Key::x25519(id)]);
        let got = tail(&file, 1, &ring).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["objects"], json!(["identity.full_name"]));
        assert!(crate::schema::check(crate::schema::Kind::AuditEvent, &{
            let mut e = got[0].clone();
            e.as_object_mut().unwrap().remove("seq");
            e
        })
        .is_empty());
        assert!(line(&got[0]).contains("READ"));
        let other = Keyring::from_keys(vec![crate::private::identity::Key::x25519(
            age::x25519::Identity::generate(),
        )]);
        assert!(tail(&file, 5, &other).unwrap()[0]["error"].is_string());
        assert_eq!(unseal("%", &other).unwrap_err().to_string(), "not base64");
        assert_eq!(EntryError::NotSealed.to_string(), "not a sealed entry");
    }
}
