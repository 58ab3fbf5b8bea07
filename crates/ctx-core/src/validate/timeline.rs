//! Checks that depend on the instant being judged (`--at`) and on approval records:
//! a declared successor not yet in force (its predecessor stays current until
//! then, §9.1, §10.3–10.4), and approvals short of their requirement.

use crate::diag::{Code, Diagnostic};
use crate::model::Lifecycle;
use crate::resolve::lifecycle;
use crate::time::Instant;

use super::supersession::Supersession;
use super::{at as located, Index};

/// One finding per predecessor whose declared successors are all still ahead of
/// `at`: the successor replaces it only from its own `valid_from`. When the
/// predecessor is not current either, the id resolves to nothing until then: a warning.
pub fn scheduled_supersession(
    idx: &Index<'_>,
    sup: &Supersession,
    at: Instant,
    default_ttl: Option<chrono::Duration>,
    out: &mut Vec<Diagnostic>,
) {
    let objects = idx.objects;
    for old in sup.predecessors() {
        if sup.superseded_at(objects, old, at) {
            continue;
        }
        let pending = sup.pending_at(objects, old, at);
        let Some(&next) = pending.first() else {
            continue;
        };
        let (o, n) = (&objects[old], &objects[next]);
        let from = n
            .meta
            .valid_from
            .map(|t| crate::time::format(&t))
            .unwrap_or_default();
        let state = lifecycle::state(o, at, default_ttl);
        let gap = matches!(state, Lifecycle::Expired | Lifecycle::Future);
        let d = if gap {
            Diagnostic::warning(
                Code::NotYetValid,
                format!(
                    "`{}` supersedes `{}` only from {from}, and `{}` is {state} at {}: \
                     `{}` resolves to no version until then",
                    n.key(),
                    o.key(),
                    o.key(),
                    crate::time::format(&at),
                    o.id
                ),
            )
            .fix(format!(
                "move `valid_from` of `{}` earlier, or extend `expires` of `{}`",
                n.key(),
                o.key()
            ))
        } else {
            Diagnostic::info(
                Code::NotYetValid,
                format!(
                    "`{}` supersedes `{}` only from {from}; until then `{}` is current",
                    n.key(),
                    o.key(),
                    o.key()
                ),
            )
            .fix("nothing to do if the change is scheduled; otherwise correct `valid_from`")
        };
        out.push(
            located(n, d)
                .ids(vec![n.origin.file.clone(), o.origin.file.clone()])
                .field("valid_from")
                .expected(format!(
                    "an instant at or before {}",
                    crate::time::format(&at)
                ))
                .actual(from),
        );
    }
}

/// Objects whose approval requirement is not met: excluded from resolution as
/// unapproved, whatever their `status` says.
pub fn approvals(idx: &Index<'_>, out: &mut Vec<Diagnostic>) {
    for o in idx.objects {
        if let Some((given, needed)) = lifecycle::approval_shortfall(o) {
            out.push(
                located(
                    o,
                    Diagnostic::warning(
                        Code::Unapproved,
                        format!(
                            "{given} of the {needed} required approvals are recorded, so the object \
                             is not approved and is excluded from default resolution"
                        ),
                    ),
                )
                .field("approval.approved_by")
                .expected(format!("at least {needed} approvals from the listed roles"))
                .actual(given)
                .fix("record the missing approvals, or lower `approval.minimum`"),
            );
        }
    }
}
