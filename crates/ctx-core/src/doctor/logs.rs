//! The repository's logs as doctor findings: damage is a `schema-invalid`
//! error, what a killed command left (the next write completes it) a
//! `schema-invalid` warning, each with its fix. The code set is OpenContext's,
//! closed (seed 003 §15): a log record that does not read as its format is
//! schema-invalid. They concern files under `.ctx/`, which the score leaves out
//! (the logs are evidence about the context, not the context). The checks are `ctx audit verify`'s
//! ([`crate::audit::repository`]), without repairs.

use crate::audit::repository::{self, Repair};
use crate::diag::{Code, Diagnostic};
use crate::manifest::Manifest;

/// Findings for every log of the repository `m` describes.
pub fn findings(m: &Manifest) -> Vec<Diagnostic> {
    let checked = match repository::check(m, Repair::default()) {
        Ok(c) => c,
        Err(e) => {
            return vec![Diagnostic::error(
                Code::SchemaInvalid,
                format!("the repository's logs cannot be checked: {e}"),
            )
            .fix("run `ctx audit verify` for details")]
        }
    };
    let mut out = Vec::new();
    for c in checked {
        let file = c
            .path
            .strip_prefix(&m.root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .ok();
        let at = |d: Diagnostic| match &file {
            Some(f) => d.file(f.clone()),
            None => d,
        };
        for p in &c.report.problems {
            out.push(at(Diagnostic::error(Code::SchemaInvalid, p.clone())).fix(
                "run `ctx audit verify` to see every log; restore a damaged log with its head or anchor from your last good copy (git history)",
            ));
        }
        for p in &c.report.pending {
            out.push(
                at(Diagnostic::warning(Code::SchemaInvalid, p.clone()))
                    .fix("any write completes it, or run `ctx audit verify --repair` now"),
            );
        }
    }
    out
}
