//! Findings that need a clock: stale, expired, not yet valid, review overdue.
//! Evaluated at one instant with [`crate::resolve::lifecycle::state`], so `doctor`,
//! `stale` and `resolve` never disagree about an object's state.

use std::collections::HashSet;

use serde_json::Value;

use crate::diag::{Code, Diagnostic, Severity};
use crate::model::{Lifecycle, Status};
use crate::object::{ContextObject, Expires};
use crate::resolve::lifecycle;
use crate::time::{self, Instant};

fn at(o: &ContextObject, d: Diagnostic) -> Diagnostic {
    d.file(o.origin.file.clone())
        .line(o.origin.line)
        .id(o.id.clone())
}

/// Is this object out of play, so its clock does not matter? Superseded versions
/// are history, and retired or rejected objects never resolve.
fn out_of_play(o: &ContextObject, i: usize, superseded: &HashSet<usize>) -> bool {
    superseded.contains(&i) || matches!(o.meta.status, Some(Status::Retired | Status::Rejected))
}

/// When the next review is due: an explicit `next_review` wins; otherwise
/// `interval` after `last_review`, else after `updated`. Dates mean the end of that day.
pub fn review_due(o: &ContextObject) -> Option<(Instant, String)> {
    // Only a few objects declare a review; skip the JSON parse for the rest.
    if !o.mentions("\"review\"") {
        return None;
    }
    let review = o.field("review")?;
    let date = |k: &str| {
        review
            .get(k)
            .and_then(Value::as_str)
            .and_then(time::parse_date)
    };
    if let Some(next) = date("next_review") {
        return Some((time::end_of_day(next), format!("next_review {next}")));
    }
    let interval = review
        .get("interval")
        .and_then(Value::as_str)
        .and_then(time::parse_duration)?;
    let text = review.get("interval").and_then(Value::as_str).unwrap_or("");
    if let Some(last) = date("last_review") {
        let due = time::end_of_day(last).checked_add_signed(interval)?;
        return Some((due, format!("last_review {last} + interval {text}")));
    }
    let updated = o.meta.updated?;
    let due = updated.checked_add_signed(interval)?;
    Some((
        due,
        format!("updated {} + interval {text}", time::format(&updated)),
    ))
}

/// Clock-based findings for every object in play at `now`.
pub fn findings(
    objects: &[ContextObject],
    superseded: &HashSet<usize>,
    now: Instant,
    default_ttl: Option<chrono::Duration>,
    stale_is_error: bool,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let stamp = time::format(&now);
    for (i, o) in objects.iter().enumerate() {
        if out_of_play(o, i, superseded) {
            continue;
        }
        match lifecycle::state(o, now, default_ttl) {
            Lifecycle::Future => {
                let from = o
                    .meta
                    .valid_from
                    .map(|t| time::format(&t))
                    .unwrap_or_default();
                out.push(
                    at(
                        o,
                        Diagnostic::info(
                            Code::NotYetValid,
                            format!("not valid until {from}; excluded from resolution until then"),
                        ),
                    )
                    .field("valid_from")
                    .expected(format!("an instant at or before {stamp}"))
                    .actual(from)
                    .fix("nothing to do if this is scheduled; otherwise correct `valid_from`"),
                );
            }
            Lifecycle::Expired => {
                let until = match o.meta.expires {
                    Expires::At(t) => time::format(&t),
                    _ => String::new(),
                };
                out.push(
                    at(o, Diagnostic::error(Code::Expired, format!("expired at {until}; excluded from resolution")))
                        .field("expires")
                        .expected(format!("an instant after {stamp}, or null for never"))
                        .actual(until)
                        .fix("supersede it with a current version (`ctx supersede`), extend `expires`, or retire it"),
                );
            }
            Lifecycle::Stale => {
                let ttl = o
                    .field("ttl")
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "freshness.default_ttl".into());
                let updated = o.meta.updated.map(|t| time::format(&t)).unwrap_or_default();
                let sev = if stale_is_error {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                out.push(
                    at(o, Diagnostic::new(Code::Stale, sev, format!("has not been updated inside its freshness window ({ttl}); it still resolves, with a warning")))
                        .field("updated")
                        .expected(format!("updated within {ttl} of {stamp}"))
                        .actual(updated)
                        .fix("review the content and bump `updated`, or supersede it"),
                );
            }
            Lifecycle::Current | Lifecycle::Superseded => {}
        }
        if let Some((due, basis)) = review_due(o) {
            if now > due {
                out.push(
                    at(
                        o,
                        Diagnostic::warning(
                            Code::ReviewOverdue,
                            format!("review was due {} ({basis})", time::format(&due)),
                        ),
                    )
                    .field("review")
                    .expected(format!("a review due after {stamp}"))
                    .actual(basis)
                    .fix("review it, then set `review.last_review` and `review.next_review`"),
                );
            }
        }
    }
    out
}
