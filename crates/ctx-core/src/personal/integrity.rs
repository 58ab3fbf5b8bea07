//! Authenticated storage: every file of a vault is authenticated under a key only
//! the password and the secret key give, so whoever can write the vault's folder
//! (but knows neither) can delete or break files, never plant, swap or replay one.
//!
//! ```text
//! context key ─ HKDF-SHA256 (salt = vault id, info = "ctx.personal.v1 purpose integrity") ─▶ MAC key
//! tag = HMAC-SHA256(MAC key, "ctx.personal.v1 KIND" ‖ len ‖ NAME ‖ len ‖ BYTES)
//! ```
//!
//! - A **field** carries `generation` and `mac` inside its ciphertext
//!   (`extensions.ctx.personal`); the tag covers the file's path and the RFC 8785
//!   form of the decrypted document without `mac`. The clear header must equal the
//!   decrypted copy (`private::open_object`), so it is covered too.
//! - The **token store** carries the same two members, over its path.
//! - Each **audit line** written while the vault is unlocked carries a tag over its
//!   sequence number, its link to the line before and its ciphertext ([`super::audit`]).
//! - The **index** (`.ctx/personal/index.json`, this module) is the root: the
//!   vault's generation (one more on every change), each field file's generation,
//!   the token store's, and the audit log's last entry; tagged itself.
//!
//! At unlock a file whose tag fails was planted or changed; one whose generation is
//! older than the index's (or that the index does not list) was put back; one the
//! index lists but that is gone was deleted. A file *newer* than the index is the
//! one write a crash interrupted before the index was saved: it is authentic, so it
//! is kept. A whole folder put back as it was is caught by this device's record of
//! the highest generation it saw ([`Seen`], beside the secret key).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};

pub const INDEX_FILE: &str = "index.json";
const INDEX_FORMAT: &str = "ctx.personal-index.v1";
/// The members that carry a document's generation and tag.
pub const GENERATION: &str = "generation";
pub const MAC: &str = "mac";

/// The key every tag of one vault is made with (wiped on drop).
#[derive(Clone)]
pub struct MacKey(Zeroizing<[u8; 32]>);

/// An `io::Write` into an HMAC: documents are canonicalised straight into the tag,
/// so no second copy of a plaintext is built.
struct Feed<'a>(&'a mut Hmac<Sha256>);

impl std::io::Write for Feed<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl MacKey {
    pub fn new(key: Zeroizing<[u8; 32]>) -> MacKey {
        MacKey(key)
    }

    fn mac(&self, kind: &str, name: &str) -> Hmac<Sha256> {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0[..]).expect("any key length");
        for part in [
            format!("ctx.personal.v1 {kind}").as_bytes(),
            name.as_bytes(),
        ] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        m
    }

    /// The tag of `doc` (without its `mac` member) as the file `name` of `kind`.
    fn json_mac(&self, kind: &str, name: &str, doc: &Value) -> Hmac<Sha256> {
        let mut m = self.mac(kind, name);
        crate::jcs::write(doc, &mut Feed(&mut m)).expect("an HMAC takes every byte");
        m
    }

    /// The tag, hex, of a document that is the file `name` of `kind`.
    pub fn tag_json(&self, kind: &str, name: &str, doc: &Value) -> String {
        hex::encode(self.json_mac(kind, name, doc).finalize().into_bytes())
    }

    /// Check a tag in constant time.
    pub fn check_json(&self, kind: &str, name: &str, doc: &Value, tag: &str) -> bool {
        let Ok(want) = hex::decode(tag) else {
            return false;
        };
        self.json_mac(kind, name, doc).verify_slice(&want).is_ok()
    }

    /// The tag, hex, of raw parts (audit lines: sequence, link, ciphertext).
    pub fn tag_parts(&self, kind: &str, parts: &[&[u8]]) -> String {
        hex::encode(self.parts_mac(kind, parts).finalize().into_bytes())
    }

    pub fn check_parts(&self, kind: &str, parts: &[&[u8]], tag: &str) -> bool {
        let Ok(want) = hex::decode(tag) else {
            return false;
        };
        self.parts_mac(kind, parts).verify_slice(&want).is_ok()
    }

    fn parts_mac(&self, kind: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut m = self.mac(kind, "");
        for p in parts {
            m.update(&(p.len() as u64).to_be_bytes());
            m.update(p);
        }
        m
    }
}

/// Tag `doc` in place: `generation` and then `mac` go into `at` (the object that
/// carries them), the tag covering everything else.
pub fn seal(key: &MacKey, kind: &str, name: &str, doc: &mut Value, at: &[&str], generation: u64) {
    let h = holder(doc, at);
    h.remove(MAC);
    h.insert(GENERATION.into(), Value::from(generation));
    let tag = key.tag_json(kind, name, doc);
    holder(doc, at).insert(MAC.into(), Value::String(tag));
}

