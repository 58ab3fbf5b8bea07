//! `ctx init --template personal`: a new vault. The manifest declares seed 004's ten
//! standard categories as private collections encrypted to keys derived from the
//! password and a fresh secret key; each category folder starts with its sealed
//! descriptor (so every collection has a member and `validate --strict` passes).

use std::path::{Path, PathBuf};

use serde_json::json;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};
use crate::object::Format;
use crate::private::config::{CollectionKeys, Recipient, RecipientEntry};

use super::field::{CATEGORY_FILE, CATEGORY_TYPE};
use super::integrity::{Seen, INDEX_FILE};
use super::keys::{self, KdfParams, Purpose, SecretKey, VaultKeys};
use super::ledger::Ledger;
use super::STANDARD_CATEGORIES;

/// What a new vault needs.
pub struct Options<'a> {
    pub dir: &'a Path,
    pub id: &'a str,
    /// The repository name, already a YAML scalar (quoted as needed).
    pub name_yaml: &'a str,
    pub password: &'a [u8],
    /// The user's own additional age recipients (recovery), added to every category.
    pub recovery: Vec<String>,
    pub now: &'a str,
    /// Where to keep the secret key (default: the user's config folder).
    pub secret_key_file: Option<PathBuf>,
    /// Where this device records the highest generation of the vault it saw.
    pub seen: Seen,
}

/// What was created.
pub struct Created {
    pub vault: String,
    pub files: Vec<String>,
    pub secret_key_file: PathBuf,
    pub secret_key: Zeroizing<String>,
}

/// The folder holding the category folders.
pub const ROOT: &str = "personal";

fn manifest_text(
    id: &str,
    name_yaml: &str,
    vault: &str,
    kdf: &KdfParams,
    k: &VaultKeys,
    recovery: &[String],
) -> String {
    let mut s = format!(
        "# A personal context vault (seed 004): one private collection per category, every field\n\
         # encrypted with age to a key derived from your password and your secret key.\n\
         # Serve it to agents with `ctx serve`; see docs/personal.md.\n\
         opencontext: \"1.0\"\nid: {id}\nname: {name_yaml}\n\ncollections:\n"
    );
    for c in &STANDARD_CATEGORIES {
        s.push_str(&format!("  {0}: ./{ROOT}/{0}/**\n", c.name));
    }
    s.push_str(
        "\nroles:\n  owner:\n    description: The person this vault belongs to (the session of an unlocked vault).\n    include: [\"*\"]\n    max_classification: restricted\n  agent:\n    description: What a registered consumer may be granted at most; each token narrows it further.\n    include: [\"*\"]\n    max_classification: restricted\n\nextensions:\n  ctx.personal:\n    format: 1\n",
    );
    s.push_str(&format!(
        "    vault: {vault}\n    root: ./{ROOT}\n    kdf:\n      algorithm: argon2id\n      memory_kib: {}\n      iterations: {}\n      parallelism: {}\n      salt: {}\n",
        kdf.memory_kib,
        kdf.iterations,
        kdf.parallelism,
        hex::encode(&kdf.salt)
    ));
    s.push_str(&format!(
        "    recipients:\n      state: {}\n      audit: {}\n      archive: {}\n",
        k.recipient(Purpose::State),
        k.recipient(Purpose::Audit),
        k.recipient(Purpose::Archive)
    ));
    s.push_str("    consumer_role: agent\n    owner_role: owner\n    idle_timeout: 30m\n    history: 10\n    categories:\n");
    for c in &STANDARD_CATEGORIES {
        s.push_str(&format!(
            "      {}:\n        sensitivity: {}\n",
            c.name, c.tier
        ));
        if !c.fields.is_empty() {
            let f: Vec<String> = c.fields.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            s.push_str(&format!("        fields: {{ {} }}\n", f.join(", ")));
        }
        if !c.user_only_write.is_empty() {
            s.push_str(&format!(
                "        user_only_write: [{}]\n",
                c.user_only_write.join(", ")
            ));
        }
    }
    s.push_str("  ctx.private:\n");
    if !recovery.is_empty() {
        s.push_str("    groups:\n      recovery:\n");
        for r in recovery {
            s.push_str(&format!(
                "        - {}\n",
                serde_json::to_string(r).expect("string")
            ));
        }
    }
    s.push_str("    collections:\n");
    for c in &STANDARD_CATEGORIES {
        s.push_str(&format!(
            "      {}:\n        recipients: [{}]\n",
            c.name,
            k.recipient(Purpose::Category(c.name))
        ));
        if !recovery.is_empty() {
            s.push_str("        groups: [recovery]\n");
        }
    }
    s
}

