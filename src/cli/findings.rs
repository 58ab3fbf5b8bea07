//! Shared output for commands that report a subset of findings (`conflicts`, `stale`).

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::diag::Diagnostic;
use ctx_core::error::Result;
use ctx_core::load::Repo;

use super::validate::ReportFormat;
use super::Printer;

/// Print `findings` in `format`; `what` names the check for the human summary line.
pub fn emit(
    p: &Printer,
    repo: &Repo,
    findings: &[Diagnostic],
    format: ReportFormat,
    failed: bool,
    what: &str,
) -> Result<()> {
    let objects = repo.objects.len();
    let text = match format {
        ReportFormat::Human => {
            let mut text = render::human(
                findings,
                &repo.manifest.root,
                HumanStyle {
                    color: p.color_out,
                    width: p.width,
                },
            );
            let summary = render::summary(findings, objects);
            let mark = if failed { "✗" } else { "✓" };
            let verdict = if findings.is_empty() {
                format!("no {what}")
            } else {
                what.to_string()
            };
            text.push_str(&format!("{mark} {verdict}: {summary}\n"));
            text
        }
        ReportFormat::Json => ctx_core::bundle::render::json(&render::report_value(
            findings,
            !failed,
            Some(&repo.manifest.id),
            objects,
            None,
        )),
        ReportFormat::Sarif => ctx_core::bundle::render::json(&render::sarif(findings)),
        ReportFormat::Github => render::github(findings),
    };
    super::io_result(p.out(&text))
}
