//! The only handler. Every request, whatever its route, is authenticated by
//! the library before anything else happens; a refusal is the profile's 401
//! and one line on stderr naming the check. After authentication: health, or
//! the request parsed, bounded by its deadline and answered on a blocking
//! thread.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use serde_json::json;

use ctx_core::evidence::delegated::{self, ProviderConfig, Refusal};
use ctx_core::provider::request_auth::{
    Authenticated, Authenticator, HttpRequest, Rejection, Route, Stage, BODY_READ_TIMEOUT,
    MAX_BODY_BYTES, PROFILE, REJECTION_BODY,
};

pub struct App {
    pub auth: Authenticator,
    pub provider: ProviderConfig,
}

pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

fn reply(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn error(status: StatusCode, code: &str) -> Response {
    reply(status, json!({ "error": code }).to_string())
}

/// A request line for the log: bounded and escaped (the target is the caller's).
fn line(method: &str, target: &str) -> String {
    let t: String = target.chars().take(120).collect();
    format!("{method} {t:?}")
}

fn rejected(what: &str, why: &Rejection) -> Response {
    eprintln!("{what}: rejected ({why})");
    reply(StatusCode::UNAUTHORIZED, REJECTION_BODY.to_string())
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let method = parts.method.as_str().to_string();
    // Only origin-form targets ("/path?query") are the profile's.
    let target = match (parts.uri.scheme(), parts.uri.path_and_query()) {
        (None, Some(pq)) => pq.as_str().to_string(),
        _ => parts.uri.to_string(),
    };
    let what = line(&method, &target);
    let framing = |d: &str| Rejection::new(Stage::Framing, d);
    if parts.headers.contains_key(header::TRANSFER_ENCODING) {
        return rejected(&what, &framing("Transfer-Encoding is not supported"));
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return rejected(
            &what,
            &framing("Content-Length is over the 150000-byte limit"),
        );
    }
    let body = match tokio::time::timeout(
        BODY_READ_TIMEOUT,
        axum::body::to_bytes(body, MAX_BODY_BYTES + 1),
    )
    .await
    {
        Ok(Ok(b)) => b.to_vec(),
        Ok(Err(_)) => {
            return rejected(
                &what,
                &framing("the body could not be read within its limit"),
            )
        }
        Err(_) => return rejected(&what, &framing("the body did not arrive within 5 seconds")),
    };
    let request = HttpRequest {
        method,
        target,
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
            .collect(),
        body,
    };
    let checked = {
        let app = app.clone();
        tokio::task::spawn_blocking(move || {
            let r = app.auth.verify(&request, &unix_now);
            (request, r)
        })
        .await
    };
    let (request, ok) = match checked {
        Ok((request, Ok(ok))) => (request, ok),
        Ok((_, Err(why))) => return rejected(&what, &why),
        Err(e) => return rejected(&what, &Rejection::new(Stage::Storage, e.to_string())),
    };
    match ok.route {
        Route::Health => health(&app, &what, &ok),
        Route::Context => context(app, &what, &ok, request.body).await,
    }
}

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn health(app: &App, what: &str, ok: &Authenticated) -> Response {
    eprintln!("{what}: 200 health (key {})", ok.key_id);
    let p = &app.provider.provider;
    let body = json!({
        "status": "ready",
        "transport_profile": PROFILE,
        "provider_id": p.id,
        "provider_version": p.version,
        "instance_id": p.instance_id,
    });
    reply(StatusCode::OK, body.to_string())
}

async fn context(app: Arc<App>, what: &str, ok: &Authenticated, body: Vec<u8>) -> Response {
    let req = match delegated::parse_request(&body) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("{what}: 422 request refused ({why})");
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "provider_request_rejected",
            );
        }
    };
    let now = chrono::Utc::now();
    let left = (req.deadline - now).to_std().unwrap_or(Duration::ZERO);
    let work = {
        let app = app.clone();
        tokio::task::spawn_blocking(move || delegated::answer(&app.provider, &req, now))
    };
    let outcome = match tokio::time::timeout(left, work).await {
        Err(_) => Err(Refusal::DeadlineElapsed),
        Ok(Err(e)) => Err(Refusal::Unavailable(ctx_core::error::Error::Invalid(
            e.to_string(),
        ))),
        Ok(Ok(r)) => r,
    };
    match outcome {
        Ok(a) => {
            let decision = match &a.withheld {
                Some(code) => format!("withhold {code}"),
                None => format!("inject of {} object(s)", a.included),
            };
            let mut held = String::new();
            if !a.withheld_for_findings.is_empty() {
                held += &format!(
                    "; withheld for findings: {}",
                    a.withheld_for_findings.join(", ")
                );
            }
            if a.withheld_for_approval > 0 {
                held += &format!("; {} withheld for approval", a.withheld_for_approval);
            }
            eprintln!(
                "{what}: 200 {decision}, receipt {} (key {}){held}",
                a.receipt_id, ok.key_id
            );
            reply(StatusCode::OK, a.envelope.to_string())
        }
        Err(Refusal::DeadlineElapsed) => {
            eprintln!("{what}: 504 the request's deadline passed");
            error(StatusCode::GATEWAY_TIMEOUT, "provider_deadline_elapsed")
        }
        Err(Refusal::NotServed(why)) => {
            eprintln!("{what}: 403 {why}");
            error(StatusCode::FORBIDDEN, "binding_not_served")
        }
        Err(Refusal::Unavailable(e)) => {
            eprintln!("{what}: 503 {}", e.to_string().replace('\n', " "));
            error(StatusCode::SERVICE_UNAVAILABLE, "provider_unavailable")
        }
    }
}
