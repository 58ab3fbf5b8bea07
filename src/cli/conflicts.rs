//! `ctx conflicts`: duplicate canonical objects, declared and ambiguous conflicts,
//! duplicate ids, broken supersession and multiple active versions.

use clap::Args;

use crate::diag::Severity;
use crate::doctor::CONFLICT_CODES;
use crate::error::{Exit, Result};
use crate::validate::{self, ValidateOptions};

use super::validate::ReportFormat;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ConflictsArgs {
    /// Exit 1 on any finding, not only errors.
    #[arg(long)]
    pub strict: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
}

pub fn run(g: &Global, p: &Printer, a: &ConflictsArgs) -> Result<Exit> {
    let progress = super::progress::Progress::start("loading");
    let repo = super::validate::load_repo(g, crate::load::DEFAULT_MAX_FILE_SIZE)?;
    let findings: Vec<_> = validate::validate(&repo, ValidateOptions { strict: false })
        .into_iter()
        .filter(|d| CONFLICT_CODES.contains(&d.code))
        .collect();
    let failed = findings
        .iter()
        .any(|d| a.strict || d.severity == Severity::Error);
    progress.finish();
    super::findings::emit(p, &repo, &findings, a.format, failed, "conflicts")?;
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}
