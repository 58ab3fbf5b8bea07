//! The vault's token store: registered consumers and service tokens, sealed with
//! age to the vault's derived `state` key in `.ctx/personal/state.age`. It is read
//! at unlock and rewritten (atomically) when it changes; session tokens are never
//! stored. Hashes only: the file holds no token and no consumer secret.
//!
//! The `state` key is public (the manifest records it), so sealing proves nothing:
//! the store also carries a generation and a tag under the vault's MAC key
//! ([`super::integrity`]), and a store whose tag fails, or that is older than the
//! index lists, is not honoured — its consumers and tokens do not exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};
use crate::private::config::Recipient;
use crate::private::Keyring;

use super::integrity::{self, MacKey, Unsealed, Verdict, GENERATION, MAC};
use super::ledger::{Ledger, Problem};
use super::tokens::{Consumer, TokenRecord};

const FORMAT: &str = "ctx.personal-state.v1";
pub const FILE: &str = "state.age";
/// Where a refused store is kept when a new one replaces it.
pub const REFUSED: &str = "state.refused.age";
/// The name the store's tag binds it to (its path in the repository).
pub const TAG_NAME: &str = ".ctx/personal/state.age";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stored {
    pub format: String,
    pub consumers: BTreeMap<String, Consumer>,
    /// Service tokens (never session tokens).
    pub tokens: Vec<TokenRecord>,
}

pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// What unlock found in the store.
#[derive(Debug, Default)]
pub struct Loaded {
    pub stored: Stored,
    /// Why the file is not honoured (then `stored` is empty).
    pub problem: Option<Problem>,
    /// The store was written after the index last was (a crash): its generation.
    pub ahead: Option<u64>,
}

fn empty() -> Stored {
    Stored {
        format: FORMAT.into(),
        ..Stored::default()
    }
}

fn refused(error: String) -> Loaded {
    Loaded {
        stored: empty(),
        problem: Some(Problem {
            file: TAG_NAME.into(),
            field: None,
            error,
            fix: "its consumers and service tokens are not honoured: register the consumers you \
                  trust again; the next change keeps this file as .ctx/personal/state.refused.age"
                .into(),
        }),
        ahead: None,
    }
}

/// Decrypt and parse the store (no authentication yet).
fn read(file: &Path, ring: &Keyring) -> std::result::Result<Option<Value>, String> {
    let armor = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("it cannot be read ({e})")),
    };
    let (plain, _) = crate::private::ops::decrypt(TAG_NAME, &armor, Some(ring)).map_err(|e| {
        format!(
            "it does not open with this vault's state key ({})",
            e.reason()
        )
    })?;
    serde_json::from_str(&plain)
        .map(Some)
        .map_err(|_| "it is not a token store".to_string())
}

fn parse(mut v: Value) -> std::result::Result<Stored, String> {
    if let Some(o) = v.as_object_mut() {
        o.remove(MAC);
        o.remove(GENERATION);
    }
    let stored: Stored =
        serde_json::from_value(v).map_err(|e| format!("it is not a token store ({e})"))?;
    if stored.format != FORMAT {
        return Err(format!("format {:?}, expected {FORMAT:?}", stored.format));
    }
    Ok(stored)
}

/// Read the store at unlock, authenticated against the index; a vault that never
/// stored anything has an empty one. Never an error: a store that fails is
/// reported and not honoured.
pub fn load(file: &Path, ring: &Keyring, ledger: &Ledger) -> Loaded {
    let listed = ledger.index().state;
    let v = match read(file, ring) {
        Ok(Some(v)) => v,
        Ok(None) if listed.is_some() => {
            return refused(format!(
                "missing: the vault's index lists generation {}, but the file is gone",
                listed.unwrap_or_default()
            ))
        }
        Ok(None) => {
            return Loaded {
                stored: empty(),
                ..Loaded::default()
            }
        }
        Err(why) => return refused(why),
    };
    let g = match integrity::open(ledger.key(), "state", TAG_NAME, &v, &[]) {
        Ok(g) => g,
        Err(Unsealed::Missing) => {
            return refused(
                "it carries no authentication tag: the vault did not write it (anyone can seal to the public state key)"
                    .into(),
            )
        }
        Err(Unsealed::Wrong) => {
            return refused(
                "its authentication tag does not match: the file was changed or planted".into(),
            )
        }
    };
    let ahead = match ledger.index().judge(listed, g) {
        Verdict::Current => None,
        Verdict::Ahead => Some(g),
        Verdict::Stale { found, listed } => {
            return refused(format!(
                "an older copy (generation {found}; the vault's index lists {listed}): an earlier store was put back"
            ))
        }
        Verdict::Unlisted { found } => {
            return refused(format!(
                "an authentic store (generation {found}) that the vault's index does not list"
            ))
        }
    };
    match parse(v) {
        Ok(stored) => Loaded {
            stored,
            problem: None,
            ahead,
        },
        Err(why) => refused(why),
    }
}

