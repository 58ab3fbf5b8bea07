//! The Context Layer HTTP binding's transport (seed 000 §10): routes,
//! `Context-Layer-Version` negotiation, the experimental media type, bearer
//! tokens, per-caller rate limits, `Idempotency-Key`, strict JSON bodies and
//! `error` objects. A caller is authenticated and counted before its body is
//! read. Every handler hands one call to [`super::gateway`] on a blocking thread.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;

use ctx_core::exchange::error::ClError;
use ctx_core::exchange::ops::gateway::{self, Caller, Verdict, MEDIA_TYPE};
use ctx_core::exchange::SpecVersion;

use super::gateway::{status_for, ClReply, Gateway};

/// Largest request body the binding accepts (requests, proposals, receipts are small).
pub const MAX_BODY: usize = 1024 * 1024;
/// The version header of seed 000 §10.1.
pub const VERSION_HEADER: &str = "context-layer-version";

pub type Gw = Arc<Gateway>;

/// What every handler gets: the facade and the body's time bound.
#[derive(Clone)]
pub struct Cl {
    gw: Gw,
    body_timeout: Duration,
}

/// Paths that belong to the binding (their errors are `error` objects).
pub fn is_cl_path(p: &str) -> bool {
    p.starts_with("/context/v1/")
        || p == "/context/v1"
        || p.starts_with("/.well-known/context-layer")
}

fn short(v: SpecVersion) -> &'static str {
    v.id().trim_start_matches("context-layer/")
}

fn now() -> ctx_core::time::Instant {
    ctx_core::exchange::canon::to_ms(chrono::Utc::now())
}

fn render(r: ClReply, v: SpecVersion) -> Response {
    let mut resp = Response::new(Body::from(r.body.to_string()));
    *resp.status_mut() =
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(VERSION_HEADER, HeaderValue::from_static(short(v)));
    for (k, val) in r.headers {
        if let (Ok(k), Ok(val)) = (
            header::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&val),
        ) {
            h.insert(k, val);
        }
    }
    resp
}

/// A refusal as the profile's `error` object, with its status. A failure on the
/// server's side reaches the caller by its kind only; the detail goes to the
/// server's stderr, under the error object's id.
fn refusal(e: &ClError, v: SpecVersion) -> ClReply {
    let status = status_for(e.code);
    let server_side = status >= 500;
    let told = ClError::new(e.code, gateway::caller_message(e, server_side));
    let mut r = ClReply::ok(status, gateway::error_object(&told, now(), v));
    if server_side {
        eprintln!(
            "context layer: {} {} ({}): {}",
            status,
            e.code,
            r.body["id"].as_str().unwrap_or("?"),
            e.message
        );
    }
    if r.status == 401 {
        r.headers.push((
            "www-authenticate".into(),
            "Bearer realm=\"context-layer\"".into(),
        ));
    }
    r
}

fn fail(code: &'static str, msg: &str, v: SpecVersion) -> Response {
    render(refusal(&ClError::new(code, msg), v), v)
}

fn refuse(code: &'static str, msg: &str, v: SpecVersion) -> Refused {
    Box::new(fail(code, msg, v))
}

pub fn unknown_endpoint() -> Response {
    fail(
        "ENDPOINT_NOT_FOUND",
        "no such Context Layer endpoint; see GET /.well-known/context-layer",
        SpecVersion::V02,
    )
}

/// A state-changing call from a web page of another origin (seed 000 §11.1).
pub fn cross_origin() -> Response {
    fail(
        "FORBIDDEN",
        "this server does not take state-changing requests from web pages of other origins",
        SpecVersion::V02,
    )
}

pub fn method_not_allowed() -> Response {
    fail(
        "METHOD_NOT_ALLOWED",
        "method not allowed on this endpoint; see GET /.well-known/context-layer",
        SpecVersion::V02,
    )
}

/// The negotiated version: the header's (0.2-draft or 0.1-draft), else 0.2-draft.
/// A response that ends a call early (boxed: it is large next to the Ok values).
type Refused = Box<Response>;

fn version(h: &HeaderMap) -> Result<SpecVersion, Refused> {
    let Some(raw) = h.get(VERSION_HEADER) else {
        return Ok(SpecVersion::V02);
    };
    raw.to_str()
        .ok()
        .and_then(|s| SpecVersion::parse(s.trim()))
        .ok_or_else(|| {
            Box::new(fail(
                "UNSUPPORTED_SPEC_VERSION",
                "Context-Layer-Version must be 0.2-draft (the default) or 0.1-draft",
                SpecVersion::V02,
            ))
        })
}

fn bearer(h: &HeaderMap) -> Option<String> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

