//! Lints for mistakes that silently change what a consumer sees: the repository is
//! valid, yet an agent gets more or less than its author meant.
//!
//! - a role's `include` / `exclude` pattern that matches no object ([`scope`]);
//! - a redaction rule that matches no field, or sits on prose it can never apply to
//!   ([`redaction`]);
//! - an object whose declared id differs from the id its path gives, an error when
//!   the declared id slips past an `exclude` its folder would have met ([`ids`]);
//! - an agent file `ctx export` generated where its host never reads it, and a
//!   broken `extensions.ctx.export` folder map ([`agent_files`]);
//!
//! - hidden characters in context text (tag characters, bidirectional controls,
//!   zero-width characters), found at load like secrets ([`invisible`]);
//!
//! Files that no `context:` or `collections:` entry loads are found by the loader's
//! walk (see [`crate::load::walk`]), which already visits every folder involved.
//!
//! Every lint is a warning (so `--strict` fails on it) unless it widens access, which
//! is an error. Each names the file and line, and suggests the closest existing name.
//! [`gate`] is the other half: consumer output refuses a repository whose
//! error-level findings concern what it would hand out.

pub mod agent_files;
pub mod fix;
pub mod gate;
pub mod hints;
pub mod ids;
pub mod invisible;
pub mod promotion;
pub mod redaction;
pub mod scope;
pub mod suggest;

pub use gate::output_gate;

use std::collections::HashSet;

use crate::diag::Diagnostic;
use crate::load::Repo;

/// Every lint over a loaded repository (the loader's own findings not included).
/// `superseded` holds the positions of superseded objects, as validate's supersession
/// analysis found them (not worked out again here: it is a pass over every object).
pub fn check(repo: &Repo, superseded: &HashSet<usize>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    scope::check(repo, &mut out);
    redaction::check(repo, &mut out);
    ids::check(repo, &mut out);
    promotion::check(repo, superseded, &mut out);
    agent_files::check(repo, &mut out);
    out
}

/// `d` about field `key` of `o`, placed at the object's first line like every other
/// object finding (a position inside the object would move whenever `ctx fmt`
/// reorders keys, and reports must not change when meaning does not).
pub(crate) fn at_field(o: &crate::object::ContextObject, key: &str, d: Diagnostic) -> Diagnostic {
    d.file(o.origin.file.clone())
        .id(o.id.clone())
        .line(o.origin.line)
        .field(key)
}
