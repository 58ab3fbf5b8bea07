//! The resolution pipeline, one stage per module, in the spec's order:
//! authorize → scope → freshness → supersession → authority/conflicts → rank →
//! trim → redact. [`crate::bundle`] compiles the result.

pub mod authorize;
mod content;
pub mod lifecycle;
pub mod rank;
pub mod redact;
mod select;

pub use select::precedence_cmp;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use crate::adapters::AdapterOptions;
use crate::diag::Severity;
use crate::error::{Error, Result};
use crate::load::Repo;
use crate::model::{Lifecycle, Trust};
use crate::pattern::Pattern;
use crate::time::Instant;
use crate::view::{View, Who};
use authorize::Denial;

/// Who context is resolved for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerKind {
    Agent,
    Role,
}

impl ConsumerKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ConsumerKind::Agent => "agent",
            ConsumerKind::Role => "role",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Consumer {
    pub kind: ConsumerKind,
    pub id: String,
    pub roles: Vec<String>,
}

impl Consumer {
    /// Resolve `--agent` / `--role` flags against the manifest, through the policy gate
    /// ([`crate::manifest::roles::require_sound`]).
    pub fn from_flags(
        m: &crate::manifest::Manifest,
        agent: Option<&str>,
        roles: &[String],
    ) -> Result<Consumer> {
        crate::manifest::roles::require_sound(m)?;
        match (agent, roles) {
            (Some(a), []) => {
                let binding = m.agents.get(a).ok_or_else(|| {
                    let known: Vec<&str> = m.agents.keys().map(String::as_str).collect();
                    Error::Usage(format!(
                        "unknown agent `{a}` (defined agents: {})",
                        if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        }
                    ))
                })?;
                Ok(Consumer {
                    kind: ConsumerKind::Agent,
                    id: a.to_string(),
                    roles: binding.roles.clone(),
                })
            }
            (None, [_, ..]) => {
                let mut rs = roles.to_vec();
                rs.sort();
                rs.dedup();
                Ok(Consumer {
                    kind: ConsumerKind::Role,
                    id: rs.join("+"),
                    roles: rs,
                })
            }
            (Some(_), [_, ..]) => Err(Error::Usage(
                "give either --agent or --role, not both".into(),
            )),
            (None, []) => Err(Error::Usage(
                "say who the context is for: --role <ROLE> or --agent <AGENT>".into(),
            )),
        }
    }
}

/// A resolution request as plain values: what any front end collects before
/// resolving ([`Request::build`] checks and types them).
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    pub who: Who,
    pub task: Option<String>,
    pub at: Instant,
    pub include_historical: bool,
    pub limit: Option<usize>,
    pub min_relevance: Option<f64>,
    /// Id patterns that narrow the scope (never widen it).
    pub include: Vec<String>,
    /// Keep the most relevant objects that fit this many estimated tokens
    /// ([`crate::budget`]); the rest are reported as trimmed.
    pub max_tokens: Option<usize>,
    /// Never reach the network.
    pub offline: bool,
    /// age identity files for private collections (empty: the default discovery).
    pub identities: Vec<PathBuf>,
}

impl ResolveOptions {
    /// Options for `who` at `at`, everything else at its default.
    pub fn new(who: Who, at: Instant) -> ResolveOptions {
        ResolveOptions {
            who,
            task: None,
            at,
            include_historical: false,
            limit: None,
            min_relevance: None,
            include: Vec::new(),
            max_tokens: None,
            offline: false,
            identities: Vec::new(),
        }
    }
}

