//! The key chain of a personal vault, after seed 004 §3, with age doing the encryption:
//!
//! ```text
//! profile password + secret key (128-bit, on this device only)
//!   └─ Argon2id (64 MiB, 3 iterations; the secret key is Argon2's secret input K)
//!        └─ context key (256-bit, memory only)
//!             └─ HKDF-SHA256 (salt = vault id, info = "ctx.personal.v1 category NAME")
//!                  └─ category subkey = the category's age X25519 secret key
//! ```
//!
//! The category's recipient is the public key of that identity, so every field is an
//! ordinary age file that the `age` CLI opens with the derived identity
//! (`ctx private export-identity`). Three more subkeys (purposes `state`, `audit`,
//! `archive`) seal the token store, the audit log and exports, and a fourth
//! (`integrity`) is the MAC key that authenticates every file ([`super::integrity`]).
//!
//! Key material lives in [`Zeroizing`] buffers and age identities (which wipe their
//! secret on drop); [`lock_memory`] asks the OS not to swap the pages that hold it.

use std::path::{Path, PathBuf};

use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};

/// Argon2id parameters; the seed's minimum is 64 MiB and 3 iterations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KdfParams {
    pub memory_kib: u32,
    pub iterations: u32,
    pub parallelism: u32,
    /// 16 random bytes, stored in clear in the manifest.
    pub salt: Vec<u8>,
}

/// Below these the vault refuses to derive (a lowered setting is tampering, not a choice).
pub const MIN_MEMORY_KIB: u32 = 64 * 1024;
pub const MIN_ITERATIONS: u32 = 3;

impl KdfParams {
    /// Fresh parameters at the seed's values with a random salt.
    pub fn generate() -> Result<KdfParams> {
        Ok(KdfParams {
            memory_kib: MIN_MEMORY_KIB,
            iterations: MIN_ITERATIONS,
            parallelism: 1,
            salt: random_bytes::<16>()?.to_vec(),
        })
    }

