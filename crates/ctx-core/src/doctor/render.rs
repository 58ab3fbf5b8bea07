//! Views of a [`HealthReport`]: the report for people, and the diagnostic
//! document (valid against the diagnostic schema) for machines.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::diag::render::{self, HumanStyle};
use crate::diag::Severity;

use super::report::{Floor, HealthReport};
use super::{format_score, CollectionHealth, Failure};

/// "3 stale, 1 missing-owner" for the busiest codes of a collection.
fn code_summary(c: &CollectionHealth) -> String {
    let mut parts: Vec<String> = c
        .codes
        .iter()
        .take(3)
        .map(|(code, n)| format!("{n} {code}"))
        .collect();
    if c.codes.len() > 3 {
        parts.push(format!("+{} more", c.codes.len() - 3));
    }
    parts.join(", ")
}

fn symbol(s: Option<Severity>) -> &'static str {
    match s {
        None => "✓",
        Some(Severity::Info) => "ℹ",
        Some(Severity::Warning) => "⚠",
        Some(Severity::Error) => "✗",
    }
}

/// The findings (with code frames), the per-collection table, the counters, the
/// score and the verdict.
pub fn human(r: &HealthReport, style: HumanStyle) -> String {
    let mut out = render::human(&r.findings, &r.root, style);
    if !r.loaded {
        let _ = writeln!(
            out,
            "✗ unhealthy: the manifest cannot be loaded, so nothing else was checked"
        );
        return out;
    }
    let rule = "─".repeat(48);
    let _ = writeln!(
        out,
        "OpenContext health: {} — {} objects at {}\n{rule}",
        r.namespace,
        r.objects,
        crate::time::format(&r.at)
    );
    let width = r
        .collections
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("collection".len());
    let _ = writeln!(out, "{:<width$}  objects  score  status", "collection");
    for c in &r.collections {
        let status = match c.worst() {
            None => "healthy".to_string(),
            Some(_) => code_summary(c),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>7}  {:>5}  {} {status}",
            c.name,
            c.objects,
            format_score(c.score),
            symbol(c.worst())
        );
    }
    let n = &r.counts;
    out.push('\n');
    for (label, v) in [
        ("Stale context", n.stale),
        ("Expired context", n.expired),
        ("Not yet valid", n.not_yet_valid),
        ("Review overdue", n.review_overdue),
        ("Conflicting context", n.conflicting),
        ("Orphaned context", n.orphaned),
        ("Missing owners", n.missing_owner),
        ("Broken sources", n.broken_sources),
    ] {
        let _ = writeln!(out, "{label:<22}  {v}");
    }
    let floor = match r.floor {
        Some(Floor::Flag(m)) => format!(" (minimum {}, --min-score)", format_score(m)),
        Some(Floor::Manifest(m)) => format!(" (minimum {}, health.minimum_score)", format_score(m)),
        None => String::new(),
    };
    let _ = writeln!(out, "\nContext health: {}%{floor}", format_score(r.score));
    let summary = render::summary(&r.findings, r.objects);
    if r.failures.is_empty() && r.findings.is_empty() {
        let _ = writeln!(out, "✓ healthy: {summary}");
    } else if r.failures.is_empty() {
        let _ = writeln!(out, "✓ passed the health gates: {summary}");
    }
    for f in &r.failures {
        match f {
            Failure::BelowMinimum { score, minimum } => {
                let _ = writeln!(
                    out,
                    "✗ unhealthy: score {}% is below the minimum {}",
                    format_score(*score),
                    format_score(*minimum)
                );
            }
            Failure::AtFailOn { severity, count } => {
                let _ = writeln!(
                    out,
                    "✗ unhealthy: {count} finding{} at or above `{}` (health.fail_on) under --strict",
                    if *count == 1 { "" } else { "s" },
                    severity.as_str()
                );
            }
        }
    }
    out
}

/// The diagnostic document: findings, counts and score, with doctor's own detail
/// (the instant, the gates, each collection, the weights) under `extensions.ctx.health`.
pub fn json(r: &HealthReport, generated_at: &str) -> Value {
    let n = &r.counts;
    let mut extra = Map::new();
    for (k, v) in [
        ("stale", n.stale),
        ("expired", n.expired),
        ("conflicting", n.conflicting),
        ("orphaned", n.orphaned),
        ("missing_owner", n.missing_owner),
        ("broken_sources", n.broken_sources),
    ] {
        extra.insert(k.into(), json!(v));
    }
    let namespace = (!r.namespace.is_empty()).then_some(r.namespace.as_str());
    let mut doc = render::report_value(&r.findings, r.ok(), namespace, r.objects, Some(extra));
    let collections: Vec<Value> = r
        .collections
        .iter()
        .map(|c| {
            let codes: Map<String, Value> = c
                .codes
                .iter()
                .map(|(code, k)| (code.as_str().to_string(), json!(k)))
                .collect();
            json!({
                "name": c.name, "objects": c.objects, "score": c.score,
                "errors": c.tally.errors, "warnings": c.tally.warnings, "info": c.tally.info,
                "codes": codes,
            })
        })
        .collect();
    let weights: Map<String, Value> = r
        .config
        .weights
        .iter()
        .map(|(c, w)| (c.as_str().to_string(), json!(w)))
        .collect();
    let mut failures: Vec<Value> = r
        .failures
        .iter()
        .map(|f| match f {
            Failure::BelowMinimum { score, minimum } => {
                json!({"reason": "below-minimum", "score": score, "minimum": minimum})
            }
            Failure::AtFailOn { severity, count } => {
                json!({"reason": "fail-on", "severity": severity.as_str(), "count": count})
            }
        })
        .collect();
    if !r.loaded {
        failures.push(json!({"reason": "manifest-unloadable"}));
    }
    let obj = doc.as_object_mut().expect("report is an object");
    obj.insert("generated_at".into(), json!(generated_at));
    obj.insert("score".into(), json!(r.score));
    obj.insert(
        "extensions".into(),
        json!({ "ctx.health": {
            "as_of": crate::time::format(&r.at),
            "strict": r.strict,
            "minimum_score": r.floor.map(Floor::value),
            "fail_on": r.config.fail_on.as_str(),
            "not_yet_valid": n.not_yet_valid,
            "review_overdue": n.review_overdue,
            "failures": failures,
            "collections": collections,
            "weights": weights,
        }}),
    );
    doc
}
