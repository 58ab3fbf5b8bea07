//! The facade: the ONE module of `ctx serve` that reaches the library. Handlers call
//! these functions and get back a [`Reply`] (status, JSON body, headers); nothing
//! else in `serve/` names a `ctx_core` operation. When the library's single view
//! function, the Context Layer exchange or the live repository land, this file (and
//! `ctx_core::personal::view`) is what changes.

use std::sync::Arc;

use serde_json::{json, Value};
use zeroize::Zeroizing;

use ctx_core::personal::archive::{self, ImportMode};
use ctx_core::personal::json::Obj;
use ctx_core::personal::keys::SecretKey;
use ctx_core::personal::service::{
    self as ps, Answer, Decide, FieldQuery, Gate, Refusal, TokenRequest,
};
use ctx_core::personal::tokens::Rates;
use ctx_core::personal::Tier;

pub use ps::{Options, Service};

/// An HTTP answer, before the transport renders it.
pub struct Reply {
    pub status: u16,
    pub body: Zeroizing<String>,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn ok(status: u16, body: Zeroizing<String>) -> Reply {
        Reply {
            status,
            body,
            headers: Vec::new(),
        }
    }

    fn json(status: u16, v: Value) -> Reply {
        Reply::ok(status, Zeroizing::new(v.to_string()))
    }

    /// A JSON answer (for the other shapes of the same facade, `vault_compat`).
    pub fn json_value(status: u16, v: Value) -> Reply {
        Reply::json(status, v)
    }

    /// Seed 004's error body: `{ error, constraint }`.
    pub fn error(status: u16, error: &str, constraint: &str) -> Reply {
        Reply::json(status, json!({ "error": error, "constraint": constraint }))
    }

    fn refused(r: Refusal) -> Reply {
        if let Refusal::Unavailable(detail) = &r {
            // The client's message names no file; the user's terminal gets it whole.
            eprintln!("ctx serve: 503: {detail}");
        }
        let mut out = Reply::error(r.status(), &r.message(), r.constraint());
        if let Refusal::RateLimited { retry_after, .. } = r {
            out.headers.push(("retry-after", retry_after.to_string()));
        }
        out
    }

    fn pending(t: ps::Ticket) -> Reply {
        let poll = format!("/context/approvals/{}", t.approval);
        let mut out = Reply::json(
            202,
            json!({
                "status": "pending",
                "error": "waiting for the user's approval",
                "constraint": "approval_required",
                "approval": t.approval,
                "poll": poll,
                "fields": t.fields,
                "expires_at": t.expires_at,
            }),
        );
        out.headers.push(("location", poll));
        out.headers.push(("retry-after", "2".into()));
        out
    }
}

fn answer(status: u16, a: Answer<Zeroizing<String>>) -> Reply {
    match a {
        Ok(b) => Reply::ok(status, b),
        Err(r) => Reply::refused(r),
    }
}

fn gated(a: Answer<Gate<Zeroizing<String>>>) -> Reply {
    match a {
        Ok(Gate::Ready(b)) => Reply::ok(200, b),
        Ok(Gate::Pending(t)) => Reply::pending(t),
        Err(r) => Reply::refused(r),
    }
}

/// A request body field as a string, or a 400.
fn text<'a>(body: &'a Value, key: &str) -> Result<Option<&'a str>, Reply> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Reply::error(
            400,
            &format!("`{key}` must be a string"),
            "invalid_request",
        )),
    }
}

fn required<'a>(body: &'a Value, key: &str) -> Result<&'a str, Reply> {
    text(body, key)?
        .ok_or_else(|| Reply::error(400, &format!("`{key}` is required"), "invalid_request"))
}

pub type Svc = Arc<Service>;

pub fn status(s: &Svc) -> Reply {
    let st = s.status();
    Reply::json(
        200,
        json!({
            "initialized": true,
            "locked": st.locked,
            "field_count": st.field_count,
            "categories": st.categories,
            "context_version": ctx_core::personal::CONTEXT_VERSION,
            "idle_timeout_seconds": st.idle_timeout_secs,
            "auto_lock_in_seconds": st.auto_lock_in_secs,
        }),
    )
}

pub fn unlock(s: &Svc, body: &Value) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let password = Zeroizing::new(required(body, "password")?.to_string());
        let secret = Zeroizing::new(required(body, "secret_key")?.to_string());
        Ok(match s.unlock(&password, &secret) {
            Ok(token) => Reply::ok(200, Obj::new().str("token", &token).finish()),
            Err(r) => Reply::refused(r),
        })
    };
    run().unwrap_or_else(|e| e)
}