    /// Fail closed on parameters weaker than the seed's.
    pub fn check(&self) -> Result<()> {
        if self.memory_kib < MIN_MEMORY_KIB || self.iterations < MIN_ITERATIONS {
            return Err(Error::Invalid(format!(
                "key derivation parameters are weaker than 64 MiB / 3 iterations (found {} KiB / {})",
                self.memory_kib, self.iterations
            )));
        }
        if !(1..=16).contains(&self.parallelism) || self.salt.len() < 16 {
            return Err(Error::Invalid(
                "key derivation needs parallelism 1..16 and a salt of at least 16 bytes".into(),
            ));
        }
        if self.memory_kib > 4 * 1024 * 1024 || self.iterations > 64 {
            return Err(Error::Invalid(
                "key derivation parameters are implausibly large (over 4 GiB or 64 iterations)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Random bytes from the OS.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b)
        .map_err(|e| Error::Invalid(format!("no randomness from the OS: {e}")))?;
    Ok(b)
}

/// The 128-bit secret key: what the user *has* (the password is what they know).
pub struct SecretKey(Zeroizing<[u8; 16]>);

const SECRET_PREFIX: &str = "ctxsk-";

/// Text that is not a secret key (never quoted: it may be most of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a secret key is `{SECRET_PREFIX}` followed by 32 hexadecimal digits")]
pub struct SecretKeyError;

impl SecretKey {
    pub fn generate() -> Result<SecretKey> {
        Ok(SecretKey(Zeroizing::new(random_bytes::<16>()?)))
    }

    /// `ctxsk-` + 32 hex digits in four groups; case, spaces and dashes are ignored.
    pub fn parse(text: &str) -> std::result::Result<SecretKey, SecretKeyError> {
        let t = text.trim();
        let t = t
            .strip_prefix(SECRET_PREFIX)
            .or_else(|| t.strip_prefix("CTXSK-"))
            .unwrap_or(t);
        let mut digits: Zeroizing<String> = Zeroizing::new(
            t.chars()
                .filter(|c| *c != '-' && !c.is_whitespace())
                .collect(),
        );
        digits.make_ascii_lowercase();
        let mut out = Zeroizing::new([0u8; 16]);
        if digits.len() != 32 || hex::decode_to_slice(digits.as_bytes(), &mut out[..]).is_err() {
            return Err(SecretKeyError);
        }
        Ok(SecretKey(out))
    }

    pub fn display(&self) -> Zeroizing<String> {
        let h = Zeroizing::new(hex::encode(&self.0[..]));
        Zeroizing::new(format!(
            "{SECRET_PREFIX}{}-{}-{}-{}",
            &h[0..8],
            &h[8..16],
            &h[16..24],
            &h[24..32]
        ))
    }

    fn bytes(&self) -> &[u8] {
        &self.0[..]
    }
}

/// Argon2id(password, salt, K = secret key) → the 256-bit context key.
pub fn context_key(
    password: &[u8],
    secret: &SecretKey,
    p: &KdfParams,
) -> Result<Zeroizing<[u8; 32]>> {
    p.check()?;
    let params = argon2::Params::new(p.memory_kib, p.iterations, p.parallelism, Some(32))
        .map_err(|e| Error::Invalid(format!("key derivation parameters: {e}")))?;
    let kdf = argon2::Argon2::new_with_secret(
        secret.bytes(),
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        params,
    )
    .map_err(|e| Error::Invalid(format!("key derivation: {e}")))?;
    let mut out = Zeroizing::new([0u8; 32]);
    kdf.hash_password_into(password, &p.salt, &mut out[..])
        .map_err(|e| Error::Invalid(format!("key derivation: {e}")))?;
    Ok(out)
}

/// What a subkey is for: one category, or one of the vault's own stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose<'a> {
    Category(&'a str),
    State,
    Audit,
    Archive,
    /// The MAC key that authenticates every file of the vault ([`super::integrity`]).
    Integrity,
}

impl Purpose<'_> {
    fn info(&self) -> String {
        match self {
            Purpose::Category(c) => format!("ctx.personal.v1 category {c}"),
            Purpose::State => "ctx.personal.v1 purpose state".into(),
            Purpose::Audit => "ctx.personal.v1 purpose audit".into(),
            Purpose::Archive => "ctx.personal.v1 purpose archive".into(),
            Purpose::Integrity => "ctx.personal.v1 purpose integrity".into(),
        }
    }
}

/// HKDF-SHA256(context key; salt = vault id; info = purpose) → a 32-byte subkey.
pub fn subkey(context: &[u8; 32], vault: &str, purpose: Purpose<'_>) -> Zeroizing<[u8; 32]> {
    let hk = Hkdf::<Sha256>::new(Some(vault.as_bytes()), &context[..]);
    let mut out = Zeroizing::new([0u8; 32]);
    hk.expand(purpose.info().as_bytes(), &mut out[..])
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    out
}

/// The age X25519 identity whose secret scalar is `subkey` (age clamps it on use).
pub fn identity_of(subkey: &[u8; 32]) -> age::x25519::Identity {
    let mut text = Zeroizing::new(secret_key_text(subkey));
    let id = text
        .parse::<age::x25519::Identity>()
        .expect("a bech32 AGE-SECRET-KEY of 32 bytes parses");
    text.zeroize();
    id
}

/// `AGE-SECRET-KEY-1…`: the text age identity files hold, for 32 secret bytes.
pub fn secret_key_text(subkey: &[u8; 32]) -> String {
    let hrp = bech32::Hrp::parse("age-secret-key-").expect("valid hrp");
    let mut s = bech32::encode::<bech32::Bech32>(hrp, &subkey[..]).expect("32 bytes encode");
    s.make_ascii_uppercase();
    s
}

/// Every key an unlocked vault holds: the context key and what derives from it.
pub struct VaultKeys {
    /// Boxed so the key stays at the address that was mlocked.
    context: Box<Zeroizing<[u8; 32]>>,
    vault: String,
}

impl VaultKeys {
    /// Derive from password and secret key (slow: Argon2id).
    pub fn derive(
        password: &[u8],
        secret: &SecretKey,
        params: &KdfParams,
        vault: &str,
    ) -> Result<VaultKeys> {
        let context = Box::new(context_key(password, secret, params)?);
        lock_memory(&context[..]);
        Ok(VaultKeys {
            context,
            vault: vault.to_string(),
        })
    }

    pub fn subkey(&self, p: Purpose<'_>) -> Zeroizing<[u8; 32]> {
        subkey(&self.context, &self.vault, p)
    }

    pub fn identity(&self, p: Purpose<'_>) -> age::x25519::Identity {
        identity_of(&self.subkey(p))
    }

    /// The key every tag of this vault is made with.
    pub fn mac_key(&self) -> super::integrity::MacKey {
        super::integrity::MacKey::new(self.subkey(Purpose::Integrity))
    }

    /// The public key (`age1…`) for a purpose.
    pub fn recipient(&self, p: Purpose<'_>) -> String {
        self.identity(p).to_public().to_string()
    }

    /// `AGE-SECRET-KEY-1…` for a purpose (what `export-identity` prints).
    pub fn secret_text(&self, p: Purpose<'_>) -> Zeroizing<String> {
        Zeroizing::new(secret_key_text(&self.subkey(p)))
    }

    /// A keyring holding the one identity of a purpose.
    pub fn keyring(&self, p: Purpose<'_>) -> crate::private::Keyring {
        crate::private::Keyring::from_keys(vec![crate::private::identity::Key::x25519(
            self.identity(p),
        )])
    }
}

/// Derive the keys and check them against the manifest (the derived `state` key is
/// recorded there): a wrong password or secret key is an error, never other keys.
pub fn unlock_keys(
    cfg: &super::config::PersonalConfig,
    password: &[u8],
    secret: &SecretKey,
) -> Result<VaultKeys> {
    let k = VaultKeys::derive(password, secret, &cfg.kdf, &cfg.vault)?;
    if k.recipient(Purpose::State) != cfg.state_recipient {
        return Err(Error::Invalid("wrong password or secret key".into()));
    }
    Ok(k)
}

/// An age identity file holding the derived identities of `categories` (and, with
/// `stores`, of the token store, audit log and archives), one commented key each.
pub fn identity_file(
    cfg: &super::config::PersonalConfig,
    k: &VaultKeys,
    categories: &[String],
    stores: bool,
) -> Zeroizing<String> {
    let mut out = Zeroizing::new(format!(
        "# Derived age identities of personal vault {} (ctx private export-identity).\n\
         # Whoever holds these lines reads the vault: keep them off disk, or in a file only you can read.\n",
        cfg.vault
    ));
    let mut add = |label: String, p: Purpose<'_>| {
        out.push_str(&format!("# {label}: {}\n", k.recipient(p)));
        out.push_str(&k.secret_text(p));
        out.push('\n');
    };
    for c in categories {
        add(format!("category {c}"), Purpose::Category(c));
    }
    if stores {
        add("token store".into(), Purpose::State);
        add("audit log".into(), Purpose::Audit);
        add("archives".into(), Purpose::Archive);
    }
    out
}

/// Ask the OS to keep these pages out of swap (best effort; see docs/personal.md).
pub fn lock_memory(bytes: &[u8]) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: mlock only pins the pages containing this live buffer.
        unsafe { libc::mlock(bytes.as_ptr().cast(), bytes.len()) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = bytes;
        false
    }
}

/// ctx's per-user config folder: `$XDG_CONFIG_HOME/ctx`, else `~/.config/ctx`.
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|b| b.join("ctx"))
}

