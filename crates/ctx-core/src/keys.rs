//! Where signing keys live, and which public keys a repository trusts.
//!
//! Private keys are per user, never per repository: they live in
//! `$XDG_CONFIG_HOME/ctx/keys/<id>.pem` (or `~/.config/ctx/keys/`), mode
//! 0600, and ctx refuses a key path inside the repository, inside a git work
//! tree where it is not ignored, or tracked by git — so `git add -A` can
//! never publish a secret. Trusted *public* keys live in the manifest's
//! namespaced extension `extensions: { ctx.keys: { <id>: { ed25519: "<b64>" } } }`,
//! so a CI job needs only the repository to verify a signature.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::signing::{PublicKey, SignatureError, SigningKeyPair};

mod declare;
mod error;
pub mod manage;

pub use error::KeyError;

pub use declare::{declare_text, write_manifest, Declared};

/// The manifest extension holding trusted public keys.
pub const EXTENSION: &str = "ctx.keys";

/// A key id: 1–64 characters of `[a-z0-9._-]`, starting with a letter or
/// digit, so it is a safe file name, a plain YAML key and an envelope key id.
pub fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(KeyError::BadId { id: id.to_string() }.into())
    }
}

/// `$XDG_CONFIG_HOME/ctx/keys`, else `$HOME/.config/ctx/keys` (else
/// `%APPDATA%\ctx\keys`). A relative XDG_CONFIG_HOME is ignored, as the XDG
/// specification requires.
pub fn key_dir() -> Result<PathBuf> {
    let abs = |v: Option<std::ffi::OsString>| {
        v.map(PathBuf::from)
            .filter(|p| p.is_absolute() && !p.as_os_str().is_empty())
    };
    let base = abs(std::env::var_os("XDG_CONFIG_HOME"))
        .or_else(|| abs(std::env::var_os("HOME")).map(|h| h.join(".config")))
        .or_else(|| abs(std::env::var_os("APPDATA")))
        .ok_or(KeyError::NoConfigFolder)?;
    Ok(base.join("ctx").join("keys"))
}

/// The private key file of `id`.
pub fn key_path(id: &str) -> Result<PathBuf> {
    check_id(id)?;
    Ok(key_dir()?.join(format!("{id}.pem")))
}

/// Ids of the private keys present in the key folder, sorted.
pub fn local_keys() -> Result<BTreeMap<String, PathBuf>> {
    let dir = key_dir()?;
    let mut out = BTreeMap::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(&dir, &e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".pem") {
            if check_id(id).is_ok() {
                out.insert(id.to_string(), entry.path());
            }
        }
    }
    Ok(out)
}

/// Refuse a private-key path that could end up in version control: inside
/// the repository, tracked by git, or inside a git work tree without being
/// ignored. `repo_root` is the repository in use, when there is one.
pub fn guard_path(path: &Path, repo_root: Option<&Path>) -> Result<()> {
    let refuse = |why: String| {
        Err(KeyError::UnsafeLocation {
            path: path.to_path_buf(),
            why,
        }
        .into())
    };
    let existing = nearest_existing(path);
    if let (Some(root), Some(near)) = (repo_root, existing.as_deref()) {
        if let Ok(root) = root.canonicalize() {
            if near.starts_with(&root) {
                return refuse(format!("it is inside the repository {}", root.display()));
            }
        }
    }
    let Some(near) = existing else {
        return Ok(());
    };
    let dir = if near.is_dir() {
        near.clone()
    } else {
        near.parent().map(Path::to_path_buf).unwrap_or(near.clone())
    };
    let Some(top) = git(&dir, &["rev-parse", "--show-toplevel"]).and_then(|o| o.ok()) else {
        return Ok(()); // not in a work tree, or no git installed
    };
    let top = top.trim().to_string();
    let p = path.to_string_lossy();
    if path.exists()
        && git(&dir, &["ls-files", "--error-unmatch", "--", &p])
            .and_then(|o| o.ok())
            .is_some()
    {
        return refuse(format!("git tracks it (work tree {top})"));
    }
    match git(&dir, &["check-ignore", "-q", "--", &p]) {
        Some(Ok(_)) => Ok(()),
        _ => refuse(format!(
            "it is inside the git work tree {top} and not ignored, so it could be committed"
        )),
    }
}

/// The path itself if it exists, else its closest existing ancestor
/// (canonicalised).
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    let mut p = Some(path);
    while let Some(cur) = p {
        if let Ok(c) = cur.canonicalize() {
            return Some(c);
        }
        p = cur.parent();
    }
    None
}

/// Run git quietly: `None` when git cannot run, `Some(Err)` on a non-zero exit.
fn git(dir: &Path, args: &[&str]) -> Option<std::result::Result<String, ()>> {
    let out = crate::git::command(dir, crate::git::Scope::Isolated)
        .args(args)
        .output()
        .ok()?;
    Some(if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(())
    })
}

/// Load the private key `id` from the key folder (mode and location checked).
pub fn load(id: &str, repo_root: Option<&Path>) -> Result<SigningKeyPair> {
    let path = key_path(id)?;
    if !path.exists() {
        return Err(KeyError::Missing {
            path,
            id: id.to_string(),
        }
        .into());
    }
    guard_path(&path, repo_root)?;
    SigningKeyPair::load(&path).map_err(|e| Error::Invalid(e.to_string()))
}