/// The object at `at` inside `doc` (made when missing).
fn holder<'a>(doc: &'a mut Value, at: &[&str]) -> &'a mut serde_json::Map<String, Value> {
    let mut cur = doc;
    for k in at {
        cur = cur
            .as_object_mut()
            .expect("an object")
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    cur.as_object_mut().expect("an object")
}

/// Why a document's tag does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsealed {
    /// No tag at all: written without the vault's key (or before authentication).
    Missing,
    /// A tag that this key did not make over these bytes at this path.
    Wrong,
}

/// Check the tag of `doc` as the file `name` of `kind`; its generation when it holds.
pub fn open(
    key: &MacKey,
    kind: &str,
    name: &str,
    doc: &Value,
    at: &[&str],
) -> std::result::Result<u64, Unsealed> {
    let mut cur = doc;
    for k in at {
        cur = cur.get(k).ok_or(Unsealed::Missing)?;
    }
    let tag = cur
        .get(MAC)
        .and_then(Value::as_str)
        .ok_or(Unsealed::Missing)?;
    let generation = cur
        .get(GENERATION)
        .and_then(Value::as_u64)
        .ok_or(Unsealed::Wrong)?;
    let mut bare = doc.clone();
    let mut h = &mut bare;
    for k in at {
        h = h.get_mut(k).expect("present");
    }
    h.as_object_mut().expect("an object").remove(MAC);
    if key.check_json(kind, name, &bare, tag) {
        Ok(generation)
    } else {
        Err(Unsealed::Wrong)
    }
}

/// The last entry of the audit log, as the index pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

/// The vault's authenticated root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub format: String,
    pub vault: String,
    pub generation: u64,
    /// Field files (relative to the manifest folder) and the generation of each.
    pub files: BTreeMap<String, u64>,
    /// The token store's generation, once it was written.
    pub state: Option<u64>,
    pub audit: Option<AuditHead>,
}

/// How a file's generation compares with what the index lists for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Current,
    /// Newer than the index: the write a crash cut off before the index was saved.
    Ahead,
    /// An older copy: the index lists generation `listed`.
    Stale {
        found: u64,
        listed: u64,
    },
    /// Authentic, but the index no longer lists it (deleted or replaced since).
    Unlisted {
        found: u64,
    },
}

impl Index {
    pub fn new(vault: &str) -> Index {
        Index {
            format: INDEX_FORMAT.into(),
            vault: vault.into(),
            ..Index::default()
        }
    }

    pub fn judge(&self, listed: Option<u64>, found: u64) -> Verdict {
        match listed {
            Some(l) if l == found => Verdict::Current,
            _ if found > self.generation => Verdict::Ahead,
            Some(listed) => Verdict::Stale { found, listed },
            None => Verdict::Unlisted { found },
        }
    }
}

/// The index, read and checked (`Ok(None)` when there is none).
pub fn load_index(file: &Path, key: &MacKey, vault: &str) -> Result<Option<Index>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(file, &e)),
    };
    let bad = |why: &str| Error::InvalidHint {
        message: format!(
            "{}: {why}, so no file of this vault can be trusted",
            file.display()
        ),
        help: "restore the vault's folder from a backup you trust (the index and the files \
               together), or import an export into a new vault"
            .into(),
    };
    let doc: Value = serde_json::from_str(&text).map_err(|_| bad("not an index"))?;
    let generation = open(key, "index", INDEX_FILE, &doc, &[])
        .map_err(|_| bad("its authentication tag does not match this vault's key"))?;
    let mut doc = doc;
    doc.as_object_mut().map(|o| o.remove(MAC));
    let index: Index = serde_json::from_value(doc).map_err(|_| bad("not an index"))?;
    if index.format != INDEX_FORMAT || index.vault != vault || index.generation != generation {
        return Err(bad("it belongs to another vault or format"));
    }
    Ok(Some(index))
}

/// Tag and write the index atomically.
pub fn save_index(file: &Path, key: &MacKey, index: &Index) -> Result<()> {
    let mut doc = serde_json::to_value(index).expect("JSON");
    seal(key, "index", INDEX_FILE, &mut doc, &[], index.generation);
    let mut text = serde_json::to_string_pretty(&doc).expect("JSON");
    text.push('\n');
    crate::fs::write_atomic(file, text.as_bytes(), Mode::Preserve, Existing::Replace)
        .map_err(|e| Error::io(file, &e))
}

/// Where this device keeps the highest generation it saw of a vault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// `<config>/personal/<vault>.seen`, beside the secret key.
    Config,
    At(PathBuf),
    /// Not kept (tests): a whole-folder rollback goes unnoticed.
    Off,
}

impl Seen {
    pub fn path(&self, vault: &str) -> Option<PathBuf> {
        match self {
            Seen::Config => {
                super::keys::config_dir().map(|c| c.join("personal").join(format!("{vault}.seen")))
            }
            Seen::At(p) => Some(p.clone()),
            Seen::Off => None,
        }
    }
}

