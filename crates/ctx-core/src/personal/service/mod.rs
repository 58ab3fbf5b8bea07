//! The operations of a served vault (seed 004 §7), synchronous and transport-free:
//! a front end (`ctx serve`) maps a request onto one call and renders the result.
//!
//! - this module: lock state, authentication of bearer tokens, rate limits, idle
//!   auto-lock, status;
//! - `session`: unlock (every file of the vault authenticated) and lock;
//! - `fields`: field reads, the context endpoint, approvals gating; `writes`: put, delete;
//! - `admin`: tokens, consumers, audit, sensitivity, export/import; `answers`: approvals.
//!
//! Lock order (never reversed): `unlocking` → `state` → `access` → `audit` →
//! `ledger` (the slot, then the ledger itself).

mod admin;
mod answers;
mod fields;
mod session;
#[cfg(test)]
mod tests;
mod writes;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use zeroize::Zeroizing;

use crate::approvals;
use crate::error::Error;
use crate::manifest::Manifest;
use crate::pattern::Pattern;
use crate::time::Instant;

use super::audit::{Action, Entry, SealedLog};
use super::config::PersonalConfig;
use super::holder::VaultLock;
use super::integrity::Seen;
use super::keys::SecretKey;
use super::ledger::{self as vledger, Problem, Shared};
use super::limits::{Failures, Limiter, Summary};
use super::state::{self, Stored};
use super::tokens::{self, Consumer, Mode, Rates, TokenRecord, Usage};
use super::vault::Vault;

pub use admin::{ConsumerView, ImportKeys, TokenRequest, TokenView};
pub use answers::{ApprovalView, Decide};
pub use fields::{FieldQuery, WriteOutcome};

/// Why a request is refused: seed 004's error constraints and their statuses.
/// Messages name ids, codes and counts; never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    InvalidRequest(String),
    Unauthenticated(String),
    VaultLocked,
    UserOnlyWrite(String),
    ScopeExceeded(String),
    ApprovalDenied(String),
    ModeDenied(String),
    NotFound(String),
    Conflict(String),
    RateLimited {
        message: String,
        retry_after: u64,
    },
    /// The vault cannot serve safely (its audit log cannot be written, a file failed).
    Unavailable(String),
}

impl Refusal {
    pub fn status(&self) -> u16 {
        match self {
            Refusal::InvalidRequest(_) => 400,
            Refusal::Unauthenticated(_) => 401,
            Refusal::VaultLocked
            | Refusal::UserOnlyWrite(_)
            | Refusal::ScopeExceeded(_)
            | Refusal::ApprovalDenied(_)
            | Refusal::ModeDenied(_) => 403,
            Refusal::NotFound(_) => 404,
            Refusal::Conflict(_) => 409,
            Refusal::RateLimited { .. } => 429,
            Refusal::Unavailable(_) => 503,
        }
    }

    pub fn constraint(&self) -> &'static str {
        match self {
            Refusal::InvalidRequest(_) => "invalid_request",
            Refusal::Unauthenticated(_) => "unauthenticated",
            Refusal::VaultLocked => "vault_locked",
            Refusal::UserOnlyWrite(_) => "user_only_write",
            Refusal::ScopeExceeded(_) => "scope_exceeded",
            Refusal::ApprovalDenied(_) => "approval_denied",
            Refusal::ModeDenied(_) => "mode_denied",
            Refusal::NotFound(_) => "not_found",
            Refusal::Conflict(_) => "conflict",
            Refusal::RateLimited { .. } => "rate_limited",
            Refusal::Unavailable(_) => "unavailable",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Refusal::VaultLocked => {
                "the vault is locked: unlock it with POST /context/unlock".into()
            }
            Refusal::InvalidRequest(m)
            | Refusal::Unauthenticated(m)
            | Refusal::UserOnlyWrite(m)
            | Refusal::ScopeExceeded(m)
            | Refusal::ApprovalDenied(m)
            | Refusal::ModeDenied(m)
            | Refusal::NotFound(m)
            | Refusal::Conflict(m) => m.clone(),
            Refusal::Unavailable(m) => without_paths(m),
            Refusal::RateLimited { message, .. } => message.clone(),
        }
    }

    /// A refused argument; the protocol has one message, so a hint goes inline.
    fn invalid(e: impl miette::Diagnostic) -> Refusal {
        Refusal::InvalidRequest(crate::error::one_line(&e))
    }

    fn from_error(e: Error) -> Refusal {
        match e {
            Error::NotFound(m) => Refusal::NotFound(m),
            Error::Usage(m) => Refusal::InvalidRequest(m),
            Error::Field(f) => Refusal::Unavailable(crate::error::one_line(&f)),
            other => Refusal::Unavailable(crate::error::one_line(&other)),
        }
    }
}

