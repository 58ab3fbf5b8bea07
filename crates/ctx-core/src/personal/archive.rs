//! Export and import (seed 004 §7): every field with its metadata and history, as
//! one JSON document sealed with age — to the vault's derived `archive` key, plus any
//! recipients the user names (another vault, a recovery key). Import merges (a field
//! is taken when it is new or its `updated` time is later: last write wins, as in
//! seed 004's sync) or replaces (the vault becomes exactly the archive).

use serde_json::{json, Map, Value};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::private::config::Recipient;
use crate::private::identity::Key;
use crate::private::Keyring;

use super::field::FieldDoc;
use super::keys::{KdfParams, Purpose, SecretKey, VaultKeys};
use super::vault::Vault;

pub const FORMAT: &str = "ctx.personal-archive.v1";

/// An export: the armored age file and how many fields it holds.
pub struct Exported {
    pub archive: String,
    pub fields: usize,
    pub recipients: Vec<String>,
    /// What derives the archive's key, written in clear beside it.
    pub source: Source,
}

/// The exporting vault's id and key derivation parameters, and the public key the
/// archive is sealed to: with the password and the secret key of that vault, any
/// vault (on any machine) derives the archive's key. Nothing here is secret — the
/// same values are in the exporting vault's manifest.
#[derive(Debug, Clone)]
pub struct Source {
    pub vault: String,
    pub kdf: KdfParams,
    pub recipient: String,
}

impl Source {
    /// The members the export document carries beside `archive`.
    pub fn to_json(&self) -> Value {
        json!({
            "vault": self.vault,
            "kdf": {
                "algorithm": "argon2id",
                "memory_kib": self.kdf.memory_kib,
                "iterations": self.kdf.iterations,
                "parallelism": self.kdf.parallelism,
                "salt": hex::encode(&self.kdf.salt),
            },
            "archive_recipient": self.recipient,
        })
    }

    /// Read them back from an export document; weak parameters fail closed.
    pub fn from_json(doc: &Value) -> Result<Source> {
        let bad = |what: &str| {
            Error::Usage(format!(
                "the export document's `{what}` is missing or invalid: give the whole document `GET /context/export` returned"
            ))
        };
        let vault = doc["vault"]
            .as_str()
            .filter(|v| v.len() == 32 && v.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| bad("vault"))?;
        let k = &doc["kdf"];
        if k["algorithm"] != "argon2id" {
            return Err(bad("kdf.algorithm"));
        }
        let num = |f: &str| {
            k[f].as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(&format!("kdf.{f}")))
        };
        let kdf = KdfParams {
            memory_kib: num("memory_kib")?,
            iterations: num("iterations")?,
            parallelism: num("parallelism")?,
            salt: k["salt"]
                .as_str()
                .and_then(|s| hex::decode(s).ok())
                .ok_or_else(|| bad("kdf.salt"))?,
        };
        kdf.check()
            .map_err(|e| Error::Usage(format!("the export document's `kdf`: {e}")))?;
        let recipient = doc["archive_recipient"]
            .as_str()
            .filter(|r| r.parse::<age::x25519::Recipient>().is_ok())
            .ok_or_else(|| bad("archive_recipient"))?;
        Ok(Source {
            vault: vault.to_string(),
            kdf,
            recipient: recipient.to_string(),
        })
    }

    /// The archive key, from the exporting vault's password and secret key (slow:
    /// Argon2id). A wrong password or secret key is refused by name.
    pub fn identity(&self, password: &[u8], secret: &SecretKey) -> Result<age::x25519::Identity> {
        let keys = VaultKeys::derive(password, secret, &self.kdf, &self.vault)?;
        if keys.recipient(Purpose::Archive) != self.recipient {
            return Err(Error::Usage(format!(
                "wrong password or secret key for vault {}, which made this archive",
                self.vault
            )));
        }
        Ok(keys.identity(Purpose::Archive))
    }
}

