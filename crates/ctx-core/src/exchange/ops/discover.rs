//! Minimum-reveal discovery (0.2-draft §7.6, §8.3): a requester asks whether
//! the repository holds something matching a query, and learns only what its
//! policy reveals — never scores, match features or negative evidence. Every
//! query is charged to a per-requester budget; queries that normalise to the
//! same probe (case, punctuation, word order, plural and tense endings,
//! synonyms) share one probe class, and a class may be asked only a few times
//! per window, so rewording does not buy more probes. Budgets are computed
//! from the discovery receipts in the log.

use std::collections::BTreeSet;

use chrono::Duration;
use serde_json::{json, Map, Value};

use super::{meta, principal_arg, Exchange};
use crate::exchange::canon;
use crate::exchange::config::{self, Discovery};
use crate::exchange::error::{fail, ClError, ClResult};
use crate::exchange::receipts::ReceiptDraft;
use crate::exchange::schema::{self, ClKind};
use crate::exchange::wire::{self, SpecVersion};
use crate::time::Instant;

/// Id prefix of discovery responses.
pub const RESPONSE_PREFIX: &str = "urn:cl:discovery-result:";

const STOPWORDS: [&str; 40] = [
    "a", "an", "the", "of", "for", "to", "in", "on", "and", "or", "is", "are", "was", "were", "be",
    "what", "which", "who", "whom", "how", "do", "does", "did", "any", "about", "with", "me", "my",
    "our", "your", "please", "tell", "show", "find", "there", "this", "that", "it", "we", "us",
];

const SYNONYMS: [(&str, &str); 16] = [
    ("reimburse", "refund"),
    ("repay", "refund"),
    ("fee", "price"),
    ("cost", "price"),
    ("charge", "price"),
    ("terminate", "cancel"),
    ("client", "customer"),
    ("buyer", "customer"),
    ("rule", "policy"),
    ("guideline", "policy"),
    ("due", "deadline"),
    ("incident", "outage"),
    ("staff", "employee"),
    ("worker", "employee"),
    ("procedure", "process"),
    ("howto", "process"),
];

fn stem(w: &str) -> String {
    for (suffix, replacement) in [
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("edly", ""),
        ("ed", ""),
        ("es", ""),
        ("ly", ""),
        ("s", ""),
    ] {
        if let Some(s) = w.strip_suffix(suffix) {
            if s.chars().count() >= 3 {
                return format!("{s}{replacement}");
            }
        }
    }
    w.to_string()
}

/// The normalised terms of a query: one probe class per set of terms.
pub fn probe_terms(query: &str, d: &Discovery) -> Vec<String> {
    let mut out = BTreeSet::new();
    for raw in query.split(|c: char| !c.is_alphanumeric()) {
        let w = raw.to_lowercase();
        if w.is_empty() || STOPWORDS.contains(&w.as_str()) {
            continue;
        }
        let syn = |w: &str| -> Option<String> {
            d.synonyms.get(w).cloned().or_else(|| {
                SYNONYMS
                    .iter()
                    .find(|(a, _)| *a == w)
                    .map(|(_, b)| b.to_string())
            })
        };
        let w = syn(&w).unwrap_or(w);
        let s = stem(&w);
        let s = syn(&s).map(|x| stem(&x)).unwrap_or(s);
        out.insert(s);
    }
    out.into_iter().collect()
}

/// What `ctx discover` runs.
pub struct DiscoverOptions {
    pub query: String,
    pub requester: String,
    pub at: Instant,
    pub version: SpecVersion,
}

