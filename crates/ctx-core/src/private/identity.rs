//! Where the decrypting identity comes from: `--identity FILE` (repeatable), else
//! `CTX_AGE_IDENTITY` (a path), else `$XDG_CONFIG_HOME/ctx/age/identity.txt`
//! (`~/.config/ctx/age/identity.txt`). Files are age identity files (optionally
//! passphrase-protected, as `age -p` writes them) or OpenSSH private keys
//! (optionally passphrase-protected). Keys load on first use, so a passphrase is
//! asked for only when something actually needs decrypting.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use age::secrecy::SecretString;
use zeroize::Zeroizing;

use super::config::short;
use super::format::BEGIN;
use super::IdentityError;

/// The environment variable naming an identity file.
pub const ENV_IDENTITY: &str = "CTX_AGE_IDENTITY";
/// For non-interactive use only: the passphrase of a protected identity file.
pub const ENV_PASSPHRASE: &str = "CTX_AGE_PASSPHRASE";

/// How an identity file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env,
    Default,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Flag => "--identity",
            Origin::Env => ENV_IDENTITY,
            Origin::Default => "default",
        }
    }
}

/// One private key, with a public label that is safe to print.
pub struct Key {
    identity: Box<dyn age::Identity + Send + Sync>,
    /// The matching public key (`age1…`, or `ssh-ed25519 SHA256:…`).
    pub label: String,
    /// Index into [`Keyring::sources`].
    pub source: usize,
}

impl Key {
    pub fn x25519(id: age::x25519::Identity) -> Key {
        Key {
            label: id.to_public().to_string(),
            identity: Box::new(id),
            source: 0,
        }
    }

    pub fn identity(&self) -> &(dyn age::Identity + Send + Sync) {
        self.identity.as_ref()
    }
}

/// An identity file and how it was chosen.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub origin: Origin,
}

/// The identity files of one run; keys are read on first use and kept in memory only.
pub struct Keyring {
    pub sources: Vec<Source>,
    loaded: OnceLock<Result<Vec<Key>, IdentityError>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}

/// `$XDG_CONFIG_HOME/ctx/age/identity.txt`, or `~/.config/ctx/age/identity.txt`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("ctx").join("age").join("identity.txt"))
}

impl Keyring {
    /// Find the identity files for this run. An explicitly named file that does not
    /// exist is an error; a missing default file just means "no identity".
    ///
    /// Every run that looks for an identity also sweeps plaintext folders
    /// left by killed `private edit` runs ([`super::scratch::sweep_stale`]).
    pub fn discover(flags: &[PathBuf]) -> Result<Option<Keyring>, IdentityError> {
        super::scratch::sweep_stale();
        let sources: Vec<Source> = if !flags.is_empty() {
            flags
                .iter()
                .map(|p| Source {
                    path: p.clone(),
                    origin: Origin::Flag,
                })
                .collect()
        } else if let Some(p) = std::env::var_os(ENV_IDENTITY).filter(|v| !v.is_empty()) {
            vec![Source {
                path: PathBuf::from(p),
                origin: Origin::Env,
            }]
        } else {
            match default_path().filter(|p| p.is_file()) {
                Some(path) => vec![Source {
                    path,
                    origin: Origin::Default,
                }],
                None => return Ok(None),
            }
        };
        for s in &sources {
            if !s.path.is_file() {
                return Err(IdentityError::Missing {
                    path: s.path.clone(),
                    origin: s.origin.as_str(),
                });
            }
        }
        Ok(Some(Keyring {
            sources,
            loaded: OnceLock::new(),
        }))
    }

    /// A keyring of keys already in memory (tests, and callers that generate keys).
    pub fn from_keys(keys: Vec<Key>) -> Keyring {
        let k = Keyring {
            sources: vec![Source {
                path: PathBuf::from("<memory>"),
                origin: Origin::Flag,
            }],
            loaded: OnceLock::new(),
        };
        let _ = k.loaded.set(Ok(keys));
        k
    }

