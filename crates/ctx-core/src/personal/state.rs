//! The vault's token store: registered consumers and service tokens, sealed with
//! age to the vault's derived `state` key in `.ctx/personal/state.age`. It is read
//! at unlock and rewritten (atomically) when it changes; session tokens are never
//! stored. Hashes only: the file holds no token and no consumer secret.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};
use crate::private::config::Recipient;
use crate::private::Keyring;

use super::tokens::{Consumer, TokenRecord};

const FORMAT: &str = "ctx.personal-state.v1";
pub const FILE: &str = "state.age";

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

/// Read the store; a vault that never stored anything has an empty one.
pub fn load(file: &Path, ring: &Keyring) -> Result<Stored> {
    let armor = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Stored {
                format: FORMAT.into(),
                ..Stored::default()
            })
        }
        Err(e) => return Err(Error::io(file, &e)),
    };
    let shown = file.display().to_string();
    let (plain, _) = crate::private::ops::decrypt(&shown, &armor, Some(ring))
        .map_err(|e| Error::Invalid(format!("{e}\n  fix: {}", e.fix())))?;
    let stored: Stored = serde_json::from_str(&plain)
        .map_err(|e| Error::Invalid(format!("{shown}: not a token store ({e})")))?;
    if stored.format != FORMAT {
        return Err(Error::Invalid(format!(
            "{shown}: format {:?}, expected {FORMAT:?}",
            stored.format
        )));
    }
    Ok(stored)
}

/// Seal and write the store atomically.
pub fn save(file: &Path, stored: &Stored, recipient: &str) -> Result<()> {
    let mut s = stored.clone();
    s.format = FORMAT.into();
    let plain = Zeroizing::new(serde_json::to_string(&s).expect("JSON"));
    let (r, _) = Recipient::parse(recipient).map_err(|e| Error::Invalid(e.to_string()))?;
    let armor = crate::private::crypt::encrypt(plain.as_bytes(), &[r])
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    crate::fs::write_atomic(file, armor.as_bytes(), Mode::Preserve, Existing::Replace)
        .map_err(|e| Error::io(file, &e))
}
