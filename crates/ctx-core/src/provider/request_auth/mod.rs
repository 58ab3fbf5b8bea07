//! AtMem delegated request authentication v1 (`atmem-hmac-sha256-v1`): how a
//! local delegated provider knows a request comes from its registered host.
//!
//! A host signs each request with HMAC-SHA256 over eleven exact lines
//! ([`mac_input`]) under a 32-byte secret it shares with the provider.
//! [`Authenticator::verify`] applies the profile's checks in the profile's
//! order and stops at the first failure:
//!
//! 1. framing and size, each authentication header exactly once ([`HttpRequest::auth_fields`]);
//! 2. the profile, the configured provider and instance, an accepted key ([`Keyring::accepted`]);
//! 3. `issued < expires <= issued + 30`, `issued <= now + 5`, `now < expires`;
//! 4. the MAC, compared in constant time;
//! 5. the nonce reserved in the durable [`Ledger`];
//!
//! and only then may the caller parse the request or report health. Every
//! failure looks the same to the caller ([`REJECTION_BODY`] with status 401);
//! the [`Rejection`] says which check refused and why, for the server's log.

mod keyring;
mod ledger;
mod mac;
mod message;

pub mod conformance;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use keyring::{
    init, read_secret, revoke, rotate, Issued, KeyEntry, Keyring, SetupError, KEYRING_FILE,
};
pub use ledger::{Ledger, LedgerError, LEDGER_FILE};
pub use mac::{
    mac_input, random_nonce, sign_hex, sign_request, verify_hex, MacFields, SignedHeaders,
};
pub use message::{AuthFields, HttpRequest, Route, AUTH_HEADERS};

/// `X-AtMem-Profile`.
pub const PROFILE: &str = "atmem-hmac-sha256-v1";
pub const CONTEXT_PATH: &str = "/v1/delegated-context";
pub const HEALTH_PATH: &str = "/health";
/// `expires - issued` at most.
pub const MAX_LIFETIME_SECS: i64 = 30;
/// How far `issued` may be ahead of the provider's clock.
pub const MAX_FUTURE_SKEW_SECS: i64 = 5;
/// How long a rotated-out key may stay accepted.
pub const MAX_OVERLAP_SECS: i64 = 300;
pub const DEFAULT_OVERLAP_SECS: i64 = 30;
pub const MAX_BODY_BYTES: usize = 150_000;
/// How long a request body may take to arrive.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
pub const MAX_LIVE_NONCES: usize = 100_000;
/// The only thing a caller learns about a refused request (HTTP 401).
pub const REJECTION_BODY: &str = r#"{"error":"request_authentication_rejected"}"#;

/// Where request authentication lives when no `--auth` folder is named:
/// `provider-auth/` beside the user's signing keys (`$XDG_CONFIG_HOME/ctx/`,
/// else `~/.config/ctx/`).
pub fn default_dir() -> crate::error::Result<PathBuf> {
    let keys = crate::keys::key_dir()?;
    Ok(keys
        .parent()
        .map_or_else(|| keys.clone(), Path::to_path_buf)
        .join("provider-auth"))
}

/// The check that refused, in the profile's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Step 1: route, Host, Transfer-Encoding, Content-Length/-Type, size.
    Framing,
    /// Step 1: authentication headers missing, duplicated or malformed.
    Headers,
    /// Step 2: profile, provider, instance or key.
    Identity,
    /// Step 3: the time window.
    Time,
    /// Step 4: the MAC.
    Mac,
    /// Step 5: the nonce was already used.
    Replay,
    /// Step 5 (or any step's files): the keyring, a secret or the ledger
    /// could not be used, or the clock went backwards.
    Storage,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Framing => "framing",
            Stage::Headers => "headers",
            Stage::Identity => "identity",
            Stage::Time => "time",
            Stage::Mac => "mac",
            Stage::Replay => "replay",
            Stage::Storage => "storage",
        }
    }
}

/// A refused request: for the log only, never for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub stage: Stage,
    pub detail: String,
}

impl Rejection {
    pub fn new(stage: Stage, detail: impl Into<String>) -> Self {
        Rejection {
            stage,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.stage.as_str(), self.detail)
    }
}

/// An authenticated request: its route, and what may be logged about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub route: Route,
    pub key_id: String,
    pub nonce: String,
    pub expires: i64,
}

/// Verifies requests for the provider and instance of one keyring folder.
#[derive(Debug, Clone)]
pub struct Authenticator {
    dir: PathBuf,
    provider_id: String,
    instance_id: String,
    ledger: Ledger,
    /// Accept the published fixture secret (conformance runs only).
    fixture_ok: bool,
}

/// The secret of the published vectors (bytes 0..=31): public, so never a
/// credential.
const FIXTURE_SECRET: [u8; 32] = {
    let mut b = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        b[i] = i as u8;
        i += 1;
    }
    b
};

fn fixture_refused(dir: &Path) -> SetupError {
    SetupError::new(
        dir,
        "a key holds the published fixture secret of the conformance vectors",
        "never use a published secret: rotate to a fresh key (`ctx provider auth rotate --overlap 0`)",
    )
}

