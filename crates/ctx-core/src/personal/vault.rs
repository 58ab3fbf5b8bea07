//! An unlocked vault: every field decrypted into memory once, at unlock, and kept
//! there (values in wipe-on-drop buffers) until the vault locks. Writes re-seal one
//! field file atomically and update memory; nothing plaintext touches the disk.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode, RelPath};
use crate::load::parse::{self, Defaults};
use crate::load::walk::{Member, MemberSource};
use crate::load::{LoadOptions, Repo};
use crate::manifest::Manifest;
use crate::object::{ContextObject, Format};
use crate::private::config::CollectionKeys;
use crate::private::{Keyring, PrivateConfig};

use super::config::PersonalConfig;
use super::field::{FieldDoc, FieldError, FieldId, Previous, ValueText, CATEGORY_TYPE, FIELD_TYPE};
use super::keys::{Purpose, VaultKeys};
use super::Tier;

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
    /// Field files that could not be opened (file and reason; never content).
    pub problems: Vec<String>,
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
    /// Check the derived keys against the manifest, then load and decrypt every field.
    pub fn open(
        manifest: Manifest,
        config: PersonalConfig,
        keys: VaultKeys,
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
            manifest, objects, ..
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
            write_lock: None,
        };
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
            match open_field(&o, &ck.ring, &cat) {
                Ok(doc) => {
                    if v.fields.contains_key(&doc.id.id) {
                        v.problems.push(format!(
                            "{}: a second file for field {}",
                            o.origin.file, doc.id.id
                        ));
                        continue;
                    }
                    let f = Field::from_doc(doc, o);
                    v.fields.insert(f.id.id.clone(), f);
                }
                Err(why) => v.problems.push(format!(
                    "{}: {}",
                    o.origin.file,
                    crate::error::one_line(&why)
                )),
            }
        }
        Ok(v)
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
        Ok(open_field(&o, &ck.ring, &f.id.category)?)
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

    /// Seal and write one field document, then refresh it in memory.
    fn store(&mut self, doc: FieldDoc, file: &str) -> Result<&Field> {
        let ck = self
            .categories
            .get(&doc.id.category)
            .ok_or_else(|| Error::NotFound(format!("no category `{}`", doc.id.category)))?;
        let plain = doc.render();
        let sealed = crate::private::ops::seal(Format::Json, &plain, &ck.keys, None, None, false)
            .map_err(|e| Error::Invalid(format!("{file}: {e}")))?;
        let rel = RelPath::parse(file).map_err(|e| Error::Invalid(format!("{file}: {e:?}")))?;
        let o = parse_object(&self.manifest, &rel, &sealed.text)?;
        let path = rel.to_path(self.root());
        {
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
        }
        let id = doc.id.id.clone();
        self.fields.insert(id.clone(), Field::from_doc(doc, o));
        Ok(&self.fields[&id])
    }

    /// Remove a field's file (its history goes with it; the audit log keeps the event).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        let f = self
            .fields
            .get(id)
            .ok_or_else(|| Error::NotFound(format!("no field {id}")))?;
        let path = self.root().join(&f.object.origin.file);
        {
            let _lock = self.hold()?;
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, &e))?;
            if let Some(dir) = path.parent() {
                let _ = crate::fs::sync_dir(dir);
            }
        }
        self.fields.remove(id);
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

/// Decrypt one loaded field object with its category's identity.
fn open_field(
    o: &ContextObject,
    ring: &Keyring,
    category: &str,
) -> std::result::Result<FieldDoc, FieldError> {
    if o.meta.kind != FIELD_TYPE {
        return Err(FieldError::NotAField(o.meta.kind.clone()));
    }
    if o.meta.sealed.is_none() {
        return Err(FieldError::NotEncrypted);
    }
    let opened =
        crate::private::open_object(o, Some(ring)).map_err(|e| FieldError::Unopened(e.reason()))?;
    let doc = FieldDoc::from_opened(&opened.fields, opened.content.as_ref())?;
    if doc.id.category != category {
        return Err(FieldError::WrongFolder {
            id: doc.id.id,
            category: category.to_string(),
        });
    }
    Ok(doc)
}

/// Parse a sealed field file into an object, as the loader would.
fn parse_object(m: &Manifest, rel: &RelPath, text: &str) -> Result<ContextObject> {
    let (name, base) = m.members.collection_of(rel).ok_or_else(|| {
        Error::Invalid(format!(
            "{} is not inside a collection of {}",
            rel.as_str(),
            m.file
        ))
    })?;
    let member = Member {
        rel: rel.clone(),
        abs: rel.to_path(&m.root),
        source: MemberSource::Collection {
            name: name.into(),
            base: base.as_str().into(),
        },
    };
    let parsed = parse::parse(&member, text.as_bytes(), &Defaults::for_member(m, &member));
    if let Some(d) = parsed
        .diags
        .iter()
        .find(|d| d.severity == crate::diag::Severity::Error)
    {
        return Err(Error::Invalid(format!("{}: {}", rel.as_str(), d.message)));
    }
    parsed
        .object
        .ok_or_else(|| Error::Invalid(format!("{}: not an object", rel.as_str())))
}