/// Version and caller of a call, or the refusal to send: unauthenticated, or
/// past the caller's rate limit (429 `RATE_LIMITED` with `Retry-After`).
fn admit(gw: &Gateway, h: &HeaderMap) -> Result<(SpecVersion, Caller), Refused> {
    let v = version(h)?;
    let caller = gw
        .authenticate(bearer(h).as_deref())
        .map_err(|e| Box::new(render(refusal(&e, v), v)))?;
    if let Err(wait) = gw.allow(&caller) {
        let e = ClError::new(
            "RATE_LIMITED",
            format!(
                "too many calls with this token (limit {} a minute); retry after {wait} s",
                gw.rate_limit()
            ),
        );
        let mut r = refusal(&e, v);
        r.headers.push(("retry-after".into(), wait.to_string()));
        return Err(Box::new(render(r, v)));
    }
    Ok((v, caller))
}

/// A body in the binding's media type, at most [`MAX_BODY`] bytes, all of it
/// within `timeout`, one strict JSON object (duplicate members refused; errors
/// give line and column, never the text).
async fn read_body(
    h: &HeaderMap,
    body: Body,
    v: SpecVersion,
    timeout: Duration,
) -> Result<(Vec<u8>, Value), Refused> {
    let media = h
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media != MEDIA_TYPE {
        return Err(refuse(
            "UNSUPPORTED_MEDIA_TYPE",
            &format!("send the body as Content-Type: {MEDIA_TYPE}"),
            v,
        ));
    }
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return Err(refuse(
                "PAYLOAD_TOO_LARGE",
                &format!("the body is larger than {MAX_BODY} bytes"),
                v,
            ))
        }
        Err(_) => {
            return Err(refuse(
                "REQUEST_TIMEOUT",
                &format!(
                    "the request body did not arrive within {} (ctx serve --body-timeout)",
                    super::http::shown(timeout)
                ),
                v,
            ))
        }
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| refuse("INVALID_JSON", "the body is not UTF-8 text", v))?;
    let value = ctx_core::json::parse(text).map_err(|e| {
        refuse(
            "INVALID_JSON",
            &format!(
                "the body is not one JSON document: line {}, column {}",
                e.line, e.column
            ),
            v,
        )
    })?;
    if !value.is_object() {
        return Err(refuse("INVALID_BODY", "the body must be a JSON object", v));
    }
    Ok((bytes.to_vec(), value))
}

fn idempotency_key(h: &HeaderMap) -> Option<String> {
    h.get("idempotency-key")
        .map(|k| k.to_str().unwrap_or("\u{0}").to_string())
}

/// Run a facade call off the async threads.
async fn call(v: SpecVersion, f: impl FnOnce() -> ClReply + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => render(r, v),
        Err(_) => fail("INTERNAL", "internal error", v),
    }
}

async fn well_known(State(Cl { gw, .. }): State<Cl>, h: HeaderMap) -> Response {
    let v = match version(&h) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    call(v, move || {
        gw.capabilities().unwrap_or_else(|e| refusal(&e, v))
    })
    .await
}

/// A mutating call: admit, read the body, then run `f` under the idempotency key.
/// A refusal before the body is read closes the connection.
async fn mutation(
    cl: Cl,
    h: HeaderMap,
    body: Body,
    route: String,
    f: impl FnOnce(&Gateway, &Caller, &Value, SpecVersion) -> Result<ClReply, ClError> + Send + 'static,
) -> Response {
    let gw = cl.gw;
    let (v, caller) = match admit(&gw, &h) {
        Ok(x) => x,
        Err(r) => return super::http::closing(*r, &h),
    };
    let (bytes, value) = match read_body(&h, body, v, cl.body_timeout).await {
        Ok(x) => x,
        Err(r) => {
            let unread = r.status() != StatusCode::BAD_REQUEST;
            return if unread {
                super::http::closing(*r, &h)
            } else {
                *r
            };
        }
    };
    let key = idempotency_key(&h);
    call(v, move || {
        gw.keyed(
            &caller,
            &route,
            key.as_deref(),
            &bytes,
            |e| refusal(e, v),
            || f(&gw, &caller, &value, v),
        )
    })
    .await
}

/// A read: admit, then run `f`.
async fn read(
    Cl { gw, .. }: Cl,
    h: HeaderMap,
    f: impl FnOnce(&Gateway, &Caller) -> Result<ClReply, ClError> + Send + 'static,
) -> Response {
    let (v, caller) = match admit(&gw, &h) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    call(v, move || {
        f(&gw, &caller).unwrap_or_else(|e| refusal(&e, v))
    })
    .await
}

fn member<'a>(body: &'a Value, key: &str) -> Result<&'a str, ClError> {
    body.get(key).and_then(Value::as_str).ok_or_else(|| {
        ClError::new(
            "INVALID_BODY",
            format!("`{key}` is required and must be a string"),
        )
    })
}

