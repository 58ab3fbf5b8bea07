//! `ctx mcp` on a personal vault (seed 004 §9): the seed's MCP tools, prompts and
//! `context://CATEGORY` resources (metadata only) over [`ctx_core::personal::service::Service`], the
//! same operations `ctx serve` maps its HTTP routes onto, so an agent gets the same
//! fields, scope, approvals and audit over MCP as over HTTP.
//!
//! The process is the vault's server for its lifetime: it opens the vault (taking
//! the audit log's lock, so it cannot run beside a `ctx serve` of the same vault),
//! unlocks it with the profile password (`--password-file`, or a prompt when stdin
//! is a terminal: never read from the MCP transport), and grants the one consumer
//! it answers for an in-memory service token ([`Service::local_token`]). Every
//! tool call then goes through that token: the view, the token's scope and mode,
//! rate limits, approvals for sensitive and critical fields (asked through the
//! client: [`super::approval`]) and the encrypted audit log.
//!
//! - `server.rs`: the MCP surface and the approval round trip;
//! - `tools.rs`: the tools' arguments and descriptions;
//! - `prompts.rs`: the seed's prompts (they carry scopes, never values).

mod prompts;
mod server;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use zeroize::Zeroizing;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::manifest::Manifest;
use ctx_core::personal::service::{self as ps, Refusal, Service};
use ctx_core::personal::tokens::Mode;

/// Everything the personal server needs, collected by the command line.
pub struct Options {
    pub manifest: Manifest,
    /// The consumer this process answers for (`--agent`, or `ctx.mcp: {agent}`).
    pub consumer: String,
    /// The token's scope patterns (default `*`: what the vault's consumer role allows).
    /// The mode defaults to `read`: writing is granted only when asked for.
    pub scope: Vec<String>,
    pub mode: Mode,
    pub password: Zeroizing<String>,
    /// The vault's secret key, as text.
    pub secret_key: Zeroizing<String>,
    pub idle_timeout: Option<Duration>,
}

/// A refusal of the vault as a command error (never a value: refusals carry ids and codes).
fn failed(what: &str, r: Refusal) -> Error {
    let msg = format!("{what}: {} ({})", r.message(), r.constraint());
    match r {
        Refusal::Unauthenticated(_) | Refusal::InvalidRequest(_) => Error::Usage(msg),
        _ => Error::Invalid(msg),
    }
}

/// The refusal of a consumer the vault does not know, with how to make it known.
fn unregistered(consumer: &str) -> Error {
    let name = crate::mcp::inert::quoted(consumer);
    Error::Refused {
        message: format!(
            "consumer {name} is not registered with this vault, so it is served nothing"
        ),
        findings: Vec::new(),
        help: Some(format!(
            "register it first: with `ctx serve` running, POST /context/consumers/register \
             {{\"name\": {name}, \"secret\": \"...\"}} with your session token (docs/personal.md), \
             or declare it in the manifest under `agents:` with the vault's consumer role"
        )),
        exit: Exit::NotFound,
    }
}

/// `ctx mcp install` on a vault: is `consumer` one `ctx mcp` would serve? The vault
/// is unlocked to read its registered consumers (the rule [`Service::require_registered`]
/// applies at launch), then locked again.
pub fn check_registered(
    manifest: Manifest,
    consumer: &str,
    password: &str,
    secret_key: &str,
) -> Result<()> {
    let options = ps::Options {
        command: "ctx mcp install".into(),
        ..ps::Options::default()
    };
    let (svc, control) = Service::open(manifest, options)?;
    drop(control);
    let session = svc
        .unlock(password, secret_key)
        .map_err(|r| failed("cannot unlock the vault to check the consumer", r))?;
    let known = svc.require_registered(Some(&session), consumer);
    let _ = svc.lock(Some(&session));
    match known {
        Ok(()) => Ok(()),
        Err(Refusal::NotFound(_)) => Err(unregistered(consumer)),
        Err(r) => Err(failed("cannot check the consumer", r)),
    }
}

/// Open, unlock, grant the consumer's token, and serve MCP on stdio until stdin closes.
pub fn serve(o: Options) -> Result<Exit> {
    #[cfg(feature = "serve")]
    for step in crate::serve::sandbox::no_dumps() {
        eprintln!(
            "ctx mcp: {} {} ({})",
            if step.in_effect { "on " } else { "off" },
            step.name,
            step.detail
        );
    }
    let root = o.manifest.root.clone();
    // The repository's write lock file, as `ctx serve` fixes it.
    let write_lock = ctx_core::fs::RepoLock::acquire(&root)
        .map(|l| l.path().to_path_buf())
        .map_err(|e| Error::io(&root, &e))?;
    let options = ps::Options {
        idle_timeout: o.idle_timeout,
        write_lock: Some(write_lock),
        command: "ctx mcp".into(),
        ..ps::Options::default()
    };
    let (svc, control) = Service::open(o.manifest, options)?;
    drop(control);
    let session = svc
        .unlock(&o.password, &o.secret_key)
        .map_err(|r| failed("cannot unlock the vault", r))?;
    if let Some(why) = ctx_core::personal::keys::password_weakness(&o.password) {
        eprintln!(
            "ctx mcp: warning: the profile password is weak: {why}. It alone guards the vault on this \
             device; to move to a longer one, export the vault, create a new one and import it (docs/personal.md)"
        );
    }
    drop(o.password);
    drop(o.secret_key);
    // What unlock refused (planted, changed, put back or missing files): the user's to see.
    for problem in svc.problems(Some(&session)).unwrap_or_default() {
        eprintln!("ctx mcp: refused {problem}");
    }
    // Fail closed: a name the vault never registered gets no token (and no values).
    if let Err(r) = svc.require_registered(Some(&session), &o.consumer) {
        let _ = svc.lock(Some(&session));
        return Err(match r {
            Refusal::NotFound(_) => unregistered(&o.consumer),
            r => failed("cannot check the consumer", r),
        });
    }
    let token = svc
        .local_token(Some(&session), &o.consumer, &o.scope, o.mode, None)
        .map_err(|r| failed("cannot grant the consumer its token", r))?;
    let svc = Arc::new(svc);
    let server = server::PersonalServer::new(
        svc.clone(),
        token,
        o.consumer.clone(),
        o.scope.clone(),
        o.mode,
    )?;
    let rt = super::runtime()?;
    eprintln!(
        "ctx mcp: serving personal vault {} to consumer `{}` (scope {}, mode {}) over stdio; \
         it locks after {} s without requests",
        svc.vault_id(),
        o.consumer,
        o.scope.join(", "),
        o.mode.as_str(),
        svc.idle_timeout().as_secs()
    );
    let ticker = svc.clone();
    let outcome = rt.block_on(async move {
        // Idle auto-lock and the expiry of approvals, as `ctx serve` runs them.
        tokio::spawn(async move {
            let mut t = tokio::time::interval(Duration::from_secs(1));
            loop {
                t.tick().await;
                let s = ticker.clone();
                if let Ok(true) = tokio::task::spawn_blocking(move || s.tick()).await {
                    eprintln!(
                        "ctx mcp: vault locked after {} s without requests; restart ctx mcp to unlock it",
                        ticker.idle_timeout().as_secs()
                    );
                }
            }
        });
        super::stdio(server).await
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    // Lock on the way out: the audit log records the end of the session.
    let _ = svc.lock(Some(&session));
    super::ended(outcome)
}
