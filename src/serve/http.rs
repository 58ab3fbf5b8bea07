//! The transport: axum routes for seed 004 §7, request bodies (media type, size,
//! time, JSON), bearer tokens, and the loopback Host and Origin checks. Every handler
//! hands one call to the facade on a blocking thread and renders its [`Reply`].
//! A body is read only for a caller the bearer check lets through.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Extension, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use serde_json::Value;

use ctx_core::personal::limits::Limiter;

use super::door::Peer;
use super::service::{self as f, Reply, Svc};

/// Largest request body (an import archive may be large; everything else is small).
pub const MAX_BODY: usize = 16 * 1024 * 1024;
pub(super) const MAX_SMALL_BODY: usize = 256 * 1024;

#[derive(Clone)]
pub struct App {
    pub svc: Svc,
    /// How long a request body may take to arrive (408 after).
    pub body_timeout: Duration,
    /// Requests with a bearer the vault does not know, a minute per address.
    pub failed_bearers: Arc<std::sync::Mutex<Limiter>>,
}

/// Unknown bearer tokens a minute from one address (IPv6: one /64); past it, that
/// address's requests with an unknown bearer get 429 before any other check. Known
/// tokens still pass, so guessing (hopeless at 256 bits) cannot lock the user out.
pub const FAILED_BEARERS_PER_PEER: u32 = 10;

/// Accepted `Host` header values (loopback names with the bound port); empty: any.
pub type Hosts = Arc<Vec<String>>;

pub(super) fn render(r: Reply) -> Response {
    let mut resp = Response::new(Body::from(r.body.as_bytes().to_vec()));
    *resp.status_mut() =
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for (k, v) in r.headers {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
    resp
}

pub(super) fn bearer(h: &HeaderMap) -> Option<String> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

pub(super) fn query(q: Option<String>) -> Vec<(String, String)> {
    let Some(q) = q else { return Vec::new() };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding of a query component (`+` is a space).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
                {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the request carries a body (that is left unread when it is refused early).
pub fn has_body(h: &HeaderMap) -> bool {
    h.contains_key(header::TRANSFER_ENCODING)
        || h.get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// Close the connection after this response: the request's body was not read, so
/// the connection is not left reading (or draining) what nobody wants.
pub fn closing(mut resp: Response, h: &HeaderMap) -> Response {
    if has_body(h) {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// `200ms`, `30s`: a bound as the flags write it.
pub fn shown(d: Duration) -> String {
    if d.subsec_millis() != 0 || d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs())
    }
}

/// Read a JSON object body: `application/json` only (415), at most `limit` bytes (413),
/// all of it within `timeout` (408).
async fn json_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Value, Reply> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media != "application/json"
        && !(media.starts_with("application/") && media.ends_with("+json"))
    {
        return Err(Reply::error(
            415,
            "send the body as Content-Type: application/json",
            "unsupported_media_type",
        ));
    }
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return Err(Reply::error(
                413,
                &format!("the body is larger than {limit} bytes"),
                "payload_too_large",
            ))
        }
        Err(_) => {
            return Err(Reply::error(
                408,
                &format!(
                    "the request body did not arrive within {} (ctx serve --body-timeout)",
                    shown(timeout)
                ),
                "request_timeout",
            ))
        }
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Reply::error(
            400,
            &format!("the body is not valid JSON: {}", e.classify_text()),
            "invalid_request",
        )
    })?;
    if !v.is_object() {
        return Err(Reply::error(
            400,
            "the body must be a JSON object",
            "invalid_request",
        ));
    }
    Ok(v)
}

trait Classify {
    fn classify_text(&self) -> String;
}

impl Classify for serde_json::Error {
    /// Line and column only: a parse error never quotes the body.
    fn classify_text(&self) -> String {
        format!(
            "{:?} error at line {} column {}",
            self.classify(),
            self.line(),
            self.column()
        )
        .to_lowercase()
    }
}

/// Run one facade call off the async threads.
pub(super) async fn call(f: impl FnOnce() -> Reply + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => render(r),
        Err(_) => render(Reply::error(500, "internal error", "unavailable")),
    }
}

/// Who must be known before a body is read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Needs {
    /// Nobody: the body holds the credentials (unlock).
    Nothing,
    /// A bearer, when one is sent (a token request by the user, or by a consumer
    /// with its credentials in the body).
    BearerIfSent,
    Bearer,
}

pub(super) async fn with_body(
    app: App,
    headers: HeaderMap,
    body: Body,
    limit: usize,
    needs: Needs,
    f: impl FnOnce(&Svc, Option<&str>, &Value) -> Reply + Send + 'static,
) -> Response {
    let b = bearer(&headers);
    let check = match needs {
        Needs::Nothing => false,
        Needs::BearerIfSent => b.is_some(),
        Needs::Bearer => true,
    };
    if check {
        if let Err(r) = f::admits(&app.svc, b.as_deref()) {
            return closing(render(r), &headers);
        }
    }
    let v = match json_body(&headers, body, limit, app.body_timeout).await {
        Ok(v) => v,
        Err(r) => {
            let unread = r.status != 400;
            let resp = render(r);
            return if unread {
                closing(resp, &headers)
            } else {
                resp
            };
        }
    };
    call(move || f(&app.svc, b.as_deref(), &v)).await
}

