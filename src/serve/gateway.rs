//! The Context Layer facade of `ctx serve` (seed 000 §10): the one module of the
//! binding that calls the library. It keeps the live repository and the
//! per-launch credentials; each call takes a fresh snapshot (so nothing is served
//! from a state older than the files), opens the exchange over it and runs one
//! `ctx_core::exchange::ops::gateway` operation. Protocol codes become HTTP
//! statuses here ([`status_for`]); bodies are rendered by [`super::cl_routes`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use ctx_core::error::{Error, Result};
use ctx_core::exchange::error::{ClError, ClResult};
use ctx_core::exchange::idempotency::{self, Lookup, Stored};
use ctx_core::exchange::ops::gateway::{self, Caller, Credentials, IssuedTokens, Verdict};
use ctx_core::exchange::ops::Exchange;
use ctx_core::exchange::state::StateDir;
use ctx_core::exchange::view::ViewOptions;
use ctx_core::exchange::SpecVersion;
use ctx_core::fs::{Existing, Mode};
use ctx_core::load::live::LiveRepo;
use ctx_core::manifest::Manifest;
use ctx_core::personal::limits::Limiter;

/// A gateway answer before rendering: status, body, extra headers.
pub struct ClReply {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl ClReply {
    pub fn ok(status: u16, body: Value) -> ClReply {
        ClReply {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub fn located(mut self, location: String) -> ClReply {
        self.headers.push(("location".into(), location));
        self
    }
}

/// The HTTP status of a protocol error (seed 000 §10.4).
pub fn status_for(code: &str) -> u16 {
    match code {
        "INVALID_JSON"
        | "INVALID_REQUEST"
        | "INVALID_OBJECT"
        | "INVALID_BODY"
        | "UNSUPPORTED_SPEC_VERSION"
        | "INVALID_IDEMPOTENCY_KEY"
        | "USAGE" => 400,
        "UNAUTHENTICATED" => 401,
        "FORBIDDEN"
        | "REQUESTER_MISMATCH"
        | "AUTHENTICATION_MISMATCH"
        | "DISCOVERY_NOT_ALLOWED" => 403,
        "NOT_FOUND" | "ENDPOINT_NOT_FOUND" | "REQUEST_NOT_FOUND" | "DECISION_NOT_FOUND"
        | "PROPOSAL_NOT_FOUND" | "RECEIPT_NOT_FOUND" | "BUNDLE_NOT_FOUND" => 404,
        "METHOD_NOT_ALLOWED" => 405,
        "REQUEST_TIMEOUT" => 408,
        "IDEMPOTENCY_KEY_REUSED"
        | "BUNDLE_REPLAY"
        | "STATE_CONFLICT"
        | "REQUEST_STATE_CONFLICT"
        | "PROPOSAL_STATE_INVALID"
        | "POLICY_SNAPSHOT_CHANGED"
        | "NOTHING_TO_APPROVE"
        | "REQUEST_DENIED"
        | "INDETERMINATE_OUTCOME_PENDING" => 409,
        "BUNDLE_EXPIRED" | "BUNDLE_REVOKED" | "BUNDLE_PURGED" => 410,
        "PAYLOAD_TOO_LARGE" => 413,
        "UNSUPPORTED_MEDIA_TYPE" => 415,
        "RATE_LIMITED" | "DISCOVERY_BUDGET_EXCEEDED" => 429,
        "POLICY_UNAVAILABLE"
        | "INVALID_EXCHANGE_POLICY"
        | "STATE_UNAVAILABLE"
        | "AUDIT_UNAVAILABLE"
        | "KEY_UNAVAILABLE"
        | "KEY_MISMATCH"
        | "KEY_NOT_DECLARED"
        | "KEY_PURPOSE_CONFLICT"
        | "REVOCATION_CHECK_FAILED"
        | "CREDENTIALS_UNAVAILABLE"
        | "INDETERMINATE_OUTCOME"
        | "INTERNAL" => 503,
        c if c.starts_with("RECEIPT_") && c != "RECEIPT_NOT_FOUND" => 503,
        _ => 422,
    }
}

/// The binding's bounds (flags of `ctx serve`).
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// How long a set of `ctxcl_` tokens works.
    pub token_ttl: Duration,
    /// Calls a minute per caller.
    pub rate_limit: u32,
}

/// The binding's state for one server.
pub struct Gateway {
    live: Mutex<LiveRepo>,
    credentials: Mutex<Credentials>,
    tuning: Tuning,
    /// Calls per caller (seed 000 §9.1: current rate limits are an input of every
    /// decision; a caller past its limit gets no decision at all).
    limiter: Mutex<Limiter>,
    state: StateDir,
    /// The repository's write-lock file, found before confinement.
    write_lock: PathBuf,
    /// Serializes calls that carry an `Idempotency-Key`, so two concurrent
    /// calls with one key cannot both run.
    keyed: Mutex<()>,
}

/// Whether a manifest asks for the binding (`extensions.ctx.exchange`).
pub fn wanted(m: &Manifest) -> bool {
    m.extension(ctx_core::exchange::config::EXTENSION).is_some()
}

impl Gateway {
    /// Load the repository and mint this launch's tokens. The policy must parse:
    /// a broken policy is refused at start, not discovered by the first caller.
    pub fn open(
        dir: Option<&Path>,
        cwd: &Path,
        opts: ctx_core::load::LoadOptions,
        write_lock: PathBuf,
        tuning: Tuning,
    ) -> Result<(Gateway, IssuedTokens)> {
        let live = LiveRepo::open(dir, cwd, opts)?;
        let repo = live.repo();
        let cfg = ctx_core::exchange::config::ExchangeConfig::from_manifest(&repo.manifest)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let (credentials, tokens) = Credentials::generate(&cfg, now(), lifetime(tuning))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        Ok((
            Gateway {
                state: StateDir::new(&repo.manifest.root),
                live: Mutex::new(live),
                write_lock,
                credentials: Mutex::new(credentials),
                tuning,
                limiter: Mutex::new(Limiter::default()),
                keyed: Mutex::new(()),
            },
            tokens,
        ))
    }

