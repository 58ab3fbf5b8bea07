//! The output gate: consumer output (`resolve`, `bundle`, `export`, and the MCP and
//! HTTP front ends) refuses to hand out objects that error-level findings concern —
//! a detected secret, an invalid object, hidden text, an id that slips past an exclude — unless
//! the caller explicitly allows it. `validate` failing in CI is not enough: the same
//! repository must not flow silently into an agent's instructions on a laptop.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use crate::diag::{Code, Diagnostic, Severity};
use crate::error::{Error, Result};
use crate::load::Repo;
use crate::resolve::Resolution;
use crate::validate::{self, supersession, Index};

/// Findings that make an object itself unfit to hand out: a credential in it, an
/// invalid document, hidden text (tag characters or bidirectional controls, which
/// [`super::invisible`] reports as `schema-invalid` errors; its zero-width warnings
/// do not block), an id that slips past a scope, an id two files claim. Others
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
    let indexes: Vec<usize> = resolution.included.iter().map(|s| s.index).collect();
    if indexes.is_empty() {
        return Vec::new();
    }
    let sup = resolution.supersession.as_deref();
    concerning(repo, &indexes, candidates(repo, sup))
}

/// The objects among `indexes` that error-level blocking findings concern, each with
/// the findings (what an agent's door withholds before ranking, instead of refusing).
pub fn blocked_objects(
    repo: &Repo,
    indexes: impl IntoIterator<Item = usize>,
) -> BTreeMap<usize, Vec<Diagnostic>> {
    let found = candidates(repo, None);
    let mut out: BTreeMap<usize, Vec<Diagnostic>> = BTreeMap::new();
    if found.is_empty() {
        return out;
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for i in indexes {
        let o = &repo.objects[i];
        by_name.entry(o.id.as_str()).or_default().push(i);
        by_name.entry(o.origin.file.as_str()).or_default().push(i);
    }
    for d in &found {
        let mut hit: Vec<usize> =
            d.id.iter()
                .chain(d.file.iter())
                .chain(d.ids.iter())
                .filter_map(|n| by_name.get(n.as_str()))
                .flatten()
                .copied()
                .collect();
        hit.sort_unstable();
        hit.dedup();
        for i in hit {
            out.entry(i).or_default().push(d.clone());
        }
    }
    out
}

/// Every error-level finding with a blocking code, from the checks that can produce
/// one: the loader's (schema, secrets), duplicate ids, and ids that slip past a scope.
/// The rest of `validate` is not paid for on every resolution.
fn candidates(repo: &Repo, sup: Option<&supersession::Supersession>) -> Vec<Diagnostic> {
    let mut found: Vec<Diagnostic> = repo
        .diags
        .iter()
        .filter(|d| d.severity == Severity::Error && BLOCKING.contains(&d.code))
        .cloned()
        .collect();
    let idx = Index::new(&repo.objects);
    let computed;
    let sup = match sup {
        Some(shared) => shared,
        None => {
            computed = supersession::analyse(&idx);
            &computed
        }
    };
    validate::duplicates(&idx, &sup.superseded, &mut found);
    super::ids::check(repo, &mut found);
    found.retain(|d| d.severity == Severity::Error && BLOCKING.contains(&d.code));
    found
}

/// The findings of `found` that concern one of the objects at `indexes` (by id, or by
/// the file it was loaded from).
fn concerning(repo: &Repo, indexes: &[usize], found: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut ids: HashSet<&str> = HashSet::new();
    let mut files: HashSet<&str> = HashSet::new();
    for &i in indexes {
        let o = &repo.objects[i];
        ids.insert(o.id.as_str());
        files.insert(o.origin.file.as_str());
    }
    let concerns = |d: &Diagnostic| {
        d.id.as_deref().is_some_and(|i| ids.contains(i))
            || d.file.as_deref().is_some_and(|f| files.contains(f))
            || d.ids
                .iter()
                .any(|x| ids.contains(x.as_str()) || files.contains(x.as_str()))
    };
    found.into_iter().filter(|d| concerns(d)).collect()
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
    Err(refusal(&blocking))
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

/// The gate's refusal of output that `findings` concern.
pub fn refusal(findings: &[Diagnostic]) -> Error {
    Error::Invalid(format!(
        "refusing to hand out this context: {} error-level finding(s) concern objects it would contain\n{}\
         fix them (`ctx validate` shows each with its fix), or pass --allow-findings to hand it out anyway",
        findings.len(),
        describe(findings)
    ))
}