/// A key the manifest declares under `ctx.keys` that cannot be used: which
/// key, which field, what was expected and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedKey {
    /// The declared key id (empty when the whole `ctx.keys` block is malformed).
    pub id: String,
    /// The manifest file.
    pub file: String,
    /// Dotted path in the manifest, e.g. `extensions.ctx.keys.release-bot.ed25519`.
    pub field: String,
    pub expected: String,
    pub actual: String,
}

impl std::fmt::Display for MalformedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: expected {}, found {}",
            self.file, self.field, self.expected, self.actual
        )
    }
}

/// The manifest's trusted keys, and the declared keys that are malformed.
#[derive(Debug, Clone, Default)]
pub struct Trusted {
    pub keys: BTreeMap<String, PublicKey>,
    pub malformed: Vec<MalformedKey>,
}

impl Trusted {
    /// The malformed declaration of `id`, if that is why it is not trusted.
    pub fn malformed(&self, id: &str) -> Option<&MalformedKey> {
        self.malformed.iter().find(|k| k.id == id)
    }
}

/// Read `extensions.ctx.keys`: usable keys, and each malformed entry.
pub fn trusted(m: &Manifest) -> Trusted {
    let mut t = Trusted::default();
    let Some(ext) = m.extension(EXTENSION) else {
        return t;
    };
    let Some(map) = ext.as_object() else {
        t.malformed.push(MalformedKey {
            id: String::new(),
            file: m.file.clone(),
            field: format!("extensions.{EXTENSION}"),
            expected: "a mapping of key id to {ed25519: <base64>}".into(),
            actual: ext.to_string(),
        });
        return t;
    };
    for (id, entry) in map {
        match PublicKey::from_manifest_entry(entry) {
            Ok(k) => {
                t.keys.insert(id.clone(), k);
            }
            Err(e) => {
                let (field, expected, actual) = match e {
                    SignatureError::Format {
                        what: "ctx.keys entry",
                        expected,
                        actual,
                    } => (format!("extensions.{EXTENSION}.{id}"), expected, actual),
                    SignatureError::Format {
                        what,
                        expected,
                        actual,
                    } => (
                        format!("extensions.{EXTENSION}.{id}.ed25519"),
                        format!("{expected} ({what})"),
                        actual,
                    ),
                    other => (
                        format!("extensions.{EXTENSION}.{id}"),
                        "an Ed25519 public key".into(),
                        other.to_string(),
                    ),
                };
                t.malformed.push(MalformedKey {
                    id: id.clone(),
                    file: m.file.clone(),
                    field,
                    expected,
                    actual,
                });
            }
        }
    }
    t
}

/// The public keys the manifest trusts, and a message per malformed entry.
pub fn declared(m: &Manifest) -> (BTreeMap<String, PublicKey>, Vec<String>) {
    let t = trusted(m);
    let errors = t.malformed.iter().map(ToString::to_string).collect();
    (t.keys, errors)
}

/// The key to sign with: `--key ID`, else the only declared key whose
/// private half is present here. The private key must match the declared
/// public key, so nothing is signed that the repository would not trust.
pub fn signing_key(m: &Manifest, wanted: Option<&str>) -> Result<(String, SigningKeyPair)> {
    let trust = trusted(m);
    let declared = &trust.keys;
    let id = match wanted {
        Some(id) => id.to_string(),
        None => {
            let local = local_keys()?;
            let usable: Vec<&String> = declared.keys().filter(|k| local.contains_key(*k)).collect();
            match usable.as_slice() {
                [one] => (*one).clone(),
                [] => {
                    if let Some(bad) = trust.malformed.iter().find(|k| local.contains_key(&k.id)) {
                        return Err(KeyError::Malformed {
                            id: bad.id.clone(),
                            detail: bad.to_string(),
                        }
                        .into());
                    }
                    return Err(KeyError::NoSigningKey {
                        manifest: m.file.clone(),
                        folder: key_dir()?,
                    }
                    .into());
                }
                many => {
                    return Err(KeyError::Ambiguous {
                        ids: many.iter().map(|s| s.to_string()).collect(),
                    }
                    .into())
                }
            }
        }
    };
    check_id(&id)?;
    let Some(public) = declared.get(&id) else {
        if let Some(bad) = trust.malformed(&id) {
            return Err(KeyError::Malformed {
                id,
                detail: bad.to_string(),
            }
            .into());
        }
        return Err(KeyError::NotDeclared {
            id,
            manifest: m.file.clone(),
            notes: trust.malformed.iter().map(ToString::to_string).collect(),
        }
        .into());
    };
    let pair = load(&id, Some(&m.root))?;
    if pair.public_key() != *public {
        return Err(KeyError::Mismatch {
            path: key_path(&id)?,
            manifest: m.file.clone(),
            expected: public.fingerprint(),
            found: pair.public_key().fingerprint(),
            id,
        }
        .into());
    }
    Ok((id, pair))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_file_names() {
        assert!(check_id("release-bot").is_ok());
        assert!(check_id("ci.key_2").is_ok());
        for bad in ["", "-x", ".hidden", "a/b", "A", "a b", "ä", &"x".repeat(65)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }
}