    /// Run `f` over the exchange of a fresh snapshot.
    fn with<T>(&self, f: impl FnOnce(&Exchange<'_>) -> ClResult<T>) -> ClResult<T> {
        let repo = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.snapshot().map_err(|e| {
                ClError::new(
                    "POLICY_UNAVAILABLE",
                    format!("the repository cannot be loaded: {e}"),
                )
            })?
        };
        let mut ex = Exchange::new(&repo, ViewOptions { offline: true })?;
        ex.state.lock_at = Some(self.write_lock.clone());
        f(&ex)
    }

    pub fn authenticate(&self, bearer: Option<&str>) -> ClResult<Caller> {
        lock(&self.credentials).authenticate(bearer, now())
    }

    /// Take one call from `caller`'s budget; the seconds to wait when it is spent.
    pub fn allow(&self, caller: &Caller) -> std::result::Result<(), u64> {
        let key = match caller {
            Caller::Operator => "operator",
            Caller::Principal(p) => p.as_str(),
        };
        let mut l = lock(&self.limiter);
        let t = std::time::Instant::now();
        l.sweep(t);
        if l.allow(key, self.tuning.rate_limit, t) {
            Ok(())
        } else {
            Err(l.retry_after(key, self.tuning.rate_limit))
        }
    }

    pub fn rate_limit(&self) -> u32 {
        self.tuning.rate_limit
    }

    /// A fresh set of tokens once the current one has expired.
    pub fn renew(&self) -> ClResult<IssuedTokens> {
        lock(&self.credentials).renew(now())
    }

    /// How long until the current tokens expire.
    pub fn renew_in(&self) -> Duration {
        let left = lock(&self.credentials).expires_at() - now();
        left.to_std().unwrap_or_default()
    }

