//! `ctx doctor`: validation plus the clock, a report per collection and the score.

use std::path::PathBuf;

use clap::Args;

use ctx_core::diag::render::{self as diag_render, HumanStyle};
use ctx_core::doctor::{self, render, DoctorOptions, HealthReport};
use ctx_core::error::{Error, Exit, Result};

use super::args::{ReportArgs, ReportFormat};
use super::progress::Progress;
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
content_uri that cannot be read offline, an enabled adapter plugin that is not installed, or \
an adapter this build lacks (error); a file:// source that does not exist (warning). Remote \
URIs are never fetched and plugins never run here.

Score:
    deduction = sum(weight[code] x occurrences) / max(objects, 1)
    score     = clamp(100 - deduction x 100, 0, 100), rounded down to one decimal

Default weights: 1.0 schema-invalid, manifest-invalid, duplicate-id, duplicate-canonical, \
conflict-ambiguous, secret-detected, path-traversal; 0.8 broken-supersession, \
supersession-cycle, untrusted-canonical, role-cycle; 0.6 unknown-scheme, source-unavailable; \
0.5 broken-reference, unknown-role, unknown-authority; 0.4 multiple-active-versions, expired; \
0.3 conflict-declared, missing-provenance, invalid-permission; 0.2 missing-digest, \
missing-owner; 0.15 stale, review-overdue; 0.1 orphaned, unapproved, empty-scope, \
unknown-extension; 0.05 not-yet-valid. Findings about ctx's own logs under .ctx/ are
reported, not scored.

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
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(g: &Global, p: &Printer, a: &DoctorArgs) -> Result<Exit> {
    if let Some(m) = a.min_score {
        if !(0.0..=100.0).contains(&m) {
            return Err(Error::Usage(format!(
                "--min-score must be between 0 and 100, got {m}"
            )));
        }
    }
    let opts = DoctorOptions {
        at: g.clock.at(a.report.at),
        strict: a.strict,
        min_score: a.min_score,
    };
    let progress = Progress::start("loading");
    let report =
        match super::validate::load_repo_for_validation(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE) {
            Ok(repo) => {
                progress.phase("checking");
                let report = doctor::check(&repo, &opts);
                super::leave_to_exit(repo);
                report
            }
            Err(Error::Manifest { path, diag }) => {
                let root = path.parent().map(PathBuf::from).unwrap_or_default();
                HealthReport::unloadable(root, *diag, &opts)
            }
            Err(e) => return Err(e),
        };
    progress.finish();
    emit(g, p, &report, a)?;
    Ok(if report.passed() {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}

/// Render the report in the chosen format. A report on a manifest that cannot be
/// loaded goes to stderr for people (stdout stays empty), like any fatal error.
fn emit(g: &Global, p: &Printer, r: &HealthReport, a: &DoctorArgs) -> Result<()> {
    let out = a.report.output.as_deref();
    let text = match a.report.format {
        ReportFormat::Human => {
            let to_stderr = !r.loaded;
            let style = HumanStyle {
                color: if to_stderr {
                    p.color_err
                } else {
                    p.color_out && out.is_none()
                },
                width: p.width,
            };
            let text = render::human(r, style);
            if to_stderr {
                return super::io_result(p.err(&text));
            }
            text
        }
        ReportFormat::Json => ctx_core::bundle::render::json(&render::json(r, &g.clock.stamp())),
        ReportFormat::Sarif => ctx_core::bundle::render::json(&diag_render::sarif(&r.findings)),
        ReportFormat::Github => diag_render::github(&r.findings),
        ReportFormat::Concise => diag_render::concise(&r.findings),
    };
    super::io_result(p.product(&text, out))
}
