//! Unlock and lock. Unlocking derives the keys, opens the vault's authenticated
//! index ([`crate::personal::ledger`]) and checks every file against it: fields,
//! the token store and the audit log. A file that fails is never loaded; it is
//! reported (audited as `INTEGRITY`, listed in the owner's `GET /context/fields`,
//! returned by [`Service::problems`]) until the user writes or deletes it.

use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

use crate::manifest::Manifest;
use crate::personal::audit::{self as paudit, Action, Entry};
use crate::personal::config::PersonalConfig;
use crate::personal::keys::{Purpose, SecretKey, VaultKeys};
use crate::personal::ledger::{self, Ledger, Problem};
use crate::personal::state;
use crate::personal::tokens::{self, Mode, TokenRecord, Usage};
use crate::personal::vault::{OpenError, Vault};
use crate::personal::view::{FieldView, Reader};

use super::{lock, now, now_text, Answer, Class, Open, Refusal, Service};

/// Audit entries written for the problems of one unlock, at most.
const REPORTED: usize = 100;

fn unavailable(e: crate::error::Error) -> Refusal {
    Refusal::Unavailable(crate::error::one_line(&e))
}

impl Service {
    /// Password + secret key → the user's session token.
    pub fn unlock(&self, password: &str, secret_key: &str) -> Answer<Zeroizing<String>> {
        {
            let mut a = lock(&self.access);
            if !a.limiter.allow(
                "unlock",
                self.options.unlock_per_minute,
                std::time::Instant::now(),
            ) {
                let retry_after = a
                    .limiter
                    .retry_after("unlock", self.options.unlock_per_minute);
                return Err(Refusal::RateLimited {
                    message: "too many unlock attempts".into(),
                    retry_after,
                });
            }
        }
        let _one = lock(&self.unlocking);
        if !self.is_locked() {
            return Err(Refusal::Conflict("vault is already unlocked".into()));
        }
        if password.is_empty() {
            return Err(Refusal::InvalidRequest("`password` is required".into()));
        }
        let secret = SecretKey::parse(secret_key)
            .map_err(|e| Refusal::InvalidRequest(format!("`secret_key`: {e}")))?;
        let (manifest, _) = Manifest::load(&self.manifest_path).map_err(unavailable)?;
        let config = PersonalConfig::require(&manifest).map_err(unavailable)?;
        if config.vault != self.config.vault {
            return Err(Refusal::Unavailable(
                "the manifest now names another vault; restart ctx serve".into(),
            ));
        }
        let keys = VaultKeys::derive(password.as_bytes(), &secret, &config.kdf, &config.vault)
            .map_err(unavailable)?;
        if keys.recipient(Purpose::State) != config.state_recipient {
            return Err(self.wrong_secrets());
        }
        let shared = Arc::new(Mutex::new(
            Ledger::open(
                &self.state_dir,
                keys.mac_key(),
                &config.vault,
                &self.options.seen,
            )
            .map_err(unavailable)?,
        ));
        let state_ring = keys.keyring(Purpose::State);
        let audit_ring = keys.keyring(Purpose::Audit);
        let mac = keys.mac_key();
        let mut vault = match Vault::open(manifest, config, keys, shared.clone()) {
            Ok(v) => v,
            Err(OpenError::WrongSecrets) => return Err(self.wrong_secrets()),
            Err(OpenError::Other(e)) => return Err(unavailable(e)),
        };
        vault.write_lock = self.options.write_lock.clone();
        // The owner's view opens through the policy gate: a broken role set serves nothing.
        FieldView::open(&vault.governance, &vault.config, Reader::Owner, now())
            .map_err(unavailable)?;
        let loaded = state::load(
            &state::path(&self.state_dir),
            &state_ring,
            &ledger::lock(&shared),
        );
        if let Some(g) = loaded.ahead {
            ledger::lock(&shared)
                .commit(|ix, _| {
                    ix.state = Some(g);
                    ix.generation = ix.generation.max(g);
                })
                .map_err(unavailable)?;
        }
        let mut problems = Vec::new();
        {
            // Checked and then tagged from here on, with no append in between.
            let mut log = lock(&self.audit);
            let head = ledger::lock(&shared).index().audit.clone();
            problems.extend(paudit::check(
                &paudit::path(&self.state_dir),
                &audit_ring,
                &mac,
                head.as_ref(),
            ));
            log.attach(Some(shared.clone()));
        }
        if let Some(p) = loaded.problem {
            self.state_refused
                .store(true, std::sync::atomic::Ordering::SeqCst);
            problems.insert(0, p);
        }
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let (token, hash, shown) = tokens::issue(true).map_err(Refusal::from_error)?;
        let count = vault.fields.len();
        let reported: Vec<Problem> = vault.problems.iter().chain(&problems).cloned().collect();
        *st = Some(Box::new(Open {
            vault,
            secret,
            problems,
        }));
        *lock(&self.ledger) = Some(shared);
        let mut a = lock(&self.access);
        a.sessions.insert(
            hash.clone(),
            TokenRecord {
                hash,
                shown,
                consumer: None,
                scope: vec!["*".into()],
                mode: Mode::ReadWrite,
                usage: Usage::Multi,
                created_at: now_text(),
                expires_at: None,
                purpose: None,
                rates: self.options.session_rates,
                uses: 0,
            },
        );
        a.consumers = loaded.stored.consumers;
        a.tokens = loaded
            .stored
            .tokens
            .into_iter()
            .map(|t| (t.hash.clone(), t))
            .collect();
        a.last_activity = std::time::Instant::now();
        drop(a);
        drop(st);
        let mut e = Entry::new(Action::Unlock, "user").detail(format!("{count} fields"));
        if !reported.is_empty() {
            e = e.detail(format!(
                "{count} fields; {} file(s) refused",
                reported.len()
            ));
        }
        self.record(e)?;
        for p in reported.iter().take(REPORTED) {
            self.record(
                Entry::new(Action::Integrity, "user")
                    .fields(p.field.clone())
                    .denied()
                    .detail(format!("{}: {}", p.file, p.error)),
            )?;
        }
        Ok(token)
    }

