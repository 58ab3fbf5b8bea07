//! Shared output of the commands that report findings (`validate`, `conflicts`,
//! `stale`, and `doctor` when the manifest cannot be loaded).

use std::path::Path;

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::diag::Diagnostic;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::load::Repo;

use super::validate::ReportFormat;
use super::Printer;

/// How the last line of a human report reads.
pub enum Verdict<'a> {
    /// `✓ valid: …` / `✗ invalid: …`.
    Validity,
    /// `✓ no stale context: …` / `✗ stale context: …`, naming the check.
    Subset(&'a str),
}

/// Render `findings` about `repo` in `format`, to `output` or stdout.
pub fn emit(
    p: &Printer,
    repo: &Repo,
    findings: &[Diagnostic],
    format: ReportFormat,
    failed: bool,
    verdict: Verdict<'_>,
    output: Option<&Path>,
) -> Result<()> {
    let objects = repo.objects.len();
    let text = match format {
        ReportFormat::Human => {
            let mut text = render::human(
                findings,
                &repo.manifest.root,
                HumanStyle {
                    color: p.color_out && output.is_none(),
                    width: p.width,
                },
            );
            let summary = render::summary(findings, objects);
            let mark = if failed { "✗" } else { "✓" };
            let word = match verdict {
                Verdict::Validity if failed => "invalid".to_string(),
                Verdict::Validity => "valid".to_string(),
                Verdict::Subset(what) if findings.is_empty() => format!("no {what}"),
                Verdict::Subset(what) => what.to_string(),
            };
            text.push_str(&format!("{mark} {word}: {summary}\n"));
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
    super::io_result(p.product(&text, output))
}

/// The manifest cannot be loaded: report that one finding instead of failing
/// with empty output. Machine formats get a complete (failing) document; people
/// get the finding with its code frame on stderr. Any other error passes through.
pub fn unloadable(
    p: &Printer,
    err: Error,
    format: ReportFormat,
    output: Option<&Path>,
) -> Result<Exit> {
    let Error::Manifest { path, diag } = err else {
        return Err(err);
    };
    let root = path.parent().unwrap_or(Path::new("."));
    let findings = [*diag];
    let text = match format {
        ReportFormat::Human => {
            let mut text = render::human(
                &findings,
                root,
                HumanStyle {
                    color: p.color_err,
                    width: p.width,
                },
            );
            text.push_str(
                "✗ invalid: the manifest cannot be loaded, so nothing else was checked\n",
            );
            super::io_result(p.err(&text))?;
            return Ok(Exit::Invalid);
        }
        ReportFormat::Json => {
            ctx_core::bundle::render::json(&render::report_value(&findings, false, None, 0, None))
        }
        ReportFormat::Sarif => ctx_core::bundle::render::json(&render::sarif(&findings)),
        ReportFormat::Github => render::github(&findings),
    };
    super::io_result(p.product(&text, output))?;
    Ok(Exit::Invalid)
}

/// A manifest that cannot be loaded, for people: the finding with a code frame
/// (what every command other than `validate` and `doctor` prints on stderr).
pub fn manifest_frame(path: &Path, diag: &Diagnostic) -> String {
    let root = path.parent().unwrap_or(Path::new("."));
    let p = Printer::new(super::printer::ColorChoice::Auto);
    render::human(
        std::slice::from_ref(diag),
        root,
        HumanStyle {
            color: p.color_err,
            width: p.width,
        },
    )
}