pub type Answer<T> = Result<T, Refusal>;

/// A 503's message as a client sees it: every file system path (absolute, or a
/// file of the vault, whose name is a field's) replaced, so an answer never maps
/// the disk or names a field. The front end logs the whole message to its stderr.
pub fn without_paths(m: &str) -> String {
    let mut out = String::with_capacity(m.len());
    let mut hidden = false;
    for (n, word) in m.split(' ').enumerate() {
        if n > 0 {
            out.push(' ');
        }
        let bare = word.trim_matches(|c: char| "`'\"(),;:".contains(c));
        let is_path = (bare.contains('/') || bare.contains('\\'))
            && !bare.starts_with("/context/")
            && !bare.contains("://");
        if is_path {
            hidden = true;
            // The kind of file (`.seen`, `.json`) helps; its folder and name do not.
            let name = bare.rsplit(['/', '\\']).next().unwrap_or("");
            match name.rsplit_once('.').filter(|(stem, _)| !stem.is_empty()) {
                Some((_, ext)) => out.push_str(&format!("(a .{ext} file)")),
                None => out.push_str("(a file of the vault)"),
            }
            if word.ends_with(':') {
                out.push(':');
            }
        } else {
            out.push_str(word);
        }
    }
    if hidden {
        out.push_str(" (the server's log names the file)");
    }
    out
}

#[cfg(test)]
mod path_tests {
    #[test]
    fn a_503_message_keeps_the_kind_of_file_and_drops_its_path() {
        let m =
            super::without_paths("/tmp/x/v/personal/addresses/current: File exists (os error 17)");
        assert_eq!(
            m,
            "(a file of the vault): File exists (os error 17) (the server's log names the file)"
        );
        let m =
            super::without_paths("rolled back: delete `/home/u/.config/ctx/personal/ab.seen` if");
        assert!(m.contains("(a .seen file)") && !m.contains("/home"), "{m}");
        let m = super::without_paths("write it again (PUT /context/fields/ID)");
        assert_eq!(m, "write it again (PUT /context/fields/ID)");
    }
}

/// A request that waits for the user's approval (HTTP 202 with a poll location).
#[derive(Debug, Clone)]
pub struct Ticket {
    pub approval: String,
    pub expires_at: String,
    pub fields: Vec<String>,
}

/// Either the answer, or the approval it waits for.
#[derive(Debug)]
pub enum Gate<T> {
    Ready(T),
    Pending(Ticket),
}

/// Tunables of one server run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Lock after this long without a token request (default: the manifest's `idle_timeout`).
    pub idle_timeout: Option<std::time::Duration>,
    /// How long a question waits for an answer, and an answer for its request.
    pub approval_ttl: chrono::Duration,
    pub unlock_per_minute: u32,
    pub default_rates: Rates,
    /// The user's session token: its field reads and writes a minute.
    pub session_rates: Rates,
    /// The repository's write lock file, fixed before the process is confined.
    pub write_lock: Option<PathBuf>,
    /// The vault's server lock, when the front end took it early (before it binds);
    /// else [`Service::open`] takes it as [`Options::command`].
    pub lock: Option<Arc<VaultLock>>,
    /// Who serves, as the lock records it (`ctx serve`, `ctx mcp`).
    pub command: String,
    /// Where this device records the highest generation of the vault it saw.
    pub seen: Seen,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            idle_timeout: None,
            approval_ttl: chrono::Duration::minutes(5),
            unlock_per_minute: 5,
            default_rates: Rates::default(),
            // Seed 004 §7 limits every token, the session's too: 60 reads and 10
            // writes a minute (`ctx serve --session-rate-limit` raises it).
            session_rates: Rates {
                reads: 60,
                writes: 10,
            },
            write_lock: None,
            lock: None,
            command: "ctx".into(),
            seen: Seen::Config,
        }
    }
}

