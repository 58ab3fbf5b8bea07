//! `ctx provider serve`: answer a delegated host on loopback, behind AtMem's
//! request authentication (docs/provider.md).

use std::net::SocketAddr;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::delegated::{ProviderConfig, Scope};
use ctx_core::evidence::envelope;
use ctx_core::provider::request_auth::{Authenticator, Keyring};
use ctx_core::provider::ProviderRef;

use super::auth::AuthDir;
use super::Rendering;
use crate::cli::args::ConsumerArgs;
use crate::cli::{Global, Printer};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Loopback address to listen on; port 0 picks a free one (printed on stderr's first line).
    #[arg(long, default_value = "127.0.0.1:8788", value_name = "ADDR")]
    pub listen: String,
    #[command(flatten)]
    pub auth: AuthDir,
    /// Whose context is served.
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Signing key (from `ctx keys`, declared in the manifest) for receipts and envelopes.
    #[arg(long, value_name = "ID")]
    pub key: String,
    /// Provider version (the host's trust registration names it).
    #[arg(long = "provider-version", default_value = env!("CARGO_PKG_VERSION"), value_name = "VERSION")]
    pub provider_version: String,
    /// Which rendering of the bundle is the exact context.
    #[arg(long, value_enum, default_value = "markdown")]
    pub render: Rendering,
    /// Seconds until each envelope expires (1-300).
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub lifetime: i64,
    /// Serve only this host workspace id (repeatable; default any).
    #[arg(long = "workspace", value_name = "ID")]
    pub workspaces: Vec<String>,
    /// Serve only this host agent id (repeatable; default any).
    #[arg(long = "host-agent", value_name = "ID")]
    pub host_agents: Vec<String>,
    /// Serve only this host user id (repeatable; default any).
    #[arg(long = "user", value_name = "ID")]
    pub users: Vec<String>,
}

pub fn run(g: &Global, _p: &Printer, a: &ServeArgs) -> Result<Exit> {
    let listen: SocketAddr = a.listen.parse().map_err(|_| {
        Error::Usage(format!(
            "--listen: expected an address such as 127.0.0.1:8788, found `{}`",
            a.listen
        ))
    })?;
    if !listen.ip().is_loopback() {
        return Err(Error::Usage(format!(
            "--listen {listen}: not a loopback address; the request-authentication profile is loopback only (127.0.0.1 or ::1)"
        )));
    }
    if !(1..=300).contains(&a.lifetime) {
        return Err(Error::Usage(format!(
            "--lifetime: expected 1-300 seconds, found {}",
            a.lifetime
        )));
    }
    let dir = a.auth.resolve(g)?;
    let auth = Authenticator::open(&dir)?;
    // Everything a request would need is checked now, not on the first request.
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let consumer =
        ctx_core::resolve::Consumer::from_flags(&manifest, a.who.agent.as_deref(), &a.who.role)?;
    ctx_core::keys::signing_key(&manifest, Some(&a.key))?;
    let provider = ProviderRef {
        id: auth.provider_id().to_string(),
        version: a.provider_version.clone(),
        instance_id: auth.instance_id().to_string(),
    };
    let keys: Vec<String> = Keyring::load(&dir)?
        .keys
        .iter()
        .map(|k| match k.valid_until {
            None => format!("{} (active)", k.key_id),
            Some(t) => format!("{} (until {t})", k.key_id),
        })
        .collect();
    let banner = format!(
        "provider {} {} instance {}; {} {}; request keys {}; ledger {}\n",
        provider.id,
        provider.version,
        provider.instance_id,
        consumer.kind.as_str(),
        consumer.id,
        keys.join(", "),
        auth.ledger().path().display()
    );
    let config = ProviderConfig {
        dir: g.dir.clone(),
        cwd: g.cwd.clone(),
        load: g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE),
        who: a.who.who(),
        offline: g.offline,
        scope: Scope {
            workspaces: a.workspaces.clone(),
            agents: a.host_agents.clone(),
            users: a.users.clone(),
        },
        provider,
        key_id: a.key.clone(),
        rendering: match a.render {
            Rendering::Markdown => envelope::Rendering::Markdown,
            Rendering::Json => envelope::Rendering::Json,
        },
        lifetime_secs: a.lifetime,
    };
    crate::delegated::run(crate::delegated::Config {
        listen,
        auth,
        provider: config,
        banner,
    })?;
    Ok(Exit::Ok)
}
