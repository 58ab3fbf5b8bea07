//! The door of `ctx serve`: its own accept loop over hyper's HTTP/1 connection
//! driver, so that no connection holds the server without a bound.
//!
//! Every connection is in one of three phases, kept in one atomic word:
//! - `HEAD`: waiting for, or reading, a request's headers (from accept, or from the
//!   first byte of a kept-alive connection's next request): at most `header_timeout`;
//! - `BUSY`: a request is being handled or its response written (the body's own
//!   read is bounded by `body_timeout` where handlers read it);
//! - `IDLE`: kept alive between requests, not one byte of the next yet: at most
//!   `keep_alive_timeout`.
//!
//! A sweeper closes connections past their phase's bound. The number of connections
//! is capped (globally, and per non-loopback peer): at the cap, the connection that
//! has waited longest without a request in flight makes room for the new one, so
//! sockets that never send a request cannot lock the user out; when every one is
//! busy, the new connection gets a 503 and is closed.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

/// The bounds of one server.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub keep_alive_timeout: Duration,
    pub max_connections: usize,
    /// For peers other than loopback (on loopback every client is 127.0.0.1).
    pub max_per_peer: usize,
}

impl Bounds {
    /// `ctx serve`'s defaults (its flags' defaults) within an open-file limit: what
    /// another loopback server (`ctx provider serve`) runs with.
    pub fn defaults(open_files: Option<u64>) -> Bounds {
        Bounds {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(60),
            max_connections: Self::connections_for(open_files),
            max_per_peer: 32,
        }
    }

    /// The default cap's ceiling (an explicit `--max-connections` may go higher).
    pub const MAX_CONNECTIONS: usize = 1024;
    /// Descriptors kept free of connections: vault and repository files, the
    /// listener, the runtime's own.
    pub const RESERVED_FILES: u64 = 64;

    /// The connection cap a descriptor limit leaves room for.
    pub fn connections_for(open_files: Option<u64>) -> usize {
        match open_files {
            None => Self::MAX_CONNECTIONS,
            Some(n) => {
                let room = n.saturating_sub(Self::RESERVED_FILES).max(n / 2).max(1);
                usize::try_from(room)
                    .unwrap_or(usize::MAX)
                    .min(Self::MAX_CONNECTIONS)
            }
        }
    }
}

/// The address a request came from (a request extension for handlers).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

impl Peer {
    /// What per-peer limits are keyed by: the IP address; for IPv6 its /64, the
    /// block one host usually holds.
    pub fn key(&self) -> IpAddr {
        key_of(self.0.ip())
    }
}

fn key_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

const HEAD: u64 = 0;
const BUSY: u64 = 1;
const IDLE: u64 = 2;

/// A connection's phase and since when (milliseconds from the door's start), in one word.
struct Phase {
    word: AtomicU64,
    epoch: Instant,
}

impl Phase {
    fn new(epoch: Instant) -> Phase {
        let p = Phase {
            word: AtomicU64::new(0),
            epoch,
        };
        p.set(HEAD);
        p
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX >> 2)
    }

    fn set(&self, phase: u64) {
        self.word.store(self.now() << 2 | phase, Ordering::Release);
    }

    fn get(&self) -> (u64, u64) {
        let w = self.word.load(Ordering::Acquire);
        (w & 3, w >> 2)
    }
}

struct Slot {
    peer: IpAddr,
    phase: Arc<Phase>,
    stop: Arc<Notify>,
}