/// Who a request comes from, derived from its bearer token.
#[derive(Debug, Clone)]
pub enum Who {
    /// The user's session (from unlock).
    User { hash: String },
    /// A registered consumer's service token.
    Consumer {
        name: String,
        hash: String,
        scope_text: Vec<String>,
        scope: Vec<Pattern>,
        mode: Mode,
        purpose: Option<String>,
        single: bool,
    },
}

impl Who {
    pub fn name(&self) -> &str {
        match self {
            Who::User { .. } => "user",
            Who::Consumer { name, .. } => name,
        }
    }

    fn in_scope(&self, id: &str) -> bool {
        match self {
            Who::User { .. } => true,
            Who::Consumer { scope, .. } => scope.iter().any(|p| p.covers(id)),
        }
    }
}

/// The kind of request, for rate limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Read,
    Write,
    /// Management endpoints: the user's session only.
    Admin,
}

/// An unlocked vault and what belongs to it.
struct Open {
    vault: Vault,
    /// Kept to check the password as a second factor; wiped on lock.
    secret: SecretKey,
    /// The token store's and the audit log's problems found at unlock (the fields'
    /// are the vault's own, [`Vault::problems`]).
    problems: Vec<Problem>,
}

/// Tokens, consumers, approvals and limits: everything requests mutate briefly.
struct Access {
    sessions: HashMap<String, TokenRecord>,
    tokens: HashMap<String, TokenRecord>,
    consumers: BTreeMap<String, Consumer>,
    approvals: approvals::Store,
    limiter: Limiter,
    last_activity: std::time::Instant,
    reported: HashSet<String>,
    /// Hashes of tokens a front end holds in memory only ([`Service::local_token`]):
    /// never written to the token store.
    local: HashSet<String>,
    /// Failed unauthenticated attempts, audited in bounded form.
    failures: Failures,
}

/// The actor of a summary of failed unauthenticated attempts (not a consumer
/// name: those cannot hold parentheses).
const UNAUTHENTICATED: &str = "(unauthenticated)";

/// What `GET /context/status` reports.
#[derive(Debug, Clone)]
pub struct Status {
    pub locked: bool,
    pub field_count: usize,
    pub categories: Vec<String>,
    pub idle_timeout_secs: u64,
    pub auto_lock_in_secs: Option<u64>,
}

