//! `ctx serve`: the personal vault's HTTP API on loopback (seed 004 §7; docs/personal.md)
//! and the Context Layer HTTP binding (seed 000 §10; docs/exchange.md).

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};

use super::args::parse_duration;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; `127.0.0.1:0` picks a free port (printed on stderr's first line).
    #[arg(long, default_value = "127.0.0.1:7200", value_name = "ADDR")]
    pub listen: String,
    /// Allow a non-loopback address (put TLS and your own authentication in front of it).
    #[arg(long)]
    pub allow_remote: bool,
    /// Lock after this long without token requests (default: the vault's `idle_timeout`, 30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// How long an approval question, and then its answer, stays valid (default 5m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub approval_ttl: Option<Duration>,
    /// Do not prompt for approvals on this terminal (answer them with `ctx approvals`).
    #[arg(long)]
    pub no_prompt: bool,
    /// Apply the process hardening to this process, print what is and is not in effect, and exit.
    #[arg(long)]
    pub explain_sandbox: bool,
    /// Close a connection whose request headers have not all arrived within this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub header_timeout: Duration,
    /// Answer 408 when a request body has not all arrived within this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub body_timeout: Duration,
    /// Close a kept-alive connection that has sent nothing for this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub keep_alive_timeout: Duration,
    /// Open connections at most (default: what the open-file limit leaves room for, at most 1024).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// Open connections at most from one non-loopback address (IPv6: one /64).
    #[arg(long, value_name = "N", default_value = "32", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_peer: u32,
    /// How long a Context Layer `ctxcl_` token works; then the server writes a fresh set.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "12h")]
    pub cl_token_ttl: Duration,
    /// Field reads and writes a minute for the user's session token, as READS/WRITES.
    #[arg(long, value_name = "READS/WRITES", value_parser = parse_rates, default_value = "60/10")]
    pub session_rate_limit: (u32, u32),
    /// Context Layer calls a minute per caller (requester or operator token).
    #[arg(long, value_name = "N", default_value = "60", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub cl_rate_limit: u32,
    /// Also answer personal-vault's `/vault/*` routes, for its MCP server and CLI
    /// (VAULT_ADDR=http://ADDR). The same tokens, policy and audit as `/context/*`.
    #[arg(long)]
    pub vault_compat: bool,
}

/// `60/10`: reads and writes a minute, each 1..1000000.
fn parse_rates(s: &str) -> std::result::Result<(u32, u32), String> {
    let bad =
        || format!("expected READS/WRITES a minute such as 60/10 (each 1..1000000), found `{s}`");
    let (r, w) = s.split_once('/').ok_or_else(bad)?;
    let n = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(bad)
    };
    Ok((n(r)?, n(w)?))
}

pub fn run(g: &Global, p: &Printer, a: &ServeArgs) -> Result<Exit> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    if a.explain_sandbox {
        let steps = crate::serve::explain(&crate::serve::allowed_paths(&manifest));
        let text = format!(
            "ctx serve hardening, as applied to this process:\n{}",
            crate::serve::describe(&steps)
        );
        super::io_result(p.out(&text))?;
        return Ok(Exit::Ok);
    }
    let listen: SocketAddr = a.listen.parse().map_err(|_| {
        Error::Usage(format!(
            "--listen: expected an address such as 127.0.0.1:7200, found `{}`",
            a.listen
        ))
    })?;
    use std::io::IsTerminal;
    crate::serve::run(crate::serve::Config {
        manifest,
        dir: g.dir.clone(),
        cwd: g.cwd.clone(),
        load: g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE),
        listen,
        allow_remote: a.allow_remote,
        idle_timeout: a.idle_timeout,
        approval_ttl: a.approval_ttl,
        prompt: !a.no_prompt && std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        limits: crate::serve::Limits {
            header_timeout: a.header_timeout,
            body_timeout: a.body_timeout,
            keep_alive_timeout: a.keep_alive_timeout,
            max_connections: a.max_connections.map(|n| n as usize),
            max_per_peer: a.max_connections_per_peer as usize,
            cl_token_ttl: a.cl_token_ttl,
            cl_rate_limit: a.cl_rate_limit,
            session_rates: a.session_rate_limit,
        },
        vault_compat: a.vault_compat,
    })?;
    Ok(Exit::Ok)
}
