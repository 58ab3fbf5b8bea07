//! `authority: canonical` (or `approved`) without a sign-off on record. `ctx add`
//! refuses that authority without `--promote`, because promotion is a governance
//! act; typing it into a file bypassed the refusal silently, and the object then
//! outranked everything else for every consumer. The record is what `--promote`
//! and `ctx promote` leave in `.ctx/signoffs/` ([`crate::write::signoff`]).
//!
//! Only repositories that keep sign-offs (a `.ctx/signoffs/` folder) and only active
//! versions are checked (a superseded version is served to no one by
//! default). A sign-off covers the object's bytes, so an edit after it is reported
//! too: a typo fix in a canonical policy is still a change to the canonical policy.

use std::collections::HashSet;

use crate::diag::{Code, Diagnostic};
use crate::load::Repo;
use crate::object::{ContextObject, Format};
use crate::write::signoff::{self, Standing};

/// `superseded`: positions of superseded objects (validate's supersession analysis).
pub fn check(repo: &Repo, superseded: &HashSet<usize>, out: &mut Vec<Diagnostic>) {
    // A repository that predates sign-offs is not checked until it keeps them
    // (`ctx init`, the first `--promote`, or `ctx promote --all`).
    if !signoff::kept(&repo.manifest.root) {
        return;
    }
    let candidates = |o: &ContextObject| {
        signoff::needed(o.meta.authority) && !o.meta.faults.contains("authority")
    };
    let m = &repo.manifest;
    for (i, o) in repo.objects.iter().enumerate() {
        if !candidates(o) || superseded.contains(&i) {
            continue;
        }
        let standing = signoff::standing(m, o);
        if let Some(d) = finding(repo, o, &standing) {
            out.push(d);
        }
    }
}

fn finding(repo: &Repo, o: &ContextObject, standing: &Standing) -> Option<Diagnostic> {
    let a = o.meta.authority;
    let key = o.key();
    let record = signoff::rel_path(&o.id);
    let origin = if o.supplied("authority") {
        " (a default of its collection or the manifest gives it)"
    } else {
        ""
    };
    let promote = format!(
        "if an owner approves it as {a}, run `ctx promote {key}` and commit {record}; otherwise lower its authority"
    );
    let (message, actual, fix) = match standing {
        Standing::Signed(_) => return None,
        Standing::Missing => (
            format!(
                "`{key}` has authority `{a}`{origin} but no sign-off is on record: written by hand, where `ctx add` would have demanded --promote"
            ),
            "no sign-off".to_string(),
            promote,
        ),
        Standing::OtherAuthority(s) => (
            format!(
                "`{key}` has authority `{a}`{origin} but was signed off as `{}` (by {} at {})",
                s.authority, s.by, s.at
            ),
            format!("signed off as `{}`", s.authority),
            promote,
        ),
        Standing::Changed(s) => (
            format!(
                "`{key}` changed since its `{a}` sign-off by {} at {}",
                s.by, s.at
            ),
            format!("other bytes than the ones signed off ({})", s.digest),
            format!(
                "review the change (`git log -p {}`), then sign off the new content with `ctx promote {key}`",
                o.origin.file
            ),
        ),
        Standing::Unreadable(why) => (
            format!("`{key}` has authority `{a}` but its sign-off cannot be checked: {why}"),
            "unreadable".to_string(),
            miette::Diagnostic::help(why).map_or(promote, |h| h.to_string()),
        ),
    };
    let d = Diagnostic::warning(Code::Unapproved, message)
        .file(o.origin.file.clone())
        .id(o.id.clone())
        .line(authority_line(repo, o))
        .field("authority")
        .expected(format!("a sign-off of `{a}` in {record}"))
        .actual(actual)
        .fix(fix);
    Some(d)
}

/// The line of the object's `authority` key (where the reader must look), or its
/// first line when the authority comes from a default or the key is not found.
fn authority_line(repo: &Repo, o: &ContextObject) -> u32 {
    if o.supplied("authority") || o.origin.file == repo.manifest.file {
        return o.origin.line;
    }
    let Ok(bytes) = signoff::read_object_file(&repo.manifest, o) else {
        return o.origin.line;
    };
    let text = String::from_utf8_lossy(&bytes);
    let start = o.origin.line.max(1) as usize - 1;
    let hit = text
        .lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| match o.origin.format {
            Format::Json => l.trim_start().starts_with("\"authority\""),
            // A top-level key: no indentation (nested `authority:` belongs to another map).
            _ => l
                .strip_prefix("authority")
                .is_some_and(|r| r.trim_start().starts_with(':')),
        });
    hit.map_or(o.origin.line, |(n, _)| n as u32 + 1)
}