/// A served vault.
pub struct Service {
    manifest_path: PathBuf,
    config: PersonalConfig,
    options: Options,
    idle: std::time::Duration,
    state_dir: PathBuf,
    state: RwLock<Option<Box<Open>>>,
    access: Mutex<Access>,
    audit: Mutex<SealedLog>,
    /// Field count and categories from the clear headers (what a locked vault reports).
    clear: Mutex<(usize, Vec<String>)>,
    control_hash: String,
    /// One server per vault, for as long as this one lives.
    _lock: Arc<VaultLock>,
    /// The vault's authenticated index while unlocked (shared with the vault and the log).
    ledger: Mutex<Option<Shared>>,
    /// Held through an unlock and a lock, so the two never interleave.
    unlocking: Mutex<()>,
    /// The token store was refused at unlock: the next write keeps it aside first.
    state_refused: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Now, whole seconds, RFC 3339.
pub fn now_text() -> String {
    crate::evidence::now()
}

fn now() -> Instant {
    use chrono::SubsecRound;
    chrono::Utc::now().trunc_subsecs(0)
}

impl Service {
    /// Open a vault for serving (locked). Takes the vault's server lock (refused at once,
    /// naming the holder, when another process serves it) and the audit log's.
    pub fn open(
        manifest: Manifest,
        options: Options,
    ) -> crate::error::Result<(Service, Zeroizing<String>)> {
        let config = PersonalConfig::require(&manifest)?;
        crate::manifest::roles::require_sound(&manifest)?;
        let state_dir = config.state_dir(&manifest);
        std::fs::create_dir_all(&state_dir).map_err(|e| Error::io(&state_dir, &e))?;
        let held = match &options.lock {
            Some(l) => l.clone(),
            None => Arc::new(VaultLock::acquire(&state_dir, &options.command)?),
        };
        let audit = SealedLog::open(
            &super::audit::path(&state_dir),
            &config.audit_recipient,
            &manifest.id,
        )?;
        let idle = options
            .idle_timeout
            .unwrap_or_else(|| config.idle_timeout.to_std().unwrap_or_default());
        let (control, control_hash, _) = tokens::issue(true)?;
        let clear = clear_summary(&manifest, &config);
        let s = Service {
            manifest_path: manifest.path.clone(),
            config,
            idle,
            state_dir,
            state: RwLock::new(None),
            access: Mutex::new(Access {
                sessions: HashMap::new(),
                tokens: HashMap::new(),
                consumers: BTreeMap::new(),
                approvals: approvals::Store::new(options.approval_ttl),
                limiter: Limiter::default(),
                last_activity: std::time::Instant::now(),
                reported: HashSet::new(),
                local: HashSet::new(),
                failures: Failures::default(),
            }),
            options,
            audit: Mutex::new(audit),
            clear: Mutex::new(clear),
            control_hash,
            _lock: held,
            ledger: Mutex::new(None),
            unlocking: Mutex::new(()),
            state_refused: std::sync::atomic::AtomicBool::new(false),
        };
        Ok((s, control))
    }

    pub fn root(&self) -> &Path {
        self.manifest_path.parent().unwrap_or(Path::new("."))
    }

    pub fn vault_id(&self) -> &str {
        &self.config.vault
    }

    pub fn idle_timeout(&self) -> std::time::Duration {
        self.idle
    }

    /// Append to the audit log; failing to record is failing the request.
    fn record(&self, e: Entry) -> Answer<()> {
        lock(&self.audit)
            .append(&e, &now_text())
            .map(|_| ())
            .map_err(|err| {
                Refusal::Unavailable(format!(
                    "the audit log cannot be written, so nothing is served: {err}"
                ))
            })
    }

