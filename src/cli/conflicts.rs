//! `ctx conflicts`: duplicate canonical objects, declared and ambiguous conflicts,
//! duplicate ids, broken supersession and multiple active versions.

use std::path::PathBuf;

use clap::Args;

use ctx_core::diag::Severity;
use ctx_core::doctor::CONFLICT_CODES;
use ctx_core::error::{Exit, Result};
use ctx_core::validate::{self, ValidateOptions};

use super::findings::Verdict;
use super::validate::ReportFormat;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ConflictsArgs {
    /// Exit 1 on any finding, not only errors.
    #[arg(long)]
    pub strict: bool,
    /// Judge the repository as of this RFC 3339 instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &ConflictsArgs) -> Result<Exit> {
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
    super::findings::emit(p, &repo, &findings, a.format, failed, verdict, out)?;
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}
