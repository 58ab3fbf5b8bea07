//! The causes behind a resolution's denials, for `--explain`: which pattern
//! excluded an object, and for a classification denial the object's level against
//! the consumer's ceiling and where that ceiling comes from. Out-of-scope objects
//! are listed (ids only) only when asked. A resolution's own records are not
//! changed: they keep only ids and reasons; the causes are added beside them.

use crate::load::Repo;
use crate::resolve::authorize::Denial;
use crate::resolve::Resolution;
use crate::view::View;

use super::why::{ceiling, why, Ceiling, Why};

/// The causes of one resolution's denials.
#[derive(Debug, Clone)]
pub struct Causes {
    /// Denied objects in scope: id, version, cause.
    denied: Vec<(String, Option<u64>, Why)>,
    /// The consumer's ceiling and its source.
    pub ceiling: Ceiling,
    /// Keys (`id[@version]`) of the objects counted as out of scope, sorted; only
    /// filled when asked for.
    pub out_of_scope: Vec<String>,
}

/// The bundle exclusion reason a cause is recorded under.
fn exclusion_reason(w: &Why) -> &'static str {
    match w {
        Why::InvalidGovernance { .. } => "permission-denied",
        other => other.reason(),
    }
}

impl Causes {
    /// Work out the causes of `r`'s denials in `repo`; list out-of-scope objects when
    /// `list_out_of_scope`. None when the consumer's view cannot be opened (the
    /// resolution could not have been made either).
    pub fn of(repo: &Repo, r: &Resolution, list_out_of_scope: bool) -> Option<Causes> {
        let view = View::of(repo, &r.request.consumer, r.request.at).ok()?;
        let mut denied = Vec::new();
        let mut out_of_scope = Vec::new();
        for (i, o) in repo.objects.iter().enumerate() {
            match view.authorize(i) {
                Ok(()) => {
                    let narrowed = !r.request.include.is_empty()
                        && !r.request.include.iter().any(|p| p.covers(&o.id));
                    if narrowed && list_out_of_scope {
                        out_of_scope.push(o.key());
                    }
                }
                Err(Denial::NotInScope) => {
                    if list_out_of_scope {
                        out_of_scope.push(o.key());
                    }
                }
                Err(_) => denied.push((o.id.clone(), o.version, why(&view, i))),
            }
        }
        out_of_scope.sort();
        Some(Causes {
            denied,
            ceiling: ceiling(&repo.manifest, &r.request.consumer.roles),
            out_of_scope,
        })
    }

    /// The cause of one exclusion record (`id`, `reason`, and its `detail`, which
    /// names the version when the object declares one).
    pub fn of_record(&self, id: &str, reason: &str, detail: Option<&str>) -> Option<&Why> {
        let version = detail
            .and_then(|d| d.strip_prefix("version "))
            .and_then(|d| d.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|v| v.parse::<u64>().ok());
        self.denied
            .iter()
            .filter(|(i, v, w)| {
                i == id && exclusion_reason(w) == reason && (version.is_none() || *v == version)
            })
            .map(|(_, _, w)| w)
            .next()
    }
}