macro_rules! plain {
    ($name:ident, $f:expr) => {
        async fn $name(State(app): State<App>, headers: HeaderMap) -> Response {
            let b = bearer(&headers);
            call(move || $f(&app.svc, b.as_deref())).await
        }
    };
}

plain!(lock, f::lock);
plain!(list_fields, f::list_fields);
plain!(list_tokens, f::list_tokens);
plain!(consumers, f::consumers);
plain!(approvals, f::approvals);

async fn status(State(app): State<App>) -> Response {
    call(move || f::status(&app.svc)).await
}

async fn unlock(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Nothing,
        |s, _, v| f::unlock(s, v),
    )
    .await
}

async fn get_field(State(app): State<App>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let b = bearer(&headers);
    call(move || f::get_field(&app.svc, b.as_deref(), &id)).await
}

async fn put_field(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        move |s, b, v| f::put_field(s, b, &id, v),
    )
    .await
}

async fn delete_field(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || f::delete_field(&app.svc, b.as_deref(), &id)).await
}

async fn category(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || f::category(&app.svc, b.as_deref(), &name)).await
}

async fn context(State(app): State<App>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let b = bearer(&headers);
    let q = query(q);
    call(move || f::context(&app.svc, b.as_deref(), &q)).await
}

async fn sensitivity(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        move |s, b, v| f::sensitivity(s, b, &id, v),
    )
    .await
}

async fn create_token(
    State(app): State<App>,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let peer = peer.map(|Extension(p)| p.key().to_string());
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::BearerIfSent,
        move |s, b, v| f::create_token(s, b, v, peer),
    )
    .await
}

async fn revoke_token(
    State(app): State<App>,
    headers: HeaderMap,
    Path(prefix): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || f::revoke_token(&app.svc, b.as_deref(), &prefix)).await
}

async fn register(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        f::register,
    )
    .await
}

async fn deregister(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || f::deregister(&app.svc, b.as_deref(), &name)).await
}

async fn audit(State(app): State<App>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let b = bearer(&headers);
    let q = query(q);
    call(move || f::audit(&app.svc, b.as_deref(), &q)).await
}

async fn export(State(app): State<App>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let b = bearer(&headers);
    let q = query(q);
    call(move || f::export(&app.svc, b.as_deref(), &q)).await
}

async fn import(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    with_body(app, headers, body, MAX_BODY, Needs::Bearer, f::import).await
}

async fn approval(State(app): State<App>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let b = bearer(&headers);
    call(move || f::approval(&app.svc, b.as_deref(), &id)).await
}

async fn decide(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        move |s, b, v| f::decide(s, b, &id, v),
    )
    .await
}

async fn not_found(uri: axum::http::Uri) -> Response {
    if super::cl_routes::is_cl_path(uri.path()) {
        return super::cl_routes::unknown_endpoint();
    }
    render(Reply::error(404, "no such endpoint", "not_found"))
}

async fn not_allowed(uri: axum::http::Uri) -> Response {
    if super::cl_routes::is_cl_path(uri.path()) {
        return super::cl_routes::method_not_allowed();
    }
    render(Reply::error(
        405,
        "method not allowed on this endpoint",
        "invalid_request",
    ))
}

/// Whether `origin` is the server's own: on loopback, `http://` and one of the
/// accepted Host values; with `--allow-remote` (any Host), the request's own Host.
fn own_origin(origin: &str, host: &str, hosts: &[String]) -> bool {
    if hosts.is_empty() {
        return !host.is_empty()
            && [("http://", host), ("https://", host)]
                .iter()
                .any(|(scheme, h)| origin.strip_prefix(scheme) == Some(h));
    }
    origin
        .strip_prefix("http://")
        .is_some_and(|o| hosts.iter().any(|h| h == o))
}

/// DNS-rebinding defence: a loopback server answers only requests addressed to it
/// by a loopback name. CSRF defence (seed 000 §11.1): a state-changing request
/// that a web page of another origin sends is refused; requests without `Origin`
/// (command-line clients, agents) are not browsers' and go through.
async fn host_check(State(hosts): State<Hosts>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !hosts.is_empty() && !hosts.iter().any(|h| h == host) {
        return render(Reply::error(
            421,
            "this server answers only requests addressed to its loopback address",
            "invalid_request",
        ));
    }
    if !req.method().is_safe() {
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let own = origin.to_str().is_ok_and(|o| own_origin(o, host, &hosts));
            if !own {
                let h = req.headers().clone();
                let resp = if super::cl_routes::is_cl_path(req.uri().path()) {
                    super::cl_routes::cross_origin()
                } else {
                    render(Reply::error(
                        403,
                        "this server does not take state-changing requests from web pages of other origins",
                        "cross_origin",
                    ))
                };
                return closing(resp, &h);
            }
        }
    }
    next.run(req).await.into_response()
}