/// Before a body is read: a caller the bearer check would refuse gets its refusal now.
pub fn admits(s: &Svc, bearer: Option<&str>) -> Result<(), Reply> {
    s.admits(bearer).map_err(Reply::refused)
}

pub fn lock(s: &Svc, bearer: Option<&str>) -> Reply {
    match s.lock(bearer) {
        Ok(()) => Reply::json(200, json!({ "locked": true })),
        Err(r) => Reply::refused(r),
    }
}

pub fn list_fields(s: &Svc, bearer: Option<&str>) -> Reply {
    answer(200, s.list_fields(bearer))
}

pub fn get_field(s: &Svc, bearer: Option<&str>, id: &str) -> Reply {
    gated(s.get_field(bearer, id))
}

pub fn put_field(s: &Svc, bearer: Option<&str>, id: &str, body: &Value) -> Reply {
    let sensitivity = match text(body, "sensitivity") {
        Ok(v) => v,
        Err(e) => return e,
    };
    let value = body.get("value").cloned().unwrap_or(Value::Null);
    match s.put_field(bearer, id, &value, sensitivity) {
        Ok(Gate::Ready(w)) => Reply::ok(if w.created { 201 } else { 200 }, w.body),
        Ok(Gate::Pending(t)) => Reply::pending(t),
        Err(r) => Reply::refused(r),
    }
}

pub fn delete_field(s: &Svc, bearer: Option<&str>, id: &str) -> Reply {
    gated(s.delete_field(bearer, id))
}

pub fn category(s: &Svc, bearer: Option<&str>, name: &str) -> Reply {
    gated(s.get_category(bearer, name))
}

pub fn context(s: &Svc, bearer: Option<&str>, query: &[(String, String)]) -> Reply {
    let mut q = FieldQuery::default();
    for (k, v) in query {
        match k.as_str() {
            "max_sensitivity" => match Tier::parse(v) {
                Some(t) => q.max_tier = Some(t),
                None => {
                    return Reply::error(
                        400,
                        "`max_sensitivity` is public, standard, sensitive or critical",
                        "invalid_request",
                    )
                }
            },
            _ => {
                return Reply::error(
                    400,
                    &format!(
                        "unknown query parameter `{}`",
                        ctx_core::personal::field::inert(k)
                    ),
                    "invalid_request",
                )
            }
        }
    }
    gated(s.context(bearer, &q))
}

pub fn sensitivity(s: &Svc, bearer: Option<&str>, id: &str, body: &Value) -> Reply {
    match required(body, "tier") {
        Ok(t) => answer(200, s.set_sensitivity(bearer, id, t)),
        Err(e) => e,
    }
}

/// `peer`: the address the request came from, for the limit on failed attempts.
pub fn create_token(s: &Svc, bearer: Option<&str>, body: &Value, peer: Option<String>) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let scope = body
            .get("scope")
            .and_then(ctx_core::personal::tokens::scope_entries)
            .ok_or_else(|| {
                Reply::error(
                    400,
                    "`scope` is required: a string (`identity.*, financial.*`) or a list",
                    "invalid_request",
                )
            })?;
        let rates = match body.get("rate_limit") {
            None | Some(Value::Null) => None,
            Some(r) => {
                let n = |k: &str| {
                    r.get(k)
                        .and_then(Value::as_u64)
                        .and_then(|v| u32::try_from(v).ok())
                };
                let d = Rates::default();
                Some(Rates {
                    reads: if r.get("reads").is_some() {
                        n("reads").ok_or_else(|| {
                            Reply::error(
                                400,
                                "`rate_limit.reads` is a whole number",
                                "invalid_request",
                            )
                        })?
                    } else {
                        d.reads
                    },
                    writes: if r.get("writes").is_some() {
                        n("writes").ok_or_else(|| {
                            Reply::error(
                                400,
                                "`rate_limit.writes` is a whole number",
                                "invalid_request",
                            )
                        })?
                    } else {
                        d.writes
                    },
                })
            }
        };
        let req = TokenRequest {
            consumer: required(body, "consumer")?.to_string(),
            secret: text(body, "secret")?.map(str::to_string),
            scope,
            ttl: text(body, "ttl")?.map(str::to_string),
            mode: text(body, "mode")?.map(str::to_string),
            usage: text(body, "usage")?.map(str::to_string),
            purpose: text(body, "purpose")?.map(str::to_string),
            rates,
            peer,
        };
        Ok(answer(201, s.create_token(bearer, &req)))
    };
    run().unwrap_or_else(|e| e)
}