    /// The keys, read (and passphrases asked for) on first call.
    pub fn keys(&self) -> Result<&[Key], IdentityError> {
        let loaded = self.loaded.get_or_init(|| {
            let mut keys = Vec::new();
            for (n, s) in self.sources.iter().enumerate() {
                for mut k in load_file(&s.path)? {
                    k.source = n;
                    keys.push(k);
                }
            }
            Ok(keys)
        });
        loaded.as_deref().map_err(Clone::clone)
    }

    /// "path (origin)" for each source: which identity a run used.
    pub fn describe(&self) -> String {
        self.sources
            .iter()
            .map(|s| format!("{} ({})", s.path.display(), s.origin.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// "age1… from path" for a key that opened something.
    pub fn key_label(&self, index: usize) -> String {
        match self.keys().ok().and_then(|k| k.get(index)) {
            Some(k) => format!(
                "{} from {}",
                k.label,
                self.sources
                    .get(k.source)
                    .map(|s| s.path.display().to_string())
                    .unwrap_or_default()
            ),
            None => "unknown key".into(),
        }
    }

    /// Group- or world-readable identity files, for a warning (like ssh does).
    pub fn loose_permissions(&self) -> Vec<PathBuf> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            self.sources
                .iter()
                .filter(|s| {
                    std::fs::metadata(&s.path)
                        .map(|m| m.permissions().mode() & 0o077 != 0)
                        .unwrap_or(false)
                })
                .map(|s| s.path.clone())
                .collect()
        }
        #[cfg(not(unix))]
        Vec::new()
    }
}

/// Ask for a passphrase: `CTX_AGE_PASSPHRASE` when set, else the terminal (no echo).
fn passphrase(what: &Path) -> Result<SecretString, IdentityError> {
    if let Ok(p) = std::env::var(ENV_PASSPHRASE) {
        return Ok(SecretString::from(p));
    }
    rpassword::prompt_password(format!("Passphrase for {}: ", what.display()))
        .map(SecretString::from)
        .map_err(|_| IdentityError::NoTerminal {
            path: what.to_path_buf(),
        })
}

/// Read every key of one identity file.
pub fn load_file(path: &Path) -> Result<Vec<Key>, IdentityError> {
    let bytes = Zeroizing::new(std::fs::read(path).map_err(|e| IdentityError::Unreadable {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?);
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64)])
        .trim_start()
        .to_string();
    if bytes.starts_with(b"age-encryption.org/") || head.starts_with(BEGIN) {
        return load_protected(path, &bytes);
    }
    if head.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----")
        || head.starts_with("-----BEGIN RSA PRIVATE KEY-----")
    {
        return load_ssh(path, &bytes).map(|k| vec![k]);
    }
    parse_age_keys(path, &bytes)
}

/// An identity file encrypted with a passphrase (`age -p -o key.age key.txt`).
fn load_protected(path: &Path, bytes: &[u8]) -> Result<Vec<Key>, IdentityError> {
    let path_buf = || path.to_path_buf();
    let d = age::Decryptor::new(age::armor::ArmoredReader::new(bytes)).map_err(|e| {
        IdentityError::NotAgeFile {
            path: path_buf(),
            why: e.to_string(),
        }
    })?;
    if !d.is_scrypt() {
        return Err(IdentityError::NotPassphrase { path: path_buf() });
    }
    let pass = passphrase(path)?;
    let id = age::scrypt::Identity::new(pass);
    let mut reader = d
        .decrypt(std::iter::once(&id as &dyn age::Identity))
        .map_err(|e| match e {
            age::DecryptError::DecryptionFailed | age::DecryptError::NoMatchingKeys => {
                IdentityError::WrongPassphrase {
                    path: path_buf(),
                    ssh: false,
                }
            }
            other => IdentityError::Decrypt {
                path: path_buf(),
                why: other.to_string(),
            },
        })?;
    let mut inner = Zeroizing::new(Vec::new());
    reader
        .read_to_end(&mut inner)
        .map_err(|e| IdentityError::Decrypt {
            path: path_buf(),
            why: e.to_string(),
        })?;
    parse_age_keys(path, &inner)
}

