//! `--explain`: why each object was included, excluded or outranked — as data,
//! and as text for people. Denied objects appear only by id and reason.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::access::causes::Causes;
use crate::load::Repo;
use crate::resolve::Resolution;

/// What an explanation shows beyond the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplainOptions {
    /// List the objects outside the consumer's scope (ids only) instead of counting
    /// them: for repository owners, never for the consumer.
    pub show_out_of_scope: bool,
}

/// Each exclusion record with its cause beside it (pattern, ceiling and source).
fn excluded_with_causes(bundle: &Value, causes: Option<&Causes>) -> Value {
    let mut excluded = bundle["excluded"].clone();
    if let (Some(c), Some(list)) = (causes, excluded.as_array_mut()) {
        for e in list {
            let cause = c.of_record(
                e["id"].as_str().unwrap_or_default(),
                e["reason"].as_str().unwrap_or_default(),
                e["detail"].as_str(),
            );
            if let (Some(w), Some(map)) = (cause, e.as_object_mut()) {
                map.insert("cause".into(), w.json());
            }
        }
    }
    excluded
}

/// The explanation as data (the `--explain --format json` document).
pub fn data(repo: &Repo, r: &Resolution, bundle: &Value, opts: &ExplainOptions) -> Value {
    let causes = Causes::of(repo, r, opts.show_out_of_scope);
    let included: Vec<Value> = r
        .included
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let o = &repo.objects[s.index];
            let mut why = vec![format!("in scope via `{}`", s.matched)];
            why.push(format!("authority {}", o.meta.authority));
            why.push(format!("lifecycle {}", s.lifecycle));
            if r.request.task.is_some() {
                why.push(format!("relevance {}", s.score));
            }
            json!({
                "rank": n + 1,
                "id": o.id,
                "version": o.version,
                "file": o.origin.file,
                "authority": o.meta.authority.as_str(),
                "lifecycle": s.lifecycle.as_str(),
                "relevance": s.score,
                "matched": s.matched,
                "redacted": s.redacted,
                "decrypted_with": s.decrypted.as_ref().map(|d| d.key.clone()),
                "why": why,
            })
        })
        .collect();
    let mut doc = json!({
        "bundle_id": bundle["bundle_id"],
        "digest": bundle["digest"],
        "consumer": bundle["consumer"],
        "task": bundle.get("task"),
        "as_of": bundle["as_of"],
        "ceiling": r.ceiling.as_str(),
        "ceiling_source": causes.as_ref().map(|c| c.ceiling.source()),
        "included": included,
        "excluded": excluded_with_causes(bundle, causes.as_ref()),
        "warnings": bundle["warnings"],
        "not_in_scope": r.not_in_scope,
        "considered": r.considered,
        "identity": identity_line(repo, r),
    });
    if let (true, Some(c)) = (opts.show_out_of_scope, &causes) {
        doc["out_of_scope"] = json!(c.out_of_scope);
    }
    doc
}

/// The explanation for people.
pub fn text(repo: &Repo, r: &Resolution, bundle: &Value, opts: &ExplainOptions) -> String {
    let causes = Causes::of(repo, r, opts.show_out_of_scope);
    let mut out = String::new();
    let c = &r.request.consumer;
    let _ = write!(out, "Resolved for {} `{}`", c.kind.as_str(), c.id);
    if c.kind == crate::resolve::ConsumerKind::Agent {
        let _ = write!(out, " (roles: {})", c.roles.join(", "));
    }
    if let Some(t) = &r.request.task {
        let _ = write!(
            out,
            " for task {}",
            serde_json::to_string(t).expect("string")
        );
    }
    let _ = writeln!(
        out,
        "\nas of {} · classification ceiling {}{}\n",
        bundle["as_of"].as_str().unwrap_or(""),
        r.ceiling,
        causes
            .as_ref()
            .map(|c| format!(", set by {}", c.ceiling.source()))
            .unwrap_or_default()
    );
    if let Some(id) = identity_line(repo, r) {
        let _ = writeln!(out, "Identity: {id}\n");
    }
    let _ = writeln!(out, "Included ({}):", r.included.len());
    if r.included.is_empty() {
        out.push_str("  (nothing)\n");
    }
    for (n, s) in r.included.iter().enumerate() {
        let o = &repo.objects[s.index];
        let title = s
            .decrypted
            .as_ref()
            .and_then(|d| d.fields.get("title").and_then(Value::as_str))
            .or(o.title())
            .map(|t| format!(" — {}", crate::diag::render::terminal_safe(t)))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:>2}. {}{}", n + 1, o.key(), title);
        let mut why = format!(
            "in scope via `{}` · {} · {}",
            s.matched, o.meta.authority, s.lifecycle
        );
        if r.request.task.is_some() {
            let _ = write!(why, " · relevance {:.3}", s.score);
        }
        if !s.redacted.is_empty() {
            let _ = write!(why, " · redacted {}", s.redacted.join(", "));
        }
        if let Some(d) = &s.decrypted {
            let _ = write!(why, " · decrypted with {}", d.key);
        }
        let _ = writeln!(out, "      {why}");
    }
    let _ = writeln!(out, "\nExcluded ({}):", r.excluded.len());
    if r.excluded.is_empty() {
        out.push_str("  (nothing)\n");
    }
    for e in &r.excluded {
        let mut line = format!("  - {}  {}", e.id, e.reason);
        if let Some(by) = &e.outranked_by {
            let _ = write!(line, " → outranked by {by}");
        }
        if let Some(d) = &e.detail {
            let _ = write!(line, " ({})", crate::diag::render::terminal_safe(d));
        }
        let _ = writeln!(out, "{line}");
        if let Some(w) = causes
            .as_ref()
            .and_then(|c| c.of_record(&e.id, e.reason, e.detail.as_deref()))
        {
            let _ = writeln!(out, "      {}", w.detail());
        }
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings ({}):", r.warnings.len());
        for w in &r.warnings {
            let _ = writeln!(
                out,
                "  ! {} [{}] {}",
                w.code,
                w.severity.as_str(),
                crate::diag::render::terminal_safe(&w.message)
            );
        }
    }
    match (&causes, opts.show_out_of_scope) {
        (Some(c), true) => {
            let _ = writeln!(
                out,
                "\nOut of scope: {} of {} objects (the consumer's roles or --include do not cover them):",
                r.not_in_scope, r.considered
            );
            for key in &c.out_of_scope {
                let _ = writeln!(out, "  - {key}");
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "\nOut of scope: {} of {} objects (not listed; the consumer's roles do not include them)",
                r.not_in_scope, r.considered
            );
        }
    }
    let _ = writeln!(
        out,
        "Digest: {}  bundle {}",
        bundle["digest"].as_str().unwrap_or(""),
        bundle["bundle_id"].as_str().unwrap_or("")
    );
    out
}

/// Which age identity the run used, when private objects were involved: included
/// ones, or authorized ones left out as `source-unavailable` (never denied ones).
fn identity_line(repo: &Repo, r: &Resolution) -> Option<String> {
    let opened = r.included.iter().any(|s| s.decrypted.is_some());
    let unavailable = r.excluded.iter().any(|e| {
        e.reason == "source-unavailable"
            && repo
                .objects
                .iter()
                .any(|o| o.id == e.id && o.meta.sealed.is_some())
    });
    if !opened && !unavailable {
        return None;
    }
    Some(match &r.request.identities {
        Some(k) => k.describe(),
        None => "none (no --identity, CTX_AGE_IDENTITY or ~/.config/ctx/age/identity.txt): private objects cannot be decrypted".into(),
    })
}
