//! `ctx serve`: seed 004's loopback HTTP API over a personal vault.
//!
//! - [`service`]: the facade, the one module that calls the library;
//! - [`door`]: the accept loop: connection caps, header/body/keep-alive timeouts;
//! - [`http`]: axum routes, bodies, bearer tokens, Host and Origin checks;
//! - [`sandbox`]: process hardening;
//! - [`terminal`]: approval prompts on the serving terminal;
//! - [`control`]: the per-launch control file `ctx approvals` reads;
//! - [`gateway`], [`cl_routes`]: the Context Layer HTTP binding (seed 000 §10),
//!   served when the manifest has an exchange policy, on a personal vault or
//!   on any other repository.
//!
//! Order matters: bind, then confine (before any worker thread exists), then open
//! the vault and start the runtime.

pub mod cl_routes;
pub mod control;
pub mod door;
pub mod gateway;
pub mod http;
pub mod sandbox;
pub mod service;
pub mod terminal;
pub mod vault_compat;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ctx_core::error::{Error, Result};
use ctx_core::manifest::Manifest;

/// How to run.
pub struct Config {
    pub manifest: Manifest,
    /// How the manifest was found (`-C`) and loaded, for the live repository of the binding.
    pub dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub load: ctx_core::load::LoadOptions,
    pub listen: SocketAddr,
    pub allow_remote: bool,
    pub idle_timeout: Option<Duration>,
    pub approval_ttl: Option<Duration>,
    /// Prompt for approvals on this terminal (stdin and stderr are terminals).
    pub prompt: bool,
    pub limits: Limits,
    /// Also answer personal-vault's `/vault/*` routes (docs/personal.md, "personal-vault clients").
    pub vault_compat: bool,
}

/// The bounds of the door and of the Context Layer binding, from the flags of
/// `ctx serve` (their defaults are there; docs/personal.md and docs/exchange.md, "Limits").
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub keep_alive_timeout: Duration,
    /// None: what the open-file limit leaves room for, at most 1024.
    pub max_connections: Option<usize>,
    pub max_per_peer: usize,
    /// How long a `ctxcl_` token works before the server renews the set.
    pub cl_token_ttl: Duration,
    /// Context Layer calls a minute per caller.
    pub cl_rate_limit: u32,
    /// The session token's field reads and writes a minute.
    pub session_rates: (u32, u32),
}

/// The connection cap: the flag's, when the open-file limit has room for it.
fn connection_cap(asked: Option<usize>, open_files: Option<u64>) -> Result<usize> {
    let Some(n) = asked else {
        return Ok(door::Bounds::connections_for(open_files));
    };
    let room = open_files.map(|f| f.saturating_sub(door::Bounds::RESERVED_FILES));
    match room {
        Some(room) if u64::try_from(n).unwrap_or(u64::MAX) > room => Err(Error::Usage(format!(
            "--max-connections {n}: the open-file limit ({}) leaves room for at most {room} connections beside the server's own files; lower it or raise `ulimit -Hn`",
            open_files.unwrap_or(0)
        ))),
        _ => Ok(n),
    }
}

/// The report of `--explain-sandbox`: every step a server's start takes.
pub fn explain(paths: &[PathBuf]) -> Vec<sandbox::Step> {
    let mut steps = vec![sandbox::open_files().0];
    steps.extend(harden(paths));
    steps
}

/// Process hardening (after binding, before any worker thread).
pub fn harden(paths: &[PathBuf]) -> Vec<sandbox::Step> {
    let mut steps = sandbox::no_dumps();
    steps.extend(sandbox::confine(paths));
    steps
}

pub fn describe(steps: &[sandbox::Step]) -> String {
    let mut s = String::new();
    for st in steps {
        s.push_str(&format!(
            "  {} {:<19} {}\n",
            if st.in_effect { "on " } else { "off" },
            st.name,
            st.detail
        ));
    }
    for l in sandbox::limitations() {
        s.push_str(&format!("  --  {l}\n"));
    }
    s
}

/// The folders a confined server may touch: the repository and ctx's config folder.
pub fn allowed_paths(m: &Manifest) -> Vec<PathBuf> {
    let mut v = vec![m.root.clone()];
    if let Some(c) = ctx_core::personal::keys::config_dir() {
        let _ = std::fs::create_dir_all(&c);
        v.push(c);
    }
    v
}

