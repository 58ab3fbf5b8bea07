//! personal-vault's HTTP surface (`/vault/*`, `ctx serve --vault-compat`), so that its
//! MCP server and CLI work against a ctx vault unchanged (`VAULT_ADDR`, `VAULT_TOKEN`).
//!
//! Every route calls the same facade function as its `/context/*` twin, with the same
//! bearer: the same policy, scope, approvals, rate limits and audit. Only the shape
//! of a successful answer changes (bare arrays from the list endpoints, `{status}`
//! acknowledgements), by the pure functions below; errors keep seed 004's
//! `{error, constraint}` body, which personal-vault's clients read too. Nothing here
//! can see more than `/context/*` gives the same token.

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::Router;
use serde_json::{json, Map, Value};

use super::http::{bearer, call, query, with_body, App, Needs, MAX_SMALL_BODY};
use super::service::{self as f, Reply};

/// The routes personal-vault's server has, on the same facade as `/context/*`.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/vault/unlock", post(unlock))
        .route("/vault/lock", post(lock))
        .route("/vault/status", get(status))
        .route("/vault/schema", get(schema))
        .route("/vault/fields", get(list_fields))
        .route("/vault/fields/category/{name}", get(category))
        .route(
            "/vault/fields/{id}",
            get(get_field).put(put_field).delete(delete_field),
        )
        .route("/vault/context", get(context))
        .route("/vault/audit", get(audit))
        .route("/vault/sensitivity/{id}", put(sensitivity))
        .route("/vault/tokens/service", post(create_token).get(list_tokens))
        .route(
            "/vault/tokens/service/{prefix}",
            axum::routing::delete(revoke_token),
        )
        .layer(middleware::from_fn(security_headers))
        .with_state(app)
}

/// The headers personal-vault's server sends on every answer: nothing here is a
/// page, may be framed, sniffed or leak a referrer.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    for (k, v) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("content-security-policy", "default-src 'none'"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    resp
}

/// Apply `shape` to the JSON body of a successful answer; anything else unchanged.
fn reshape(r: Reply, shape: impl FnOnce(Value) -> Value) -> Reply {
    if !(200..300).contains(&r.status) || r.status == 202 {
        // Refusals keep `{error, constraint}`; a pending approval keeps its poll URL.
        return r;
    }
    let Ok(v) = serde_json::from_str::<Value>(&r.body) else {
        return r;
    };
    Reply {
        status: if r.status == 201 { 200 } else { r.status },
        body: zeroize::Zeroizing::new(shape(v).to_string()),
        headers: r.headers,
    }
}

/// `{fields: [...]}` (or another member) → the bare array.
fn member_array(key: &'static str) -> impl FnOnce(Value) -> Value {
    move |mut v| match v.get_mut(key).map(Value::take) {
        Some(a @ Value::Array(_)) => a,
        _ => Value::Array(Vec::new()),
    }
}

fn acknowledged(status: &'static str) -> impl FnOnce(Value) -> Value {
    move |_| json!({ "status": status })
}

/// `/context/status` with personal-vault's `categories` (fields per category) — counted
/// from what the caller's own token lists, so an anonymous caller learns no more
/// than `/context/status` tells it.
fn status_shape(mut status: Value, listed: Option<&Value>) -> Value {
    let mut counts = Map::new();
    if let Some(fields) = listed
        .and_then(|l| l.get("fields"))
        .and_then(Value::as_array)
    {
        for c in fields.iter().filter_map(|f| f.get("category")?.as_str()) {
            let n = counts.entry(c.to_string()).or_insert(json!(0));
            *n = json!(n.as_u64().unwrap_or(0) + 1);
        }
    }
    if let Some(o) = status.as_object_mut() {
        o.insert("categories".into(), Value::Object(counts));
    }
    status
}

