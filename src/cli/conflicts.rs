//! `ctx conflicts`: duplicate canonical objects, declared and ambiguous conflicts,
//! duplicate ids, broken supersession and multiple active versions.

use clap::Args;

use ctx_core::diag::Severity;
use ctx_core::doctor::CONFLICT_CODES;
use ctx_core::error::{Exit, Result};
use ctx_core::validate::{self, ValidateOptions};

use super::args::ReportArgs;
use super::findings::Verdict;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ConflictsArgs {
    /// Exit 1 on any finding, not only errors.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(g: &Global, p: &Printer, a: &ConflictsArgs) -> Result<Exit> {
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
    let opts = ValidateOptions {
        strict: false,
        at: Some(at),
    };
    let findings: Vec<_> = validate::validate(&repo, opts)
        .into_iter()
        .filter(|d| CONFLICT_CODES.contains(&d.code))
        .collect();
    let failed = findings
        .iter()
        .any(|d| a.strict || d.severity == Severity::Error);
    progress.finish();
    let verdict = Verdict::Subset("conflicts");
    super::findings::emit(p, &repo, &findings, a.report.format, failed, verdict, out)?;
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}