/// An OpenSSH private key (ed25519 or RSA), possibly passphrase-protected.
fn load_ssh(path: &Path, bytes: &[u8]) -> Result<Key, IdentityError> {
    let unsupported = |why: String| IdentityError::Unsupported {
        path: path.to_path_buf(),
        why,
    };
    let id = age::ssh::Identity::from_buffer(bytes, Some(path.display().to_string()))
        .map_err(|e| unsupported(e.to_string()))?;
    let label = age::ssh::Recipient::try_from(id.clone())
        .map(|r| short(&r.to_string()))
        .map_err(|e| unsupported(format!("unsupported SSH key ({e:?})")))?;
    let id = match id {
        age::ssh::Identity::Unencrypted(_) => id,
        age::ssh::Identity::Encrypted(k) => {
            let pass = passphrase(path)?;
            age::ssh::Identity::from(k.decrypt(pass).map_err(|_| {
                IdentityError::WrongPassphrase {
                    path: path.to_path_buf(),
                    ssh: true,
                }
            })?)
        }
        age::ssh::Identity::Unsupported(_) => {
            return Err(unsupported(
                "this SSH key type is not supported (use ed25519 or RSA)".into(),
            ))
        }
    };
    Ok(Key {
        identity: Box::new(id),
        label,
        source: 0,
    })
}

/// `AGE-SECRET-KEY-1…` lines; `#` comments and blank lines are skipped. A bad line is
/// reported by number only: its text may be secret.
fn parse_age_keys(path: &Path, bytes: &[u8]) -> Result<Vec<Key>, IdentityError> {
    let path_buf = || path.to_path_buf();
    let text =
        std::str::from_utf8(bytes).map_err(|_| IdentityError::NotText { path: path_buf() })?;
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("AGE-PLUGIN-") {
            return Err(IdentityError::Plugin {
                path: path_buf(),
                line: n + 1,
            });
        }
        let id: age::x25519::Identity = line.parse().map_err(|_| IdentityError::BadLine {
            path: path_buf(),
            line: n + 1,
        })?;
        keys.push(Key::x25519(id));
    }
    if keys.is_empty() {
        return Err(IdentityError::Empty { path: path_buf() });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;

    #[test]
    fn parses_identity_files_and_hides_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let id = age::x25519::Identity::generate();
        let p = dir.path().join("id.txt");
        std::fs::write(
            &p,
            format!(
                "# created: now\n# public key: x\n{}\n",
                id.to_string().expose_secret()
            ),
        )
        .unwrap();
        let keys = load_file(&p).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].label, id.to_public().to_string());

        std::fs::write(&p, "AGE-SECRET-KEY-1SECRETBUTBROKEN\n").unwrap();
        let e = load_file(&p).err().unwrap().to_string();
        assert!(
            e.contains("line 1") && !e.contains("SECRETBUTBROKEN"),
            "{e}"
        );
    }

    #[test]
    fn passphrase_protected_identity_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = age::x25519::Identity::generate();
        let inner = format!("{}\n", id.to_string().expose_secret());
        let enc =
            age::Encryptor::with_user_passphrase(SecretString::from("correct horse".to_string()));
        let mut out = Vec::new();
        let armored =
            age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor)
                .unwrap();
        let mut w = enc.wrap_output(armored).unwrap();
        std::io::Write::write_all(&mut w, inner.as_bytes()).unwrap();
        w.finish().unwrap().finish().unwrap();
        let p = dir.path().join("id.age");
        std::fs::write(&p, &out).unwrap();
        // The passphrase comes from the environment only in this test process.
        std::env::set_var(ENV_PASSPHRASE, "correct horse");
        let keys = load_file(&p);
        std::env::set_var(ENV_PASSPHRASE, "wrong");
        let wrong = load_file(&p);
        std::env::remove_var(ENV_PASSPHRASE);
        assert_eq!(keys.unwrap()[0].label, id.to_public().to_string());
        assert!(wrong
            .err()
            .unwrap()
            .to_string()
            .contains("wrong passphrase"));
    }
}