    pub fn capabilities(&self) -> ClResult<ClReply> {
        let ttl = self.tuning.token_ttl.as_secs();
        let rate = self.tuning.rate_limit;
        self.with(|ex| {
            let mut doc = gateway::capabilities(ex);
            if let Some(auth) = doc.get_mut("authentication").and_then(Value::as_object_mut) {
                auth.insert("token_lifetime_seconds".into(), ttl.into());
            }
            if let Some(doc) = doc.as_object_mut() {
                doc.insert(
                    "rate_limit".into(),
                    serde_json::json!({"calls_per_minute_per_caller": rate, "status": 429}),
                );
            }
            Ok(ClReply::ok(200, doc))
        })
    }

    /// Run a mutation under its `Idempotency-Key` (when given): a replay gets
    /// the kept answer, a reused key with another body a 409. Answers with a
    /// 5xx status are not kept (the caller may retry them). `render` turns a
    /// refusal into its reply, so what is kept is exactly what was sent.
    pub fn keyed(
        &self,
        caller: &Caller,
        route: &str,
        key: Option<&str>,
        body: &[u8],
        render: impl Fn(&ClError) -> ClReply,
        run: impl FnOnce() -> ClResult<ClReply>,
    ) -> ClReply {
        let Some(key) = key else {
            return run().unwrap_or_else(|e| render(&e));
        };
        if let Err(e) = idempotency::check_key(key) {
            return render(&e);
        }
        let who = match caller {
            Caller::Operator => "operator".to_string(),
            Caller::Principal(p) => p.clone(),
        };
        let digest = ctx_core::exchange::canon::digest_bytes(body);
        let store = idempotency::Store::new(&self.state);
        let _one = self.keyed.lock().unwrap_or_else(|p| p.into_inner());
        match store.lookup(&who, route, key, &digest) {
            Err(e) => return render(&e),
            Ok(Lookup::Replay(s)) => {
                let body = serde_json::from_str(&s.body).unwrap_or(Value::Null);
                let mut r = ClReply::ok(s.status, body);
                r.headers = s.headers;
                r.headers
                    .push(("idempotent-replayed".into(), "true".into()));
                return r;
            }
            Ok(Lookup::Conflict) => return render(&ClError::new(
                "IDEMPOTENCY_KEY_REUSED",
                "this Idempotency-Key was used with a different body; use a new key for a new call",
            )),
            Ok(Lookup::Fresh) => {}
        }
        let reply = run().unwrap_or_else(|e| render(&e));
        if reply.status < 500 {
            let kept = Stored {
                status: reply.status,
                body: reply.body.to_string(),
                headers: reply.headers.clone(),
            };
            if let Err(e) = store.save(&who, route, key, &digest, &kept) {
                return render(&e);
            }
        }
        reply
    }

    pub fn submit(
        &self,
        caller: &Caller,
        request: &Value,
        v: SpecVersion,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| {
            let o = gateway::submit(ex, caller, request, v, at)?;
            let id = o.decided.evaluation.decision["request_ref"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let status = if o.decided.evaluation.state.as_str() == "needs_approval" {
                202
            } else {
                201
            };
            Ok(ClReply::ok(status, o.body(&id, v, at))
                .located(format!("/context/v1/requests/{id}")))
        })
    }

    pub fn status(&self, caller: &Caller, id: &str) -> ClResult<ClReply> {
        self.with(|ex| Ok(ClReply::ok(200, gateway::status(ex, caller, id)?.body())))
    }

    pub fn decide(
        &self,
        caller: &Caller,
        id: &str,
        verdict: Verdict,
        reason: &str,
        v: SpecVersion,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| {
            Ok(
                match gateway::decide_request(ex, caller, id, verdict, reason, v, at)? {
                    Some(o) => ClReply::ok(200, o.body(id, v, at)),
                    None => ClReply::ok(200, gateway::denied_body(id, v, at)),
                },
            )
        })
    }

