//! Sign-offs: the committed record that an owner approved an object's `canonical`
//! or `approved` authority. `ctx add --promote`, `ctx supersede` and `ctx promote`
//! write it; the `unapproved` lint ([`crate::lint::promotion`]) reads it, so an
//! authority typed into a file by hand, or content changed after its sign-off,
//! stops passing `validate --strict` in CI. Checking needs no key: a record is an
//! id, a version, an authority, a digest, who and when.
//!
//! Records live in `.ctx/signoffs/<id>.json`, one file per id, committed with the
//! objects. A repository *keeps* sign-offs once that folder exists (`ctx init`
//! creates it; so do the first `--promote` and `ctx promote`); only then does the
//! lint run, so a repository that predates sign-offs is not flooded with warnings
//! on upgrade — `ctx promote --all` signs off what it holds, and starts keeping them. One file per id keeps two branches that promote different objects from
//! conflicting, and a separate folder is what a code-owners rule or branch
//! protection can guard: the record is a governance marker reviewed like code, not
//! a cryptographic proof (anyone who can push can also write a record, and git
//! history shows who did).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fs::{self, Mode};
use crate::manifest::Manifest;
use crate::model::Authority;
use crate::object::ContextObject;
use crate::write::{SignoffError, WriteError};

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
    /// The digest of the object's governance header ([`header_digest`]): what an
    /// encrypted member can still be checked against without a key, so encrypting a
    /// signed-off object (`ctx private encrypt`) keeps its sign-off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
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

/// Does the repository keep sign-offs (is there a `.ctx/signoffs/` folder)?
pub fn kept(root: &Path) -> bool {
    root.join(DIR).is_dir()
}

/// Does this authority need a sign-off? Those that claim truth, the two `ctx add`
/// refuses without `--promote`.
pub fn needed(a: Authority) -> bool {
    a.claims_truth()
}

/// Does a new version `new` of an object (replacing `prev`, if any) get its writer's
/// sign-off? When it needs one ([`needed`]) and the writer promotes it, or when it
/// keeps the authority of a predecessor whose sign-off still holds: keeping an
/// authority is not a promotion. A predecessor edited by hand since its sign-off
/// passes nothing on. `ctx supersede` and a committed proposal share this rule.
pub fn due(m: &Manifest, new: &ContextObject, prev: Option<&ContextObject>, promote: bool) -> bool {
    needed(new.meta.authority)
        && (promote
            || prev.is_some_and(|p| {
                p.meta.authority == new.meta.authority
                    && matches!(standing(m, p), Standing::Signed(_))
            }))
}

/// What a sign-off covers: the object's file byte for byte, so any edit after the
/// sign-off (content, fields, even formatting) needs a new one. Two exceptions, where
/// the file holds more than the object or changes without its meaning changing:
/// an encrypted member (its ciphertext changes on every rekey, and CI has no key to
/// look inside), checked by its [`header_digest`], and an object declared in the
/// manifest, by the JCS digest of the fields the manifest declares for it.
pub fn digest(m: &Manifest, o: &ContextObject, file: &[u8]) -> String {
    if o.meta.sealed.is_some() {
        return header_digest(o);
    }
    if o.origin.file == m.file {
        return fields_digest(declared(o));
    }
    crate::canonical::digest(file)
}

/// The fields the author declared (loader defaults left out), without the encryption
/// envelope (`extensions.ctx.private`: its recipients change on rekey).
fn declared(o: &ContextObject) -> Map<String, Value> {
    let mut fields: Map<String, Value> = serde_json::from_str::<Map<String, Value>>(o.document())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !o.supplied(k))
        .collect();
    crate::private::format::strip_marker(&mut fields);
    fields
}

fn fields_digest(fields: Map<String, Value>) -> String {
    let v = Value::Object(fields);
    crate::canonical::digest_value(&v)
        .unwrap_or_else(|_| crate::canonical::digest(v.to_string().as_bytes()))
}

/// The JCS digest of the governance fields every encrypted file keeps in clear
/// (`private::format::CLEAR_FIELDS` and `DEFAULT_CLEAR`), taken from the declared
/// fields: the same for the plaintext and the sealed form of one object.
pub fn header_digest(o: &ContextObject) -> String {
    fields_digest(crate::private::format::clear_header(&declared(o), &[]))
}

/// The object's file, as a sign-off digests it.
pub fn read_object_file(
    m: &Manifest,
    o: &ContextObject,
) -> std::result::Result<Vec<u8>, SignoffError> {
    let path = m.root.join(&o.origin.file);
    fs::read_regular(&path, crate::load::DEFAULT_MAX_FILE_SIZE * 4).map_err(|e| {
        SignoffError::Unreadable {
            rel: o.origin.file.clone(),
            why: e.to_string(),
        }
    })
}