pub fn list_tokens(s: &Svc, bearer: Option<&str>) -> Reply {
    match s.list_tokens(bearer) {
        Ok(ts) => Reply::json(
            200,
            json!({ "tokens": ts.iter().map(|t| {
                let r = &t.record;
                json!({
                    "token": format!("{}…", r.shown),
                    "prefix": r.shown,
                    "consumer": r.consumer,
                    "scope": r.scope,
                    "mode": r.mode.as_str(),
                    "usage": if r.usage == ctx_core::personal::tokens::Usage::Single { "single" } else { "multi" },
                    "created_at": r.created_at,
                    "expires_at": r.expires_at,
                    "uses": r.uses,
                })
            }).collect::<Vec<_>>() }),
        ),
        Err(r) => Reply::refused(r),
    }
}

pub fn revoke_token(s: &Svc, bearer: Option<&str>, prefix: &str) -> Reply {
    match s.revoke_token(bearer, prefix) {
        Ok(shown) => Reply::json(200, json!({ "revoked": format!("{shown}…") })),
        Err(r) => Reply::refused(r),
    }
}

pub fn register(s: &Svc, bearer: Option<&str>, body: &Value) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let name = required(body, "name")?;
        let secret = Zeroizing::new(required(body, "secret")?.to_string());
        Ok(match s.register(bearer, name, &secret) {
            Ok((name, at)) => Reply::json(201, json!({ "name": name, "registered_at": at })),
            Err(r) => Reply::refused(r),
        })
    };
    run().unwrap_or_else(|e| e)
}

pub fn consumers(s: &Svc, bearer: Option<&str>) -> Reply {
    match s.consumers(bearer) {
        Ok(cs) => Reply::json(
            200,
            json!({ "consumers": cs.iter().map(|c| json!({"name": c.name, "registered_at": c.registered_at, "tokens": c.tokens})).collect::<Vec<_>>() }),
        ),
        Err(r) => Reply::refused(r),
    }
}

pub fn deregister(s: &Svc, bearer: Option<&str>, name: &str) -> Reply {
    match s.deregister(bearer, name) {
        Ok(n) => Reply::json(
            200,
            json!({ "name": name, "deregistered": true, "revoked_tokens": n }),
        ),
        Err(r) => Reply::refused(r),
    }
}

pub fn audit(s: &Svc, bearer: Option<&str>, query: &[(String, String)]) -> Reply {
    let mut limit = 50usize;
    let mut reveal = false;
    for (k, v) in query {
        match (k.as_str(), v.parse::<usize>()) {
            ("limit", Ok(n)) => limit = n,
            ("reveal", _) if v == "previous" => reveal = true,
            ("reveal", _) => return Reply::error(400, "`reveal` is `previous`", "invalid_request"),
            ("limit", Err(_)) => {
                return Reply::error(400, "`limit` is a whole number 1..1000", "invalid_request")
            }
            _ => {
                return Reply::error(
                    400,
                    &format!(
                        "unknown query parameter `{}`",
                        ctx_core::personal::field::inert(k)
                    ),
                    "invalid_request",
                )
            }
        }
    }
    match s.audit_revealing(bearer, limit, reveal) {
        Ok(entries) => {
            let lines: Vec<String> = entries
                .iter()
                .map(ctx_core::personal::audit::line)
                .collect();
            Reply::json(200, json!({ "entries": entries, "lines": lines }))
        }
        Err(r) => Reply::refused(r),
    }
}

pub fn export(s: &Svc, bearer: Option<&str>, query: &[(String, String)]) -> Reply {
    let mut extra = Vec::new();
    for (k, v) in query {
        match k.as_str() {
            "recipient" => extra.push(v.clone()),
            _ => {
                return Reply::error(
                    400,
                    &format!(
                        "unknown query parameter `{}`",
                        ctx_core::personal::field::inert(k)
                    ),
                    "invalid_request",
                )
            }
        }
    }
    match s.export(bearer, &extra) {
        Ok(e) => {
            let mut doc = json!({
                "format": ctx_core::personal::archive::FORMAT,
                "fields": e.fields,
                "recipients": e.recipients,
            });
            if let (Some(d), Value::Object(src)) = (doc.as_object_mut(), e.source.to_json()) {
                d.extend(src);
                d.insert("archive".into(), Value::String(e.archive));
            }
            Reply::json(200, doc)
        }
        Err(r) => Reply::refused(r),
    }
}