/// Where the secret key of `vault` is kept: `<config>/personal/<vault>.key` (0600).
pub fn secret_key_path(vault: &str) -> Result<PathBuf> {
    let dir = config_dir()
        .ok_or_else(|| Error::Usage("no config folder: set HOME or XDG_CONFIG_HOME".into()))?;
    Ok(dir.join("personal").join(format!("{vault}.key")))
}

/// Write a new secret key file (0600, folder 0700); never replaces an existing one.
pub fn store_secret_key(path: &Path, vault: &str, key: &SecretKey) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    let text = Zeroizing::new(format!(
        "# ctx personal vault secret key. Keep a copy offline (a password manager, paper):\n\
         # without it and the password the vault cannot be opened. Never put it in the repository.\n\
         vault: {vault}\nsecret_key: {}\n",
        key.display().as_str()
    ));
    crate::fs::write_atomic(path, text.as_bytes(), Mode::Private, Existing::Refuse).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::Invalid(format!(
                "{} already exists: a vault with this id already has a secret key on this device",
                path.display()
            ))
        } else {
            Error::io(path, &e)
        }
    })
}

/// Read the secret key of `vault` from its file (or a file given explicitly).
pub fn load_secret_key(path: &Path, vault: &str) -> Result<SecretKey> {
    let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound(format!(
                "no secret key for vault {vault} at {}: copy it from the device where the vault was created (docs/personal.md, \"The secret key\")",
                path.display()
            ))
        } else {
            Error::io(path, &e)
        }
    })?);
    let mut key = None;
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("vault:") {
            if v.trim() != vault {
                return Err(Error::Invalid(format!(
                    "{} holds the secret key of vault {}, not {vault}",
                    path.display(),
                    v.trim()
                )));
            }
        } else if let Some(v) = line.strip_prefix("secret_key:") {
            key = Some(v.trim().to_string());
        } else if line.starts_with(SECRET_PREFIX) {
            key = Some(line.to_string());
        }
    }
    let key = Zeroizing::new(
        key.ok_or_else(|| Error::Invalid(format!("{}: no `secret_key:` line", path.display())))?,
    );
    SecretKey::parse(&key).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
}

