//! `ctx provider serve`: a local delegated context provider on loopback HTTP,
//! behind AtMem's request authentication (docs/provider.md).
//!
//! - [`http`]: the one handler; raw request → authentication
//!   ([`ctx_core::provider::request_auth`]) → health or an answer
//!   ([`ctx_core::evidence::delegated`]).
//!
//! Nothing here decides who is authenticated or what context is served: the
//! library does both; this is the socket, the runtime and the log.

mod http;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ctx_core::error::{Error, Result};
use ctx_core::evidence::delegated::ProviderConfig;
use ctx_core::provider::request_auth::Authenticator;

/// How to run.
pub struct Config {
    pub listen: SocketAddr,
    pub auth: Authenticator,
    pub provider: ProviderConfig,
    /// Written on stderr after the `listening on` line.
    pub banner: String,
}

pub fn run(c: Config) -> Result<()> {
    if !c.listen.ip().is_loopback() {
        return Err(Error::Usage(format!(
            "{} is not a loopback address: the request-authentication profile is for loopback only (use 127.0.0.1 or ::1)",
            c.listen
        )));
    }
    let std_listener = std::net::TcpListener::bind(c.listen)
        .map_err(|e| Error::Usage(format!("cannot listen on {}: {e}", c.listen)))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("listener", &e))?;
    let addr = std_listener
        .local_addr()
        .map_err(|e| Error::io("listener", &e))?;
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "listening on http://{addr}");
        let _ = write!(err, "{}", c.banner);
    }
    let app = Arc::new(http::App {
        auth: c.auth,
        provider: c.provider,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io("tokio runtime", &e))?;
    // The same door as `ctx serve`: header, body and idle timeouts and a connection
    // cap under the (raised) open-file limit, so idle sockets cannot lock hosts out.
    let (_, open_files) = crate::serve::sandbox::open_files();
    let bounds = crate::serve::door::Bounds::defaults(open_files);
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        crate::serve::door::serve(
            listener,
            http::router(app),
            bounds,
            shutdown(),
            Duration::from_secs(5),
        )
        .await;
        Ok::<(), std::io::Error>(())
    })
    .map_err(|e| Error::io("server", &e))
}

/// SIGINT or SIGTERM stops the server.
async fn shutdown() {
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    while !flag.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