    fn is_locked(&self) -> bool {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    pub fn status(&self) -> Status {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        let (count, cats) = match st.as_ref() {
            Some(o) => (
                o.vault.fields.len(),
                o.vault.category_names().cloned().collect(),
            ),
            None => lock(&self.clear).clone(),
        };
        let a = lock(&self.access);
        let left = self.idle.saturating_sub(a.last_activity.elapsed());
        Status {
            locked: st.is_none(),
            field_count: count,
            categories: cats,
            idle_timeout_secs: self.idle.as_secs(),
            auto_lock_in_secs: st.is_some().then_some(left.as_secs()),
        }
    }

    /// Record a window's summary of failed unauthenticated attempts.
    pub(super) fn record_failures(&self, s: Option<Summary>) -> Answer<()> {
        match s {
            Some(s) => self.record(
                Entry::new(Action::Deny, UNAUTHENTICATED)
                    .denied()
                    .detail(s.text()),
            ),
            None => Ok(()),
        }
    }

    /// Write the summary of failures counted so far (when the server stops).
    pub fn flush_audit(&self) {
        let pending = lock(&self.access).failures.flush(std::time::Instant::now());
        let _ = self.record_failures(pending);
    }

    /// Periodic work: idle auto-lock, expired tokens and approvals. Returns true when it locked.
    pub fn tick(&self) -> bool {
        let ended = lock(&self.access).failures.due(std::time::Instant::now());
        let _ = self.record_failures(ended);
        if self.is_locked() {
            return false;
        }
        let idle = lock(&self.access).last_activity.elapsed() >= self.idle;
        if idle {
            return self.lock_now("idle timeout").is_ok();
        }
        let now = now();
        let (expired, approvals) = {
            let mut a = lock(&self.access);
            let gone: Vec<TokenRecord> = a
                .tokens
                .values()
                .filter(|t| t.expired(now))
                .cloned()
                .collect();
            for t in &gone {
                a.tokens.remove(&t.hash);
            }
            a.limiter.sweep(std::time::Instant::now());
            (gone, a.approvals.expire(now))
        };
        for t in &expired {
            let _ = self.report_expiry(t);
        }
        if !expired.is_empty() {
            let _ = self.persist();
        }
        for ap in approvals {
            let _ = self.record(
                Entry::new(Action::Expire, &ap.ask.consumer)
                    .fields(ap.ask.items.iter().map(|i| i.id.clone()))
                    .detail(format!("approval {} expired", ap.id)),
            );
        }
        false
    }

    fn report_expiry(&self, t: &TokenRecord) -> Answer<()> {
        let first = lock(&self.access).reported.insert(t.hash.clone());
        if first {
            self.record(
                Entry::new(Action::Expire, t.consumer.as_deref().unwrap_or("user"))
                    .scope(&t.scope)
                    .detail(format!("token {}… expired", t.shown)),
            )?;
        }
        Ok(())
    }

    /// Who is asking, from the bearer token; counts the request against its rate limit
    /// and resets the idle timer.
    fn authenticate(&self, bearer: Option<&str>, class: Class) -> Answer<Who> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        let Some(token) = bearer.filter(|t| !t.is_empty()) else {
            return Err(Refusal::Unauthenticated(
                "missing `Authorization: Bearer <token>`".into(),
            ));
        };
        let hash = tokens::hash(token);
        let now = now();
        let mut a = lock(&self.access);
        if let Some(rates) = a.sessions.get(&hash).map(|r| r.rates) {
            // Field reads and writes count; management (lock above all) never waits.
            let t = std::time::Instant::now();
            let limit = match class {
                Class::Read => Some((format!("r:{hash}"), rates.reads)),
                Class::Write => Some((format!("w:{hash}"), rates.writes)),
                Class::Admin => None,
            };
            if let Some((key, limit)) = limit {
                if !a.limiter.allow(&key, limit, t) {
                    let retry_after = a.limiter.retry_after(&key, limit);
                    return Err(Refusal::RateLimited {
                        message: format!(
                            "too many requests for the session token (limit {limit}/minute)"
                        ),
                        retry_after,
                    });
                }
            }
            a.last_activity = t;
            return Ok(Who::User { hash });
        }
        let Some(rec) = a.tokens.get(&hash).cloned() else {
            // The periodic sweep may have removed it already: say why all the same.
            if a.reported.contains(&hash) {
                return Err(Refusal::Unauthenticated("token expired".into()));
            }
            return Err(Refusal::Unauthenticated("unknown or revoked token".into()));
        };
        if rec.expired(now) {
            a.tokens.remove(&hash);
            drop(a);
            self.report_expiry(&rec)?;
            let _ = self.persist();
            return Err(Refusal::Unauthenticated("token expired".into()));
        }
        if rec.spent() {
            return Err(Refusal::Unauthenticated(
                "single-use token already used".into(),
            ));
        }
        let consumer = rec.consumer.clone().unwrap_or_default();
        if class == Class::Admin {
            return Err(Refusal::ScopeExceeded(
                "this endpoint is the user's: it needs the session token from POST /context/unlock"
                    .into(),
            ));
        }
        let (key, limit) = match class {
            Class::Write => (format!("w:{hash}"), rec.rates.writes),
            _ => (format!("r:{hash}"), rec.rates.reads),
        };
        let t = std::time::Instant::now();
        if !a.limiter.allow(&key, limit, t) {
            let retry_after = a.limiter.retry_after(&key, limit);
            return Err(Refusal::RateLimited {
                message: format!("too many requests for this token (limit {limit}/minute)"),
                retry_after,
            });
        }
        a.last_activity = t;
        let scope =
            tokens::parse_scope(&rec.scope).map_err(|e| Refusal::Unavailable(e.to_string()))?;
        Ok(Who::Consumer {
            name: consumer,
            hash,
            scope_text: rec.scope.clone(),
            scope,
            mode: rec.mode,
            purpose: rec.purpose.clone(),
            single: rec.usage == Usage::Single,
        })
    }

