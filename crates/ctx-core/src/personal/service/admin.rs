//! Management endpoints: service tokens, consumers, audit, sensitivity, export and
//! import (the user's session). Approvals are in `answers`.

use zeroize::Zeroizing;

use crate::personal::archive::{self, ImportMode};
use crate::personal::audit::{self as paudit, Action, Entry};
use crate::personal::field::{inert, FieldId};
use crate::personal::json::Obj;
use crate::personal::keys::Purpose;
use crate::personal::limits::{FAILED_OVERALL, FAILED_PER_PEER};
use crate::personal::tokens::{self, Consumer, Mode, Rates, SecretHash, TokenRecord, Usage};
use crate::personal::Tier;

use super::{lock, now, now_text, Answer, Class, Refusal, Service, Who};

/// `POST /context/tokens/service`.
#[derive(Debug, Clone, Default)]
pub struct TokenRequest {
    pub consumer: String,
    pub secret: Option<String>,
    pub scope: Vec<String>,
    pub ttl: Option<String>,
    pub mode: Option<String>,
    pub usage: Option<String>,
    pub purpose: Option<String>,
    pub rates: Option<Rates>,
    /// Where the request came from (an address), for the limit on failed
    /// attempts; None for an in-process front end.
    pub peer: Option<String>,
}

/// A token as listed: its value truncated.
#[derive(Debug, Clone)]
pub struct TokenView {
    pub record: TokenRecord,
}

#[derive(Debug, Clone)]
pub struct ConsumerView {
    pub name: String,
    pub registered_at: String,
    pub tokens: usize,
}

