//! `ctx mcp`: a Model Context Protocol server over stdio, a thin transport
//! over the library (see `service.rs`, the facade). Built with the official
//! Rust SDK (rmcp) on a single-threaded tokio runtime; library calls run on the
//! blocking pool. stdout carries JSON-RPC only: notes go to stderr, and child
//! processes (git) never inherit stdout.
//!
//! - `service.rs`: the facade (status, list, get, context, resolve, search).
//! - `exchange.rs`: the seam to the Context Layer (request_context, proposals).
//! - `memory.rs`: context_set (governed write or proposal).
//! - `approval.rs`: tiers and the one approval gate for both protocol eras.
//! - `evidence.rs`: audit events and receipts.
//! - `server.rs`, `calls.rs`, `resources.rs`, `prompts.rs`: the MCP surface.
//! - `install.rs`: client configuration snippets.
//! - `personal/`: the same server shape over a personal vault (seed 004 §9).

mod answer;
mod approval;
mod calls;
mod evidence;
mod exchange;
mod inert;
pub mod install;
mod memory;
pub mod personal;
mod prompts;
mod resources;
mod server;
mod service;
mod tools;
mod unloaded;

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;
use serde_json::Value;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::manifest::Manifest;
use ctx_core::resolve::Consumer;
use ctx_core::view::Who;

pub use service::Config;

/// The manifest extension naming the default consumer: `ctx.mcp: { agent: NAME }`
/// or `{ role: NAME | [NAME, ...] }`.
pub const EXTENSION: &str = "ctx.mcp";
/// Longest JSON-RPC line read from stdin; longer lines are dropped unread.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Who the server answers for: the flags, else the manifest's `ctx.mcp` default.
/// Anything malformed is an error, never a permissive default; a broken role
/// set refuses (the policy gate).
pub fn identity(cfg: &Config, flags: &Who) -> Result<(Who, Consumer, String)> {
    let manifest = cfg.manifest()?;
    ctx_core::manifest::roles::require_sound(&manifest)?;
    let who = if flags.is_author() {
        default_consumer(&manifest)?
    } else {
        flags.clone()
    };
    let consumer = Consumer::from_flags(&manifest, who.agent.as_deref(), &who.roles)?;
    ctx_core::manifest::roles::scope(&manifest, &consumer.roles)?;
    let label = format!("`{}` ({})", manifest.id, manifest.root.display());
    Ok((who, consumer, label))
}

/// The consumer a personal vault's server answers for: `--agent NAME`, else the
/// manifest's `ctx.mcp: {agent: NAME}`. A vault's consumers are named agents: a
/// role names no one the audit log could record. Any well-formed consumer name is
/// one (seed 004: a manifest agent of that name, else the vault's `consumer_role`),
/// so `ctx mcp` and `ctx mcp install` accept the same names.
pub fn personal_consumer(m: &Manifest, flags: &Who) -> Result<String> {
    let who = if flags.is_author() {
        default_consumer(m)?
    } else {
        flags.clone()
    };
    match (who.agent, who.roles.is_empty()) {
        (Some(a), true) if ctx_core::personal::tokens::valid_consumer_name(&a) => Ok(a),
        (Some(a), true) => Err(Error::Usage(format!(
            "--agent {}: a vault's consumer is named with lowercase letters, digits, `-`, `_` and `.`, at most 64, not `user`",
            inert::quoted(&a)
        ))),
        _ => Err(Error::Usage(
            "a personal vault serves one named consumer: give --agent NAME (not --role)".into(),
        )),
    }
}

