//! `extensions.ctx.personal` in the manifest: what makes a repository a vault.
//!
//! ```yaml
//! extensions:
//!   ctx.personal:
//!     format: 1
//!     vault: 6f1c…                 # random id: names the secret key file on each device
//!     root: ./personal              # fields live under ROOT/<category>/…
//!     kdf: { algorithm: argon2id, memory_kib: 65536, iterations: 3, parallelism: 1, salt: <hex> }
//!     recipients: { state: age1…, audit: age1…, archive: age1… }   # derived public keys
//!     consumer_role: agent          # the manifest role of a registered consumer
//!     owner_role: owner             # the role of the user's own session
//!     idle_timeout: 30m
//!     history: 10                   # previous versions kept inside each field's ciphertext
//!     categories:
//!       identity:
//!         sensitivity: standard
//!         fields: { dob: sensitive, ssn: critical }
//!         user_only_write: [ssn, tax_id]
//! ```
//!
//! Every category must also be a private collection (`extensions.ctx.private`) whose
//! recipients include the category's derived public key.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::manifest::Manifest;

use super::keys::KdfParams;
use super::{Tier, EXTENSION};

/// One category's defaults.
#[derive(Debug, Clone)]
pub struct Category {
    pub name: String,
    pub tier: Tier,
    /// Per-field tiers that differ from the category's (`dob: sensitive`).
    pub fields: BTreeMap<String, Tier>,
    pub user_only_write: Vec<String>,
}

impl Category {
    /// The tier a new field gets when the writer names none.
    pub fn default_tier(&self, field_name: &str) -> Tier {
        self.fields.get(field_name).copied().unwrap_or(self.tier)
    }

    pub fn user_only(&self, field_name: &str) -> bool {
        self.user_only_write.iter().any(|f| f == field_name)
    }
}

/// The parsed extension.
#[derive(Debug, Clone)]
pub struct PersonalConfig {
    pub vault: String,
    /// Folder holding the category folders, relative to the manifest (no `./`).
    pub root: String,
    pub kdf: KdfParams,
    /// Derived public keys of the vault's own stores.
    pub state_recipient: String,
    pub audit_recipient: String,
    pub archive_recipient: String,
    pub consumer_role: String,
    pub owner_role: String,
    pub idle_timeout: chrono::Duration,
    pub history: usize,
    pub categories: BTreeMap<String, Category>,
}

fn bad(m: &Manifest, field: &str, why: impl std::fmt::Display) -> Error {
    Error::InvalidHint {
        message: format!("{}: extensions.{EXTENSION}.{field}: {why}", m.file),
        help: "this block is written by `ctx init --template personal`; restore it from version control".into(),
    }
}

fn string<'a>(m: &Manifest, o: &'a Value, field: &str) -> Result<&'a str> {
    o.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(m, field, "expected a non-empty string"))
}

/// A valid category or field-name segment (seed 004's dotted names, OpenContext id rules).
pub fn valid_segment(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(x) if x.is_ascii_lowercase() || x.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '_' || x == '-')
        && s.len() <= 64
}

