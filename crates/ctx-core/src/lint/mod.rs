//! Lints for mistakes that silently change what a consumer sees: the repository is
//! valid, yet an agent gets more or less than its author meant.
//!
//! - a role's `include` / `exclude` pattern that matches no object ([`scope`]);
//! - a redaction rule that matches no field, or sits on prose it can never apply to
//!   ([`redaction`]);
//! - an object whose declared id differs from the id its path gives, an error when
//!   the declared id slips past an `exclude` its folder would have met ([`ids`]);
//! - `authority: canonical` written by hand, with no recorded approval ([`canonical`]).
//!
//! Files that no `context:` or `collections:` entry loads are found by the loader's
//! walk (see [`crate::load::walk`]), which already visits every folder involved.
//!
//! Every lint is a warning (so `--strict` fails on it) unless it widens access, which
//! is an error. Each names the file and line, and suggests the closest existing name.
//! [`gate`] is the other half: consumer output refuses a repository whose
//! error-level findings concern what it would hand out.

pub mod canonical;
pub mod fix;
pub mod gate;
pub mod hints;
pub mod ids;
pub mod redaction;
pub mod scope;
pub mod suggest;

pub use gate::output_gate;

use crate::diag::Diagnostic;
use crate::load::Repo;

/// Every lint over a loaded repository (the loader's own findings not included).
pub fn check(repo: &Repo) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    scope::check(repo, &mut out);
    redaction::check(repo, &mut out);
    ids::check(repo, &mut out);
    canonical::check(repo, &mut out);
    out
}

/// Line and column of a top-level field of an object, read back from its file
/// (findings only: never on a hot path).
pub(crate) fn locate_field(
    repo: &Repo,
    o: &crate::object::ContextObject,
    path: &[crate::schema::PathItem],
) -> Option<(u32, u32)> {
    let abs = repo.manifest.root.join(&o.origin.file);
    let bytes = crate::fs::read_regular(&abs, crate::load::DEFAULT_MAX_FILE_SIZE).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let is_json = o.origin.format == crate::object::Format::Json;
    let (doc, start) = match o.origin.format {
        crate::object::Format::Markdown => {
            let s = crate::frontmatter::split(&text).ok()?;
            (s.yaml?, s.yaml_line)
        }
        _ => (text.as_str(), 1),
    };
    let (l, c) = crate::manifest::locate_in(doc, is_json, path)?;
    Some((l + start - 1, c))
}

/// `d` placed at `key` of `o` (or at the object's first line when not found).
pub(crate) fn at_field(repo: &Repo, o: &crate::object::ContextObject, key: &str, d: Diagnostic) -> Diagnostic {
    let d = d.file(o.origin.file.clone()).id(o.id.clone());
    match locate_field(repo, o, &[crate::schema::PathItem::Key(key.into())]) {
        Some((l, c)) => d.at(l, c),
        None => d.line(o.origin.line),
    }
}