fn default_consumer(m: &Manifest) -> Result<Who> {
    // A malformed block is an invalid manifest (exit 1), never a default consumer.
    let bad = |why: &str| Error::InvalidHint {
        message: format!("{}: extensions.{EXTENSION}: {why}", m.file),
        help: format!(
            "write `{EXTENSION}: {{agent: <name>}}` or `{{role: <name>}}`, or pass --agent/--role"
        ),
    };
    let Some(v) = m.extension(EXTENSION) else {
        return Err(Error::Usage(
            "say who the server answers for: --agent <AGENT> or --role <ROLE> (or set `extensions.ctx.mcp.agent` in the manifest)".into(),
        ));
    };
    let obj = v.as_object().ok_or_else(|| bad("expected a mapping"))?;
    if let Some(k) = obj.keys().find(|k| *k != "agent" && *k != "role") {
        return Err(bad(&format!(
            "unknown key `{k}` (expected `agent` or `role`)"
        )));
    }
    match (obj.get("agent"), obj.get("role")) {
        (Some(Value::String(a)), None) => Ok(Who {
            agent: Some(a.clone()),
            roles: Vec::new(),
        }),
        (None, Some(Value::String(r))) => Ok(Who {
            agent: None,
            roles: vec![r.clone()],
        }),
        (None, Some(Value::Array(rs))) if !rs.is_empty() => Ok(Who {
            agent: None,
            roles: rs
                .iter()
                .map(|r| {
                    r.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad("`role` entries must be strings"))
                })
                .collect::<Result<_>>()?,
        }),
        (Some(_), Some(_)) => Err(bad("give `agent` or `role`, not both")),
        _ => Err(bad(
            "`agent` must be a string, `role` a string or a list of strings",
        )),
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin.
///
/// A repository that does not load (an invalid manifest, a broken role set)
/// still gets a session: the host shows the finding from every tool instead of
/// "connection closed". With `--agent`/`--role` the consumer is known from the
/// flags, and every call checks the repository again, so fixing it takes effect
/// on the next call; without them the consumer would come from the broken
/// manifest, so every call refuses until the server is restarted.
pub fn serve(cfg: Config, flags: &Who) -> Result<Exit> {
    let (who, consumer, label) = match identity(&cfg, flags) {
        Ok(x) => x,
        Err(e @ Error::Usage(_)) => return Err(e),
        Err(e) => {
            let help = e.help().map(|h| format!("\nhelp: {h}")).unwrap_or_default();
            eprintln!("ctx mcp: the repository does not load, so every tool answers with the finding:\n{e}{help}");
            match provisional(flags) {
                Some(consumer) => (flags.clone(), consumer, "(not loaded)".to_string()),
                None => {
                    let rt = runtime()?;
                    let outcome = rt.block_on(stdio(unloaded::Unloaded::new(&e)));
                    rt.shutdown_timeout(Duration::from_secs(5));
                    return ended(outcome);
                }
            }
        }
    };
    let who = service::Identity::new(who, &consumer);
    let svc = service::Service::new(cfg, who, label);
    let server = server::CtxServer::new(svc, Arc::new(exchange::LocalExchange))?;
    let rt = runtime()?;
    eprintln!(
        "ctx mcp: serving {} `{}` over stdio (JSON-RPC on stdout; notes on stderr)",
        consumer.kind.as_str(),
        consumer.id
    );
    let outcome = rt.block_on(stdio(server));
    rt.shutdown_timeout(Duration::from_secs(5));
    ended(outcome)
}

/// The consumer the flags name, unchecked (the repository is checked on every call).
fn provisional(flags: &Who) -> Option<Consumer> {
    match (&flags.agent, flags.roles.as_slice()) {
        (Some(a), []) => Some(Consumer {
            kind: ctx_core::resolve::ConsumerKind::Agent,
            id: a.clone(),
            roles: Vec::new(),
        }),
        (None, [_, ..]) => {
            let mut rs = flags.roles.clone();
            rs.sort();
            rs.dedup();
            Some(Consumer {
                kind: ctx_core::resolve::ConsumerKind::Role,
                id: rs.join("+"),
                roles: rs,
            })
        }
        _ => None,
    }
}

/// The single-threaded runtime a server runs on (library calls go to its blocking pool).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Library calls run here; a session runs at most MAX_IN_FLIGHT at once.
        .max_blocking_threads(server::MAX_IN_FLIGHT + 2)
        .build()
        .map_err(|e| Error::Invalid(format!("cannot start the async runtime: {e}")))
}

/// Serve `server` on stdin/stdout until the client closes stdin.
async fn stdio<S: rmcp::ServerHandler>(server: S) -> Result<()> {
    let transport = AsyncRwTransport::new(tokio::io::stdin(), tokio::io::stdout())
        .with_max_line_length(MAX_LINE_BYTES);
    let running = server
        .serve(transport)
        .await
        .map_err(|e| Error::Invalid(format!("MCP session did not start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::Invalid(format!("MCP session ended with an error: {e}")))?;
    Ok(())
}

/// A session's end as the process's: a client that closes the pipe before the
/// handshake is a clean end.
fn ended(outcome: Result<()>) -> Result<Exit> {
    match outcome {
        Ok(()) => Ok(Exit::Ok),
        Err(Error::Invalid(m)) if m.contains("connection closed") => Ok(Exit::Ok),
        Err(e) => Err(e),
    }
}