/// One resolution request.
#[derive(Debug, Clone)]
pub struct Request {
    pub consumer: Consumer,
    pub task: Option<String>,
    pub at: Instant,
    pub include_historical: bool,
    pub limit: Option<usize>,
    pub min_relevance: Option<f64>,
    /// `--include` patterns: narrow the scope, never widen it.
    pub include: Vec<Pattern>,
    /// Token budget: applied after ranking, `limit` and `min_relevance`.
    pub max_tokens: Option<usize>,
    pub adapters: AdapterOptions,
    /// The age identity that opens private objects (loaded on first use); None: not available.
    pub identities: Option<std::sync::Arc<crate::private::Keyring>>,
    /// Objects the consumer may read that this answer must not carry (by index):
    /// taken out right after authorization, so they never influence a rank or a
    /// budget. With a reason and detail they are excluded so (approval not given,
    /// above the output's ceiling); without, they are counted as out of scope, like
    /// an object the consumer may not see (error-level findings on an agent's
    /// door). Set only by [`crate::disclose`].
    pub(crate) withhold: std::collections::BTreeMap<usize, Option<(&'static str, String)>>,
}

impl Request {
    /// Check and type plain options against the manifest (the policy gate runs here).
    pub fn build(m: &crate::manifest::Manifest, o: &ResolveOptions) -> Result<Request> {
        let consumer = Consumer::from_flags(m, o.who.agent.as_deref(), &o.who.roles)?;
        let include = o
            .include
            .iter()
            .map(|p| {
                Pattern::parse(p)
                    .map_err(|e| Error::Usage(format!("--include `{}`: {}", e.pattern, e.reason)))
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(min) = o.min_relevance {
            if !min.is_finite() || min < 0.0 {
                return Err(Error::Usage(format!(
                    "--min-relevance must be a non-negative number, got {min}"
                )));
            }
        }
        Ok(Request {
            consumer,
            task: o.task.clone().filter(|t| !t.trim().is_empty()),
            at: o.at,
            include_historical: o.include_historical,
            limit: o.limit,
            min_relevance: o.min_relevance,
            include,
            max_tokens: o.max_tokens,
            adapters: AdapterOptions {
                offline: o.offline,
                ..AdapterOptions::default()
            },
            identities: crate::private::Keyring::discover(&o.identities)?.map(std::sync::Arc::new),
            withhold: Default::default(),
        })
    }
}

/// An included object, ready to compile.
#[derive(Debug, Clone)]
pub struct Selected {
    /// Index into `repo.objects`.
    pub index: usize,
    pub lifecycle: Lifecycle,
    pub score: f64,
    /// Content after redaction (None when the object has none).
    pub content: Option<Value>,
    /// The media type a source adapter reported (None: inline content).
    pub content_type: Option<String>,
    /// Redaction rule paths that applied.
    pub redacted: Vec<String>,
    /// The include pattern that put it in scope.
    pub matched: String,
    /// Trust of content an adapter returned, when more cautious than the object's
    /// own: an object never promotes the bytes it points at.
    pub trust: Option<Trust>,
    /// A private object's decrypted fields, in memory only (None for clear objects).
    pub decrypted: Option<Box<crate::private::Opened>>,
}

/// An excluded object: only its id and the reason, never its content.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Exclusion {
    pub id: String,
    pub reason: &'static str,
    pub detail: Option<String>,
    pub outranked_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    pub id: Option<String>,
    pub code: String,
    pub message: String,
    pub severity: Severity,
}

/// The outcome of a resolution, before compilation.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub request: Request,
    pub included: Vec<Selected>,
    pub excluded: Vec<Exclusion>,
    pub warnings: Vec<Warning>,
    /// Objects outside the consumer's scope: counted, never listed.
    pub not_in_scope: usize,
    pub considered: usize,
    pub permissions: Vec<String>,
    pub ceiling: crate::model::Classification,
    /// What the token budget kept and trimmed, when the request set one.
    pub budget: Option<crate::budget::Report>,
    /// The repository's supersession analysis the resolution was made with, so the
    /// output gate does not redo it (None: the gate computes it).
    pub(crate) supersession: Option<std::sync::Arc<crate::validate::supersession::Supersession>>,
}

impl Resolution {
    /// Does the resolution hold decrypted private content? (Such output must stay
    /// out of the work tree: see [`crate::view::output::check_private_output`].)
    pub fn holds_private(&self) -> bool {
        self.included.iter().any(|s| s.decrypted.is_some())
    }
}

/// The objects a resolution for `opts` may read the content of: those its consumer
/// is authorized to see. Load with it ([`crate::load::LoadOptions::content_for`]) and
/// no other object's content is held. None when the request cannot be made (the
/// resolution then says why) or the policy is unsound.
pub fn content_filter(
    m: &crate::manifest::Manifest,
    opts: &ResolveOptions,
) -> Option<crate::load::ContentFilter> {
    crate::manifest::roles::require_sound(m).ok()?;
    let consumer = Consumer::from_flags(m, opts.who.agent.as_deref(), &opts.who.roles).ok()?;
    let scope = crate::manifest::roles::scope(m, &consumer.roles).ok()?;
    Some(crate::load::ContentFilter::new(move |o| {
        authorize::authorize(
            o,
            &authorize::Principals {
                consumer: &consumer.id,
                scope: &scope,
            },
        )
        .is_ok()
    }))
}

/// Find the repository from `dir` or `cwd` and load it for a resolution for
/// `opts`: content is kept only for the objects its consumer may read
/// ([`content_filter`]), so every front end that resolves holds no other object's
/// content. `load.content_for` is replaced.
pub fn open(
    dir: Option<&std::path::Path>,
    cwd: &std::path::Path,
    load: &crate::load::LoadOptions,
    opts: &ResolveOptions,
) -> Result<Repo> {
    let (manifest, diags) = crate::manifest::Manifest::discover(dir, cwd)?;
    let load = crate::load::LoadOptions {
        content_for: content_filter(&manifest, opts),
        ..load.clone()
    };
    Ok(crate::load::load(manifest, diags, &load))
}

/// Resolve plain options and compile the bundle: the whole pipeline in one call.
pub fn bundle(
    repo: &Repo,
    opts: &ResolveOptions,
    generated_at: &str,
) -> Result<(Resolution, Value)> {
    let req = Request::build(&repo.manifest, opts)?;
    let mut resolution = resolve(repo, req)?;
    let bundle = crate::bundle::compile(repo, &mut resolution, generated_at);
    Ok((resolution, bundle))
}

/// [`bundle`] for a caller that is done with the repository's content (a command
/// that resolves once): once the resolution holds its own copy of what the
/// consumer sees, every object's content is released before the bundle is built,
/// so a whole bundle never sits in memory beside a second copy of its content (at
/// 100k objects, tens of MiB off the peak). The objects' metadata and documents
/// stay (the output gate and `--explain` read them); their content is gone.
pub fn bundle_releasing_content(
    repo: &mut Repo,
    opts: &ResolveOptions,
    generated_at: &str,
) -> Result<(Resolution, Value)> {
    let req = Request::build(&repo.manifest, opts)?;
    let mut resolution = resolve(repo, req)?;
    repo.release_content();
    let bundle = crate::bundle::compile(repo, &mut resolution, generated_at);
    Ok((resolution, bundle))
}

fn excl(
    o: &crate::object::ContextObject,
    reason: &'static str,
    detail: Option<String>,
    by: Option<String>,
) -> Exclusion {
    let detail = match (o.version, detail) {
        (Some(v), Some(d)) => Some(format!("version {v}: {d}")),
        (Some(v), None) => Some(format!("version {v}")),
        (None, d) => d,
    };
    Exclusion {
        id: o.id.clone(),
        reason,
        detail,
        outranked_by: by,
    }
}

/// Resolve the context `req.consumer` may see for `req.task` at `req.at`.
/// Every decision about what the consumer sees is the [`View`]'s.
pub fn resolve(repo: &Repo, req: Request) -> Result<Resolution> {
    let m = &repo.manifest;
    let objects = &repo.objects;
    let view = View::of(repo, &req.consumer, req.at)?;
    let scope = view.scope().expect("a consumer's view has a scope");
    let mut excluded = Vec::new();
    let mut warnings = Vec::new();
    let mut not_in_scope = 0usize;
    let mut without_id = 0usize;

    // Files the loader could not read may hold context this consumer should see:
    // say so, counted rather than named (a bundle never enumerates the repository).
    let unread = repo.unread_sources();
    if unread > 0 {
        warnings.push(Warning {
            id: None,
            code: "source-unavailable".into(),
            message: format!(
                "{unread} repository file(s) or folder(s) could not be read, so this context \
                 may be incomplete; run `ctx validate` for details"
            ),
            severity: Severity::Warning,
        });
    }

    // 1. Authorize (and 2. narrow by --include): nothing below sees a denied object.
    let mut candidates: Vec<(usize, String)> = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        match view.authorize(i) {
            Ok(()) => {
                if !req.include.is_empty() && !req.include.iter().any(|p| p.covers(&o.id)) {
                    not_in_scope += 1;
                    continue;
                }
                match req.withhold.get(&i) {
                    Some(Some((reason, why))) => {
                        excluded.push(excl(o, reason, Some(why.clone()), None));
                        continue;
                    }
                    Some(None) => {
                        not_in_scope += 1;
                        continue;
                    }
                    None => {}
                }
                let matched = scope
                    .include
                    .iter()
                    .find(|p| p.covers(&o.id))
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default();
                candidates.push((i, matched));
            }
            Err(Denial::NotInScope) => {
                not_in_scope += 1;
                // No valid id: in nobody's scope, yet said so (without naming anything).
                without_id += usize::from(o.meta.faults.contains("id"));
            }
            Err(d) => {
                if let Denial::InvalidGovernance(_) = d {
                    warnings.push(Warning {
                        id: Some(o.id.clone()),
                        code: "invalid-governance".into(),
                        message: format!("{}: {}", o.id, d.detail().unwrap_or_default()),
                        severity: Severity::Error,
                    });
                }
                excluded.push(excl(o, d.reason(), d.detail(), None));
            }
        }
    }