/// Seed 004 §7's rate limit for made-up tokens: count each 401 a bearer earns
/// against its address, and refuse an address out of budget unchecked.
async fn bearer_guard(
    State(app): State<App>,
    peer: Option<Extension<Peer>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(b) = bearer(req.headers()) else {
        return next.run(req).await;
    };
    let key = peer.map_or_else(|| "local".to_string(), |Extension(p)| p.key().to_string());
    let known = f::admits(&app.svc, Some(&b)).is_ok();
    let failures = || app.failed_bearers.lock().unwrap_or_else(|p| p.into_inner());
    if !known {
        let mut l = failures();
        if !l.peek(&key, FAILED_BEARERS_PER_PEER, std::time::Instant::now()) {
            let wait = l.retry_after(&key, FAILED_BEARERS_PER_PEER);
            drop(l);
            let mut r = Reply::error(
                429,
                &format!(
                    "too many requests with unknown tokens (limit {FAILED_BEARERS_PER_PEER}/minute from one address)"
                ),
                "rate_limited",
            );
            r.headers.push(("retry-after", wait.to_string()));
            let h = req.headers().clone();
            return closing(render(r), &h);
        }
    }
    let resp = next.run(req).await;
    if resp.status() == StatusCode::UNAUTHORIZED {
        let now = std::time::Instant::now();
        let mut l = failures();
        l.sweep(now);
        l.allow(&key, FAILED_BEARERS_PER_PEER, now);
    }
    resp
}

/// The whole server: seed 004's routes when `app` (a personal vault) is given,
/// the Context Layer binding's when `cl` is, behind one Host check.
pub fn router(app: Option<App>, cl: Option<Router>, hosts: Hosts, vault_compat: bool) -> Router {
    let mut r = Router::new();
    if let Some(app) = app {
        if vault_compat {
            r = r.merge(super::vault_compat::router(app.clone()));
        }
        r = r.merge(personal(app));
    }
    if let Some(cl) = cl {
        r = r.merge(cl);
    }
    r.fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .layer(middleware::from_fn_with_state(hosts, host_check))
}

fn personal(app: App) -> Router {
    Router::new()
        .route("/context/unlock", post(unlock))
        .route("/context/lock", post(lock))
        .route("/context/status", get(status))
        .route("/context/fields", get(list_fields))
        .route(
            "/context/fields/{id}",
            get(get_field).put(put_field).delete(delete_field),
        )
        .route("/context/fields/category/{name}", get(category))
        .route("/context/context", get(context))
        .route("/context/sensitivity/{id}", put(sensitivity))
        .route(
            "/context/tokens/service",
            post(create_token).get(list_tokens),
        )
        .route(
            "/context/tokens/service/{prefix}",
            axum::routing::delete(revoke_token),
        )
        .route("/context/consumers/register", post(register))
        .route("/context/consumers", get(consumers))
        .route(
            "/context/consumers/{name}",
            axum::routing::delete(deregister),
        )
        .route("/context/audit", get(audit))
        .route("/context/export", get(export))
        .route("/context/import", post(import))
        .route("/context/approvals", get(approvals))
        .route("/context/approvals/{id}", get(approval).post(decide))
        .layer(middleware::from_fn_with_state(app.clone(), bearer_guard))
        .with_state(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_own_origin_may_change_state() {
        let hosts = vec!["127.0.0.1:7200".to_string(), "localhost:7200".to_string()];
        let host = "127.0.0.1:7200";
        assert!(own_origin("http://127.0.0.1:7200", host, &hosts));
        assert!(own_origin("http://localhost:7200", host, &hosts));
        for o in [
            "https://evil.example",
            "http://127.0.0.1:7201",
            "null",
            "http://127.0.0.1:7200.evil.example",
            "https://127.0.0.1:7200",
            "",
        ] {
            assert!(!own_origin(o, host, &hosts), "{o}");
        }
        // --allow-remote: the request's own Host, over HTTP or HTTPS (a TLS proxy).
        assert!(own_origin("https://vault.example", "vault.example", &[]));
        assert!(!own_origin("https://evil.example", "vault.example", &[]));
        assert!(!own_origin("https://", "", &[]));
    }

    #[test]
    fn bounds_are_shown_as_the_flags_write_them() {
        assert_eq!(shown(Duration::from_millis(200)), "200ms");
        assert_eq!(shown(Duration::from_secs(30)), "30s");
    }
}