pub fn export(v: &Vault, extra: &[String], now: &str) -> Result<Exported> {
    let docs = v.documents()?;
    let fields: Vec<Value> = docs
        .iter()
        .map(|d| serde_json::from_str(&d.render()).expect("rendered JSON"))
        .collect();
    let plain = Zeroizing::new(
        serde_json::to_string(&json!({
            "format": FORMAT,
            "vault": v.config.vault,
            "namespace": v.manifest.id,
            "exported_at": now,
            "fields": fields,
        }))
        .expect("JSON"),
    );
    let mut recipients = vec![v.keys.recipient(Purpose::Archive)];
    recipients.extend(extra.iter().cloned());
    let mut parsed = Vec::new();
    for r in &recipients {
        let (rec, _) =
            Recipient::parse(r).map_err(|e| Error::Usage(format!("recipient `{r}`: {e}")))?;
        parsed.push(rec);
    }
    let archive = crate::private::crypt::encrypt(plain.as_bytes(), &parsed)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(Exported {
        archive,
        fields: docs.len(),
        recipients,
        source: Source {
            vault: v.config.vault.clone(),
            kdf: v.config.kdf.clone(),
            recipient: v.keys.recipient(Purpose::Archive),
        },
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportMode {
    Merge,
    Replace,
}

/// What an import changed.
#[derive(Debug, Default, Clone)]
pub struct Imported {
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub unchanged: Vec<String>,
    pub removed: Vec<String>,
}

/// An `identity` member: an age identity given as text.
pub fn parse_identity(text: &str) -> Result<age::x25519::Identity> {
    text.trim()
        .parse::<age::x25519::Identity>()
        .map_err(|_| Error::Usage("`identity` is not an age identity (AGE-SECRET-KEY-1…)".into()))
}

/// Open an archive (with the vault's archive key, or extra identities: a recovery
/// key, or the exporting vault's archive key from [`Source::identity`]) and apply
/// it. Everything is checked before anything is written.
pub fn import(
    v: &mut Vault,
    armor: &str,
    mode: ImportMode,
    extra: Vec<age::x25519::Identity>,
) -> Result<Imported> {
    let mut keys = vec![Key::x25519(v.keys.identity(Purpose::Archive))];
    let given = !extra.is_empty();
    keys.extend(extra.into_iter().map(Key::x25519));
    let ring = Keyring::from_keys(keys);
    let (plain, _) = crate::private::ops::decrypt("archive", armor, Some(&ring)).map_err(|e| {
        if given {
            Error::Invalid(format!("{e}"))
        } else {
            Error::Invalid(format!(
                "{e}. An archive from another vault opens with that vault's password and secret key: send the whole export document as `archive`, with `password` and `secret_key` (docs/personal.md, \"Back up and restore\")"
            ))
        }
    })?;
    let doc: Value = serde_json::from_str(&plain)
        .map_err(|e| Error::Invalid(format!("the archive is not JSON ({e})")))?;
    if doc["format"] != FORMAT {
        return Err(Error::Invalid(format!(
            "the archive's format is not {FORMAT}"
        )));
    }
    let mut incoming = Vec::new();
    for (n, f) in doc["fields"].as_array().into_iter().flatten().enumerate() {
        let map: &Map<String, Value> = f
            .as_object()
            .ok_or_else(|| Error::Invalid(format!("archive field {n}: not an object")))?;
        let d = FieldDoc::from_opened(map, map.get("content"))
            .map_err(|e| Error::Invalid(format!("archive field {n}: {e}")))?;
        incoming.push(d);
    }
    // A category of the user's own in the archive is added, as the user's write adds it.
    for d in &incoming {
        if !v.has_category(&d.id.category) {
            v.add_category(&d.id.category, super::Tier::Standard, &d.updated_at)?;
        }
    }
    let mut out = Imported::default();
    if mode == ImportMode::Replace {
        let keep: std::collections::HashSet<&str> =
            incoming.iter().map(|d| d.id.id.as_str()).collect();
        let gone: Vec<String> = v
            .fields
            .keys()
            .filter(|k| !keep.contains(k.as_str()))
            .cloned()
            .collect();
        for id in gone {
            v.delete(&id)?;
            out.removed.push(id);
        }
    }
    for d in incoming {
        let id = d.id.id.clone();
        match v.fields.get(&id) {
            None => {
                v.restore(d)?;
                out.added.push(id);
            }
            Some(cur) => {
                let same = cur.version == d.version
                    && cur.updated_at == d.updated_at
                    && cur.value.as_str() == d.value.as_str()
                    && cur.tier == d.tier;
                let newer = d.updated_at > cur.updated_at;
                if same || (mode == ImportMode::Merge && !newer) {
                    out.unchanged.push(id);
                } else {
                    v.restore(d)?;
                    out.updated.push(id);
                }
            }
        }
    }
    Ok(out)
}
