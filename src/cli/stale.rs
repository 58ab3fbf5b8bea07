//! `ctx stale`: context past its freshness window, expired, not yet valid, or
//! overdue for review, at an instant.

use clap::Args;

use ctx_core::diag::Severity;
use ctx_core::error::{Exit, Result};

use super::args::ReportArgs;
use super::findings::Verdict;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct StaleArgs {
    /// Exit 1 on warnings too (anything stale or overdue), not only errors (expired).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(g: &Global, p: &Printer, a: &StaleArgs) -> Result<Exit> {
    let at = g.clock.at(a.report.at);
    let out = a.report.output.as_deref();
    let progress = super::progress::Progress::start("loading");
    let repo = match super::findings::load(g, p, &a.report) {
        Ok(r) => r,
        Err(exit) => {
            progress.finish();
            return exit;
        }
    };
    let findings = ctx_core::doctor::clock_findings(&repo, at);
    let failed = findings
        .iter()
        .any(|d| d.severity == Severity::Error || (a.strict && d.severity == Severity::Warning));
    progress.finish();
    let verdict = Verdict::Subset("stale context");
    super::findings::emit(p, &repo, &findings, a.report.format, failed, verdict, out)?;
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}