/// Evaluate a discovery query and write its receipt.
pub fn discover(ex: &Exchange<'_>, o: &DiscoverOptions) -> ClResult<Value> {
    let principal = principal_arg(&o.requester);
    let Some(r) = ex.config.requester_for(&principal) else {
        return fail(
            "DISCOVERY_NOT_ALLOWED",
            format!("{principal} may not use discovery here (no ctx.exchange requester entry)"),
        );
    };
    let Some(d) = r.discovery.clone() else {
        return fail(
            "DISCOVERY_NOT_ALLOWED",
            format!("{principal} has no discovery settings in ctx.exchange"),
        );
    };
    let terms = probe_terms(&o.query, &d);
    if terms.is_empty() {
        return fail("INVALID_QUERY", "the query has no searchable words");
    }
    let at = canon::to_ms(o.at);
    let probe_class = canon::digest(&json!({"probe": terms}));
    // The requester's view and the policy snapshot its receipts name (seed
    // 000 §7.8: every receipt carries the snapshot it was decided under).
    let prepared = ex.prepare(&principal, o.at)?;
    let snapshot = prepared.policy.policy.digest.clone();
    let Some(v) = prepared.view else {
        return fail(
            "DISCOVERY_NOT_ALLOWED",
            format!("{principal} may not use discovery here (no ctx.exchange requester entry)"),
        );
    };
    let log = ex.log()?;
    let _lock = ex.state.lock()?;
    let state = log.verify()?;
    let window = Duration::seconds(d.window_seconds as i64);
    let mine: Vec<(Instant, String)> = state
        .receipts()
        .filter(|x| {
            x["operation"] == "discovery.evaluate"
                && x["actor"] == principal.as_str()
                && x["outcome"] == "success"
        })
        .filter_map(|x| {
            let t = x["created_at"].as_str().and_then(canon::parse_time)?;
            (t > at - window && t <= at).then(|| {
                (
                    t,
                    x["metadata"]["probe_class"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
        })
        .collect();
    let window_ends = mine.iter().map(|(t, _)| *t).min().unwrap_or(at) + window;
    let same = mine.iter().filter(|(_, c)| *c == probe_class).count() as u64;
    let request_ref = format!(
        "urn:cl:discovery-request:{}",
        &canon::hex_part(&canon::digest(
            &json!({"requester": principal, "probe": probe_class, "at": canon::iso_ms(&at)})
        ))[..32]
    );
    let alias = crate::exchange::bundle::subject_alias(
        &json!(config::subject(&ex.repo.manifest)),
        &json!(request_ref),
        &principal,
    );
    let limited = if mine.len() as u64 >= d.budget {
        Some(format!(
            "the discovery budget of {} queries per {} s is spent until {}",
            d.budget,
            d.window_seconds,
            canon::iso_ms(&window_ends)
        ))
    } else if same >= d.max_equivalent {
        Some(format!("an equivalent probe was already asked {same} time(s) in this window; rewording does not reset it"))
    } else {
        None
    };
    let receipt = |outcome: &str, result: &str, output: Option<String>| ReceiptDraft {
        operation: "discovery.evaluate".into(),
        actor: principal.clone(),
        subject_ref: alias.clone(),
        outcome: outcome.into(),
        policy_snapshot: Some(snapshot.clone()),
        input_digest: Some(probe_class.clone()),
        output_digest: output,
        user_summary:
            "Evaluated a discovery query privately and returned a minimum-reveal response.".into(),
        metadata: meta(&[
            ("probe_class", &probe_class),
            ("result", result),
            ("reveal_class", &d.reveal.join("+")),
        ]),
        ..Default::default()
    };
    if let Some(why) = limited {
        ex.record(
            Some(&log),
            &receipt("failure", "rate_limited", None),
            at,
            o.version,
        )?;
        return fail("RATE_LIMITED", why);
    }
    let mut best: Option<(usize, usize)> = None;
    let mut kinds = BTreeSet::new();
    let mut sensitive = false;
    for (i, obj) in v.objects.iter().enumerate() {
        let mut hay: BTreeSet<String> = BTreeSet::new();
        for text in [
            Some(obj.id.replace(['.', '-', '_'], " ")),
            obj.title.clone(),
        ]
        .into_iter()
        .flatten()
        .chain(obj.tags.iter().cloned())
        {
            hay.extend(probe_terms(&text, &d));
        }
        let hits = terms.iter().filter(|t| hay.contains(*t)).count();
        if hits * 2 >= terms.len() && hits > 0 {
            kinds.insert(obj.kind.clone());
            sensitive |= obj.classification > r.approval_above;
            if best.is_none_or(|(_, h)| hits > h) {
                best = Some((i, hits));
            }
        }
    }
    let mut reveal = Map::new();
    let matched = best.is_some();
    let mut gated = sensitive;
    if let Some((i, _)) = best {
        if d.reveal.iter().any(|x| x == "statement") && !sensitive {
            let title = v.objects[i]
                .title
                .clone()
                .unwrap_or_else(|| v.objects[i].kind.clone());
            reveal.insert(
                "statement".into(),
                json!(title.chars().take(500).collect::<String>()),
            );
        }
        if d.reveal.iter().any(|x| x == "categories") {
            let cats: Vec<String> = kinds
                .into_iter()
                .filter(|k| canon::is_name(k))
                .take(16)
                .collect();
            reveal.insert("categories".into(), json!(cats));
        }
        // Seed 000 §8.3 step 6: a contact route is exposed only after a
        // person approves, whatever the match's classification.
        if d.reveal.iter().any(|x| x == "contact_route") {
            reveal.insert("contact_route".into(), json!("approval_required"));
            gated = true;
        }
    }
    let remaining = d.budget.saturating_sub(mine.len() as u64 + 1);
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("minimum_reveal_response"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert(
        "issuer".into(),
        json!({"id": "urn:cl:discovery-proxy:local"}),
    );
    m.insert("request_ref".into(), json!(request_ref));
    m.insert(
        "result".into(),
        json!(if matched {
            "possible_match"
        } else {
            "no_match"
        }),
    );
    m.insert("reveal".into(), Value::Object(reveal));
    m.insert("requires_user_approval".into(), json!(matched && gated));
    m.insert(
        "query_budget_state".into(),
        json!({"remaining": remaining, "window_ends_at": canon::iso_ms(&window_ends)}),
    );
    m.insert(
        "expires_at".into(),
        json!(canon::iso_ms(
            &(at + Duration::seconds(d.response_ttl_seconds as i64))
        )),
    );
    let core = canon::finalize(m.clone(), RESPONSE_PREFIX);
    if let Some(why) = schema::summary(ClKind::MinimumRevealResponse, &core) {
        return Err(ClError::new(
            "INVALID_RESPONSE",
            format!("internal: the response would be malformed: {why}"),
        ));
    }
    let response = canon::finalize(wire::to_wire(m, o.version), RESPONSE_PREFIX);
    ex.record(
        Some(&log),
        &receipt(
            "success",
            if matched {
                "possible_match"
            } else {
                "no_match"
            },
            response["integrity"]["digest"].as_str().map(str::to_string),
        ),
        at,
        o.version,
    )?;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d() -> Discovery {
        Discovery {
            budget: 5,
            window_seconds: 60,
            max_equivalent: 2,
            reveal: vec![],
            synonyms: Default::default(),
            response_ttl_seconds: 60,
        }
    }

    #[test]
    fn equivalent_probes_share_a_class() {
        let a = probe_terms("Refund policy for customers?", &d());
        for q in [
            "customer refunds policy",
            "POLICIES: refunding the client",
            "the reimbursement policy of customers",
        ] {
            let b = probe_terms(q, &d());
            if q.contains("reimbursement") {
                assert_ne!(a, b, "{q}");
            } else {
                assert_eq!(a, b, "{q}");
            }
        }
        assert_eq!(probe_terms("reimburse customers: rule", &d()), a);
    }
}
