//! `ctx doctor`: validation plus the clock, a report per collection and the score.

use std::fmt::Write as _;

use clap::Args;
use serde_json::{json, Map, Value};

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::diag::{Diagnostic, Severity};
use ctx_core::doctor::{self, format_score, CollectionHealth, Counts, Failure, HealthConfig};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::load::Repo;

use super::progress::Progress;
use super::validate::ReportFormat;
use super::{Global, Printer};

/// The long help of `ctx doctor` (also its man page): the checks and the formula.
pub const LONG_ABOUT: &str = "\
Validation plus the questions that need a clock: what is stale, expired, not yet valid, \
overdue for review, orphaned, unowned or broken. Prints a report per collection and a \
health score.

Clock findings (evaluated at --at, default now): stale (warning; error with \
freshness.stale_is_error), expired (error), not-yet-valid (info), review-overdue (warning: \
review.next_review, else review.interval after last_review or updated). Orphaned (info): an \
active object no role or agent may read and no other object links to. Broken sources: a \
content_uri that cannot be read offline (error), a file:// source that does not exist (warning).

Score:
    deduction = sum(weight[code] x occurrences) / max(objects, 1)
    score     = clamp(100 - deduction x 100, 0, 100), rounded down to one decimal

Default weights: 1.0 schema-invalid, manifest-invalid, duplicate-id, duplicate-canonical, \
conflict-ambiguous, secret-detected, path-traversal; 0.8 broken-supersession, \
supersession-cycle, untrusted-canonical, role-cycle; 0.6 unknown-scheme, source-unavailable; \
0.5 broken-reference, unknown-role, unknown-authority; 0.4 multiple-active-versions, expired; \
0.3 conflict-declared, missing-provenance, invalid-permission; 0.2 missing-digest, \
missing-owner; 0.15 stale, review-overdue; 0.1 orphaned, unapproved, empty-scope, \
unknown-extension; 0.05 not-yet-valid.

Configure in the manifest:
    health:
      minimum_score: 90      # exit 1 below this score
      fail_on: error         # with --strict, exit 1 on a finding at or above this severity
      require_owner: true    # missing-owner becomes an error
      weights: { stale: 0.3, orphaned: 0.0 }

Exit status: 1 when the score is below --min-score (else health.minimum_score), or with \
--strict when a finding is at or above health.fail_on (default error); 0 otherwise.";

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also fail on findings at or above `health.fail_on`, and run validate's strict checks.
    #[arg(long)]
    pub strict: bool,
    /// Fail below this score (overrides `health.minimum_score`).
    #[arg(long, value_name = "N")]
    pub min_score: Option<f64>,
    /// Evaluate the clock at this RFC 3339 instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
}

pub fn run(g: &Global, p: &Printer, a: &DoctorArgs) -> Result<Exit> {
    if let Some(m) = a.min_score {
        if !(0.0..=100.0).contains(&m) {
            return Err(Error::Usage(format!(
                "--min-score must be between 0 and 100, got {m}"
            )));
        }
    }
    let at = super::resolve::at_flag(a.at.as_deref())?;
    let progress = Progress::start("loading");
    let repo = super::validate::load_repo_for_checks(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    progress.phase("checking");
    let (cfg, cfg_diags) = HealthConfig::from_manifest(&repo.manifest);
    let findings = doctor::findings(&repo, at, a.strict, &cfg_diags);
    let objects = repo.objects.len();
    let score = cfg.score(&findings, objects);
    let collections = doctor::by_collection(&repo, &findings, &cfg);
    let failures = doctor::gate(&findings, score, &cfg, a.min_score, a.strict);
    progress.finish();
    let ok = failures.is_empty();
    let text = match a.format {
        ReportFormat::Human => {
            let mut t = render::human(
                &findings,
                &repo.manifest.root,
                HumanStyle {
                    color: p.color_out,
                    width: p.width,
                },
            );
            t.push_str(&human(
                &repo,
                &findings,
                &collections,
                score,
                &cfg,
                a.min_score,
                &failures,
                at,
            ));
            t
        }
        ReportFormat::Json => {
            let mut sorted = findings.clone();
            doctor::report_order(&mut sorted);
            let doc = json_report(&repo, &sorted, &collections, score, &cfg, a, &failures, at);
            ctx_core::bundle::render::json(&doc)
        }
        ReportFormat::Sarif => ctx_core::bundle::render::json(&render::sarif(&findings)),
        ReportFormat::Github => render::github(&findings),
    };
    super::io_result(p.out(&text))?;
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}

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

#[allow(clippy::too_many_arguments)]
fn human(
    repo: &Repo,
    findings: &[Diagnostic],
    collections: &[CollectionHealth],
    score: f64,
    cfg: &HealthConfig,
    min_flag: Option<f64>,
    failures: &[Failure],
    at: ctx_core::time::Instant,
) -> String {
    let mut out = String::new();
    let rule = "─".repeat(48);
    let _ = writeln!(
        out,
        "OpenContext health: {} — {} objects at {}\n{rule}",
        repo.manifest.id,
        repo.objects.len(),
        ctx_core::time::format(&at)
    );
    let width = collections
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("collection".len());
    let _ = writeln!(out, "{:<width$}  objects  score  status", "collection");
    for c in collections {
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
    let n = Counts::of(findings);
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
    let floor = match (min_flag, cfg.minimum_score) {
        (Some(m), _) => format!(" (minimum {}, --min-score)", format_score(m)),
        (None, Some(m)) => format!(" (minimum {}, health.minimum_score)", format_score(m)),
        (None, None) => String::new(),
    };
    let _ = writeln!(out, "\nContext health: {}%{floor}", format_score(score));
    let summary = render::summary(findings, repo.objects.len());
    if failures.is_empty() && findings.is_empty() {
        let _ = writeln!(out, "✓ healthy: {summary}");
    } else if failures.is_empty() {
        let _ = writeln!(out, "✓ passed the health gates: {summary}");
    }
    for f in failures {
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

#[allow(clippy::too_many_arguments)]
fn json_report(
    repo: &Repo,
    findings: &[Diagnostic],
    collections: &[CollectionHealth],
    score: f64,
    cfg: &HealthConfig,
    a: &DoctorArgs,
    failures: &[Failure],
    at: ctx_core::time::Instant,
) -> Value {
    let n = Counts::of(findings);
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
    let mut doc = render::report_value(
        findings,
        failures.is_empty(),
        Some(&repo.manifest.id),
        repo.objects.len(),
        Some(extra),
    );
    let cols: Vec<Value> = collections
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
    let weights: Map<String, Value> = cfg
        .weights
        .iter()
        .map(|(c, w)| (c.as_str().to_string(), json!(w)))
        .collect();
    let fails: Vec<Value> = failures
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
    let obj = doc.as_object_mut().expect("report is an object");
    obj.insert("generated_at".into(), json!(super::resolve::generated_at()));
    obj.insert("score".into(), json!(score));
    obj.insert(
        "extensions".into(),
        json!({ "ctx.health": {
            "as_of": ctx_core::time::format(&at),
            "strict": a.strict,
            "minimum_score": a.min_score.or(cfg.minimum_score),
            "fail_on": cfg.fail_on.as_str(),
            "not_yet_valid": n.not_yet_valid,
            "review_overdue": n.review_overdue,
            "failures": fails,
            "collections": cols,
            "weights": weights,
        }}),
    );
    doc
}