fn only(body: &Value, keys: &[&str]) -> Result<(), ClError> {
    match body
        .as_object()
        .and_then(|m| m.keys().find(|k| !keys.contains(&k.as_str())))
    {
        Some(k) => Err(ClError::new(
            "INVALID_BODY",
            format!(
                "unknown member `{}` (expected: {})",
                k.chars().take(64).collect::<String>(),
                keys.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

async fn submit(State(gw): State<Cl>, h: HeaderMap, body: Body) -> Response {
    mutation(
        gw,
        h,
        body,
        "POST /context/v1/requests".into(),
        |g, c, b, v| g.submit(c, b, v, now()),
    )
    .await
}

async fn request_status(State(gw): State<Cl>, h: HeaderMap, Path(id): Path<String>) -> Response {
    read(gw, h, move |g, c| g.status(c, &id)).await
}

async fn decisions(
    State(gw): State<Cl>,
    h: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    let route = format!("POST /context/v1/requests/{id}/decisions");
    mutation(gw, h, body, route, move |g, c, b, v| {
        only(b, &["decision", "reason"])?;
        let verdict = match member(b, "decision")? {
            "approve" => Verdict::Approve,
            "deny" => Verdict::Deny,
            _ => {
                return Err(ClError::new(
                    "INVALID_BODY",
                    "`decision` is approve or deny",
                ))
            }
        };
        let reason = b.get("reason").and_then(Value::as_str).unwrap_or("");
        g.decide(c, &id, verdict, reason, v, now())
    })
    .await
}

async fn bundle(State(gw): State<Cl>, h: HeaderMap, Path(id): Path<String>) -> Response {
    read(gw, h, move |g, c| g.bundle(c, &id, now())).await
}

async fn bundle_receipts(
    State(gw): State<Cl>,
    h: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    let route = format!("POST /context/v1/bundles/{id}/receipts");
    mutation(gw, h, body, route, move |g, c, b, _| {
        only(b, &["operation", "outcome", "output_digest"])?;
        let success = match member(b, "outcome")? {
            "success" => true,
            "failure" => false,
            _ => {
                return Err(ClError::new(
                    "INVALID_BODY",
                    "`outcome` is success or failure",
                ))
            }
        };
        g.report(
            c,
            &id,
            member(b, "operation")?,
            success,
            member(b, "output_digest")?,
            now(),
        )
    })
    .await
}

async fn proposals(State(gw): State<Cl>, h: HeaderMap, body: Body) -> Response {
    mutation(gw, h, body, "POST /context/v1/memory-proposals".into(), |g, c, b, _| {
        only(b, &["bundle_ref", "proposal"])?;
        let candidate = b
            .get("proposal")
            .filter(|p| p.is_object())
            .ok_or_else(|| ClError::new("INVALID_BODY", "`proposal` is required: {operation, proposed_claims, provenance_handles, rationale}"))?;
        g.propose(c, member(b, "bundle_ref")?, candidate, now())
    })
    .await
}

/// The body of `POST /discovery`: the query and nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DiscoveryBody {
    query: String,
}

async fn discovery(State(gw): State<Cl>, h: HeaderMap, body: Body) -> Response {
    mutation(
        gw,
        h,
        body,
        "POST /context/v1/discovery".into(),
        |g, c, b, v| {
            let d: DiscoveryBody = serde_json::from_value(b.clone()).map_err(|e| {
                ClError::new(
                    "INVALID_BODY",
                    format!("expected {{\"query\": TEXT}} and nothing else: {e}"),
                )
            })?;
            g.discover(c, &d.query, v, now())
        },
    )
    .await
}

async fn receipt(State(gw): State<Cl>, h: HeaderMap, Path(id): Path<String>) -> Response {
    read(gw, h, move |g, c| g.receipt(c, &id)).await
}

/// The binding's routes (merged into the server's router; the server adds the
/// Host check and the fallbacks).
pub fn router(gw: Gw, body_timeout: Duration) -> Router {
    Router::new()
        .route("/.well-known/context-layer", get(well_known))
        .route("/context/v1/requests", post(submit))
        .route("/context/v1/requests/{id}", get(request_status))
        .route("/context/v1/requests/{id}/decisions", post(decisions))
        .route("/context/v1/bundles/{id}", get(bundle))
        .route("/context/v1/bundles/{id}/receipts", post(bundle_receipts))
        .route("/context/v1/memory-proposals", post(proposals))
        .route("/context/v1/discovery", post(discovery))
        .route("/context/v1/receipts/{id}", get(receipt))
        .with_state(Cl { gw, body_timeout })
}