    fn wrong_secrets(&self) -> Refusal {
        let denied = Entry::new(Action::Unlock, "user")
            .denied()
            .detail("wrong password or secret key");
        match self.record(denied) {
            Ok(()) => Refusal::Unauthenticated("wrong password or secret key".into()),
            Err(r) => r,
        }
    }

    /// What unlock refused (files, fields, reasons, fixes; never a value): the user's.
    pub fn problems(&self, bearer: Option<&str>) -> Answer<Vec<Problem>> {
        self.authenticate(bearer, Class::Admin)?;
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        let open = st.as_ref().ok_or(Refusal::VaultLocked)?;
        Ok(open
            .vault
            .problems
            .iter()
            .chain(&open.problems)
            .cloned()
            .collect())
    }

    /// Lock: drop every key and value from memory, end sessions, forget approvals.
    pub fn lock(&self, bearer: Option<&str>) -> Answer<()> {
        let who = self.authenticate(bearer, Class::Admin)?;
        self.lock_now(&format!("by {}", who.name()))
    }

    pub(super) fn lock_now(&self, why: &str) -> Answer<()> {
        let _one = lock(&self.unlocking);
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let Some(open) = st.take() else {
            return Err(Refusal::VaultLocked);
        };
        *lock(&self.clear) = (
            open.vault.fields.len(),
            open.vault.category_names().cloned().collect(),
        );
        drop(open);
        let mut a = lock(&self.access);
        a.sessions.clear();
        a.tokens.clear();
        a.local.clear();
        a.consumers.clear();
        a.approvals.clear();
        let pending = a.failures.flush(std::time::Instant::now());
        drop(a);
        drop(st);
        let _ = self.record_failures(pending);
        // The last tagged entry; then the MAC key goes with the index.
        let recorded = self.record(Entry::new(Action::Lock, "user").detail(why.to_string()));
        lock(&self.audit).attach(None);
        *lock(&self.ledger) = None;
        recorded
    }
}