/// Read the store of a vault from before authentication (for its upgrade): an
/// untagged store is taken as it is; a tagged one must verify.
pub fn load_unauthenticated(file: &Path, ring: &Keyring, key: &MacKey) -> Result<Stored> {
    let shown = file.display();
    let v = match read(file, ring).map_err(|why| Error::Invalid(format!("{shown}: {why}")))? {
        Some(v) => v,
        None => return Ok(empty()),
    };
    if let Err(Unsealed::Wrong) = integrity::open(key, "state", TAG_NAME, &v, &[]) {
        return Err(Error::Invalid(format!(
            "{shown}: its authentication tag does not match this vault's key: it was changed or planted; move it away to upgrade without it"
        )));
    }
    parse(v).map_err(|why| Error::Invalid(format!("{shown}: {why}")))
}

/// Tag, seal and write the store atomically as the ledger's next generation, and
/// commit it (the caller holds the ledger's lock).
pub fn save(file: &Path, stored: &Stored, recipient: &str, ledger: &mut Ledger) -> Result<()> {
    let g = ledger.next();
    write(file, stored, recipient, ledger.key(), g)?;
    ledger.commit(|ix, g| ix.state = Some(g))?;
    Ok(())
}

/// Tag, seal and write the store as generation `g` (the caller commits it).
pub fn write(file: &Path, stored: &Stored, recipient: &str, key: &MacKey, g: u64) -> Result<()> {
    let mut s = stored.clone();
    s.format = FORMAT.into();
    let mut v = serde_json::to_value(&s).expect("JSON");
    integrity::seal(key, "state", TAG_NAME, &mut v, &[], g);
    let plain = Zeroizing::new(serde_json::to_string(&v).expect("JSON"));
    let (r, _) = Recipient::parse(recipient).map_err(|e| Error::Invalid(e.to_string()))?;
    let armor = crate::private::crypt::encrypt(plain.as_bytes(), &[r])
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    crate::fs::write_atomic(file, armor.as_bytes(), Mode::Preserve, Existing::Replace)
        .map_err(|e| Error::io(file, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::personal::integrity::Seen;
    use crate::private::identity::Key;

    #[test]
    fn only_a_store_the_vault_tagged_is_honoured() {
        let dir = tempfile::tempdir().unwrap();
        let id = age::x25519::Identity::generate();
        let r = id.to_public().to_string();
        let ring = Keyring::from_keys(vec![Key::x25519(id)]);
        let key = || MacKey::new(Zeroizing::new([9; 32]));
        let mut l = Ledger::create(dir.path(), key(), "v", &Seen::Off);
        let file = path(dir.path());
        assert!(load(&file, &ring, &l).problem.is_none());
        let mut s = empty();
        s.consumers.insert(
            "helper".into(),
            Consumer {
                name: "helper".into(),
                registered_at: "2026-01-01T00:00:00Z".into(),
                secret: crate::personal::tokens::SecretHash::new("a long consumer secret").unwrap(),
            },
        );
        save(&file, &s, &r, &mut l).unwrap();
        let old = std::fs::read(&file).unwrap();
        let got = load(&file, &ring, &l);
        assert!(got.problem.is_none() && got.stored.consumers.contains_key("helper"));
        save(&file, &empty(), &r, &mut l).unwrap();
        // The older store put back: authentic, but refused.
        std::fs::write(&file, &old).unwrap();
        let got = load(&file, &ring, &l);
        assert!(got.stored.consumers.is_empty());
        assert!(got.problem.unwrap().error.contains("older copy"));
        // One sealed to the public key alone (what anyone can write).
        let planted = crate::private::crypt::encrypt(
            br#"{"format":"ctx.personal-state.v1","consumers":{},"tokens":[]}"#,
            &[Recipient::parse(&r).unwrap().0],
        )
        .unwrap();
        std::fs::write(&file, planted).unwrap();
        let got = load(&file, &ring, &l);
        assert!(got.problem.unwrap().error.contains("no authentication tag"));
        assert!(load_unauthenticated(&file, &ring, &key()).is_ok());
        std::fs::remove_file(&file).unwrap();
        assert!(load(&file, &ring, &l)
            .problem
            .unwrap()
            .error
            .starts_with("missing"));
    }
}