pub fn run(c: Config) -> Result<()> {
    if !c.listen.ip().is_loopback() && !c.allow_remote {
        return Err(Error::Usage(format!(
            "{} is not a loopback address: ctx serve listens on 127.0.0.1 (or ::1) unless --allow-remote is given (and then put TLS in front of it)",
            c.listen
        )));
    }
    let personal =
        ctx_core::personal::config::PersonalConfig::from_manifest(&c.manifest)?.is_some();
    let exchange = gateway::wanted(&c.manifest);
    if !personal && !exchange {
        return Err(Error::Usage(format!(
            "{} has nothing to serve: it is not a personal repository (create one with `ctx init --template personal DIR`) and has no Context Layer exchange policy (extensions.ctx.exchange; see docs/exchange.md)",
            c.manifest.file
        )));
    }
    // A broken role set means ctx cannot tell what a consumer may see: serve nothing.
    ctx_core::manifest::roles::require_sound(&c.manifest)?;
    // Every connection is a descriptor: the soft limit goes up to the hard one,
    // and the connection cap stays below it.
    let (files_step, open_files) = sandbox::open_files();
    let bounds = door::Bounds {
        header_timeout: c.limits.header_timeout,
        body_timeout: c.limits.body_timeout,
        keep_alive_timeout: c.limits.keep_alive_timeout,
        max_connections: connection_cap(c.limits.max_connections, open_files)?,
        max_per_peer: c.limits.max_per_peer,
    };
    // One server per vault: a second one is refused now, naming the first, before it binds.
    let vault_lock = match ctx_core::personal::config::PersonalConfig::from_manifest(&c.manifest)? {
        Some(cfg) => Some(Arc::new(ctx_core::personal::holder::VaultLock::acquire(
            &cfg.state_dir(&c.manifest),
            "ctx serve",
        )?)),
        None => None,
    };
    // The repository's write lock file is found now: a confined process cannot look for it.
    let write_lock = ctx_core::fs::RepoLock::acquire(&c.manifest.root)
        .map(|l| l.path().to_path_buf())
        .map_err(|e| Error::io(&c.manifest.root, &e))?;
    let std_listener = std::net::TcpListener::bind(c.listen)
        .map_err(|e| Error::Usage(format!("cannot listen on {}: {e}", c.listen)))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("listener", &e))?;
    let addr = std_listener
        .local_addr()
        .map_err(|e| Error::io("listener", &e))?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "listening on http://{addr}");
    // The binding's repository and this launch's tokens, before confinement.
    let cl = if exchange {
        let (gw, tokens) = gateway::Gateway::open(
            c.dir.as_deref(),
            &c.cwd,
            c.load,
            write_lock.clone(),
            gateway::Tuning {
                token_ttl: c.limits.cl_token_ttl,
                rate_limit: c.limits.cl_rate_limit,
            },
        )?;
        let file =
            gateway::CredentialsFile::write(addr.port(), &format!("http://{addr}"), &tokens)?;
        let _ = writeln!(
            err,
            "context layer: /.well-known/context-layer; tokens for {} requester(s) and the operator in {}",
            tokens.requesters.len(),
            file.path.display()
        );
        Some((Arc::new(gw), file))
    } else {
        None
    };
    let mut paths = allowed_paths(&c.manifest);
    if !write_lock.starts_with(&c.manifest.root) {
        paths.push(write_lock.clone());
    }
    let mut steps = vec![files_step];
    steps.extend(harden(&paths));
    let _ = write!(err, "sandbox:\n{}", describe(&steps));
    drop(err);

    let hosts = if c.allow_remote {
        Vec::new()
    } else {
        let p = addr.port();
        vec![
            format!("127.0.0.1:{p}"),
            format!("localhost:{p}"),
            format!("[::1]:{p}"),
        ]
    };
    let mut control = None;
    let mut svc = None;
    if personal {
        let options = service::Options {
            idle_timeout: c.idle_timeout,
            approval_ttl: c
                .approval_ttl
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .unwrap_or_else(|| chrono::Duration::minutes(5)),
            write_lock: Some(write_lock),
            session_rates: ctx_core::personal::tokens::Rates {
                reads: c.limits.session_rates.0,
                writes: c.limits.session_rates.1,
            },
            lock: vault_lock,
            command: "ctx serve".into(),
            ..service::Options::default()
        };
        let (s, control_token) = service::Service::open(c.manifest.clone(), options)?;
        let s = Arc::new(s);
        control = Some(control::ControlFile::write(
            s.vault_id(),
            &addr,
            &control_token,
        )?);
        drop(control_token);
        if c.prompt {
            terminal::spawn(s.clone());
        }
        svc = Some(s);
    }
    let app = svc.clone().map(|svc| http::App {
        svc,
        body_timeout: bounds.body_timeout,
        failed_bearers: Default::default(),
    });
    let cl_router = cl
        .as_ref()
        .map(|(gw, _)| cl_routes::router(gw.clone(), bounds.body_timeout));
    let flush = svc.clone();
    let renew = cl.as_ref().map(|(gw, f)| (gw.clone(), f.path.clone()));
    let router = http::router(app, cl_router, Arc::new(hosts), c.vault_compat);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(32)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io("tokio runtime", &e))?;
    let result = rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        if let Some(ticker) = svc {
            tokio::spawn(async move {
                let mut t = tokio::time::interval(Duration::from_millis(500));
                loop {
                    t.tick().await;
                    let s = ticker.clone();
                    if let Ok(true) = tokio::task::spawn_blocking(move || s.tick()).await {
                        eprintln!(
                            "vault locked after {} s without requests",
                            ticker.idle_timeout().as_secs()
                        );
                    }
                }
            });
        }
        if let Some((gw, path)) = renew {
            tokio::spawn(gateway::renew_tokens(gw, addr, path));
        }
        door::serve(listener, router, bounds, shutdown(), Duration::from_secs(5)).await;
        Ok::<(), std::io::Error>(())
    });
    // Failures counted but not yet summarised in the audit log are written now.
    if let Some(s) = flush {
        s.flush_audit();
    }
    drop(control);
    drop(cl);
    result.map_err(|e| Error::io("server", &e))
}

/// SIGINT or SIGTERM stops the server (the vault's keys go with the process).
async fn shutdown() {
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    while !flag.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