/// The open connections.
struct Door {
    bounds: Bounds,
    epoch: Instant,
    slots: Mutex<HashMap<u64, Slot>>,
    next: AtomicU64,
    /// Notified whenever a connection ends (for the shutdown's wait).
    left: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Door {
    fn new(bounds: Bounds) -> Door {
        Door {
            bounds,
            epoch: Instant::now(),
            slots: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            left: Notify::new(),
        }
    }

    /// A slot for a new connection from `ip`, making room when at a cap;
    /// None when every connection in the way is busy.
    fn admit(&self, ip: IpAddr) -> Option<(u64, Arc<Phase>, Arc<Notify>)> {
        let peer = key_of(ip);
        let mut slots = lock(&self.slots);
        if !ip.is_loopback() {
            let mine = slots.values().filter(|s| s.peer == peer).count();
            if mine >= self.bounds.max_per_peer && !evict(&mut slots, Some(peer)) {
                return None;
            }
        }
        if slots.len() >= self.bounds.max_connections && !evict(&mut slots, None) {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let phase = Arc::new(Phase::new(self.epoch));
        let stop = Arc::new(Notify::new());
        slots.insert(
            id,
            Slot {
                peer,
                phase: phase.clone(),
                stop: stop.clone(),
            },
        );
        Some((id, phase, stop))
    }

    fn leave(&self, id: u64) {
        lock(&self.slots).remove(&id);
        self.left.notify_waiters();
    }

    fn open(&self) -> usize {
        lock(&self.slots).len()
    }

    /// Close every connection past its phase's bound.
    fn sweep(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let head = millis(self.bounds.header_timeout);
        let idle = millis(self.bounds.keep_alive_timeout);
        let mut slots = lock(&self.slots);
        slots.retain(|_, s| {
            let (phase, since) = s.phase.get();
            let limit = match phase {
                HEAD => head,
                IDLE => idle,
                _ => return true,
            };
            let keep = now.saturating_sub(since) < limit;
            if !keep {
                s.stop.notify_one();
            }
            keep
        });
    }

    /// Make room: close the connection that has waited longest without a request.
    fn evict_one(&self) -> bool {
        evict(&mut lock(&self.slots), None)
    }

    /// Stop every connection that has no request in flight.
    fn stop_waiting(&self) {
        lock(&self.slots).retain(|_, s| {
            let busy = s.phase.get().0 == BUSY;
            if !busy {
                s.stop.notify_one();
            }
            busy
        });
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Close the longest-waiting connection without a request in flight (of `peer`
/// only, when given); false when there is none.
fn evict(slots: &mut HashMap<u64, Slot>, peer: Option<IpAddr>) -> bool {
    let oldest = slots
        .iter()
        .filter(|(_, s)| peer.is_none_or(|p| s.peer == p))
        .filter_map(|(id, s)| {
            let (phase, since) = s.phase.get();
            (phase != BUSY).then_some((since, *id))
        })
        .min();
    match oldest.and_then(|(_, id)| slots.remove(&id)) {
        Some(s) => {
            s.stop.notify_one();
            true
        }
        None => false,
    }
}

/// The socket, noting the first byte of a kept-alive connection's next request.
struct Watched {
    inner: TcpStream,
    phase: Arc<Phase>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before;
        if read && self.phase.get().0 == IDLE {
            self.phase.set(HEAD);
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Marks the connection idle when the response has been written (hyper drops it then).
struct Busy(Arc<Phase>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.set(IDLE);
    }
}

/// A response body carrying its connection's [`Busy`] mark.
struct Tracked {
    inner: Body,
    _busy: Busy,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The router as one connection's service: the peer goes into the request, the
/// connection is busy until the response is written.
#[derive(Clone)]
struct Handler {
    router: TowerToHyperService<Router>,
    phase: Arc<Phase>,
    peer: SocketAddr,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, mut req: Request<Incoming>) -> Answer {
        self.phase.set(BUSY);
        let busy = Busy(self.phase.clone());
        req.extensions_mut().insert(Peer(self.peer));
        let answer = self.router.call(req);
        Box::pin(async move {
            let resp = answer.await?;
            Ok(resp.map(|inner| Body::new(Tracked { inner, _busy: busy })))
        })
    }
}

/// What a connection that finds every slot busy gets before it is closed.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 79\r\n\r\n\
{\"error\":\"the server has too many open connections\",\"constraint\":\"unavailable\"}";

/// Serve `router` on `listener` within `bounds` until `shutdown` resolves; then
/// stop accepting, let requests in flight finish (at most `drain`), and return.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    bounds: Bounds,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) {
    let door = Arc::new(Door::new(bounds));
    let (stopping_tx, stopping) = watch::channel(false);
    let sweeper = {
        let door = door.clone();
        let every = (door
            .bounds
            .header_timeout
            .min(door.bounds.keep_alive_timeout)
            / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::spawn(async move {
            let mut t = tokio::time::interval(every);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                t.tick().await;
                door.sweep();
            }
        })
    };
    let mut full_reported = false;
    let refusing = Arc::new(AtomicU64::new(0));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors: the longest-waiting connection makes room.
                if out_of_files(&e) {
                    door.evict_one();
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let Some((id, phase, stop)) = door.admit(peer.ip()) else {
            if !full_reported {
                eprintln!(
                    "ctx serve: every one of the {} connections is busy: refusing new ones until one ends",
                    door.bounds.max_connections
                );
                full_reported = true;
            }
            refuse(stream, &refusing);
            continue;
        };
        full_reported = false;
        let door = door.clone();
        let router = router.clone();
        let stopping = stopping.clone();
        tokio::spawn(async move {
            connection(&door, stream, peer, router, phase, stop, stopping).await;
            door.leave(id);
        });
    }
    drop(listener);
    let _ = stopping_tx.send(true);
    door.stop_waiting();
    let _ = tokio::time::timeout(drain, async {
        loop {
            let left = door.left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            if door.open() == 0 {
                break;
            }
            left.await;
        }
    })
    .await;
    sweeper.abort();
}

/// Refusals answered at once; beyond them a refused connection is just closed.
const REFUSING: u64 = 32;

/// Tell a connection the server is full, then close it. What it already sent is
/// read and dropped first (for a moment), so the close is not a reset that
/// would lose the 503 before the client reads it.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicU64>) {
    if refusing.fetch_add(1, Ordering::AcqRel) >= REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let refusing = refusing.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            stream.write_all(FULL).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            io::Result::Ok(())
        })
        .await;
        refusing.fetch_sub(1, Ordering::AcqRel);
    });
}

fn out_of_files(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

async fn connection(
    door: &Door,
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    phase: Arc<Phase>,
    stop: Arc<Notify>,
    mut stopping: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let b = &door.bounds;
    let io = TokioIo::new(Watched {
        inner: stream,
        phase: phase.clone(),
    });
    let handler = Handler {
        router: TowerToHyperService::new(router),
        phase: phase.clone(),
        peer,
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // hyper's own clock runs from the end of the last response, so it bounds
        // keep-alive and headers together: a backstop behind the sweeper.
        .header_read_timeout(b.header_timeout + b.keep_alive_timeout)
        .max_buf_size(64 * 1024)
        .keep_alive(true);
    let conn = builder.serve_connection(io, handler);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            // Evicted or past its bound: dropping the connection closes the socket.
            _ = stop.notified() => break,
            _ = stopping.changed(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max: usize, per_peer: usize) -> Bounds {
        Bounds {
            header_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(60),
            keep_alive_timeout: Duration::from_secs(60),
            max_connections: max,
            max_per_peer: per_peer,
        }
    }

    #[test]
    fn at_the_cap_the_longest_waiting_connection_makes_room() {
        let d = Door::new(bounds(2, 8));
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let (a, pa, _) = d.admit(lo).unwrap();
        let (b, _, sb) = d.admit(lo).unwrap();
        // `a` has a request in flight; `b` waits: `b` goes.
        pa.set(BUSY);
        let (c, pc, _) = d.admit(lo).unwrap();
        let open: Vec<u64> = lock(&d.slots).keys().copied().collect();
        assert!(open.contains(&a) && open.contains(&c) && !open.contains(&b));
        assert_eq!(d.open(), 2);
        // `b` was told to stop (a stored permit, so it cannot be missed).
        let mut told = std::pin::pin!(sb.notified());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(told.as_mut().poll(&mut cx).is_ready());
        // Everyone busy: the next one is refused.
        pc.set(BUSY);
        assert!(d.admit(lo).is_none());
    }

    #[test]
    fn a_remote_peer_has_its_own_cap_and_loopback_does_not() {
        let d = Door::new(bounds(100, 2));
        let far: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for _ in 0..2 {
            d.admit(far).unwrap().1.set(BUSY);
        }
        assert!(
            d.admit(far).is_none(),
            "a third from the same peer, all busy"
        );
        assert!(d.admit(other).is_some());
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        for _ in 0..10 {
            d.admit(lo).unwrap().1.set(BUSY);
        }
        assert_eq!(d.open(), 13);
    }

    #[test]
    fn ipv6_peers_are_keyed_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(key_of(a), key_of(b));
        assert_ne!(key_of(a), key_of(c));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(key_of(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_cap_leaves_descriptors_for_files() {
        assert_eq!(Bounds::connections_for(Some(256)), 192);
        assert_eq!(Bounds::connections_for(Some(100)), 50);
        assert_eq!(
            Bounds::connections_for(Some(1 << 20)),
            Bounds::MAX_CONNECTIONS
        );
        assert_eq!(Bounds::connections_for(None), Bounds::MAX_CONNECTIONS);
    }

    #[test]
    fn the_sweep_closes_only_what_is_past_its_bound() {
        let mut b = bounds(10, 10);
        b.header_timeout = Duration::ZERO;
        let d = Door::new(b);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let (_, waiting, _) = d.admit(lo).unwrap();
        let (busy, p, _) = d.admit(lo).unwrap();
        p.set(BUSY);
        let (idle, p, _) = d.admit(lo).unwrap();
        p.set(IDLE);
        drop(waiting);
        d.sweep();
        let open: Vec<u64> = lock(&d.slots).keys().copied().collect();
        assert_eq!(open.len(), 2);
        assert!(open.contains(&busy) && open.contains(&idle));
    }
}