impl PersonalConfig {
    /// `Ok(None)` when the manifest is not a personal repository; a present but
    /// invalid block is an error (fail closed: never a vault with default settings).
    pub fn from_manifest(m: &Manifest) -> Result<Option<PersonalConfig>> {
        let Some(block) = m.extensions.get(EXTENSION) else {
            return Ok(None);
        };
        if !block.is_object() {
            return Err(bad(m, "", "expected a mapping"));
        }
        match block.get("format").and_then(Value::as_u64) {
            Some(1) => {}
            _ => return Err(bad(m, "format", "expected 1")),
        }
        let vault = string(m, block, "vault")?;
        if vault.len() != 32
            || !vault
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Err(bad(m, "vault", "expected 32 lowercase hexadecimal digits"));
        }
        let root = string(m, block, "root")?;
        let root = root
            .strip_prefix("./")
            .unwrap_or(root)
            .trim_end_matches('/');
        if !crate::fs::confine::is_plain(root) {
            return Err(bad(
                m,
                "root",
                "expected a relative folder inside the repository",
            ));
        }
        let kdf = block.get("kdf").ok_or_else(|| bad(m, "kdf", "missing"))?;
        if kdf.get("algorithm").and_then(Value::as_str) != Some("argon2id") {
            return Err(bad(m, "kdf.algorithm", "expected argon2id"));
        }
        let num = |f: &str| {
            kdf.get(f)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(m, &format!("kdf.{f}"), "expected a whole number"))
        };
        let salt = hex::decode(string(m, kdf, "salt")?)
            .map_err(|_| bad(m, "kdf.salt", "expected hexadecimal"))?;
        let kdf = KdfParams {
            memory_kib: num("memory_kib")?,
            iterations: num("iterations")?,
            parallelism: num("parallelism")?,
            salt,
        };
        kdf.check().map_err(|e| bad(m, "kdf", e))?;
        let recipients = block
            .get("recipients")
            .ok_or_else(|| bad(m, "recipients", "missing"))?;
        let recipient = |f: &str| -> Result<String> {
            let r = string(m, recipients, f)?;
            r.parse::<age::x25519::Recipient>()
                .map_err(|_| bad(m, &format!("recipients.{f}"), "expected an age public key"))?;
            Ok(r.to_string())
        };
        let role = |f: &str, default: &str| -> Result<String> {
            match block.get(f) {
                None => Ok(default.to_string()),
                Some(Value::String(s)) if m.roles.contains_key(s) => Ok(s.clone()),
                Some(other) => Err(bad(
                    m,
                    f,
                    format!("expected a role declared under roles:, found {other}"),
                )),
            }
        };
        let idle_timeout = match block.get("idle_timeout") {
            None => chrono::Duration::minutes(30),
            Some(v) => v
                .as_str()
                .and_then(crate::time::parse_duration)
                .filter(|d| *d > chrono::Duration::zero())
                .ok_or_else(|| bad(m, "idle_timeout", "expected a duration such as 30m"))?,
        };
        let history = match block.get("history") {
            None => 10,
            Some(v) => v
                .as_u64()
                .filter(|n| *n <= 1000)
                .ok_or_else(|| bad(m, "history", "expected a whole number up to 1000"))?
                as usize,
        };
        let mut categories = BTreeMap::new();
        let cats = block
            .get("categories")
            .and_then(Value::as_object)
            .ok_or_else(|| bad(m, "categories", "expected a mapping of category names"))?;
        for (name, spec) in cats {
            let at = format!("categories.{name}");
            if !valid_segment(name) || !m.collections.iter().any(|c| &c.name == name) {
                return Err(bad(
                    m,
                    &at,
                    "expected a category that is also a collection under collections:",
                ));
            }
            let tier = spec
                .get("sensitivity")
                .and_then(Value::as_str)
                .and_then(Tier::parse)
                .ok_or_else(|| {
                    bad(
                        m,
                        &format!("{at}.sensitivity"),
                        "expected public, standard, sensitive or critical",
                    )
                })?;
            let mut fields = BTreeMap::new();
            if let Some(f) = spec.get("fields") {
                let f = f.as_object().ok_or_else(|| {
                    bad(
                        m,
                        &format!("{at}.fields"),
                        "expected a mapping of field names to tiers",
                    )
                })?;
                for (k, v) in f {
                    let t = v.as_str().and_then(Tier::parse).ok_or_else(|| {
                        bad(
                            m,
                            &format!("{at}.fields.{k}"),
                            "expected public, standard, sensitive or critical",
                        )
                    })?;
                    fields.insert(k.clone(), t);
                }
            }
            let user_only_write = match spec.get("user_only_write") {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        bad(
                            m,
                            &format!("{at}.user_only_write"),
                            "expected a list of field names",
                        )
                    })?,
                Some(_) => {
                    return Err(bad(
                        m,
                        &format!("{at}.user_only_write"),
                        "expected a list of field names",
                    ))
                }
            };
            categories.insert(
                name.clone(),
                Category {
                    name: name.clone(),
                    tier,
                    fields,
                    user_only_write,
                },
            );
        }
        if categories.is_empty() {
            return Err(bad(m, "categories", "a vault needs at least one category"));
        }
        Ok(Some(PersonalConfig {
            vault: vault.to_string(),
            root: root.to_string(),
            kdf,
            state_recipient: recipient("state")?,
            audit_recipient: recipient("audit")?,
            archive_recipient: recipient("archive")?,
            consumer_role: role("consumer_role", "agent")?,
            owner_role: role("owner_role", "owner")?,
            idle_timeout,
            history,
            categories,
        }))
    }

    /// The configuration, or a usage error naming the fix when the repository is not a vault.
    pub fn require(m: &Manifest) -> Result<PersonalConfig> {
        PersonalConfig::from_manifest(m)?.ok_or_else(|| {
            Error::Usage(format!(
                "{} is not a personal repository (no extensions.{EXTENSION}); create one with `ctx init --template personal DIR`",
                m.file
            ))
        })
    }

    /// Where the sealed token store, the audit log and other vault state live.
    pub fn state_dir(&self, m: &Manifest) -> std::path::PathBuf {
        m.root.join(".ctx").join("personal")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Exit;

    /// The fix travels as the error's hint, beside the message, not as text
    /// inside it; the exit status is still "invalid".
    #[test]
    fn a_bad_block_carries_its_hint_apart_from_its_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencontext.yaml");
        let text = format!(
            "opencontext: \"1.0\"\nid: me\ncontext:\n  mission: ./m.md\nextensions:\n  {EXTENSION}:\n    format: 2\n"
        );
        std::fs::write(&path, text).unwrap();
        std::fs::write(
            dir.path().join("m.md"),
            "---\nid: m\ntype: mission\n---\nx\n",
        )
        .unwrap();
        let (m, _) = Manifest::load(&path).unwrap();
        let e = PersonalConfig::from_manifest(&m).unwrap_err();
        let message = e.to_string();
        assert!(
            message.ends_with(&format!("extensions.{EXTENSION}.format: expected 1")),
            "{message}"
        );
        assert!(!message.contains("help"), "{message}");
        let help = e.help().expect("a hint");
        assert!(help.contains("ctx init --template personal"), "{help}");
        assert_eq!(e.exit(), Exit::Invalid);
    }
}
