//! Per-launch bearer credentials of a network gateway (seed 000 §11.1): one
//! `ctxcl_` token per configured requester and one for the operator, held as
//! SHA-256 digests only, each set valid for a lifetime and then replaced whole.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Duration;

use super::gateway::Caller;
use crate::exchange::canon;
use crate::exchange::config;
use crate::exchange::error::{fail, ClError, ClResult};
use crate::time::Instant;

/// Per-launch bearer credentials (seed 000 §11.1: a local server requires a
/// per-launch authorization token). One token per configured requester and
/// one for the operator; only their SHA-256 digests are kept in memory, so a
/// leaked process image does not hand out a usable token. Tokens expire
/// (§11.1: tokens are validated for expiry): [`Credentials::renew`] replaces the
/// whole set, and the previous set is remembered only to say "expired".
#[derive(Debug, Clone)]
pub struct Credentials {
    by_digest: BTreeMap<String, Caller>,
    expires_at: Instant,
    lifetime: Duration,
    /// Digests of the previous set.
    expired: BTreeSet<String>,
}

/// The tokens as handed to the user (written to a 0600 file by the server).
#[derive(Debug, Clone)]
pub struct IssuedTokens {
    pub operator: String,
    /// Principal → token.
    pub requesters: BTreeMap<String, String>,
    /// When they stop working.
    pub expires_at: Instant,
}

/// Prefix of Context Layer gateway tokens (distinct from vault tokens `ctx_`/`ctxs_`).
pub const TOKEN_PREFIX: &str = "ctxcl_";

fn new_token() -> ClResult<String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| {
        ClError::new(
            "CREDENTIALS_UNAVAILABLE",
            format!("no randomness available for a gateway token: {e}"),
        )
    })?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(b)))
}

/// Mint one token for each caller.
fn mint(
    callers: &[Caller],
    expires_at: Instant,
) -> ClResult<(BTreeMap<String, Caller>, IssuedTokens)> {
    let mut by_digest = BTreeMap::new();
    let mut t = IssuedTokens {
        operator: String::new(),
        requesters: BTreeMap::new(),
        expires_at,
    };
    for c in callers {
        let tok = new_token()?;
        by_digest.insert(canon::digest_bytes(tok.as_bytes()), c.clone());
        match c {
            Caller::Operator => t.operator = tok,
            Caller::Principal(p) => {
                t.requesters.insert(p.clone(), tok);
            }
        }
    }
    Ok((by_digest, t))
}

impl Credentials {
    /// Fresh tokens for every requester of `cfg` and the operator, valid for
    /// `lifetime` from `now`.
    pub fn generate(
        cfg: &config::ExchangeConfig,
        now: Instant,
        lifetime: Duration,
    ) -> ClResult<(Credentials, IssuedTokens)> {
        let mut callers = vec![Caller::Operator];
        callers.extend(
            cfg.requesters
                .keys()
                .map(|name| Caller::Principal(config::principal(name))),
        );
        Self::for_callers(&callers, now, lifetime)
    }

    fn for_callers(
        callers: &[Caller],
        now: Instant,
        lifetime: Duration,
    ) -> ClResult<(Credentials, IssuedTokens)> {
        let expires_at = now + lifetime;
        let (by_digest, t) = mint(callers, expires_at)?;
        Ok((
            Credentials {
                by_digest,
                expires_at,
                lifetime,
                expired: BTreeSet::new(),
            },
            t,
        ))
    }

    /// When the current tokens stop working.
    pub fn expires_at(&self) -> Instant {
        self.expires_at
    }

    /// A new set for the same callers, valid for another lifetime from `now`;
    /// the current tokens stop working at once.
    pub fn renew(&mut self, now: Instant) -> ClResult<IssuedTokens> {
        let callers: Vec<Caller> = self.by_digest.values().cloned().collect();
        let expires_at = now + self.lifetime;
        let (by_digest, t) = mint(&callers, expires_at)?;
        let old = std::mem::replace(&mut self.by_digest, by_digest);
        self.expired = old.into_keys().collect();
        self.expires_at = expires_at;
        Ok(t)
    }

    /// The caller a bearer token proves at `now`; `UNAUTHENTICATED` when absent,
    /// unknown or expired.
    pub fn authenticate(&self, bearer: Option<&str>, now: Instant) -> ClResult<Caller> {
        let Some(b) = bearer.filter(|b| b.starts_with(TOKEN_PREFIX)) else {
            return fail(
                "UNAUTHENTICATED",
                "send `Authorization: Bearer ctxcl_…`, the per-launch token `ctx serve` wrote for your requester",
            );
        };
        let digest = canon::digest_bytes(b.as_bytes());
        match self.by_digest.get(&digest) {
            Some(_) if now >= self.expires_at => fail("UNAUTHENTICATED", EXPIRED),
            Some(c) => Ok(c.clone()),
            None if self.expired.contains(&digest) => fail("UNAUTHENTICATED", EXPIRED),
            None => fail(
                "UNAUTHENTICATED",
                "the bearer token is not one this server issued (tokens last one launch)",
            ),
        }
    }
}

const EXPIRED: &str = "the bearer token has expired; read the fresh one from the credentials file `ctx serve` keeps (it renews the set when a lifetime ends)";

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Instant {
        crate::time::parse_timestamp(s).unwrap()
    }

    #[test]
    fn tokens_expire_and_a_renewed_set_replaces_them() {
        let t0 = at("2030-01-01T00:00:00Z");
        let callers = [
            Caller::Operator,
            Caller::Principal("urn:ctx:agent:a".into()),
        ];
        let (mut c, first) = Credentials::for_callers(&callers, t0, Duration::hours(1)).unwrap();
        let a = first.requesters["urn:ctx:agent:a"].clone();
        assert_eq!(first.expires_at, at("2030-01-01T01:00:00Z"));
        assert_eq!(
            c.authenticate(Some(&a), t0).unwrap(),
            Caller::Principal("urn:ctx:agent:a".into())
        );
        let late = at("2030-01-01T01:00:00Z");
        let e = c.authenticate(Some(&a), late).unwrap_err();
        assert_eq!(e.code, "UNAUTHENTICATED");
        assert!(e.message.contains("expired"), "{}", e.message);

        let second = c.renew(late).unwrap();
        assert_eq!(c.expires_at(), at("2030-01-01T02:00:00Z"));
        assert_ne!(second.requesters["urn:ctx:agent:a"], a);
        assert!(c
            .authenticate(Some(&a), late)
            .unwrap_err()
            .message
            .contains("expired"));
        assert_eq!(
            c.authenticate(Some(&second.operator), late).unwrap(),
            Caller::Operator
        );
        let unknown = c.authenticate(Some("ctxcl_00"), late).unwrap_err();
        assert!(unknown.message.contains("not one this server issued"));
    }
}
