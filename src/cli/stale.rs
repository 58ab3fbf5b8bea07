//! `ctx stale`: context past its freshness window, expired, not yet valid, or
//! overdue for review, at an instant.

use std::path::PathBuf;

use clap::Args;

use ctx_core::diag::Severity;
use ctx_core::error::{Exit, Result};

use super::findings::Verdict;
use super::validate::ReportFormat;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct StaleArgs {
    /// Exit 1 on warnings too (anything stale or overdue), not only errors (expired).
    #[arg(long)]
    pub strict: bool,
    /// Evaluate at this RFC 3339 instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &StaleArgs) -> Result<Exit> {
    let at = super::resolve::at_flag(a.at.as_deref())?;
    let out = a.output.as_deref();
    let progress = super::progress::Progress::start("loading");
    let repo = match super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE) {
        Ok(r) => r,
        Err(e) => {
            progress.finish();
            return super::findings::unloadable(p, e, a.format, out);
        }
    };
    let findings = ctx_core::doctor::clock_findings(&repo, at);
    let failed = findings
        .iter()
        .any(|d| d.severity == Severity::Error || (a.strict && d.severity == Severity::Warning));
    progress.finish();
    let verdict = Verdict::Subset("stale context");
    super::findings::emit(p, &repo, &findings, a.format, failed, verdict, out)?;
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}
