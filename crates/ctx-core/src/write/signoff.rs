//! Sign-offs: the committed record that an owner approved an object's `canonical`
//! or `approved` authority. `ctx add --promote`, `ctx supersede` and `ctx promote`
//! write it; the `unapproved` lint ([`crate::lint::promotion`]) reads it, so an
//! authority typed into a file by hand, or content changed after its sign-off,
//! stops passing `validate --strict` in CI. Checking needs no key: a record is an
//! id, a version, an authority, a digest, who and when.
//!
//! Records live in `.ctx/signoffs/<id>.json`, one file per id, committed with the
//! objects. One file per id keeps two branches that promote different objects from
//! conflicting, and a separate folder is what a code-owners rule or branch
//! protection can guard: the record is a governance marker reviewed like code, not
//! a cryptographic proof (anyone who can push can also write a record, and git
//! history shows who did).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fs::{self, Existing, Mode};
use crate::manifest::Manifest;
use crate::model::Authority;
use crate::object::ContextObject;

/// The folder, relative to the manifest folder.
pub const DIR: &str = ".ctx/signoffs";

/// Records are small; anything larger is not one.
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// One sign-off: this version of the id, at this authority, with these bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignOff {
    /// The object's declared `version` (absent when it declares none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    pub authority: String,
    /// What the sign-off covers ([`digest`]).
    pub digest: String,
    /// `human:alice`, `agent:release-bot`, `role:owner` (the audit log's actor).
    pub by: String,
    /// RFC 3339.
    pub at: String,
    /// The command that recorded it: `add`, `supersede` or `promote`.
    pub via: String,
}

/// The file for one id.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub id: String,
    pub signoffs: Vec<SignOff>,
}

/// `.ctx/signoffs/<id>.json` (ids are lowercase dotted names: a safe file name).
pub fn rel_path(id: &str) -> String {
    format!("{DIR}/{id}.json")
}

/// Does this authority need a sign-off? The two `ctx add` refuses without `--promote`.
pub fn needed(a: Authority) -> bool {
    matches!(a, Authority::Canonical | Authority::Approved)
}

/// What a sign-off covers: the object's file byte for byte, so any edit after the
/// sign-off (content, fields, even formatting) needs a new one. Two exceptions, where
/// the file holds more than the object or changes without its meaning changing:
/// an encrypted member (its ciphertext changes on every rekey, and CI has no key to
/// look inside) and an object declared in the manifest; for those it is the JCS
/// digest of the fields the author declared in the clear.
pub fn digest(m: &Manifest, o: &ContextObject, file: &[u8]) -> String {
    if o.meta.sealed.is_none() && o.origin.file != m.file {
        return crate::canonical::digest(file);
    }
    let declared: Map<String, Value> = serde_json::from_str::<Map<String, Value>>(&o.doc)
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !o.supplied(k))
        .collect();
    let declared = Value::Object(declared);
    crate::canonical::digest_value(&declared)
        .unwrap_or_else(|_| crate::canonical::digest(o.doc.as_bytes()))
}

/// The object's file, as a sign-off digests it.
pub fn read_object_file(m: &Manifest, o: &ContextObject) -> std::result::Result<Vec<u8>, String> {
    let path = m.root.join(&o.origin.file);
    fs::read_regular(&path, crate::load::DEFAULT_MAX_FILE_SIZE * 4)
        .map_err(|e| format!("{}: {e}", o.origin.file))
}

/// The ledger of `id`, with its bytes: Ok(None) when there is none, Err when it
/// cannot be read or is not a ledger of `id` (which counts as no sign-off).
pub fn read(root: &Path, id: &str) -> std::result::Result<Option<(Ledger, Vec<u8>)>, String> {
    let rel = rel_path(id);
    let bytes = match fs::read_regular(&root.join(&rel), MAX_RECORD_BYTES) {
        Ok(b) => b,
        Err(fs::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{rel}: {e}")),
    };
    let ledger: Ledger = serde_json::from_slice(&bytes).map_err(|e| {
        format!("{rel}: not a sign-off record ({e}); restore it from git or run `ctx promote {id}` again after deleting it")
    })?;
    if ledger.id != id {
        return Err(format!(
            "{rel}: records `{}`, not `{id}`; a record must sit in the file named after its id",
            ledger.id
        ));
    }
    Ok(Some((ledger, bytes)))
}

/// How an object stands against its sign-offs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// A sign-off for this version, this authority and these bytes.
    Signed(SignOff),
    /// No sign-off for this version.
    Missing,
    /// Signed off at another authority (then the bytes changed too).
    OtherAuthority(SignOff),
    /// Signed off at this authority, and changed since.
    Changed(SignOff),
    /// The record or the object's file could not be read: no sign-off.
    Unreadable(String),
}

