//! Disclosures that are not bundles: a listing (metadata), search hits and one
//! object's document. The same rules as [`super::resolve`]: the authorized view
//! decides, objects that error-level findings concern are withheld (a listing)
//! or refused (a document, unless allowed), approval-gated content is never
//! searched before it is approved, and every answer is recorded.

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::evidence::{self, Access, Record};
use crate::load::Repo;
use crate::manifest::Manifest;
use crate::model::{Lifecycle, ObjectRef};
use crate::object::ContextObject;
use crate::personal::Tier;
use crate::private::Keyring;
use crate::time::Instant;
use crate::view::{Document, Hit, Opening, View, Who};

use super::{Findings, Private, Release};

/// What a listing shows: objects (index, lifecycle) in repository order.
#[derive(Debug, Clone)]
pub struct Listing {
    pub shown: Vec<(usize, Lifecycle)>,
    /// Objects left out because error-level findings concern them (counted only).
    pub withheld: usize,
}

/// Objects error-level findings concern, among those `view` shows (a consumer's view
/// only: the repository's author reads its files anyway).
fn blocked(view: &View<'_>, candidates: &[usize]) -> std::collections::BTreeSet<usize> {
    if view.consumer().is_none() {
        return Default::default();
    }
    crate::lint::gate::blocked_objects(view.repo(), candidates.iter().copied())
        .into_keys()
        .collect()
}

/// The objects `who` may see at `at` that `keep` accepts (superseded ones only
/// when `historical`), recorded as read.
pub fn list(
    repo: &Repo,
    who: &Who,
    at: Instant,
    historical: bool,
    keep: &dyn Fn(&ContextObject) -> bool,
) -> Result<Listing> {
    let v = View::open(repo, who, at)?;
    let mut shown: Vec<(usize, Lifecycle)> = v
        .visible(historical)
        .into_iter()
        .filter(|(i, _)| keep(&repo.objects[*i]))
        .collect();
    let ids: Vec<usize> = shown.iter().map(|(i, _)| *i).collect();
    let blocked = blocked(&v, &ids);
    shown.retain(|(i, _)| !blocked.contains(i));
    evidence::record(
        &repo.manifest,
        Record::read(
            who.agent.as_deref(),
            &who.roles,
            shown.iter().map(|(i, _)| repo.objects[*i].id.clone()),
        ),
    )?;
    Ok(Listing {
        shown,
        withheld: blocked.len(),
    })
}

/// Search hits, best first, with each hit's lifecycle.
#[derive(Debug, Clone)]
pub struct Searched {
    pub hits: Vec<(Hit, Lifecycle)>,
}

/// Lexical search over what `who` may read, as its view shows it (redacted). While
/// `release` withholds approval-gated objects, only their metadata is searched, so a
/// guessed word cannot confirm what their content says. Recorded as a search.
pub fn search(
    repo: &Repo,
    who: &Who,
    at: Instant,
    query: &str,
    keep: &dyn Fn(&ContextObject) -> bool,
    limit: usize,
    release: &Release,
) -> Result<Searched> {
    let v = View::open(repo, who, at)?;
    let visible: Vec<usize> = v.visible(false).into_iter().map(|(i, _)| i).collect();
    let blocked = blocked(&v, &visible);
    let metadata_only = |o: &ContextObject| release.withholds(Tier::of(o.meta.classification));
    let hits = v.search_where(
        query,
        keep,
        &|i| !blocked.contains(&i),
        &metadata_only,
        limit,
    );
    evidence::record(
        &repo.manifest,
        Record::search(
            who.agent.as_deref(),
            &who.roles,
            hits.iter().map(|h| repo.objects[h.index].id.clone()),
        ),
    )?;
    Ok(Searched {
        hits: hits
            .into_iter()
            .map(|h| {
                let l = v.lifecycle(h.index);
                (h, l)
            })
            .collect(),
    })
}

/// One object's document as its consumer sees it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub document: Document,
    /// Why a private object's encrypted fields are not shown, when they are not.
    pub unavailable: Option<String>,
    /// Findings handed out anyway ([`Findings::Allow`]).
    pub let_through: Vec<Diagnostic>,
}

/// The object `r` names, as `who` may see it at `at`, recorded as read. A denied
/// object and a missing one are reported alike; an object that error-level
/// findings concern is refused (named, with the way out) unless `findings` allows
/// it, and withheld as missing on an agent's door.
pub fn document(
    repo: &Repo,
    who: &Who,
    at: Instant,
    r: &ObjectRef,
    private: &Private,
    findings: Findings,
) -> Result<Shown> {
    let v = View::open(repo, who, at)?;
    let d = v.get(r)?;
    let mut let_through = Vec::new();
    if v.consumer().is_some() {
        let found = crate::lint::gate::blocked_objects(repo, [d.index])
            .remove(&d.index)
            .unwrap_or_default();
        if !found.is_empty() {
            match findings {
                Findings::Allow => let_through = found,
                Findings::Refuse => return Err(crate::lint::gate::refusal(&found)),
                Findings::Withhold => {
                    return Err(Error::NotFound(format!("no object `{r}` is visible here")))
                }
            }
        }
    }
    let mut unavailable = None;
    // A private object is decrypted only now: found, authorized, in memory.
    let document = match (repo.objects[d.index].meta.sealed.is_some(), private) {
        (true, Private::Identities(files)) => {
            let ring = Keyring::discover(files)?;
            let (d, opening) = v.document_opened(d.index, ring.as_ref())?;
            if let Opening::Unavailable(why) = opening {
                unavailable = Some(why);
            }
            d
        }
        (true, Private::Closed) => {
            unavailable = Some("private collections are not opened here".into());
            d
        }
        (false, _) => d,
    };
    evidence::record(
        &repo.manifest,
        Record::read(
            who.agent.as_deref(),
            &who.roles,
            [repo.objects[document.index].id.clone()],
        ),
    )?;
    Ok(Shown {
        document,
        unavailable,
        let_through,
    })
}

/// An access decision a door made that emits no bundle (an approval given or
/// refused, a request refused, a write turned into a proposal): ids, codes and
/// reasons only, never content.
#[derive(Debug, Clone)]
pub struct Decision<'a> {
    pub who: &'a Who,
    pub access: Access,
    pub objects: &'a [String],
    /// `allowed`, `denied`, `partial` or `error`.
    pub outcome: &'static str,
    pub reason: Option<String>,
    /// `(namespace, value)`, e.g. `("ctx.mcp", {"action": "context_get"})`.
    pub details: Option<(&'static str, Value)>,
}

/// Record `d` under the manifest's audit policy.
pub fn record_decision(m: &Manifest, d: Decision<'_>) -> Result<()> {
    evidence::record(
        m,
        Record::Access {
            actor: crate::audit::Actor::from_flags(d.who.agent.as_deref(), &d.who.roles),
            access: d.access,
            objects: d.objects.to_vec(),
            outcome: d.outcome,
            reason: d.reason,
            details: d.details,
        },
    )
}