/// The generation recorded in a `.seen` file (`None` when there is none).
pub fn read_seen(file: &Path) -> Result<Option<u64>> {
    match std::fs::read_to_string(file) {
        Ok(t) => t
            .lines()
            .find_map(|l| l.strip_prefix("generation:"))
            .and_then(|g| g.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| Error::Invalid(format!("{}: no `generation:` line", file.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(file, &e)),
    }
}

pub fn write_seen(file: &Path, vault: &str, generation: u64) -> Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    let text = format!(
        "# The highest generation of personal vault {vault} this device has seen: an older\n\
         # vault folder is refused. Delete this file to accept one you restored on purpose.\n\
         vault: {vault}\ngeneration: {generation}\n"
    );
    crate::fs::write_atomic(file, text.as_bytes(), Mode::Private, Existing::Replace)
        .map_err(|e| Error::io(file, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(b: u8) -> MacKey {
        MacKey::new(Zeroizing::new([b; 32]))
    }

    #[test]
    fn tags_bind_key_kind_path_and_every_byte() {
        let k = key(1);
        let mut doc =
            json!({"id": "identity.dob", "content": "1990", "extensions": {"ctx.personal": {}}});
        let at = ["extensions", "ctx.personal"];
        seal(&k, "field", "personal/identity/dob.json", &mut doc, &at, 7);
        assert_eq!(
            open(&k, "field", "personal/identity/dob.json", &doc, &at),
            Ok(7)
        );
        // Another path (a swap), kind, key or value: refused.
        assert_eq!(
            open(&k, "field", "personal/identity/name.json", &doc, &at),
            Err(Unsealed::Wrong)
        );
        assert_eq!(
            open(&k, "state", "personal/identity/dob.json", &doc, &at),
            Err(Unsealed::Wrong)
        );
        assert_eq!(
            open(&key(2), "field", "personal/identity/dob.json", &doc, &at),
            Err(Unsealed::Wrong)
        );
        let mut edited = doc.clone();
        edited["content"] = json!("2000");
        assert_eq!(
            open(&k, "field", "personal/identity/dob.json", &edited, &at),
            Err(Unsealed::Wrong)
        );
        let mut bumped = doc.clone();
        bumped["extensions"]["ctx.personal"]["generation"] = json!(9);
        assert_eq!(
            open(&k, "field", "personal/identity/dob.json", &bumped, &at),
            Err(Unsealed::Wrong)
        );
        let plain = json!({"id": "identity.dob", "content": "1990"});
        assert_eq!(open(&k, "field", "x", &plain, &at), Err(Unsealed::Missing));
        // Key order does not matter: the tag is over the canonical form.
        let reordered: Value = serde_json::from_str(
            &serde_json::to_string(&json!({
                "extensions": doc["extensions"], "content": "1990", "id": "identity.dob"
            }))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            open(&k, "field", "personal/identity/dob.json", &reordered, &at),
            Ok(7)
        );
    }

    #[test]
    fn generations_tell_current_crashed_replayed_and_unlisted_files_apart() {
        let mut ix = Index::new("v");
        ix.generation = 10;
        assert_eq!(ix.judge(Some(4), 4), Verdict::Current);
        assert_eq!(ix.judge(Some(4), 11), Verdict::Ahead);
        assert_eq!(ix.judge(None, 11), Verdict::Ahead);
        assert_eq!(
            ix.judge(Some(4), 3),
            Verdict::Stale {
                found: 3,
                listed: 4
            }
        );
        assert_eq!(
            ix.judge(Some(4), 9),
            Verdict::Stale {
                found: 9,
                listed: 4
            }
        );
        assert_eq!(ix.judge(None, 9), Verdict::Unlisted { found: 9 });
    }

    #[test]
    fn the_index_round_trips_and_refuses_edits_and_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(INDEX_FILE);
        let k = key(3);
        assert_eq!(load_index(&file, &k, "v").unwrap(), None);
        let mut ix = Index::new("v");
        ix.generation = 5;
        ix.files.insert("personal/identity/dob.json".into(), 5);
        ix.state = Some(2);
        ix.audit = Some(AuditHead {
            seq: 3,
            hash: "sha256:00".into(),
        });
        save_index(&file, &k, &ix).unwrap();
        assert_eq!(load_index(&file, &k, "v").unwrap(), Some(ix.clone()));
        assert!(load_index(&file, &key(4), "v").is_err());
        assert!(load_index(&file, &k, "w").is_err());
        let text = std::fs::read_to_string(&file)
            .unwrap()
            .replace("\"state\": 2", "\"state\": 1");
        std::fs::write(&file, text).unwrap();
        let e = load_index(&file, &k, "v").unwrap_err();
        assert!(e.to_string().contains("authentication tag"), "{e}");
        assert!(e.help().unwrap().contains("backup"));
    }

    #[test]
    fn seen_files_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p/v.seen");
        assert_eq!(read_seen(&f).unwrap(), None);
        write_seen(&f, "v", 12).unwrap();
        assert_eq!(read_seen(&f).unwrap(), Some(12));
        assert_eq!(Seen::Off.path("v"), None);
    }
}