/// The standard categories with their default tiers and the fields that differ:
/// what a client reads to pick canonical field ids before it writes.
fn schema_document() -> Value {
    let categories: Vec<Value> = ctx_core::personal::STANDARD_CATEGORIES
        .iter()
        .map(|c| {
            json!({
                "category": c.name,
                "description": c.description,
                "default_sensitivity": c.tier.to_string(),
                "fields": c.fields.iter().map(|(name, tier)| json!({
                    "id": format!("{}.{name}", c.name),
                    "sensitivity": tier.to_string(),
                    "user_only_write": c.user_only_write.contains(name),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "context_version": ctx_core::personal::CONTEXT_VERSION, "categories": categories })
}

async fn unlock(State(app): State<App>, headers: HeaderMap, body: axum::body::Body) -> Response {
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

async fn lock(State(app): State<App>, headers: HeaderMap) -> Response {
    let b = bearer(&headers);
    call(move || reshape(f::lock(&app.svc, b.as_deref()), acknowledged("locked"))).await
}

async fn status(State(app): State<App>, headers: HeaderMap) -> Response {
    let b = bearer(&headers);
    call(move || {
        let listed = b.as_deref().map(|b| f::list_fields(&app.svc, Some(b)));
        let listed = listed
            .filter(|r| r.status == 200)
            .and_then(|r| serde_json::from_str::<Value>(&r.body).ok());
        reshape(f::status(&app.svc), |s| status_shape(s, listed.as_ref()))
    })
    .await
}

async fn schema() -> Response {
    call(|| Reply::json_value(200, schema_document())).await
}

async fn list_fields(State(app): State<App>, headers: HeaderMap) -> Response {
    let b = bearer(&headers);
    call(move || {
        reshape(
            f::list_fields(&app.svc, b.as_deref()),
            member_array("fields"),
        )
    })
    .await
}

async fn category(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || {
        reshape(
            f::category(&app.svc, b.as_deref(), &name),
            member_array("fields"),
        )
    })
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
    body: axum::body::Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        move |s, b, v| reshape(f::put_field(s, b, &id, v), acknowledged("ok")),
    )
    .await
}

async fn delete_field(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || {
        reshape(
            f::delete_field(&app.svc, b.as_deref(), &id),
            acknowledged("deleted"),
        )
    })
    .await
}

async fn context(State(app): State<App>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let b = bearer(&headers);
    let q = query(q);
    call(move || f::context(&app.svc, b.as_deref(), &q)).await
}

async fn audit(State(app): State<App>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let b = bearer(&headers);
    let q = query(q);
    call(move || {
        reshape(
            f::audit(&app.svc, b.as_deref(), &q),
            member_array("entries"),
        )
    })
    .await
}

async fn sensitivity(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: axum::body::Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        move |s, b, v| reshape(f::sensitivity(s, b, &id, v), acknowledged("ok")),
    )
    .await
}

/// personal-vault mints a service token with the user's session token: so does ctx
/// (the consumer must be registered; the token is read-only unless `mode` says
/// otherwise, narrowed by the vault's consumer role, its ttl capped as on `/context/*`).
async fn create_token(
    State(app): State<App>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    with_body(
        app,
        headers,
        body,
        MAX_SMALL_BODY,
        Needs::Bearer,
        // personal-vault answers 200 with the token.
        |s, b, v| reshape(f::create_token(s, b, v, None), |t| t),
    )
    .await
}

async fn list_tokens(State(app): State<App>, headers: HeaderMap) -> Response {
    let b = bearer(&headers);
    call(move || {
        reshape(
            f::list_tokens(&app.svc, b.as_deref()),
            member_array("tokens"),
        )
    })
    .await
}

async fn revoke_token(
    State(app): State<App>,
    headers: HeaderMap,
    Path(prefix): Path<String>,
) -> Response {
    let b = bearer(&headers);
    call(move || {
        reshape(
            f::revoke_token(&app.svc, b.as_deref(), &prefix),
            acknowledged("revoked"),
        )
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_answers_become_bare_arrays_and_writes_acknowledgements() {
        let listed =
            json!({"context_version": "0.1.0", "fields": [{"id": "identity.dob"}], "problems": []});
        assert_eq!(
            member_array("fields")(listed),
            json!([{"id": "identity.dob"}])
        );
        assert_eq!(member_array("fields")(json!({})), json!([]));
        assert_eq!(
            acknowledged("ok")(json!({"id": "x"})),
            json!({"status": "ok"})
        );
    }

    #[test]
    fn refusals_and_pending_approvals_keep_their_bodies() {
        let refused =
            Reply::json_value(403, json!({"error": "no", "constraint": "scope_exceeded"}));
        let kept = reshape(refused, |_| json!("changed"));
        assert_eq!(kept.status, 403);
        assert!(kept.body.contains("scope_exceeded"));
        let pending = Reply::json_value(202, json!({"status": "pending"}));
        assert!(reshape(pending, |_| json!("changed"))
            .body
            .contains("pending"));
    }

    #[test]
    fn status_counts_only_what_the_callers_token_lists() {
        let status = json!({"initialized": true, "locked": false, "field_count": 3, "categories": ["identity", "medical"]});
        let anonymous = status_shape(status.clone(), None);
        assert_eq!(anonymous["categories"], json!({}));
        let listed = json!({"fields": [{"category": "identity"}, {"category": "identity"}]});
        assert_eq!(
            status_shape(status, Some(&listed))["categories"],
            json!({"identity": 2})
        );
    }

    #[test]
    fn the_schema_names_canonical_ids_with_their_tiers() {
        let s = schema_document();
        let identity = s["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["category"] == "identity")
            .unwrap();
        assert!(identity["fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "identity.ssn"
                && f["sensitivity"] == "critical"
                && f["user_only_write"] == true));
    }
}
