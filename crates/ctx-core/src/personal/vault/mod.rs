//! An unlocked vault: every field decrypted into memory once, at unlock, and kept
//! there (values in wipe-on-drop buffers) until the vault locks. Writes re-seal one
//! field file atomically and update memory; nothing plaintext touches the disk.
//!
//! Every field file is authenticated ([`super::integrity`]): at unlock a file whose
//! tag fails, that is older than the index lists, that the index no longer lists, or
//! that the index lists but is gone becomes a [`Problem`] and is never loaded.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode, RelPath};
use crate::load::{LoadOptions, Repo};
use crate::manifest::Manifest;
use crate::object::{ContextObject, Format};
use crate::private::config::CollectionKeys;
use crate::private::{Keyring, PrivateConfig};

use super::config::PersonalConfig;
use super::field::{field_of, FieldDoc, FieldId, Previous, ValueText, CATEGORY_TYPE};
use super::integrity::{MacKey, Verdict};
use super::keys::{Purpose, VaultKeys};
use super::ledger::{self, Problem, Shared};
use super::Tier;

mod category;
mod file;

use file::{open_field, parse_object, Auth};

/// One field in memory.
#[derive(Debug)]
pub struct Field {
    pub id: FieldId,
    pub tier: Tier,
    pub value: ValueText,
    pub written_by: String,
    pub user_only_write: bool,
    pub version: u64,
    pub updated_at: String,
    /// The loaded object (clear header): what the authorized view decides on.
    pub object: ContextObject,
}

/// A category's keys: the recipients its files are sealed to and the derived identity.
struct CategoryKeys {
    keys: CollectionKeys,
    ring: Keyring,
}

/// An unlocked vault.
pub struct Vault {
    pub manifest: Manifest,
    /// The vault's governance as a repository without objects: what the authorized
    /// view ([`super::view::FieldView`]) is opened over; fields are held below.
    pub governance: Repo,
    pub config: PersonalConfig,
    pub keys: VaultKeys,
    categories: BTreeMap<String, CategoryKeys>,
    pub fields: BTreeMap<String, Field>,
    /// Field files refused at unlock (file, field, reason, fix; never content), until
    /// the user writes or deletes that field.
    pub problems: Vec<Problem>,
    /// The authenticated index every write commits to (`None` only while a vault
    /// from before authentication is read for its upgrade).
    ledger: Option<Shared>,
    /// The repository's write lock file, when fixed in advance (a confined server
    /// cannot look for it); else [`crate::fs::RepoLock`] finds it.
    pub write_lock: Option<std::path::PathBuf>,
}

/// A write to one field.
pub struct Write<'a> {
    pub id: &'a FieldId,
    pub value: ValueText,
    pub tier: Option<Tier>,
    /// `user`, or the registered consumer's name.
    pub writer: &'a str,
    pub now: &'a str,
}

/// Why the derived keys do not open this vault.
#[derive(Debug)]
pub enum OpenError {
    /// Password or secret key wrong: the derived state key is not the recorded one.
    WrongSecrets,
    Other(Error),
}

impl From<Error> for OpenError {
    fn from(e: Error) -> Self {
        OpenError::Other(e)
    }
}

impl Vault {
    /// Check the derived keys against the manifest, then load, authenticate (against
    /// `ledger`'s index) and decrypt every field. A file that was ahead of the index
    /// (a crash between the file and the index) is authentic: it is kept and indexed.
    pub fn open(
        manifest: Manifest,
        config: PersonalConfig,
        keys: VaultKeys,
        ledger: Shared,
    ) -> std::result::Result<Vault, OpenError> {
        Vault::load(manifest, config, keys, Some(ledger))
    }

    /// Read a vault from before authentication, for its upgrade: files without a
    /// tag are taken as they are (the user reviews them), tagged ones must verify.
    /// It cannot be written until [`Vault::adopt`] gives it an index.
    pub fn open_unauthenticated(
        manifest: Manifest,
        config: PersonalConfig,
        keys: VaultKeys,
    ) -> std::result::Result<Vault, OpenError> {
        Vault::load(manifest, config, keys, None)
    }