    pub fn bundle(
        &self,
        caller: &Caller,
        id: &str,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| Ok(ClReply::ok(200, gateway::retrieve(ex, caller, id, at)?)))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn report(
        &self,
        caller: &Caller,
        id: &str,
        action: &str,
        success: bool,
        digest: &str,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| {
            let (outcome, receipt) = gateway::report(ex, caller, id, action, success, digest, at)?;
            let rid = receipt["id"].as_str().unwrap_or("").to_string();
            Ok(ClReply::ok(
                201,
                serde_json::json!({"outcome": outcome, "receipt": receipt}),
            )
            .located(format!("/context/v1/receipts/{rid}")))
        })
    }

    pub fn propose(
        &self,
        caller: &Caller,
        bundle: &str,
        candidate: &Value,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| {
            Ok(ClReply::ok(
                201,
                gateway::propose(ex, caller, bundle, candidate, at)?,
            ))
        })
    }

    pub fn discover(
        &self,
        caller: &Caller,
        query: &str,
        v: SpecVersion,
        at: ctx_core::time::Instant,
    ) -> ClResult<ClReply> {
        self.with(|ex| {
            Ok(ClReply::ok(
                200,
                gateway::discover(ex, caller, query, v, at)?,
            ))
        })
    }

    pub fn receipt(&self, caller: &Caller, id: &str) -> ClResult<ClReply> {
        self.with(|ex| Ok(ClReply::ok(200, gateway::receipt(ex, caller, id)?)))
    }
}

/// A set's lifetime as the library counts it.
fn lifetime(t: Tuning) -> chrono::Duration {
    chrono::Duration::from_std(t.token_ttl).unwrap_or(chrono::Duration::hours(12))
}

fn now() -> ctx_core::time::Instant {
    chrono::Utc::now()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Renew the tokens whenever a set expires, and rewrite the credentials file
/// (requesters read their new token from it after a 401 that says "expired").
pub async fn renew_tokens(gw: Arc<Gateway>, addr: SocketAddr, path: PathBuf) {
    loop {
        tokio::time::sleep(gw.renew_in()).await;
        let g = gw.clone();
        let renewed = tokio::task::spawn_blocking(move || {
            let tokens = g.renew().map_err(|e| e.to_string())?;
            CredentialsFile::write(addr.port(), &format!("http://{addr}"), &tokens)
                .map(|f| {
                    // The file stays until the server stops, not until this handle goes.
                    std::mem::forget(f);
                    tokens.expires_at
                })
                .map_err(|e| e.to_string())
        })
        .await;
        match renewed {
            Ok(Ok(until)) => eprintln!(
                "context layer: tokens renewed in {} (valid until {})",
                path.display(),
                ctx_core::exchange::canon::iso_ms(&ctx_core::exchange::canon::to_ms(until))
            ),
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e,
                    _ => "internal error".into(),
                };
                eprintln!(
                    "context layer: the tokens could not be renewed (trying again in 5 s): {why}"
                );
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    }
}

/// The per-launch credentials file: `<config>/serve/context-layer-<port>.json`,
/// mode 0600, removed when the server stops. Requesters started by the same
/// user read their token from it; the tokens never appear on a command line,
/// in a URL or in the repository.
pub struct CredentialsFile {
    pub path: PathBuf,
}

impl CredentialsFile {
    pub fn write(port: u16, url: &str, tokens: &IssuedTokens) -> Result<CredentialsFile> {
        let dir = ctx_core::personal::keys::config_dir()
            .ok_or_else(|| Error::Usage("no config folder: set HOME or XDG_CONFIG_HOME".into()))?
            .join("serve");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, &e))?;
        let path = dir.join(format!("context-layer-{port}.json"));
        let text = zeroize::Zeroizing::new(
            serde_json::json!({
                "url": url,
                "pid": std::process::id(),
                "operator": tokens.operator,
                "requesters": tokens.requesters,
                "expires_at": ctx_core::exchange::canon::iso_ms(
                    &ctx_core::exchange::canon::to_ms(tokens.expires_at)
                ),
            })
            .to_string(),
        );
        ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Private, Existing::Replace)
            .map_err(|e| Error::io(&path, &e))?;
        Ok(CredentialsFile { path })
    }
}

impl Drop for CredentialsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