    /// Count a successful field request against a token (spends single-use tokens).
    fn used(&self, who: &Who) {
        if let Who::Consumer { hash, single, .. } = who {
            let mut a = lock(&self.access);
            if let Some(t) = a.tokens.get_mut(hash) {
                t.uses += 1;
            }
            drop(a);
            if *single {
                let _ = self.persist();
            }
        }
    }

    /// Write the token store (consumers and service tokens).
    fn persist(&self) -> Answer<()> {
        let stored = {
            let a = lock(&self.access);
            let mut tokens: Vec<TokenRecord> = a
                .tokens
                .values()
                .filter(|t| !a.local.contains(&t.hash))
                .cloned()
                .collect();
            tokens.sort_by(|x, y| x.created_at.cmp(&y.created_at).then(x.hash.cmp(&y.hash)));
            Stored {
                format: String::new(),
                consumers: a.consumers.clone(),
                tokens,
            }
        };
        let Some(shared) = lock(&self.ledger).clone() else {
            return Err(Refusal::VaultLocked);
        };
        let mut l = vledger::lock(&shared);
        let file = state::path(&self.state_dir);
        if self
            .state_refused
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            // The refused store is evidence: kept aside, never overwritten silently.
            let aside = self.state_dir.join(state::REFUSED);
            let _ = std::fs::rename(&file, &aside);
        }
        state::save(&file, &stored, &self.config.state_recipient, &mut l)
            .map_err(|e| Refusal::Unavailable(crate::error::one_line(&e)))
    }

    /// Whether a request with this bearer gets past authentication at all, for a
    /// front end to ask before it reads a request body: the refusal
    /// `Service::authenticate` would give to a missing, unknown or expired token
    /// (or a locked vault). Counts nothing against a limit; the full check runs
    /// with the call itself.
    pub fn admits(&self, bearer: Option<&str>) -> Answer<()> {
        if self.is_control(bearer) {
            return Ok(());
        }
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        let Some(token) = bearer.filter(|t| !t.is_empty()) else {
            return Err(Refusal::Unauthenticated(
                "missing `Authorization: Bearer <token>`".into(),
            ));
        };
        let hash = tokens::hash(token);
        let a = lock(&self.access);
        if a.sessions.contains_key(&hash) || a.tokens.contains_key(&hash) {
            Ok(())
        } else if a.reported.contains(&hash) {
            Err(Refusal::Unauthenticated("token expired".into()))
        } else {
            Err(Refusal::Unauthenticated("unknown or revoked token".into()))
        }
    }

    /// Is this the per-launch control token (`ctx approvals` from another terminal)?
    pub fn is_control(&self, bearer: Option<&str>) -> bool {
        bearer.is_some_and(|t| tokens::hash(t) == self.control_hash)
    }
}

/// Field count and categories from the clear headers, without any key.
fn clear_summary(m: &Manifest, c: &PersonalConfig) -> (usize, Vec<String>) {
    let repo = crate::load::load(m.clone(), Vec::new(), &crate::load::LoadOptions::default());
    let n = repo
        .objects
        .iter()
        .filter(|o| o.meta.kind == super::field::FIELD_TYPE)
        .filter(|o| {
            o.origin
                .collection
                .as_ref()
                .is_some_and(|c2| c.categories.contains_key(c2))
        })
        .count();
    (n, c.categories.keys().cloned().collect())
}