pub fn import(s: &Svc, bearer: Option<&str>, body: &Value) -> Reply {
    let run = || -> Result<Reply, Reply> {
        // `archive`: the armored file, or the whole export document (whose clear
        // members say how the exporting vault derives the archive's key).
        let (archive, source) = match &body["archive"] {
            Value::Object(_) => {
                let doc = &body["archive"];
                let armor = required(doc, "archive")?;
                let src = archive::Source::from_json(doc)
                    .map_err(|e| Reply::error(400, &e.to_string(), "invalid_request"))?;
                (armor, Some(src))
            }
            _ => (required(body, "archive")?, None),
        };
        let password = text(body, "password")?.map(|s| Zeroizing::new(s.to_string()));
        let secret = match text(body, "secret_key")? {
            None => None,
            Some(t) => Some(SecretKey::parse(t).map_err(|e| {
                Reply::error(400, &format!("`secret_key`: {e}"), "invalid_request")
            })?),
        };
        let from_source = match (&source, &password, &secret) {
            (Some(src), Some(p), Some(k)) => Some((src, p.as_bytes(), k)),
            (_, None, None) => None,
            _ => {
                return Err(Reply::error(
                    400,
                    "a backup from another vault needs the whole export document as `archive`, with both `password` and `secret_key` of the vault that made it",
                    "invalid_request",
                ))
            }
        };
        let mode = match text(body, "mode")?.unwrap_or("merge") {
            "merge" => ImportMode::Merge,
            "replace" => ImportMode::Replace,
            _ => {
                return Err(Reply::error(
                    400,
                    "`mode` is merge or replace",
                    "invalid_request",
                ))
            }
        };
        let identity = text(body, "identity")?.map(|s| Zeroizing::new(s.to_string()));
        Ok(
            match s.import(
                bearer,
                archive,
                mode,
                ps::ImportKeys {
                    identity: identity.as_deref().map(|s| s.as_str()),
                    source: from_source,
                },
            ) {
                Ok(r) => Reply::json(
                    200,
                    json!({ "added": r.added, "updated": r.updated, "unchanged": r.unchanged, "removed": r.removed }),
                ),
                Err(r) => Reply::refused(r),
            },
        )
    };
    run().unwrap_or_else(|e| e)
}

fn approval_json(a: &ps::ApprovalView, with_values: bool) -> Value {
    json!({
        "id": a.id,
        "status": a.status,
        "action": a.action,
        "consumer": a.consumer,
        "purpose": a.purpose,
        "fields": a.fields.iter().map(|(id, tier, v)| {
            let mut o = json!({ "id": id, "sensitivity": tier.as_str() });
            if with_values {
                if let Some(v) = v {
                    o["proposed_value"] = json!(ctx_core::approvals::quoted(v));
                }
            }
            o
        }).collect::<Vec<_>>(),
        "critical": a.critical,
        "expires_at": a.expires_at,
        "prompt": if with_values { Some(a.text.clone()) } else { None },
    })
}

pub fn approvals(s: &Svc, bearer: Option<&str>) -> Reply {
    match s.approvals(bearer) {
        Ok(v) => Reply::json(
            200,
            json!({ "approvals": v.iter().map(|a| approval_json(a, true)).collect::<Vec<_>>() }),
        ),
        Err(r) => Reply::refused(r),
    }
}

pub fn approval(s: &Svc, bearer: Option<&str>, id: &str) -> Reply {
    let privileged = s.is_control(bearer) || s.list_tokens(bearer).is_ok();
    match s.approval(bearer, id) {
        Ok(a) => Reply::json(200, approval_json(&a, privileged)),
        Err(r) => Reply::refused(r),
    }
}

pub fn decide(s: &Svc, bearer: Option<&str>, id: &str, body: &Value) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let approve = match required(body, "decision")? {
            "approve" => true,
            "deny" => false,
            _ => {
                return Err(Reply::error(
                    400,
                    "`decision` is approve or deny",
                    "invalid_request",
                ))
            }
        };
        let d = Decide {
            approve,
            confirmation: text(body, "confirm")?.map(str::to_string),
            via: String::new(),
        };
        Ok(match s.decide(bearer, id, &d) {
            Ok(a) => Reply::json(200, approval_json(&a, false)),
            Err(r) => Reply::refused(r),
        })
    };
    run().unwrap_or_else(|e| e)
}
