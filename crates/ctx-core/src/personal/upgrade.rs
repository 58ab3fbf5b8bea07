//! `ctx private upgrade-vault`: a vault made before ctx authenticated a vault's files
//! has no index and no tags, so nothing in it can be told from a plant. Unlock
//! refuses it; this upgrade is explicit, because it vouches for every file as the
//! user's: it lists the fields, consumers and tokens it found (ids, never values),
//! and only after the user agrees tags each file and writes the index.
//!
//! Service tokens are dropped unless the user keeps them (a consumer asks for a
//! new one with its name and secret): a planted token is the attack this closes.
//! The files are written first and the index last, so an interrupted upgrade is
//! simply run again (files it already tagged verify).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::manifest::Manifest;

use super::audit::{self, Action, Entry, SealedLog};
use super::config::PersonalConfig;
use super::field::FieldDoc;
use super::integrity::{self, Seen, INDEX_FILE};
use super::keys::{Purpose, VaultKeys};
use super::ledger::{self, Ledger, Problem};
use super::state::{self, Stored};
use super::tokens::TokenRecord;
use super::vault::{OpenError, Vault};
use super::Tier;

/// One field as the review lists it (no value).
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub tier: Tier,
    pub written_by: String,
    pub version: u64,
    pub updated_at: String,
}

/// A vault read for its upgrade, and what it holds.
pub struct Survey {
    vault: Vault,
    stored: Stored,
    state_dir: PathBuf,
    seen: Seen,
    pub fields: Vec<Listed>,
    /// Registered consumers: (name, registered at).
    pub consumers: Vec<(String, String)>,
    pub tokens: Vec<TokenRecord>,
    /// Files that will not be vouched for (a tag that fails, unreadable).
    pub refused: Vec<Problem>,
}

/// What an upgrade did.
#[derive(Debug, Clone, Default)]
pub struct Done {
    pub fields: usize,
    pub consumers: usize,
    pub tokens_kept: usize,
    pub tokens_dropped: usize,
}

impl Survey {
    /// Read a vault without an index. Refused when it has one (nothing to do) or
    /// when this device has seen it with one (then the index was deleted).
    pub fn read(manifest: Manifest, keys: VaultKeys, seen: Seen) -> Result<Survey> {
        let config = PersonalConfig::require(&manifest)?;
        let state_dir = config.state_dir(&manifest);
        let index = state_dir.join(INDEX_FILE);
        if index.exists() {
            return Err(Error::InvalidHint {
                message: format!("{} exists: this vault is already authenticated", index.display()),
                help: "nothing to upgrade; a file unlock refuses is written again or deleted through the vault".into(),
            });
        }
        if let Some(p) = seen.path(&config.vault) {
            if let Some(g) = integrity::read_seen(&p)? {
                return Err(Error::InvalidHint {
                    message: format!(
                        "{} is missing, but this device has seen generation {g} of this vault: the index was deleted, not never made",
                        index.display()
                    ),
                    help: "restore the vault's folder (its index and files together) from a backup you trust".into(),
                });
            }
        }
        let key = keys.mac_key();
        let state_ring = keys.keyring(Purpose::State);
        let vault = match Vault::open_unauthenticated(manifest, config, keys) {
            Ok(v) => v,
            Err(OpenError::WrongSecrets) => {
                return Err(Error::Invalid("wrong password or secret key".into()))
            }
            Err(OpenError::Other(e)) => return Err(e),
        };
        let stored = state::load_unauthenticated(&state::path(&state_dir), &state_ring, &key)?;
        Ok(Survey {
            fields: vault
                .fields
                .values()
                .map(|f| Listed {
                    id: f.id.id.clone(),
                    tier: f.tier,
                    written_by: f.written_by.clone(),
                    version: f.version,
                    updated_at: f.updated_at.clone(),
                })
                .collect(),
            consumers: stored
                .consumers
                .values()
                .map(|c| (c.name.clone(), c.registered_at.clone()))
                .collect(),
            tokens: stored.tokens.clone(),
            refused: vault.problems.clone(),
            vault,
            stored,
            state_dir,
            seen,
        })
    }

    /// Tag every listed file, write the index, and record the upgrade.
    pub fn apply(mut self, keep_tokens: bool, now: &str) -> Result<Done> {
        let docs: Vec<(FieldDoc, String)> = self
            .vault
            .documents()?
            .into_iter()
            .map(|d| {
                let file = self.vault.fields[&d.id.id].object.origin.file.clone();
                (d, file)
            })
            .collect();
        let key = self.vault.keys.mac_key();
        let mut g = 0;
        let mut files = Vec::new();
        for (doc, file) in &docs {
            g += 1;
            self.vault.write_sealed(doc, file, &key, g)?;
            files.push((file.clone(), g));
        }
        let dropped = if keep_tokens {
            0
        } else {
            std::mem::take(&mut self.stored.tokens).len()
        };
        let state_file = state::path(&self.state_dir);
        let state_gen = if state_file.exists() || !self.stored.consumers.is_empty() {
            g += 1;
            let recipient = &self.vault.config.state_recipient;
            state::write(&state_file, &self.stored, recipient, &key, g)?;
            Some(g)
        } else {
            None
        };
        let mut log = SealedLog::open(
            &audit::path(&self.state_dir),
            &self.vault.config.audit_recipient,
            &self.vault.manifest.id,
        )?;
        let shared = Arc::new(Mutex::new(Ledger::create(
            &self.state_dir,
            key,
            &self.vault.config.vault,
            &self.seen,
        )));
        // The log as it is is pinned: entries from before are covered by the chain.
        let head = log.head();
        ledger::lock(&shared).commit(|ix, _| {
            ix.files.extend(files);
            ix.state = state_gen;
            ix.audit = head;
            ix.generation = ix.generation.max(g);
        })?;
        log.attach(Some(shared.clone()));
        let done = Done {
            fields: docs.len(),
            consumers: self.stored.consumers.len(),
            tokens_kept: self.stored.tokens.len(),
            tokens_dropped: dropped,
        };
        log.append(
            &Entry::new(Action::Upgrade, "user")
                .fields(docs.iter().map(|(d, _)| d.id.id.clone()))
                .detail(format!(
                    "{} field(s) and {} consumer(s) authenticated; {} token(s) kept, {} dropped",
                    done.fields, done.consumers, done.tokens_kept, done.tokens_dropped
                )),
            now,
        )?;
        self.vault.adopt(shared);
        Ok(done)
    }
}