/// The keys a category's files are encrypted to (its derived key plus recovery keys).
pub fn category_keys(name: &str, derived: &str, recovery: &[String]) -> Result<CollectionKeys> {
    let mut recipients = Vec::new();
    for (n, r) in std::iter::once(derived.to_string())
        .chain(recovery.iter().cloned())
        .enumerate()
    {
        let (recipient, comment) = Recipient::parse(&r)
            .map_err(|e| Error::Usage(format!("recovery recipient `{r}`: {e}")))?;
        recipients.push(RecipientEntry {
            key: recipient.key(),
            recipient,
            comment,
            source: format!("recipients[{n}]"),
        });
    }
    recipients.sort_by(|a, b| a.key.cmp(&b.key));
    recipients.dedup_by(|a, b| a.key == b.key);
    Ok(CollectionKeys {
        name: name.to_string(),
        recipients,
        clear: Vec::new(),
    })
}

/// Create the vault: manifest, sealed category descriptors, and the secret key file.
/// Refuses to touch a folder that already holds a manifest.
pub fn create(o: &Options<'_>) -> Result<Created> {
    for m in ["opencontext.yaml", "opencontext.yml", "opencontext.json"] {
        if o.dir.join(m).exists() {
            return Err(Error::Usage(format!(
                "{} already holds a repository ({m}); a vault is created in a new or empty folder",
                o.dir.display()
            )));
        }
    }
    if o.password.is_empty() {
        return Err(Error::Usage("the profile password cannot be empty".into()));
    }
    for r in &o.recovery {
        Recipient::parse(r).map_err(|e| Error::Usage(format!("recovery recipient `{r}`: {e}")))?;
    }
    let vault = hex::encode(keys::random_bytes::<16>()?);
    let kdf = KdfParams::generate()?;
    let secret = SecretKey::generate()?;
    let k = VaultKeys::derive(o.password, &secret, &kdf, &vault)?;
    let key_file = match &o.secret_key_file {
        Some(p) => p.clone(),
        None => keys::secret_key_path(&vault)?,
    };
    let mut files = Vec::new();
    let manifest = manifest_text(o.id, o.name_yaml, &vault, &kdf, &k, &o.recovery);
    for c in &STANDARD_CATEGORIES {
        let rel = format!("{ROOT}/{}/{CATEGORY_FILE}", c.name);
        let plain = serde_json::to_string_pretty(&json!({
            "id": c.name,
            "type": CATEGORY_TYPE,
            "classification": "public",
            "owner": "user",
            "version": 1,
            "updated": o.now,
            "title": c.name,
            "content": c.description,
        }))
        .expect("JSON")
            + "\n";
        let keys = category_keys(c.name, &k.recipient(Purpose::Category(c.name)), &o.recovery)?;
        let sealed = crate::private::ops::seal(Format::Json, &plain, &keys, None, None, false)
            .map_err(|e| Error::Invalid(format!("{rel}: {e}")))?;
        let path = o.dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
        }
        crate::fs::write_atomic(
            &path,
            sealed.text.as_bytes(),
            Mode::RepositoryDefault,
            Existing::Refuse,
        )
        .map_err(|e| Error::io(&path, &e))?;
        files.push(rel);
    }
    // The secret key goes last but one: a failure before it leaves no orphaned key,
    // and the manifest (what makes the folder a vault) is written only once the key is safe.
    keys::store_secret_key(&key_file, &vault, &secret)?;
    // The authenticated index, empty: from the first unlock on, every file is checked.
    let state_dir = o.dir.join(".ctx").join("personal");
    Ledger::create(&state_dir, k.mac_key(), &vault, &o.seen).commit(|_, _| {})?;
    files.push(format!(".ctx/personal/{INDEX_FILE}"));
    let path = o.dir.join("opencontext.yaml");
    crate::fs::write_atomic(
        &path,
        manifest.as_bytes(),
        Mode::RepositoryDefault,
        Existing::Refuse,
    )
    .map_err(|e| Error::io(&path, &e))?;
    files.insert(0, "opencontext.yaml".into());
    Ok(Created {
        vault,
        files,
        secret_key_file: key_file,
        secret_key: secret.display(),
    })
}