/// Shortest profile password not warned about.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// Passwords and patterns people pick first; a guesser tries them first too.
const COMMON: [&str; 23] = [
    "password",
    "passw0rd",
    "123456",
    "12345678",
    "123456789",
    "1234567890",
    "qwerty",
    "qwertyuiop",
    "letmein",
    "iloveyou",
    "admin",
    "welcome",
    "monkey",
    "dragon",
    "football",
    "baseball",
    "abc123",
    "111111",
    "sunshine",
    "princess",
    "trustno1",
    "secret",
    "changeme",
];

/// Why a profile password is weak, or `None`. Seed 004's secret key keeps a stolen
/// vault out of reach of guessing, but the password alone guards the vault on this
/// device (the key sits beside it), so a weak one is worth a warning. A warning, not
/// a refusal: the user may know their threat model.
pub fn password_weakness(password: &str) -> Option<String> {
    let chars = password.chars().count();
    let folded: String = password
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let distinct: std::collections::BTreeSet<char> = password.chars().collect();
    if COMMON
        .iter()
        .any(|c| folded == *c || folded.trim_end_matches(|d: char| d.is_ascii_digit()) == *c)
    {
        return Some("it is one of the most common passwords".into());
    }
    if chars < MIN_PASSWORD_CHARS {
        return Some(format!(
            "it has {chars} characters; use at least {MIN_PASSWORD_CHARS}, e.g. four or more random words"
        ));
    }
    if distinct.len() <= 3 {
        return Some(format!("it repeats {} distinct characters", distinct.len()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_key_round_trips_and_rejects_junk() {
        let k = SecretKey::generate().unwrap();
        let shown = k.display();
        assert!(shown.starts_with("ctxsk-") && shown.len() == 6 + 32 + 3);
        let back = SecretKey::parse(&shown.to_uppercase()).unwrap();
        assert_eq!(back.bytes(), k.bytes());
        assert_eq!(
            SecretKey::parse("ctxsk-1234")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("a secret key is `ctxsk-` followed by 32 hexadecimal digits")
        );
        assert!(SecretKey::parse(&format!("{}zz", &shown[..shown.len() - 2])).is_err());
    }

    #[test]
    fn subkeys_are_distinct_and_identities_deterministic() {
        let ctx = [7u8; 32];
        let a = subkey(&ctx, "v1", Purpose::Category("identity"));
        let b = subkey(&ctx, "v1", Purpose::Category("financial"));
        let c = subkey(&ctx, "v2", Purpose::Category("identity"));
        assert_ne!(*a, *b);
        assert_ne!(*a, *c);
        let i1 = identity_of(&a).to_public().to_string();
        let i2 = identity_of(&a).to_public().to_string();
        assert_eq!(i1, i2);
        assert!(i1.starts_with("age1"));
        assert!(secret_key_text(&a).starts_with("AGE-SECRET-KEY-1"));
    }

    #[test]
    fn weak_parameters_are_refused() {
        let mut p = KdfParams::generate().unwrap();
        assert!(p.check().is_ok());
        p.memory_kib = 1024;
        assert!(p.check().is_err());
    }

    #[test]
    fn derivation_needs_both_secrets() {
        let p = KdfParams::generate().unwrap();
        let k = SecretKey::generate().unwrap();
        let other = SecretKey::generate().unwrap();
        let a = context_key(b"pw", &k, &p).unwrap();
        assert_eq!(*a, *context_key(b"pw", &k, &p).unwrap());
        assert_ne!(*a, *context_key(b"pw2", &k, &p).unwrap());
        assert_ne!(*a, *context_key(b"pw", &other, &p).unwrap());
    }

    #[test]
    fn weak_passwords_are_named_and_good_ones_pass() {
        for weak in [
            "short",
            "Password123",
            "qwerty",
            "aaaaaaaaaaaaaaaa",
            "abababababababab",
            "Letmein2024",
        ] {
            assert!(password_weakness(weak).is_some(), "{weak}");
        }
        assert!(password_weakness("short").unwrap().contains("5 characters"));
        for good in ["a long profile password", "violet tractor ninety swim"] {
            assert_eq!(password_weakness(good), None, "{good}");
        }
    }
}
