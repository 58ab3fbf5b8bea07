//! The output gate: consumer output (`resolve`, `bundle`, `export`, and the MCP and
//! HTTP front ends) refuses to hand out objects that error-level findings concern —
//! a detected secret, an invalid object, an id that slips past an exclude — unless
//! the caller explicitly allows it. `validate` failing in CI is not enough: the same
//! repository must not flow silently into an agent's instructions on a laptop.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::diag::{Code, Diagnostic, Severity};
use crate::error::{Error, Result};
use crate::load::Repo;
use crate::resolve::Resolution;
use crate::validate::{self, supersession, Index};

/// Findings that make an object itself unfit to hand out: a credential in it, an
/// invalid document, an id that slips past a scope, an id two files claim. Others
/// (an unknown scheme, an unreadable source, an ambiguous conflict, a broken link)
/// are settled or reported by resolution itself and stay `validate`'s business; so
/// is a duplicate canonical object, which the bundle itself carries as a conflict
/// (`conflict-ambiguous`, seed 003 §10.5) for its reader to weigh.
pub const BLOCKING: [Code; 4] = [
    Code::SecretDetected,
    Code::SchemaInvalid,
    Code::InvalidPermission,
    Code::DuplicateId,
];

/// Error-level findings about the objects `resolution` would hand out: findings that
/// name one of them by id, or point at the file it was loaded from.
pub fn blocking_findings(repo: &Repo, resolution: &Resolution) -> Vec<Diagnostic> {
    let mut ids: HashSet<&str> = HashSet::new();
    let mut files: HashSet<&str> = HashSet::new();
    for s in &resolution.included {
        let o = &repo.objects[s.index];
        ids.insert(o.id.as_str());
        files.insert(o.origin.file.as_str());
    }
    if ids.is_empty() {
        return Vec::new();
    }
    let concerns = |d: &Diagnostic| {
        d.id.as_deref().is_some_and(|i| ids.contains(i))
            || d.file.as_deref().is_some_and(|f| files.contains(f))
            || d.ids
                .iter()
                .any(|x| ids.contains(x.as_str()) || files.contains(x.as_str()))
    };
    // Only the checks that can produce a blocking code: the loader's (schema, secrets),
    // duplicate ids, and ids that slip past a scope. The rest of `validate` is not
    // paid for on every resolution.
    let mut found: Vec<Diagnostic> = repo
        .diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect();
    let idx = Index::new(&repo.objects);
    let computed;
    let sup = match &resolution.supersession {
        Some(shared) => shared.as_ref(),
        None => {
            computed = supersession::analyse(&idx);
            &computed
        }
    };
    validate::duplicates(&idx, &sup.superseded, &mut found);
    super::ids::check(repo, &mut found);
    found
        .into_iter()
        .filter(|d| d.severity == Severity::Error && BLOCKING.contains(&d.code) && concerns(d))
        .collect()
}

/// THE gate every consumer front end calls between resolving and emitting: `Ok` with
/// the findings that were let through (empty when there were none; the caller should
/// say so on stderr), or a refusal naming each finding (file, line, code, message;
/// never object content) and the way out.
pub fn output_gate(
    repo: &Repo,
    resolution: &Resolution,
    allow_findings: bool,
) -> Result<Vec<Diagnostic>> {
    let blocking = blocking_findings(repo, resolution);
    if blocking.is_empty() || allow_findings {
        return Ok(blocking);
    }
    Err(Error::Invalid(refusal(&blocking)))
}

/// One line per finding, as the refusal and the allowed-anyway note print them.
pub fn describe(findings: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in findings {
        let place = match (&d.file, d.line) {
            (Some(f), Some(l)) => format!("{f}:{l}: "),
            (Some(f), None) => format!("{f}: "),
            _ => String::new(),
        };
        let id =
            d.id.as_deref()
                .map(|i| format!("{i}: "))
                .unwrap_or_default();
        let _ = writeln!(out, "  {place}{} {id}{}", d.code, d.message);
    }
    out
}

fn refusal(findings: &[Diagnostic]) -> String {
    format!(
        "refusing to hand out this context: {} error-level finding(s) concern objects it would contain\n{}\
         fix them (`ctx validate` shows each with its fix), or pass --allow-findings to hand it out anyway",
        findings.len(),
        describe(findings)
    )
}