impl Service {
    /// `POST /context/tokens/service`: the consumer's credentials (or the user's session).
    pub fn create_token(
        &self,
        bearer: Option<&str>,
        r: &TokenRequest,
    ) -> Answer<Zeroizing<String>> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        let by_user = match bearer {
            Some(_) => matches!(self.authenticate(bearer, Class::Admin)?, Who::User { .. }),
            None => false,
        };
        if !tokens::valid_consumer_name(&r.consumer) {
            return Err(Refusal::InvalidRequest(
                "`consumer` must name a registered consumer".into(),
            ));
        }
        // Unauthenticated attempts: an address (and everyone together) that failed
        // too often is refused before any check, and counted, not audited one by one.
        let peer = r.peer.as_deref().unwrap_or("local");
        let peer_key = format!("f:{peer}");
        if !by_user {
            let mut a = lock(&self.access);
            let t = std::time::Instant::now();
            let open = a.limiter.peek(&peer_key, FAILED_PER_PEER, t)
                && a.limiter.peek("f:*", FAILED_OVERALL, t);
            if !open {
                let retry_after = a
                    .limiter
                    .retry_after(&peer_key, FAILED_PER_PEER)
                    .max(a.limiter.retry_after("f:*", FAILED_OVERALL));
                let (ended, _) = a.failures.note(&r.consumer, peer, true, t);
                drop(a);
                self.record_failures(ended)?;
                return Err(Refusal::RateLimited {
                    message: format!(
                        "too many failed token requests (limit {FAILED_PER_PEER}/minute from one address)"
                    ),
                    retry_after,
                });
            }
        }
        let consumer = lock(&self.access).consumers.get(&r.consumer).cloned();
        if consumer.is_some() {
            let mut a = lock(&self.access);
            let key = format!("t:{}", r.consumer);
            if !a.limiter.allow(&key, 10, std::time::Instant::now()) {
                let retry_after = a.limiter.retry_after(&key, 10);
                return Err(Refusal::RateLimited {
                    message: "too many token requests for this consumer".into(),
                    retry_after,
                });
            }
        }
        let authentic = if by_user {
            consumer.is_some()
        } else {
            // Unknown name or wrong secret: the same answer after the same work.
            let secret = r.secret.as_deref().unwrap_or("");
            tokens::check_consumer(consumer.as_ref(), secret, SecretHash::verify).is_some()
        };
        if !authentic {
            let first = by_user || {
                let mut a = lock(&self.access);
                let t = std::time::Instant::now();
                a.limiter.allow(&peer_key, FAILED_PER_PEER, t);
                a.limiter.allow("f:*", FAILED_OVERALL, t);
                let (ended, first) = a.failures.note(&r.consumer, peer, false, t);
                drop(a);
                self.record_failures(ended)?;
                first
            };
            if first {
                let e = Entry::new(Action::Deny, &r.consumer)
                    .denied()
                    .detail("token request with wrong consumer credentials");
                self.record(e)?;
            }
            return Err(if by_user {
                Refusal::NotFound(format!("no consumer {}", r.consumer))
            } else {
                Refusal::Unauthenticated("unknown consumer or wrong secret".into())
            });
        }
        let scope = r.scope.clone();
        tokens::parse_scope(&scope).map_err(Refusal::invalid)?;
        let ttl_text = r.ttl.clone().unwrap_or_else(|| "1h".into());
        let ttl = tokens::parse_ttl(&ttl_text).ok_or_else(|| {
            Refusal::InvalidRequest(
                "`ttl` is a duration such as 30m, 1h or 8760h (at most ten years)".into(),
            )
        })?;
        let mode = match r.mode.as_deref() {
            None => Mode::Read,
            Some(m) => Mode::parse(m).ok_or_else(|| {
                Refusal::InvalidRequest("`mode` is read, write or read-write".into())
            })?,
        };
        let usage = match r.usage.as_deref() {
            None | Some("multi") | Some("multi-use") => Usage::Multi,
            Some("single") | Some("single-use") => Usage::Single,
            Some(_) => return Err(Refusal::InvalidRequest("`usage` is single or multi".into())),
        };
        let rates = r.rates.unwrap_or(self.options.default_rates);
        if rates.reads == 0
            || rates.writes == 0
            || rates.reads > 1_000_000
            || rates.writes > 1_000_000
        {
            return Err(Refusal::InvalidRequest(
                "`rate_limit` reads and writes are 1..1000000 per minute".into(),
            ));
        }
        if r.purpose.as_ref().is_some_and(|p| p.len() > 1000) {
            return Err(Refusal::InvalidRequest(
                "`purpose` is at most 1000 bytes".into(),
            ));
        }
        let (token, hash, shown) = tokens::issue(false).map_err(Refusal::from_error)?;
        let expires = now() + ttl;
        let rec = TokenRecord {
            hash: hash.clone(),
            shown: shown.clone(),
            consumer: Some(r.consumer.clone()),
            scope: scope.clone(),
            mode,
            usage,
            created_at: now_text(),
            expires_at: Some(crate::time::format(&expires)),
            purpose: r.purpose.clone(),
            rates,
            uses: 0,
        };
        lock(&self.access).tokens.insert(hash, rec.clone());
        self.persist()?;
        self.record(
            Entry::new(Action::Grant, &r.consumer)
                .scope(&scope)
                .detail(format!(
                    "token {shown}…, {ttl_text}, {}, {}",
                    mode.as_str(),
                    if usage == Usage::Single {
                        "single-use"
                    } else {
                        "multi-use"
                    }
                )),
        )?;
        Ok(Obj::new()
            .str("token", &token)
            .str("prefix", &shown)
            .str("consumer", &r.consumer)
            .value("scope", &serde_json::json!(scope))
            .str("mode", mode.as_str())
            .str(
                "usage",
                if usage == Usage::Single {
                    "single"
                } else {
                    "multi"
                },
            )
            .str("expires_at", rec.expires_at.as_deref().unwrap_or(""))
            .value(
                "rate_limit",
                &serde_json::json!({"reads": rates.reads, "writes": rates.writes}),
            )
            .finish())
    }

    /// A service token for a front end that serves one consumer on the user's behalf
    /// (`ctx mcp` on a personal vault): granted by the user's session, held only in
    /// that process's memory (never written to the token store), gone on lock. The
    /// consumer then reads and writes through the same scope, approvals and audit as
    /// a consumer of the HTTP API.
    pub fn local_token(
        &self,
        bearer: Option<&str>,
        consumer: &str,
        scope: &[String],
        mode: Mode,
        purpose: Option<&str>,
    ) -> Answer<Zeroizing<String>> {
        self.authenticate(bearer, Class::Admin)?;
        if !tokens::valid_consumer_name(consumer) {
            return Err(Refusal::InvalidRequest(
                "the consumer name: lowercase letters, digits, `-`, `_` and `.`, at most 64, not `user`"
                    .into(),
            ));
        }
        self.require_registered(bearer, consumer)?;
        tokens::parse_scope(scope).map_err(Refusal::invalid)?;
        let (token, hash, shown) = tokens::issue(false).map_err(Refusal::from_error)?;
        let rec = TokenRecord {
            hash: hash.clone(),
            shown: shown.clone(),
            consumer: Some(consumer.to_string()),
            scope: scope.to_vec(),
            mode,
            usage: Usage::Multi,
            created_at: now_text(),
            expires_at: None,
            purpose: purpose.map(str::to_string),
            rates: self.options.default_rates,
            uses: 0,
        };
        {
            let mut a = lock(&self.access);
            a.tokens.insert(hash.clone(), rec);
            a.local.insert(hash);
        }
        self.record(
            Entry::new(Action::Grant, consumer)
                .scope(scope)
                .detail(format!(
                    "token {shown}…, {}, held in memory by a front end until lock",
                    mode.as_str()
                )),
        )?;
        Ok(token)
    }

    /// Seed 004 §4: only a registered consumer is granted anything. Registered means
    /// known to this vault: through `POST /context/consumers/register` (the token
    /// store), or declared as an agent in the vault's manifest. Anyone else is
    /// `not_found`, never a token of the consumer role's default reach.
    pub fn require_registered(&self, bearer: Option<&str>, consumer: &str) -> Answer<()> {
        self.authenticate(bearer, Class::Admin)?;
        if lock(&self.access).consumers.contains_key(consumer) {
            return Ok(());
        }
        let st = self.open_state()?;
        let open = st.as_ref().expect("open");
        if open.vault.manifest.agents.contains_key(consumer) {
            return Ok(());
        }
        Err(Refusal::NotFound(format!(
            "consumer {} is not registered with this vault",
            inert(consumer)
        )))
    }

    /// `GET /context/tokens/service`: active service tokens, values truncated.
    pub fn list_tokens(&self, bearer: Option<&str>) -> Answer<Vec<TokenView>> {
        self.authenticate(bearer, Class::Admin)?;
        let now = now();
        let a = lock(&self.access);
        let mut v: Vec<TokenView> = a
            .tokens
            .values()
            .filter(|t| !t.expired(now) && !t.spent())
            .map(|t| TokenView { record: t.clone() })
            .collect();
        v.sort_by(|x, y| {
            x.record
                .created_at
                .cmp(&y.record.created_at)
                .then(x.record.shown.cmp(&y.record.shown))
        });
        Ok(v)
    }

    /// `DELETE /context/tokens/service/{prefix}`: the user, or the token itself.
    pub fn revoke_token(&self, bearer: Option<&str>, prefix: &str) -> Answer<String> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        let own = bearer.map(tokens::hash);
        let by_user = match self.authenticate(bearer, Class::Admin) {
            Ok(_) => true,
            Err(Refusal::ScopeExceeded(_)) => false,
            Err(e) => return Err(e),
        };
        if prefix.len() < tokens::SERVICE_PREFIX.len() + 4
            || !prefix.starts_with(tokens::SERVICE_PREFIX)
        {
            return Err(Refusal::InvalidRequest(
                "give at least `ctxs_` and four more characters of the token".into(),
            ));
        }
        let mut a = lock(&self.access);
        let hits: Vec<TokenRecord> = a
            .tokens
            .values()
            .filter(|t| {
                t.shown.starts_with(prefix)
                    || prefix.starts_with(&t.shown) && own.as_deref() == Some(t.hash.as_str())
            })
            .cloned()
            .collect();
        let hit = match hits.as_slice() {
            [] => return Err(Refusal::NotFound(format!("no token {}", inert(prefix)))),
            [one] => one.clone(),
            many => {
                return Err(Refusal::Conflict(format!(
                    "{} tokens start with {}; give more characters",
                    many.len(),
                    inert(prefix)
                )))
            }
        };
        if !by_user && own.as_deref() != Some(hit.hash.as_str()) {
            return Err(Refusal::ScopeExceeded(
                "a service token may revoke only itself".into(),
            ));
        }
        a.tokens.remove(&hit.hash);
        a.limiter.forget(&hit.hash);
        drop(a);
        self.persist()?;
        let who = if by_user {
            "user".to_string()
        } else {
            hit.consumer.clone().unwrap_or_default()
        };
        self.record(
            Entry::new(Action::Revoke, hit.consumer.as_deref().unwrap_or("user"))
                .scope(&hit.scope)
                .detail(format!("token {}… revoked by {who}", hit.shown)),
        )?;
        Ok(hit.shown)
    }

    /// `POST /context/consumers/register` (the user's session).
    pub fn register(
        &self,
        bearer: Option<&str>,
        name: &str,
        secret: &str,
    ) -> Answer<(String, String)> {
        self.authenticate(bearer, Class::Admin)?;
        if !tokens::valid_consumer_name(name) {
            return Err(Refusal::InvalidRequest(
                "`name`: lowercase letters, digits, `-`, `_` and `.`, at most 64, not `user`"
                    .into(),
            ));
        }
        if secret.chars().count() < tokens::MIN_SECRET_LEN {
            return Err(Refusal::InvalidRequest(format!(
                "`secret` needs at least {} characters",
                tokens::MIN_SECRET_LEN
            )));
        }
        if lock(&self.access).consumers.contains_key(name) {
            return Err(Refusal::Conflict("consumer already registered".into()));
        }
        let hash = SecretHash::new(secret).map_err(Refusal::from_error)?;
        let at = now_text();
        {
            let mut a = lock(&self.access);
            if a.consumers.contains_key(name) {
                return Err(Refusal::Conflict("consumer already registered".into()));
            }
            a.consumers.insert(
                name.to_string(),
                Consumer {
                    name: name.to_string(),
                    registered_at: at.clone(),
                    secret: hash,
                },
            );
        }
        self.persist()?;
        self.record(Entry::new(Action::Register, name))?;
        Ok((name.to_string(), at))
    }

    /// `GET /context/consumers`.
    pub fn consumers(&self, bearer: Option<&str>) -> Answer<Vec<ConsumerView>> {
        self.authenticate(bearer, Class::Admin)?;
        let a = lock(&self.access);
        Ok(a.consumers
            .values()
            .map(|c| ConsumerView {
                name: c.name.clone(),
                registered_at: c.registered_at.clone(),
                tokens: a
                    .tokens
                    .values()
                    .filter(|t| t.consumer.as_deref() == Some(&c.name))
                    .count(),
            })
            .collect())
    }

    /// `DELETE /context/consumers/{name}`: deregister and revoke every token it holds.
    pub fn deregister(&self, bearer: Option<&str>, name: &str) -> Answer<usize> {
        self.authenticate(bearer, Class::Admin)?;
        let revoked: Vec<TokenRecord> = {
            let mut a = lock(&self.access);
            if a.consumers.remove(name).is_none() {
                return Err(Refusal::NotFound(format!("no consumer {}", inert(name))));
            }
            let gone: Vec<TokenRecord> = a
                .tokens
                .values()
                .filter(|t| t.consumer.as_deref() == Some(name))
                .cloned()
                .collect();
            for t in &gone {
                a.tokens.remove(&t.hash);
            }
            gone
        };
        self.persist()?;
        self.record(
            Entry::new(Action::Deregister, name)
                .detail(format!("{} token(s) revoked", revoked.len())),
        )?;
        for t in &revoked {
            self.record(
                Entry::new(Action::Revoke, name)
                    .scope(&t.scope)
                    .detail(format!("token {}… revoked with its consumer", t.shown)),
            )?;
        }
        Ok(revoked.len())
    }

    /// `GET /context/audit?limit=N`: the last N entries, decrypted, oldest first.
    pub fn audit(&self, bearer: Option<&str>, limit: usize) -> Answer<Vec<serde_json::Value>> {
        self.audit_revealing(bearer, limit, false)
    }

    /// `GET /context/audit`; with `reveal`, each replaced value a write or delete
    /// kept sealed is opened for the user (`previous.value` instead of `previous.sealed`).
    pub fn audit_revealing(
        &self,
        bearer: Option<&str>,
        limit: usize,
        reveal: bool,
    ) -> Answer<Vec<serde_json::Value>> {
        let mut entries = self.audit_tail(bearer, limit)?;
        if reveal {
            let st = self.state.read().unwrap_or_else(|p| p.into_inner());
            let open = st.as_ref().ok_or(Refusal::VaultLocked)?;
            for e in &mut entries {
                let id = e["objects"][0].as_str().unwrap_or("").to_string();
                let prev = &mut e["extensions"][super::super::EXTENSION]["previous"];
                let Some(armor) = prev["sealed"].as_str().map(str::to_string) else {
                    continue;
                };
                let opened = open.vault.open_previous(&id, &armor);
                if let Some(p) = prev.as_object_mut() {
                    p.remove("sealed");
                    match opened {
                        Ok(v) => p.insert("value".into(), v),
                        Err(why) => p.insert("error".into(), why.to_string().into()),
                    };
                }
            }
        }
        Ok(entries)
    }

    fn audit_tail(&self, bearer: Option<&str>, limit: usize) -> Answer<Vec<serde_json::Value>> {
        self.authenticate(bearer, Class::Admin)?;
        if !(1..=1000).contains(&limit) {
            return Err(Refusal::InvalidRequest("`limit` is 1..1000".into()));
        }
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        let open = st.as_ref().ok_or(Refusal::VaultLocked)?;
        let ring = open.vault.keys.keyring(Purpose::Audit);
        let key = open.vault.keys.mac_key();
        // Entries are appended under the audit lock; read under it for a consistent tail.
        let _hold = lock(&self.audit);
        paudit::tail(&paudit::path(&self.state_dir), limit, &ring, Some(&key))
            .map_err(Refusal::from_error)
    }

    /// `PUT /context/sensitivity/{id}` with `{ tier }`: the user's decision only.
    pub fn set_sensitivity(
        &self,
        bearer: Option<&str>,
        id: &str,
        tier: &str,
    ) -> Answer<Zeroizing<String>> {
        let who = self
            .authenticate(bearer, Class::Admin)
            .map_err(|e| match e {
                Refusal::ScopeExceeded(_) => {
                    Refusal::UserOnlyWrite("a field's sensitivity is the user's decision".into())
                }
                other => other,
            })?;
        let fid = FieldId::parse(id).map_err(Refusal::invalid)?;
        let tier = Tier::parse(tier).ok_or_else(|| {
            Refusal::InvalidRequest("`tier` is public, standard, sensitive or critical".into())
        })?;
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let open = st.as_mut().ok_or(Refusal::VaultLocked)?;
        let old = open
            .vault
            .fields
            .get(&fid.id)
            .map(|f| f.tier)
            .ok_or_else(|| Refusal::NotFound(format!("no field {}", fid.id)))?;
        let f = open
            .vault
            .set_tier(&fid.id, tier, &now_text())
            .map_err(Refusal::from_error)?;
        let body = Obj::new()
            .str("id", &f.id.id)
            .str("sensitivity", f.tier.as_str())
            .num("version", f.version)
            .finish();
        drop(st);
        self.record(
            Entry::new(Action::Sensitivity, who.name())
                .fields([fid.id.clone()])
                .detail(format!("{old} -> {tier}")),
        )?;
        Ok(body)
    }

    /// `GET /context/export`: all fields and metadata, sealed with age.
    pub fn export(&self, bearer: Option<&str>, extra: &[String]) -> Answer<archive::Exported> {
        self.authenticate(bearer, Class::Admin)?;
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        let open = st.as_ref().ok_or(Refusal::VaultLocked)?;
        let out = archive::export(&open.vault, extra, &now_text()).map_err(|e| match e {
            crate::error::Error::Usage(m) => Refusal::InvalidRequest(m),
            other => Refusal::from_error(other),
        })?;
        let ids: Vec<String> = open.vault.fields.keys().cloned().collect();
        drop(st);
        self.record(
            Entry::new(Action::Export, "user")
                .fields(ids)
                .detail(format!("{} recipient(s)", out.recipients.len())),
        )?;
        Ok(out)
    }

    /// `POST /context/import`: merge or replace from an archive.
    pub fn import(
        &self,
        bearer: Option<&str>,
        armor: &str,
        mode: ImportMode,
        keys: ImportKeys<'_>,
    ) -> Answer<archive::Imported> {
        self.authenticate(bearer, Class::Admin)?;
        let usage = |e: crate::error::Error| match e {
            crate::error::Error::Invalid(m) | crate::error::Error::Usage(m) => {
                Refusal::InvalidRequest(m)
            }
            other => Refusal::from_error(other),
        };
        let mut extra = Vec::new();
        if let Some(text) = keys.identity {
            extra.push(archive::parse_identity(text).map_err(usage)?);
        }
        // Derived before the vault is held: Argon2id takes its time.
        if let Some((source, password, secret)) = keys.source {
            extra.push(source.identity(password, secret).map_err(usage)?);
        }
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let open = st.as_mut().ok_or(Refusal::VaultLocked)?;
        let out = archive::import(&mut open.vault, armor, mode, extra).map_err(|e| match e {
            crate::error::Error::Invalid(m) | crate::error::Error::Usage(m) => {
                Refusal::InvalidRequest(m)
            }
            other => Refusal::from_error(other),
        })?;
        drop(st);
        let changed: Vec<String> = out
            .added
            .iter()
            .chain(&out.updated)
            .chain(&out.removed)
            .cloned()
            .collect();
        self.record(
            Entry::new(Action::Import, "user")
                .fields(changed)
                .detail(format!(
                    "{} added, {} updated, {} unchanged, {} removed",
                    out.added.len(),
                    out.updated.len(),
                    out.unchanged.len(),
                    out.removed.len()
                )),
        )?;
        Ok(out)
    }
}

/// The keys an import may open an archive with, beyond the vault's own.
#[derive(Default)]
pub struct ImportKeys<'a> {
    /// An age identity (a recovery key).
    pub identity: Option<&'a str>,
    /// The exporting vault's derivation, password and secret key (a backup from
    /// another machine).
    pub source: Option<(
        &'a archive::Source,
        &'a [u8],
        &'a crate::personal::keys::SecretKey,
    )>,
}
