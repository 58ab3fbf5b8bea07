//! The shapes of audit events (valid against `audit-event.schema.json`):
//! built from a compiled bundle, or from an actor and the object ids a
//! command disclosed or wrote. Events carry ids, counts and digests only,
//! never content: the log is itself readable by whoever holds the repository.

use serde_json::{json, Map, Value};

/// Who acted: the consumer a command served (`role`, `agent`) or a person
/// working on the repository (`human`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// `agent`, `human`, `role` or `service` (the schema's closed list).
    pub kind: &'static str,
    pub id: String,
    pub roles: Vec<String>,
}

impl Actor {
    /// The consumer named by `--agent` or `--role` flags; without either,
    /// the person running the command (`$USER`, else `local-user`).
    pub fn from_flags(agent: Option<&str>, roles: &[String]) -> Actor {
        match (agent, roles) {
            (Some(a), _) => Actor {
                kind: "agent",
                id: a.to_string(),
                roles: Vec::new(),
            },
            (None, [one]) => Actor {
                kind: "role",
                id: one.clone(),
                roles: vec![one.clone()],
            },
            (None, []) => Actor::local_user(),
            (None, many) => Actor {
                kind: "role",
                id: many.join("+"),
                roles: dedup(many),
            },
        }
    }

    /// The person running ctx on this machine.
    pub fn local_user() -> Actor {
        let id = ["USER", "USERNAME", "LOGNAME"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
            .unwrap_or_else(|| "local-user".into());
        Actor {
            kind: "human",
            id,
            roles: Vec::new(),
        }
    }

    fn to_json(&self) -> Value {
        let mut a = Map::new();
        a.insert("type".into(), json!(self.kind));
        a.insert("id".into(), json!(self.id));
        if !self.roles.is_empty() {
            a.insert("roles".into(), json!(self.roles));
        }
        Value::Object(a)
    }
}

fn dedup(items: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(i) {
            out.push(i.clone());
        }
    }
    out
}

/// An event about objects (`context.read`, `context.search`,
/// `context.write`, `context.supersede`, `decision.record`): who, when,
/// which ids, and the outcome.
pub fn objects_event(
    event: &str,
    actor: &Actor,
    objects: &[String],
    namespace: Option<&str>,
    at: &str,
) -> Value {
    let mut e = Map::new();
    e.insert("opencontext".into(), json!(crate::SPEC_VERSION));
    e.insert("event".into(), json!(event));
    e.insert("at".into(), json!(at));
    e.insert("actor".into(), actor.to_json());
    e.insert("objects".into(), json!(dedup(objects)));
    e.insert("outcome".into(), json!("allowed"));
    if let Some(ns) = namespace.filter(|ns| crate::pattern::valid_namespace(ns)) {
        e.insert("namespace".into(), json!(ns));
    }
    Value::Object(e)
}

/// The audit event for a compiled bundle (`context.resolve` or
/// `context.bundle`), from the bundle alone: actor = the consumer, the ids
/// of the included objects, the bundle id, digest and object count.
pub fn bundle_event(event: &str, bundle: &Value, at: &str) -> Value {
    let consumer = &bundle["consumer"];
    let mut actor = Map::new();
    actor.insert(
        "type".into(),
        consumer.get("type").cloned().unwrap_or(json!("role")),
    );
    let id = consumer
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    actor.insert("id".into(), json!(id));
    if let Some(roles) = consumer
        .get("roles")
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    {
        actor.insert("roles".into(), roles.clone());
    }
    let mut ids: Vec<&str> = bundle["objects"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o.get("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    let included = ids.len();
    let excluded = bundle["excluded"].as_array().map_or(0, Vec::len);
    let mut e = Map::new();
    e.insert("opencontext".into(), json!(crate::SPEC_VERSION));
    e.insert("event".into(), json!(event));
    e.insert("at".into(), json!(at));
    e.insert("actor".into(), Value::Object(actor));
    if let Some(t) = bundle.get("task").and_then(Value::as_str) {
        e.insert("task".into(), json!(t));
    }
    e.insert("objects".into(), json!(ids));
    e.insert(
        "bundle".into(),
        json!({
            "bundle_id": bundle["bundle_id"],
            "digest": bundle["digest"],
            "object_count": included,
        }),
    );
    let (outcome, reason) = match (included, excluded) {
        (_, 0) => ("allowed", None),
        (0, n) => (
            "denied",
            Some(format!("all {n} candidate objects were excluded")),
        ),
        (_, n) => ("partial", Some(format!("{n} objects excluded"))),
    };
    e.insert("outcome".into(), json!(outcome));
    if let Some(r) = reason {
        e.insert("reason".into(), json!(r));
    }
    if let Some(ns) = bundle
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|ns| crate::pattern::valid_namespace(ns))
    {
        e.insert("namespace".into(), json!(ns));
    }
    Value::Object(e)
}

/// `context.conflict` events for the conflict warnings of a bundle.
pub fn conflict_events(bundle: &Value, at: &str) -> Vec<Value> {
    let base = bundle_event("context.conflict", bundle, at);
    bundle["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| {
            w.get("code")
                .and_then(Value::as_str)
                .is_some_and(|c| c.starts_with("conflict-"))
        })
        .map(|w| {
            let mut e = base.clone();
            let o = e.as_object_mut().expect("object");
            o.remove("bundle");
            o.remove("outcome");
            o.insert(
                "objects".into(),
                json!(w
                    .get("id")
                    .and_then(Value::as_str)
                    .into_iter()
                    .collect::<Vec<_>>()),
            );
            o.insert("reason".into(), w["message"].clone());
            e
        })
        .collect()
}