/// The ledger of `id`, with its bytes: Ok(None) when there is none, Err when it
/// cannot be read or is not a ledger of `id` (which counts as no sign-off).
pub fn read(root: &Path, id: &str) -> std::result::Result<Option<(Ledger, Vec<u8>)>, SignoffError> {
    let rel = rel_path(id);
    let bytes = match fs::read_regular(&root.join(&rel), MAX_RECORD_BYTES) {
        Ok(b) => b,
        Err(fs::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(SignoffError::Unreadable {
                rel,
                why: e.to_string(),
            })
        }
    };
    let ledger: Ledger = match serde_json::from_slice(&bytes) {
        Ok(l) => l,
        Err(e) => {
            return Err(SignoffError::NotARecord {
                rel,
                id: id.to_string(),
                why: e.to_string(),
            })
        }
    };
    if ledger.id != id {
        return Err(SignoffError::WrongId {
            rel,
            recorded: ledger.id,
            id: id.to_string(),
        });
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
    Unreadable(SignoffError),
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
    if o.meta.sealed.is_some() {
        let want = s.header.as_deref().unwrap_or(&s.digest);
        return if header_digest(o) == want {
            Standing::Signed(s.clone())
        } else {
            Standing::Changed(s.clone())
        };
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

impl Pending {
    /// The id whose ledger this is (from its file name).
    pub fn rel_id(&self) -> &str {
        self.rel
            .strip_prefix(DIR)
            .and_then(|r| r.strip_prefix('/'))
            .and_then(|r| r.strip_suffix(".json"))
            .unwrap_or(&self.rel)
    }
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
    let (ledger, replaces) = match read(&m.root, &o.id).map_err(WriteError::from)? {
        Some((l, bytes)) => (l, Some(bytes)),
        None => (
            Ledger {
                id: o.id.clone(),
                signoffs: Vec::new(),
            },
            None,
        ),
    };
    let record = record(m, o, file, by, at, via);
    pending(rel_path(&o.id), ledger, replaces, record)
}

/// [`plan`] on top of an earlier plan for the same id (another version of it).
pub fn plan_onto(
    earlier: &Pending,
    m: &Manifest,
    o: &ContextObject,
    file: &[u8],
    by: &str,
    at: &str,
    via: &str,
) -> Result<Pending> {
    let ledger: Ledger = serde_json::from_slice(&earlier.bytes)
        .map_err(|e| Error::Invalid(format!("sign-off record: {e}")))?;
    let record = record(m, o, file, by.to_string(), at.to_string(), via);
    pending(
        earlier.rel.clone(),
        ledger,
        earlier.replaces.clone(),
        record,
    )
}

/// `ledger` with `record` in place of any entry for its version, as a pending write.
fn pending(
    rel: String,
    mut ledger: Ledger,
    replaces: Option<Vec<u8>>,
    record: SignOff,
) -> Result<Pending> {
    ledger.signoffs.retain(|s| s.version != record.version);
    ledger.signoffs.push(record.clone());
    ledger.signoffs.sort_by_key(|s| s.version);
    Ok(Pending {
        rel,
        bytes: ledger_bytes(&ledger)?,
        replaces,
        record,
    })
}

fn record(
    m: &Manifest,
    o: &ContextObject,
    file: &[u8],
    by: String,
    at: String,
    via: &str,
) -> SignOff {
    SignOff {
        version: o.version,
        authority: o.meta.authority.as_str().to_string(),
        digest: digest(m, o, file),
        header: (o.origin.file != m.file).then(|| header_digest(o)),
        by,
        at,
        via: via.to_string(),
    }
}

fn ledger_bytes(ledger: &Ledger) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(ledger)
        .map_err(|e| Error::Invalid(format!("sign-off record: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Write a planned sign-off atomically. The caller holds the repository lock; a
/// ledger that changed since it was read is not replaced.
pub fn write(root: &Path, p: &Pending) -> Result<()> {
    write_all(root, std::slice::from_ref(p))
}

/// Write several planned sign-offs as one transaction (`ctx promote --all`).
pub fn write_all(root: &Path, ps: &[Pending]) -> Result<()> {
    let mut txn = fs::Txn::new(root);
    for p in ps {
        stage(&mut txn, root, p)?;
    }
    txn.commit(())
        .map_err(|e| crate::evidence::record::txn_error(root, e))
}

/// Stage a planned sign-off into `txn`, so it is written in the same
/// transaction as the object it signs off: a kill never leaves the object
/// without it. At commit, a ledger that changed since it was read is refused.
pub fn stage(txn: &mut fs::Txn, root: &Path, p: &Pending) -> Result<()> {
    let path = root.join(&p.rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    match &p.replaces {
        Some(old) => txn.replace(&path, old, &p.bytes, Mode::Preserve),
        None => txn.create(&path, &p.bytes, Mode::RepositoryDefault),
    }
    .map_err(|e| Error::Invalid(format!("{}: the sign-off could not be staged: {e}", p.rel)))
}