impl Authenticator {
    /// Open a request-authentication folder: the keyring must be valid,
    /// every listed secret readable and the nonce ledger intact.
    /// A key holding the published fixture secret is refused.
    pub fn open(dir: &Path) -> Result<Authenticator, SetupError> {
        Self::open_with(dir, false)
    }

    /// [`Authenticator::open`] accepting the published fixture secret: for
    /// the conformance runner only.
    pub(super) fn open_with(dir: &Path, fixture_ok: bool) -> Result<Authenticator, SetupError> {
        let ring = Keyring::load(dir)?;
        for k in &ring.keys {
            if *read_secret(dir, k)? == FIXTURE_SECRET && !fixture_ok {
                return Err(fixture_refused(&dir.join(&k.secret_file)));
            }
        }
        let ledger = Ledger::open(dir)?;
        Ok(Authenticator {
            dir: dir.to_path_buf(),
            provider_id: ring.provider_id,
            instance_id: ring.instance_id,
            ledger,
            fixture_ok,
        })
    }

    pub fn provider_id(&self) -> &str {
        &self.provider_id
    }

    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A smaller ledger (tests).
    pub fn with_ledger_capacity(mut self, capacity: usize) -> Self {
        self.ledger = self.ledger.with_capacity(capacity);
        self
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Steps 1-5. `clock` gives Unix seconds; it is read for the time window
    /// and again under the ledger's lock.
    pub fn verify(
        &self,
        req: &HttpRequest,
        clock: &dyn Fn() -> i64,
    ) -> Result<Authenticated, Rejection> {
        // 1. Framing and the authentication headers.
        let f = req.auth_fields()?;

        // 2. Profile, identity, key. The keyring is read for every request, so
        // a rotation or revocation applies at once.
        let identity = |d: String| Rejection::new(Stage::Identity, d);
        if f.profile != PROFILE {
            return Err(identity(format!(
                "profile {:?} is not {PROFILE}",
                f.profile
            )));
        }
        let ring =
            Keyring::load(&self.dir).map_err(|e| Rejection::new(Stage::Storage, e.to_string()))?;
        if (ring.provider_id.as_str(), ring.instance_id.as_str())
            != (self.provider_id.as_str(), self.instance_id.as_str())
        {
            return Err(Rejection::new(
                Stage::Storage,
                "the keyring's provider or instance changed since the server started",
            ));
        }
        if f.provider_id != self.provider_id || f.instance_id != self.instance_id {
            return Err(identity(format!(
                "provider {:?} instance {:?} is not this server's {:?} {:?}",
                f.provider_id, f.instance_id, self.provider_id, self.instance_id
            )));
        }
        let now = clock();
        let key = ring.accepted(f.key_id, now).ok_or_else(|| {
            identity(match ring.keys.iter().find(|k| k.key_id == f.key_id) {
                Some(_) => format!("key {:?} expired (rotated out)", f.key_id),
                None => format!("key {:?} is not in the keyring", f.key_id),
            })
        })?;

        // 3. The time window.
        let (issued, expires) = (f.issued, f.expires);
        if !(issued < expires && expires <= issued + MAX_LIFETIME_SECS) {
            return Err(Rejection::new(
                Stage::Time,
                format!("issued {issued}, expires {expires}: expected issued < expires <= issued + {MAX_LIFETIME_SECS}"),
            ));
        }
        if issued > now + MAX_FUTURE_SKEW_SECS {
            return Err(Rejection::new(
                Stage::Time,
                format!("issued {issued} is more than {MAX_FUTURE_SKEW_SECS} s after now ({now})"),
            ));
        }
        if now >= expires {
            return Err(Rejection::new(
                Stage::Time,
                format!("expired at {expires} (now {now})"),
            ));
        }

        // 4. The MAC over the exact components and body.
        let fields = MacFields {
            method: &req.method,
            host: f.host,
            target: &req.target,
            provider_id: f.provider_id,
            instance_id: f.instance_id,
            key_id: f.key_id,
            issued: f.issued_text,
            expires: f.expires_text,
            nonce: f.nonce,
        };
        let input = mac_input(&fields, &req.body).map_err(|what| {
            Rejection::new(
                Stage::Framing,
                format!("{what} is not printable ASCII without spaces"),
            )
        })?;
        let secret = read_secret(&self.dir, key)
            .map_err(|e| Rejection::new(Stage::Storage, e.to_string()))?;
        if *secret == FIXTURE_SECRET && !self.fixture_ok {
            let e = fixture_refused(&self.dir.join(&key.secret_file));
            return Err(Rejection::new(Stage::Storage, e.to_string()));
        }
        if !verify_hex(&secret, &input, f.signature) {
            return Err(Rejection::new(
                Stage::Mac,
                format!("signature does not match (key {:?})", f.key_id),
            ));
        }

        // 5. The nonce, once.
        self.ledger
            .reserve(f.provider_id, f.instance_id, f.nonce, expires, clock)
            .map_err(|e| {
                let stage = match e {
                    LedgerError::Replay => Stage::Replay,
                    LedgerError::Expired { .. } => Stage::Time,
                    _ => Stage::Storage,
                };
                Rejection::new(stage, e.to_string())
            })?;
        Ok(Authenticated {
            route: f.route,
            key_id: f.key_id.to_string(),
            nonce: f.nonce.to_string(),
            expires,
        })
    }
}
