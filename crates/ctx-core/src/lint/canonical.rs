//! `authority: canonical` written by hand. Canonical objects win every conflict, so
//! `ctx add` treats the level as a promotion and demands `--promote`; a file edited
//! by hand skips that step. The object should carry who approved it.

use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::load::Repo;
use crate::model::Authority;

/// Does the object record at least one approval (`approval.approved_by`)?
fn approved(o: &crate::object::ContextObject) -> bool {
    o.field("approval")
        .as_ref()
        .and_then(|a| a.get("approved_by"))
        .and_then(Value::as_array)
        .is_some_and(|list| !list.is_empty())
}

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    for o in &repo.objects {
        if o.meta.authority != Authority::Canonical || approved(o) {
            continue;
        }
        let (message, key) = if o.supplied("authority") {
            (
                "is canonical through a collection or manifest default, with no recorded approval; `ctx add` would demand `--promote` for it",
                "id",
            )
        } else {
            (
                "declares `authority: canonical` with no recorded approval; `ctx add` would demand `--promote` for it",
                "authority",
            )
        };
        let d = Diagnostic::warning(Code::Unapproved, format!("`{}` {message}", o.id))
            .field("authority")
            .expected("canonical authority with `approval.approved_by`, or a lower authority")
            .actual("canonical")
            .fix("record the sign-off (`approval: {approved_by: [{role: <role>, at: <RFC 3339>}]}`), or lower the authority to `reference` until it is promoted");
        out.push(super::at_field(repo, o, key, d));
    }
}
