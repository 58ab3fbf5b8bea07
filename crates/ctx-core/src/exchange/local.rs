//! The repository's exchange policy for one requester: `ctx.exchange`
//! expanded against what the resolver lets that requester see, into the
//! local-core policy object the evaluator reads. Its digest (the decision's
//! policy snapshot) therefore covers the configuration *and* the repository
//! state: any later change gives a new snapshot, and an outstanding decision
//! or bundle made on the old one is refused rather than silently widened.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Value};

use super::config::{self, ExchangeConfig, Requester};
use super::error::ClResult;
use super::policy::Policy;
use super::view::View;
use crate::manifest::Manifest;
use crate::pattern::Pattern;

/// A requester's policy and the objects each selector name stands for.
pub struct LocalPolicy {
    pub policy: Policy,
    /// Selector name → positions in the view (ordinary and gated names).
    pub selectors: BTreeMap<String, Vec<usize>>,
}

/// Positions in `view` that selector `name` covers (declared predicate, `*`, or an object id).
pub fn matches(cfg: &ExchangeConfig, view: &View, name: &str) -> Vec<usize> {
    if let Some(p) = cfg.predicates.get(name) {
        return view
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                (p.ids.is_empty() || p.ids.iter().any(|pat| pat.covers(&o.id)))
                    && (p.types.is_empty() || p.types.contains(&o.kind))
                    && (p.tags.is_empty() || o.tags.iter().any(|t| p.tags.contains(t)))
                    && (p.collections.is_empty()
                        || o.collection
                            .as_ref()
                            .is_some_and(|c| p.collections.contains(c)))
            })
            .map(|(i, _)| i)
            .collect();
    }
    if name == "*" {
        return (0..view.objects.len()).collect();
    }
    view.objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.id == name)
        .map(|(i, _)| i)
        .collect()
}

/// Expand a configured selector list into exact selector names.
fn expand(cfg: &ExchangeConfig, view: &View, entries: &[String], wildcard_ok: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |s: &str| {
        if seen.insert(s.to_string()) {
            out.push(s.to_string());
        }
    };
    let ids: HashSet<&str> = view.objects.iter().map(|o| o.id.as_str()).collect();
    for e in entries {
        if cfg.predicates.contains_key(e) {
            if wildcard_ok || !cfg.predicates[e].is_wildcard() {
                push(e);
            }
        } else if e == "*" {
            if wildcard_ok {
                push("*");
            }
            for o in &view.objects {
                push(&o.id);
            }
        } else if e.contains('*') {
            if let Ok(p) = Pattern::parse(e) {
                for o in view.objects.iter().filter(|o| p.covers(&o.id)) {
                    push(&o.id);
                }
            }
        } else if ids.contains(e.as_str()) {
            push(e);
        }
    }
    out
}

/// Build the policy object for `requester` against `view`.
pub fn build(
    m: &Manifest,
    cfg: &ExchangeConfig,
    r: &Requester,
    view: &View,
) -> ClResult<LocalPolicy> {
    let allowed = expand(cfg, view, &r.selectors, r.wildcard_selectors);
    let explicit_gated: HashSet<String> =
        expand(cfg, view, &r.approval_selectors, r.wildcard_selectors)
            .into_iter()
            .collect();
    // Positions of each visible id, so exact-id selectors cost one lookup each.
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::with_capacity(view.objects.len());
    for (i, o) in view.objects.iter().enumerate() {
        by_id.entry(o.id.as_str()).or_default().push(i);
    }
    let mut selectors = BTreeMap::new();
    let mut ordinary = Vec::new();
    let mut gated = Vec::new();
    let mut gated_order: Vec<&String> = explicit_gated.iter().collect();
    gated_order.sort();
    for name in allowed.iter().chain(gated_order) {
        if selectors.contains_key(name) {
            continue;
        }
        let hits = if cfg.predicates.contains_key(name) || name == "*" {
            matches(cfg, view, name)
        } else {
            by_id.get(name.as_str()).cloned().unwrap_or_default()
        };
        let sensitive = hits
            .iter()
            .any(|&i| view.objects[i].classification > r.approval_above);
        if explicit_gated.contains(name) || sensitive {
            gated.push(name.clone());
        } else {
            ordinary.push(name.clone());
        }
        selectors.insert(name.clone(), hits);
    }
    ordinary.sort();
    gated.sort();
    let mut actions: Vec<String> = r
        .actions
        .iter()
        .filter(|a| !r.approval_actions.contains(a))
        .cloned()
        .collect();
    actions.sort();
    let mut approval_actions = r.approval_actions.clone();
    approval_actions.sort();
    let raw = json!({
        "version": cfg.version,
        "issuer": {"id": "urn:cl:policy-engine:local"},
        "allowed_subjects": [config::subject(m)],
        "allowed_requesters": [config::principal(&r.name)],
        "allowed_clients": r.clients,
        "allowed_authentication_methods": r.authentication_methods,
        "allowed_recipients": r.recipients,
        "allowed_onward_disclosure": r.onward_disclosure,
        "allowed_purpose_codes": r.purpose_codes,
        "allowed_tasks": r.tasks,
        "allowed_selectors": ordinary,
        "approval_required_selectors": gated,
        "allowed_actions": actions,
        "approval_required_actions": approval_actions,
        "maximum_retention": {"mode": r.retention_mode, "max_seconds": r.max_retention_seconds},
        "decision_ttl_seconds": r.decision_ttl_seconds,
        "require_receipts": r.require_receipts,
        "transforms": r.transforms,
        "bundle_instructions": r.instructions,
        "rate_limit_ok": true,
        "anomaly_state": "normal",
        "wildcards": {"selectors": r.wildcard_selectors, "actions": r.wildcard_actions},
        "repository": {
            "id": m.id,
            "requester": r.name,
            "view_digest": view.digest,
        },
    });
    Ok(LocalPolicy {
        policy: Policy::from_value(&raw)?,
        selectors,
    })
}

/// The policy document for display (`ctx exchange policy`): the object itself.
pub fn describe(lp: &LocalPolicy) -> &Value {
    &lp.policy.raw
}