    fn load(
        manifest: Manifest,
        config: PersonalConfig,
        keys: VaultKeys,
        ledger: Option<Shared>,
    ) -> std::result::Result<Vault, OpenError> {
        if keys.recipient(Purpose::State) != config.state_recipient {
            return Err(OpenError::WrongSecrets);
        }
        let (private, diags) = PrivateConfig::from_manifest(&manifest);
        if let Some(d) = diags.first() {
            return Err(Error::Invalid(format!("{}: {}", manifest.file, d.message)).into());
        }
        let mut categories = BTreeMap::new();
        for name in config.categories.keys() {
            let derived = keys.recipient(Purpose::Category(name));
            let ck = private.collection(name).cloned().ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: category `{name}` is not a private collection under extensions.ctx.private",
                    manifest.file
                ))
            })?;
            if !ck.recipients.iter().any(|r| r.key == derived) {
                return Err(Error::Invalid(format!(
                    "{}: the recipients of category `{name}` do not include the key derived from this vault's secrets; the manifest was changed (restore it from version control)",
                    manifest.file
                ))
                .into());
            }
            categories.insert(
                name.clone(),
                CategoryKeys {
                    keys: ck,
                    ring: keys.keyring(Purpose::Category(name)),
                },
            );
        }
        let repo = crate::load::load(manifest, Vec::new(), &LoadOptions::default());
        let Repo {
            manifest,
            objects,
            diags,
            ..
        } = repo;
        let governance = Repo {
            manifest: manifest.clone(),
            objects: Vec::new(),
            diags: Vec::new(),
            files: 0,
        };
        let mut v = Vault {
            manifest,
            governance,
            config,
            keys,
            categories,
            fields: BTreeMap::new(),
            problems: Vec::new(),
            ledger,
            write_lock: None,
        };
        let key = v.keys.mac_key();
        let index = v.ledger.as_ref().map(|l| ledger::lock(l).index().clone());
        let mut seen = std::collections::BTreeSet::new();
        let mut ahead = Vec::new();
        let root = format!("{}/", v.config.root);
        let loaded: std::collections::BTreeSet<&str> =
            objects.iter().map(|o| o.origin.file.as_str()).collect();
        // A file under the vault's folder that the loader could not make an object of.
        for d in diags
            .iter()
            .filter(|d| d.severity == crate::diag::Severity::Error)
        {
            let Some(file) = d
                .file
                .as_deref()
                .filter(|f| f.starts_with(&root) && !loaded.contains(f))
            else {
                continue;
            };
            if seen.insert(file.to_string()) {
                v.refuse(
                    file,
                    format!("the file cannot be read: {}", d.message),
                    "restore it from a backup, write the field again, or delete it".into(),
                );
            }
        }
        for o in objects {
            let Some(cat) = o.origin.collection.clone() else {
                continue;
            };
            let Some(ck) = v.categories.get(&cat) else {
                continue;
            };
            if o.meta.kind == CATEGORY_TYPE {
                continue;
            }
            let rel = o.origin.file.clone();
            seen.insert(rel.clone());
            let auth = match &index {
                Some(ix) => Auth::Index(&key, ix),
                None => Auth::Upgrade(&key),
            };
            match open_field(&o, &ck.ring, &cat, &v.config.root, auth) {
                Ok((doc, generation)) => {
                    if v.fields.contains_key(&doc.id.id) {
                        let id = doc.id.id.clone();
                        v.refuse(
                            &rel,
                            format!("a second file for field {id}"),
                            "delete it".into(),
                        );
                        continue;
                    }
                    if let (Some(ix), Some(g)) = (&index, generation) {
                        if ix.judge(ix.files.get(&rel).copied(), g) == Verdict::Ahead {
                            ahead.push((rel.clone(), g));
                        }
                    }
                    let f = Field::from_doc(doc, o);
                    v.fields.insert(f.id.id.clone(), f);
                }
                Err(why) => {
                    let fix = miette::Diagnostic::help(&why)
                        .map(|h| h.to_string())
                        .unwrap_or_else(|| {
                            "restore it from a backup, write the field again, or delete it".into()
                        });
                    v.refuse(&rel, why.to_string(), fix);
                }
            }
        }
        if let Some(ix) = &index {
            for (rel, g) in &ix.files {
                if !seen.contains(rel) {
                    v.refuse(
                        rel,
                        format!("missing: the vault's index lists it at generation {g}, but the file is gone"),
                        "restore it from a backup, write the field again, or delete the field to stop this report".into(),
                    );
                }
            }
        }
        if let (Some(l), false) = (&v.ledger, ahead.is_empty()) {
            ledger::lock(l).commit(|ix, _| {
                for (rel, g) in ahead {
                    ix.files.insert(rel, g);
                    ix.generation = ix.generation.max(g);
                }
            })?;
        }
        Ok(v)
    }

    /// Give a vault read by [`Vault::open_unauthenticated`] its new index.
    pub fn adopt(&mut self, ledger: Shared) {
        self.ledger = Some(ledger);
    }

    pub fn ledger(&self) -> Option<&Shared> {
        self.ledger.as_ref()
    }

    fn refuse(&mut self, rel: &str, error: String, fix: String) {
        let field = field_of(&self.config.root, rel);
        let fix = match &field {
            Some(id) => fix.replace("/ID", &format!("/{id}")),
            None => fix,
        };
        self.problems.push(Problem {
            file: rel.to_string(),
            field,
            error,
            fix,
        });
    }

    pub fn category_names(&self) -> impl Iterator<Item = &String> {
        self.categories.keys()
    }

    pub fn has_category(&self, name: &str) -> bool {
        self.categories.contains_key(name)
    }

    fn root(&self) -> &Path {
        &self.manifest.root
    }

    /// The current document of a field, decrypted from its file (history included).
    fn read_doc(&self, f: &Field) -> Result<FieldDoc> {
        let ck = self.categories.get(&f.id.category).ok_or_else(|| {
            Error::NotFound(format!("no category `{}` in this vault", f.id.category))
        })?;
        let path = self.root().join(&f.object.origin.file);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, &e))?;
        let rel = RelPath::parse(&f.object.origin.file)
            .map_err(|e| Error::Invalid(format!("{}: {e:?}", f.object.origin.file)))?;
        let o = parse_object(&self.manifest, &rel, &text)?;
        let key = self.keys.mac_key();
        let index = self
            .ledger
            .as_ref()
            .map(|l| ledger::lock(l).index().clone());
        let auth = match &index {
            Some(ix) => Auth::Index(&key, ix),
            None => Auth::Upgrade(&key),
        };
        Ok(open_field(&o, &ck.ring, &f.id.category, &self.config.root, auth)?.0)
    }

    /// Create or update a field; the previous version goes into its history.
    pub fn write(&mut self, w: Write<'_>) -> Result<&Field> {
        let cat = self.config.categories.get(&w.id.category).ok_or_else(|| {
            Error::NotFound(format!("no category `{}` in this vault", w.id.category))
        })?;
        let (doc, file) = match self.fields.get(&w.id.id) {
            Some(f) => {
                let mut doc = self.read_doc(f)?;
                doc.history.insert(
                    0,
                    Previous {
                        version: doc.version,
                        value: doc.value.clone(),
                        written_by: doc.written_by.clone(),
                        updated_at: doc.updated_at.clone(),
                        tier: doc.tier,
                    },
                );
                doc.history.truncate(self.config.history);
                doc.version += 1;
                doc.value = w.value;
                doc.tier = w.tier.unwrap_or(doc.tier);
                doc.written_by = w.writer.to_string();
                doc.updated_at = w.now.to_string();
                (doc, f.object.origin.file.clone())
            }
            None => (
                FieldDoc {
                    id: w.id.clone(),
                    tier: w.tier.unwrap_or_else(|| cat.default_tier(&w.id.name)),
                    owner: "user".into(),
                    version: 1,
                    updated_at: w.now.to_string(),
                    value: w.value,
                    written_by: w.writer.to_string(),
                    user_only_write: cat.user_only(&w.id.name),
                    history: Vec::new(),
                },
                w.id.rel_path(&self.config.root),
            ),
        };
        self.store(doc, &file)
    }

    /// Change a field's tier (the user's decision); the value and version stay.
    pub fn set_tier(&mut self, id: &str, tier: Tier, now: &str) -> Result<&Field> {
        let f = self
            .fields
            .get(id)
            .ok_or_else(|| Error::NotFound(format!("no field {id}")))?;
        let mut doc = self.read_doc(f)?;
        doc.tier = tier;
        doc.updated_at = now.to_string();
        let file = f.object.origin.file.clone();
        self.store(doc, &file)
    }

    /// Seal and write one field document, commit it to the index, then refresh it
    /// in memory. The index's lock is held from the file's generation to its commit.
    fn store(&mut self, doc: FieldDoc, file: &str) -> Result<&Field> {
        let shared = self.ledger.clone().ok_or_else(|| {
            Error::Invalid(
                "this vault has no authenticated index: run `ctx private upgrade-vault`".into(),
            )
        })?;
        let mut l = ledger::lock(&shared);
        let g = l.next();
        let o = self.write_sealed(&doc, file, l.key(), g)?;
        l.commit(|ix, g| {
            ix.files.insert(file.to_string(), g);
        })?;
        drop(l);
        self.problems.retain(|p| p.file != file);
        let id = doc.id.id.clone();
        self.fields.insert(id.clone(), Field::from_doc(doc, o));
        Ok(&self.fields[&id])
    }

    /// Tag, seal and write one field file as generation `g` (the caller commits it).
    pub(super) fn write_sealed(
        &self,
        doc: &FieldDoc,
        file: &str,
        key: &MacKey,
        g: u64,
    ) -> Result<ContextObject> {
        let ck = self
            .categories
            .get(&doc.id.category)
            .ok_or_else(|| Error::NotFound(format!("no category `{}`", doc.id.category)))?;
        let plain = doc.render_sealed(key, file, g);
        let sealed = crate::private::ops::seal(Format::Json, &plain, &ck.keys, None, None, false)
            .map_err(|e| Error::Invalid(format!("{file}: {e}")))?;
        let rel = RelPath::parse(file).map_err(|e| Error::Invalid(format!("{file}: {e:?}")))?;
        let o = parse_object(&self.manifest, &rel, &sealed.text)?;
        let path = rel.to_path(self.root());
        let _lock = self.hold()?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
        }
        crate::fs::write_atomic(
            &path,
            sealed.text.as_bytes(),
            Mode::Preserve,
            Existing::Replace,
        )
        .map_err(|e| Error::io(&path, &e))?;
        Ok(o)
    }

    /// Remove a field's file (its history goes with it; the audit log keeps the event).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        let f = self
            .fields
            .get(id)
            .ok_or_else(|| Error::NotFound(format!("no field {id}")))?;
        let file = f.object.origin.file.clone();
        self.remove_file(&file)?;
        self.fields.remove(id);
        Ok(())
    }

    /// The user's way out of a refused field (`DELETE` of its id): its file, if any,
    /// goes, the index stops listing it and the report ends. False when `id` has none.
    pub fn discard(&mut self, id: &str) -> Result<bool> {
        let files: Vec<String> = self
            .problems
            .iter()
            .filter(|p| p.field.as_deref() == Some(id))
            .map(|p| p.file.clone())
            .collect();
        if files.is_empty() {
            return Ok(false);
        }
        for file in &files {
            self.remove_file(file)?;
        }
        self.problems.retain(|p| !files.contains(&p.file));
        Ok(true)
    }

    /// Remove one file of the vault and the index's entry for it.
    fn remove_file(&mut self, file: &str) -> Result<()> {
        let shared = self
            .ledger
            .clone()
            .ok_or_else(|| Error::Invalid("this vault has no authenticated index".into()))?;
        let mut l = ledger::lock(&shared);
        let path = self.root().join(file);
        {
            let _lock = self.hold()?;
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, &e)),
            }
            if let Some(dir) = path.parent() {
                let _ = crate::fs::sync_dir(dir);
            }
        }
        l.commit(|ix, _| {
            ix.files.remove(file);
        })?;
        Ok(())
    }

    /// Take the repository's write lock (held until the value is dropped).
    fn hold(&self) -> Result<Box<dyn std::any::Any>> {
        match &self.write_lock {
            Some(p) => crate::fs::lock_file(p, Mode::RepositoryDefault)
                .map(|f| Box::new(f) as Box<dyn std::any::Any>)
                .map_err(|e| Error::io(p, &e)),
            None => crate::fs::RepoLock::acquire(self.root())
                .map(|l| Box::new(l) as Box<dyn std::any::Any>)
                .map_err(|e| Error::io(self.root(), &e)),
        }
    }

    /// The full document of every field (for export), in id order.
    pub fn documents(&self) -> Result<Vec<FieldDoc>> {
        self.fields.values().map(|f| self.read_doc(f)).collect()
    }

    /// Restore a field document exactly (import): version, provenance and history kept.
    pub fn restore(&mut self, doc: FieldDoc) -> Result<()> {
        if !self.categories.contains_key(&doc.id.category) {
            return Err(Error::NotFound(format!(
                "no category `{}` in this vault",
                doc.id.category
            )));
        }
        let file = match self.fields.get(&doc.id.id) {
            Some(f) => f.object.origin.file.clone(),
            None => doc.id.rel_path(&self.config.root),
        };
        self.store(doc, &file).map(|_| ())
    }
}

impl Field {
    fn from_doc(doc: FieldDoc, object: ContextObject) -> Field {
        Field {
            id: doc.id,
            tier: doc.tier,
            value: doc.value,
            written_by: doc.written_by,
            user_only_write: doc.user_only_write,
            version: doc.version,
            updated_at: doc.updated_at,
            object,
        }
    }
}