    if without_id > 0 {
        warnings.push(Warning {
            id: None,
            code: "invalid-governance".into(),
            message: format!(
                "{without_id} object(s) without a valid `id` withheld from every consumer; run `ctx validate`"
            ),
            severity: Severity::Error,
        });
    }

    // 3. Freshness and approval, at the resolution instant.
    let sup = view.supersession();
    let mut live: Vec<(usize, String, Lifecycle)> = Vec::new();
    for (i, matched) in candidates {
        let o = &objects[i];
        let state = lifecycle::state(o, req.at, m.default_ttl);
        if let Some((reason, detail)) = lifecycle::gate(m, o, state, req.include_historical) {
            excluded.push(excl(o, reason, detail, None));
            continue;
        }
        live.push((i, matched, state));
    }

    // 4. Supersession (declared only, and only by successors already in force at
    //    the instant) and 5. authority between versions and conflicts.
    let visible: BTreeSet<usize> = live.iter().map(|(i, _, _)| *i).collect();
    let mut kept: Vec<(usize, String, Lifecycle)> = Vec::new();
    for (i, matched, state) in live {
        if sup.superseded_at(objects, i, req.at) {
            let by = sup
                .successor_at(objects, i, req.at)
                .filter(|s| visible.contains(s))
                .map(|s| objects[s].key());
            if req.include_historical {
                kept.push((i, matched, Lifecycle::Superseded));
            } else {
                excluded.push(excl(&objects[i], "superseded", None, by));
            }
            continue;
        }
        kept.push((i, matched, state));
    }
    let kept = select::one_per_id(
        m,
        objects,
        kept,
        req.include_historical,
        &mut excluded,
        &mut warnings,
    );
    select::conflicts(m, objects, &kept, &mut warnings);