/// Where `o` stands (reads its ledger and its file).
pub fn standing(m: &Manifest, o: &ContextObject) -> Standing {
    let ledger = match read(&m.root, &o.id) {
        Ok(Some((l, _))) => l,
        Ok(None) => return Standing::Missing,
        Err(e) => return Standing::Unreadable(e),
    };
    let Some(s) = ledger.signoffs.iter().find(|s| s.version == o.version) else {
        return Standing::Missing;
    };
    if s.authority != o.meta.authority.as_str() {
        return Standing::OtherAuthority(s.clone());
    }
    match read_object_file(m, o) {
        Ok(bytes) if digest(m, o, &bytes) == s.digest => Standing::Signed(s.clone()),
        Ok(_) => Standing::Changed(s.clone()),
        Err(e) => Standing::Unreadable(e),
    }
}

/// A sign-off about to be written: the ledger file's new bytes and the bytes it
/// must still hold when it is replaced.
#[derive(Debug, Clone)]
pub struct Pending {
    pub rel: String,
    pub bytes: Vec<u8>,
    replaces: Option<Vec<u8>>,
    pub record: SignOff,
}

/// Who signs: the audit log's actor for these flags (`human:$USER` without any).
pub fn signer(agent: Option<&str>, roles: &[String]) -> String {
    let a = crate::audit::Actor::from_flags(agent, roles);
    format!("{}:{}", a.kind, a.id)
}

/// Plan a sign-off of `o` (whose file holds `file`): the ledger of its id with
/// this version's entry added or replaced.
pub fn plan(
    m: &Manifest,
    o: &ContextObject,
    file: &[u8],
    by: String,
    at: String,
    via: &str,
) -> Result<Pending> {
    let (mut ledger, replaces) = match read(&m.root, &o.id).map_err(Error::Invalid)? {
        Some((l, bytes)) => (l, Some(bytes)),
        None => (
            Ledger {
                id: o.id.clone(),
                signoffs: Vec::new(),
            },
            None,
        ),
    };
    let record = SignOff {
        version: o.version,
        authority: o.meta.authority.as_str().to_string(),
        digest: digest(m, o, file),
        by,
        at,
        via: via.to_string(),
    };
    ledger.signoffs.retain(|s| s.version != o.version);
    ledger.signoffs.push(record.clone());
    ledger.signoffs.sort_by_key(|s| s.version);
    let mut bytes = serde_json::to_vec_pretty(&ledger)
        .map_err(|e| Error::Invalid(format!("sign-off record: {e}")))?;
    bytes.push(b'\n');
    Ok(Pending {
        rel: rel_path(&o.id),
        bytes,
        replaces,
        record,
    })
}

/// Write a planned sign-off atomically. The caller holds the repository lock; a
/// ledger that changed since it was read is not replaced.
pub fn write(root: &Path, p: &Pending) -> Result<()> {
    let path = root.join(&p.rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    match &p.replaces {
        Some(old) => fs::replace_if_unchanged(&path, old, &p.bytes, Mode::Preserve).map_err(
            |e| match e {
                fs::ReplaceError::Changed => Error::Invalid(format!(
                    "{} changed while ctx was writing; the sign-off was not recorded",
                    p.rel
                )),
                fs::ReplaceError::Io(e) => Error::io(&path, &e),
            },
        ),
        None => fs::write_atomic(&path, &p.bytes, Mode::RepositoryDefault, Existing::Refuse)
            .map_err(|e| Error::io(&path, &e)),
    }
}
