//! A category of the user's own, added to a running vault: the manifest gains it
//! ([`crate::personal::category`]), the vault reloads its configuration, and the
//! category's folder gets its sealed descriptor.

use crate::error::{Error, Result};
use crate::fs::{replace_if_unchanged, Existing, Mode, ReplaceError};
use crate::load::Repo;
use crate::manifest::Manifest;
use crate::object::Format;
use crate::personal::category;
use crate::personal::config::PersonalConfig;
use crate::personal::field::CATEGORY_FILE;
use crate::personal::keys::Purpose;
use crate::personal::Tier;
use crate::private::PrivateConfig;

use super::{CategoryKeys, Vault};

impl Vault {
    /// Add category `name` (default tier `tier`) to the manifest and serve it.
    pub fn add_category(&mut self, name: &str, tier: Tier, now: &str) -> Result<()> {
        let derived = self.keys.recipient(Purpose::Category(name));
        let text = category::manifest_with(&self.manifest, &self.config, name, tier, &derived)?;
        let path = self.manifest.path.clone();
        {
            let _lock = self.hold()?;
            replace_if_unchanged(
                &path,
                self.manifest.text.as_bytes(),
                text.as_bytes(),
                Mode::Preserve,
            )
            .map_err(|e| match e {
                ReplaceError::Changed => Error::Invalid(format!(
                    "{}: the manifest changed on disk since the vault was unlocked; lock and unlock again",
                    self.manifest.file
                )),
                ReplaceError::Io(e) => Error::io(&path, &e),
            })?;
        }
        let (manifest, _) = Manifest::load(&path)?;
        let config = PersonalConfig::require(&manifest)?;
        let (private, diags) = PrivateConfig::from_manifest(&manifest);
        if let Some(d) = diags.first() {
            return Err(Error::Invalid(format!("{}: {}", manifest.file, d.message)));
        }
        let keys = private.collection(name).cloned().ok_or_else(|| {
            Error::Invalid(format!(
                "{}: category `{name}` was added but is not a private collection",
                manifest.file
            ))
        })?;
        self.categories.insert(
            name.to_string(),
            CategoryKeys {
                keys,
                ring: self.keys.keyring(Purpose::Category(name)),
            },
        );
        self.governance = Repo {
            manifest: manifest.clone(),
            objects: Vec::new(),
            diags: Vec::new(),
            files: 0,
        };
        self.manifest = manifest;
        self.config = config;
        // The descriptor keeps the collection non-empty when its last field goes.
        let rel = format!("{}/{name}/{CATEGORY_FILE}", self.config.root);
        let plain = category::descriptor(name, now);
        let sealed = crate::private::ops::seal(
            Format::Json,
            &plain,
            &self.categories[name].keys,
            None,
            None,
            false,
        )
        .map_err(|e| Error::Invalid(format!("{rel}: {e}")))?;
        let file = self.root().join(&rel);
        let _lock = self.hold()?;
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
        }
        crate::fs::write_atomic(
            &file,
            sealed.text.as_bytes(),
            Mode::RepositoryDefault,
            Existing::Replace,
        )
        .map_err(|e| Error::io(&file, &e))
    }
}

impl Vault {
    /// The current value of field `id` as an audit entry keeps it when a write or
    /// delete replaces it: metadata, and the value sealed to its category's keys.
    pub fn sealed_previous(&self, id: &str) -> Result<Option<serde_json::Value>> {
        let Some(f) = self.fields.get(id) else {
            return Ok(None);
        };
        let ck = self.categories.get(&f.id.category).ok_or_else(|| {
            Error::NotFound(format!("no category `{}` in this vault", f.id.category))
        })?;
        let recipients: Vec<_> = ck
            .keys
            .recipients
            .iter()
            .map(|r| r.recipient.clone())
            .collect();
        let sealed = crate::private::crypt::encrypt(f.value.as_bytes(), &recipients)
            .map_err(|e| Error::Invalid(format!("cannot seal the previous value of {id}: {e}")))?;
        Ok(Some(serde_json::json!({
            "version": f.version,
            "written_by": f.written_by,
            "updated": f.updated_at,
            "sensitivity": f.tier.as_str(),
            "sealed": sealed,
        })))
    }

    /// Open a value [`Vault::sealed_previous`] sealed for field `id`.
    pub fn open_previous(&self, id: &str, armor: &str) -> Result<serde_json::Value> {
        let category = id.split('.').next().unwrap_or("");
        let ck = self
            .categories
            .get(category)
            .ok_or_else(|| Error::NotFound(format!("no category `{category}` in this vault")))?;
        let (plain, _) = crate::private::ops::decrypt("previous value", armor, Some(&ck.ring))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        serde_json::from_str(&plain)
            .map_err(|e| Error::Invalid(format!("the previous value of {id} is not JSON ({e})")))
    }
}