    // 6. Redact inline content, then rank by task relevance over what the consumer
    //    would see: a redacted value can neither be found nor confirmed by a guess.
    let mut shown = Vec::with_capacity(kept.len());
    let mut ranked_in = Vec::with_capacity(kept.len());
    for (i, matched, state) in kept {
        match view.inline_content(i) {
            Ok(s) => {
                shown.push(s);
                ranked_in.push((i, matched, state));
            }
            Err(w) => content::withhold(&objects[i], w, &mut excluded, &mut warnings),
        }
    }
    let order: Vec<usize> = ranked_in.iter().map(|(i, _, _)| *i).collect();
    let texts: Vec<Option<&Value>> = shown.iter().map(|s| s.content.as_deref()).collect();
    let scores = rank::scores(objects, &order, &texts, req.task.as_deref());
    // What each candidate's inline content costs a token budget, estimated side by
    // side now rather than one by one as the budget is spent (by object index).
    let inline_tokens: Vec<usize> = match req.max_tokens {
        Some(_) => {
            use rayon::prelude::*;
            let each: Vec<usize> = texts
                .par_iter()
                .map(|c| c.map_or(0, crate::budget::value_tokens))
                .collect();
            let mut by_object = vec![0; objects.len()];
            for (&i, t) in order.iter().zip(each) {
                by_object[i] = t;
            }
            by_object
        }
        None => Vec::new(),
    };
    let mut ranked: Vec<(usize, String, Lifecycle, f64, crate::view::Shown<'_>)> = ranked_in
        .into_iter()
        .zip(scores)
        .zip(shown)
        .map(|(((i, mt, st), s), sh)| (i, mt, st, s, sh))
        .collect();
    select::sort_by_relevance(m, objects, &mut ranked, |r| (r.0, r.3));

    // 7. Trim, reporting every trimmed object.
    let has_task = req
        .task
        .as_deref()
        .is_some_and(|t| !rank::query_terms(t).is_empty());
    let mut selected_raw = Vec::new();
    for (rank_pos, (i, matched, state, score, sh)) in ranked.into_iter().enumerate() {
        let o = &objects[i];
        if let (Some(min), true) = (req.min_relevance, has_task) {
            if score < min {
                excluded.push(excl(
                    o,
                    "not-relevant",
                    Some(format!("relevance {score} is below --min-relevance {min}")),
                    None,
                ));
                continue;
            }
        }
        if let Some(limit) = req.limit {
            if selected_raw.len() >= limit {
                excluded.push(excl(
                    o,
                    "not-relevant",
                    Some(format!(
                        "trimmed by --limit {limit} (rank {})",
                        rank_pos + 1
                    )),
                    None,
                ));
                continue;
            }
        }
        selected_raw.push((i, matched, state, score, sh));
    }

    // 8. Content from sources (adapters run only for authorized, selected objects),
    //    redacted by the view like inline content; then the token budget, in
    //    relevance order, so trimmed content is never copied.
    let mut included = Vec::new();
    let mut budget = req.max_tokens.map(crate::budget::Budget::new);
    for (i, matched, state, score, sh) in selected_raw {
        let o = &objects[i];
        let Some(sel) = content::select(&view, &req, o, sh, &mut excluded, &mut warnings) else {
            continue;
        };
        content::lifecycle_warnings(m, o, state, sel.trust, &mut warnings);
        if let Some(b) = &mut budget {
            let content_tokens = match sel.inline {
                true => inline_tokens[i],
                false => sel
                    .content
                    .as_deref()
                    .map_or(0, crate::budget::value_tokens),
            };
            let cost = crate::budget::tokens_with(o, sel.decrypted.as_deref(), content_tokens);
            if !b.admit(o, cost, &mut excluded) {
                continue;
            }
        }
        included.push(Selected {
            index: i,
            lifecycle: state,
            score,
            content: sel.content.map(Cow::into_owned),
            content_type: sel.content_type,
            redacted: sel.redacted,
            matched,
            trust: sel.trust,
            decrypted: sel.decrypted,
        });
    }
    // Equal records are identical (every field is compared): an unstable sort
    // orders them as a stable one would, without its scratch buffer.
    excluded.sort_unstable();
    excluded.dedup();
    warnings.sort_unstable();
    warnings.dedup();
    let permissions: Vec<String> = scope.permissions.iter().cloned().collect();
    let ceiling = scope.ceiling;
    let supersession = Some(view.supersession_shared());
    drop(view);
    Ok(Resolution {
        considered: objects.len(),
        request: req,
        included,
        excluded,
        warnings,
        not_in_scope,
        permissions,
        ceiling,
        budget: budget.map(crate::budget::Budget::report),
        supersession,
    })
}
