//! Key management operations behind `ctx keys generate|list`: create a
//! per-user signing key (and optionally trust it in the manifest), and the
//! inventory of declared and local keys.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::signing::{PublicKey, SigningKeyPair};

use super::{check_id, declare_text, guard_path, key_dir, key_path, local_keys, trusted, KeyError};
use super::{write_manifest, Declared, MalformedKey};

/// What `generate` did with the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declaration {
    /// Not asked for (the caller shows how to declare it).
    NotRequested,
    /// Added under `extensions.ctx.keys`.
    Added,
    /// The manifest already declared this key.
    AlreadyDeclared,
}

/// A new key.
#[derive(Debug, Clone)]
pub struct Generated {
    pub id: String,
    pub public: PublicKey,
    pub path: PathBuf,
    pub declaration: Declaration,
}

/// Create the private key `id` in the user's key folder (mode 0600, never
/// inside a repository or a git work tree, never over an existing key) and,
/// with `declare`, trust its public half in `manifest`. The manifest edit
/// is prepared first, so a manifest ctx cannot edit stops the command
/// before a key is written.
pub fn generate(id: &str, declare: bool, manifest: Option<&Manifest>) -> Result<Generated> {
    check_id(id)?;
    let path = key_path(id)?;
    guard_path(&path, manifest.map(|m| m.root.as_path()))?;
    if path.exists() {
        return Err(KeyError::Exists {
            path,
            id: id.to_string(),
        }
        .into());
    }
    let pair = SigningKeyPair::generate().map_err(|e| KeyError::Generate(e.to_string()))?;
    let public = pair.public_key();
    let edit = match (manifest, declare) {
        (Some(m), true) => Some((
            m,
            declare_text(&m.text, m.file.ends_with(".json"), id, &public)?,
        )),
        _ => None,
    };
    let dir = path.parent().expect("key path has a folder");
    create_private_dir(dir)?;
    pair.save(&path)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let declaration = match edit {
        Some((m, Declared::Changed(text))) => {
            write_manifest(&m.path, &m.text, &text)?;
            Declaration::Added
        }
        Some((_, Declared::AlreadyDeclared)) => Declaration::AlreadyDeclared,
        None => Declaration::NotRequested,
    };
    Ok(Generated {
        id: id.to_string(),
        public,
        path,
        declaration,
    })
}

/// Create the key folder with mode 0700 (and its parents as needed).
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).map_err(|e| Error::io(dir, &e))
}

/// One key id, declared in the manifest, present locally, or both.
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: String,
    pub public: Option<PublicKey>,
    /// `absent`, `present`, `unusable (…)` or `MISMATCH (not the declared key)`.
    pub private_key: String,
    pub private_key_path: Option<PathBuf>,
}

/// Every key the manifest declares or the user holds.
#[derive(Debug, Clone)]
pub struct Inventory {
    pub key_dir: PathBuf,
    pub keys: Vec<KeyRow>,
    pub malformed: Vec<MalformedKey>,
}

impl Inventory {
    /// The `ctx keys list --format json` document (`manifest`: the manifest
    /// file it was taken from, if any).
    pub fn to_json(&self, manifest: Option<&Path>) -> serde_json::Value {
        let rows: Vec<_> = self
            .keys
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id,
                    "declared": r.public.is_some(),
                    "public_key": r.public.map(|k| k.to_base64()),
                    "fingerprint": r.public.map(|k| k.fingerprint()),
                    "private_key": r.private_key,
                    "private_key_path": r.private_key_path.as_ref().map(|p| p.display().to_string()),
                })
            })
            .collect();
        let errors: Vec<String> = self.malformed.iter().map(ToString::to_string).collect();
        serde_json::json!({
            "manifest": manifest.map(|m| m.display().to_string()),
            "key_dir": self.key_dir.display().to_string(),
            "keys": rows,
            "errors": errors,
        })
    }
}

/// The inventory. A private key that cannot be read, or that is not the
/// declared key, is shown as such rather than treated as usable.
pub fn inventory(manifest: Option<&Manifest>) -> Result<Inventory> {
    let local = local_keys()?;
    let t = manifest.map(trusted).unwrap_or_default();
    let mut ids: Vec<&String> = t.keys.keys().chain(local.keys()).collect();
    ids.sort();
    ids.dedup();
    let keys = ids
        .into_iter()
        .map(|id| {
            let public = t.keys.get(id).copied();
            let path = local.get(id);
            let private_key = match path {
                None => "absent".to_string(),
                Some(path) => match SigningKeyPair::load(path) {
                    Err(e) => format!("unusable ({e})"),
                    Ok(k) if public.is_some_and(|p| p != k.public_key()) => {
                        "MISMATCH (not the declared key)".into()
                    }
                    Ok(_) => "present".into(),
                },
            };
            KeyRow {
                id: id.clone(),
                public,
                private_key,
                private_key_path: path.cloned(),
            }
        })
        .collect();
    Ok(Inventory {
        key_dir: key_dir()?,
        keys,
        malformed: t.malformed,
    })
}

/// Trust the existing private key `id` (made without `--declare`) in `manifest`:
/// its public half is added under `extensions: ctx.keys`. Declaring a key that is
/// already declared is a no-op; a different key under the same id is refused.
pub fn declare(id: &str, manifest: &Manifest) -> Result<(PublicKey, Declaration)> {
    check_id(id)?;
    let path = key_path(id)?;
    if !path.exists() {
        return Err(KeyError::Missing {
            path,
            id: id.to_string(),
        }
        .into());
    }
    let pair = SigningKeyPair::load(&path).map_err(|e| KeyError::Unusable {
        path: path.clone(),
        why: e.to_string(),
    })?;
    let public = pair.public_key();
    let declared = declare_text(
        &manifest.text,
        manifest.file.ends_with(".json"),
        id,
        &public,
    )?;
    let declaration = match declared {
        Declared::Changed(text) => {
            write_manifest(&manifest.path, &manifest.text, &text)?;
            Declaration::Added
        }
        Declared::AlreadyDeclared => Declaration::AlreadyDeclared,
    };
    Ok((public, declaration))
}
