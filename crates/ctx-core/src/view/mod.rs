//! The authorized view: the one place that decides what a consumer may see of an
//! object — whether it is visible at all, its lifecycle, and its content after
//! redaction. Every operation that prints or writes object data (resolve, get,
//! list, search, diff, history, graph, export, the write dry runs, and any future
//! front end) asks a [`View`]; none looks at objects on its own.
//!
//! Without a consumer the view is the repository author's: every object whose
//! governance is valid, unredacted. Either way the view is opened through the
//! policy gate ([`crate::manifest::roles::require_sound`]).

mod content;
pub mod output;
mod sealed;
mod search;

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::error::Result;
use crate::load::Repo;
use crate::manifest::roles::{self, Scope};
use crate::model::{Lifecycle, ObjectRef};
use crate::resolve::authorize::{self, Denial, Principals};
use crate::resolve::redact::{HashKey, Rule};
use crate::resolve::{lifecycle, Consumer};
use crate::time::Instant;
use crate::validate::{supersession, Index};

pub use content::{Shown, Withheld};
pub use sealed::Opening;
pub use search::Hit;

/// Who is looking, as plain names (`--agent` / `--role`). Empty: the repository author.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub agent: Option<String>,
    pub roles: Vec<String>,
}

impl Who {
    /// The repository author: sees every object whose governance is valid, unredacted.
    pub fn author() -> Who {
        Who::default()
    }

    pub fn is_author(&self) -> bool {
        self.agent.is_none() && self.roles.is_empty()
    }
}

/// One consumer's view of one repository at one instant.
pub struct View<'r> {
    repo: &'r Repo,
    consumer: Option<Consumer>,
    scope: Option<Scope>,
    at: Instant,
    /// Shared with the resolutions made through this view (the output gate reads it).
    sup: Arc<supersession::Supersession>,
    /// The redaction key, read on first use (only a hash rule needs it).
    key: OnceLock<std::result::Result<HashKey, output::KeyFileError>>,
    /// Objects by id ([`View::index`]), built on first use and kept: a graph asks once
    /// per link, and building it each time was quadratic in the repository.
    index: OnceLock<Index<'r>>,
}

/// What a view shows of one object: its effective fields with the content redacted.
#[derive(Debug, Clone)]
pub struct Document {
    pub index: usize,
    pub lifecycle: Lifecycle,
    /// Every field, `content` redacted (or absent), plus `redacted` when rules applied.
    pub fields: Map<String, Value>,
}

impl<'r> View<'r> {
    /// Open `who`'s view. Refuses while the manifest's policy has errors; an unknown
    /// role or agent is a usage error.
    pub fn open(repo: &'r Repo, who: &Who, at: Instant) -> Result<View<'r>> {
        roles::require_sound(&repo.manifest)?;
        let consumer = if who.is_author() {
            None
        } else {
            Some(Consumer::from_flags(
                &repo.manifest,
                who.agent.as_deref(),
                &who.roles,
            )?)
        };
        View::with(repo, consumer, at)
    }

    /// The view of an already resolved consumer (the resolver's entry).
    pub fn of(repo: &'r Repo, consumer: &Consumer, at: Instant) -> Result<View<'r>> {
        roles::require_sound(&repo.manifest)?;
        View::with(repo, Some(consumer.clone()), at)
    }

    fn with(repo: &'r Repo, consumer: Option<Consumer>, at: Instant) -> Result<View<'r>> {
        let scope = match &consumer {
            Some(c) => Some(roles::scope(&repo.manifest, &c.roles)?),
            None => None,
        };
        Ok(View {
            repo,
            consumer,
            scope,
            at,
            sup: Arc::new(supersession::analyse(&Index::new(&repo.objects))),
            key: OnceLock::new(),
            index: OnceLock::new(),
        })
    }

    pub fn repo(&self) -> &'r Repo {
        self.repo
    }

    /// The repository's objects by id (every object, visible or not).
    pub fn index(&self) -> &Index<'r> {
        self.index.get_or_init(|| Index::new(&self.repo.objects))
    }

    pub fn consumer(&self) -> Option<&Consumer> {
        self.consumer.as_ref()
    }

    pub fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    pub fn at(&self) -> Instant {
        self.at
    }

    /// The repository's declared supersession (who replaces whom).
    pub fn supersession(&self) -> &supersession::Supersession {
        &self.sup
    }

    /// The same analysis, shared: what a [`crate::resolve::Resolution`] keeps of it.
    pub(crate) fn supersession_shared(&self) -> Arc<supersession::Supersession> {
        Arc::clone(&self.sup)
    }

    /// May this consumer see object `i` at all? Looks only at governance metadata.
    pub fn authorize(&self, i: usize) -> std::result::Result<(), Denial> {
        self.authorize_object(&self.repo.objects[i])
    }

    /// [`View::authorize`] for an object held outside the repository's list (a
    /// personal vault's field, decrypted and kept in memory by its server).
    pub fn authorize_object(
        &self,
        o: &crate::object::ContextObject,
    ) -> std::result::Result<(), Denial> {
        match (&self.consumer, &self.scope) {
            (Some(c), Some(s)) => authorize::authorize(
                o,
                &Principals {
                    consumer: &c.id,
                    scope: s,
                },
            ),
            _ if !o.meta.faults.is_empty() => Err(Denial::InvalidGovernance(o.meta.faults)),
            _ => Ok(()),
        }
    }

    /// Lifecycle at the view's instant, supersession included: a successor
    /// supersedes only from its own `valid_from`.
    pub fn lifecycle(&self, i: usize) -> Lifecycle {
        if self.sup.superseded_at(&self.repo.objects, i, self.at) {
            Lifecycle::Superseded
        } else {
            lifecycle::state(
                &self.repo.objects[i],
                self.at,
                self.repo.manifest.default_ttl,
            )
        }
    }

    /// The objects this consumer may see (indexes into `repo.objects`, in repository
    /// order), with their lifecycle; superseded versions only when `historical`.
    pub fn visible(&self, historical: bool) -> Vec<(usize, Lifecycle)> {
        (0..self.repo.objects.len())
            .filter(|&i| self.authorize(i).is_ok())
            .map(|i| (i, self.lifecycle(i)))
            .filter(|(_, s)| historical || *s != Lifecycle::Superseded)
            .collect()
    }

    /// The object that supersedes `i` at the view's instant, only when this
    /// consumer may see it.
    pub fn successor(&self, i: usize) -> Option<usize> {
        self.sup
            .successor_at(&self.repo.objects, i, self.at)
            .filter(|&s| self.authorize(s).is_ok())
    }

    /// Redaction rules in force for `o` (manifest, then the consumer's roles, then
    /// the object's own). The author's view redacts nothing.
    pub fn rules<'a>(&'a self, own: &'a [Rule]) -> Vec<&'a Rule> {
        match &self.scope {
            Some(s) => self
                .repo
                .manifest
                .redact
                .iter()
                .chain(s.redact.iter())
                .chain(own.iter())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The redaction key, when the repository has a readable one.
    fn key(&self) -> std::result::Result<&HashKey, &output::KeyFileError> {
        self.key
            .get_or_init(|| output::load_hash_key(&self.repo.manifest))
            .as_ref()
    }

    /// An object's inline content as this consumer sees it (borrowed when nothing
    /// was redacted). What ranking and search index, and what get and diff print.
    pub fn inline_content(&self, i: usize) -> std::result::Result<Shown<'r>, Withheld> {
        let o = &self.repo.objects[i];
        if o.content.is_none() {
            return Ok(Shown::default());
        }
        // Cheap test before parsing the document: most objects declare no rules.
        let own = if self.scope.is_some() && o.mentions("\"redact\"") {
            own_rules(o.field("redact").as_ref())?
        } else {
            Vec::new()
        };
        content::inline(self, o.content.as_ref(), &self.rules(&own))
    }

    /// Content an object's source produced — `content_uri` text, or a decrypted private
    /// object's content — redacted like inline content. `own` is the object's `redact`
    /// field as read from the same source.
    pub fn source_content(
        &self,
        own: Option<&Value>,
        source: Source<'_>,
    ) -> std::result::Result<Shown<'static>, Withheld> {
        let own = match self.scope {
            Some(_) => own_rules(own)?,
            None => Vec::new(),
        };
        let rules = self.rules(&own);
        match source {
            Source::Inline(c) => content::inline(self, c, &rules).map(Shown::into_owned),
            Source::Text(t) => content::loaded(self, &t, &rules),
        }
    }

    /// May this `content_uri` be read for a consumer? The redaction key never is.
    pub fn may_load(&self, uri: &str) -> std::result::Result<(), Withheld> {
        if output::names_key_file(&self.repo.manifest, uri) {
            return Err(Withheld::policy(
                "its content_uri names the repository's redaction key, which is never served",
            ));
        }
        Ok(())
    }

    /// What get, diff and the write dry runs print of object `i`: every field, the
    /// content redacted. Fails when `i` is not visible or its content must be withheld.
    pub fn document(&self, i: usize) -> std::result::Result<Document, Withheld> {
        self.authorize(i).map_err(Withheld::denied)?;
        let o = &self.repo.objects[i];
        let shown = self.inline_content(i)?;
        let mut fields: Map<String, Value> = serde_json::from_str(o.document()).unwrap_or_default();
        match shown.content {
            Some(c) => {
                fields.insert("content".into(), c.into_owned());
            }
            None => {
                fields.remove("content");
            }
        }
        if !shown.redacted.is_empty() {
            fields.insert("redacted".into(), Value::from(shown.redacted));
        }
        Ok(Document {
            index: i,
            lifecycle: self.lifecycle(i),
            fields,
        })
    }
}

impl View<'_> {
    /// The visible object a reference names: `id@version`, or for a bare id the
    /// version the resolver would choose at the view's instant (live, then by
    /// precedence); when none is live, the newest that is not superseded, else the
    /// newest. `not` is skipped for a bare id with several versions.
    pub fn find(&self, r: &ObjectRef, not: Option<usize>) -> Option<usize> {
        let idx = self.index();
        let mut hits: Vec<usize> = idx
            .resolve(r)
            .into_iter()
            .filter(|&i| self.authorize(i).is_ok())
            .collect();
        if r.version.is_none() && hits.len() > 1 {
            hits.retain(|&i| Some(i) != not);
        }
        let m = &self.repo.manifest;
        let objects = &self.repo.objects;
        let chosen = hits
            .iter()
            .copied()
            .filter(|&i| lifecycle::gate(m, &objects[i], self.lifecycle(i), false).is_none())
            .min_by(|&a, &b| crate::resolve::precedence_cmp(m, &objects[a], &objects[b]));
        chosen.or_else(|| {
            hits.into_iter().max_by_key(|&i| {
                (
                    self.lifecycle(i) != Lifecycle::Superseded,
                    objects[i].version,
                )
            })
        })
    }

    /// One object as this consumer may see it. A denied object and a missing one are
    /// reported alike; the author is told why an object is withheld.
    pub fn get(&self, r: &ObjectRef) -> Result<Document> {
        let not_found =
            || crate::error::Error::NotFound(format!("no object `{r}` is visible here"));
        let Some(i) = self.find(r, None) else {
            if self.consumer.is_none() {
                let idx = self.index();
                if let Some(d) = idx
                    .resolve(r)
                    .into_iter()
                    .find_map(|i| self.authorize(i).err())
                {
                    return Err(crate::error::Error::Invalid(format!(
                        "`{r}` is withheld: {}",
                        d.detail().unwrap_or_default()
                    )));
                }
            }
            return Err(not_found());
        };
        self.document(i)
            .map_err(|w| crate::error::Error::Invalid(format!("`{r}` is withheld: {}", w.detail)))
    }
}

/// An object's own redaction rules; unreadable rules withhold the object.
fn own_rules(v: Option<&Value>) -> std::result::Result<Vec<Rule>, Withheld> {
    match v {
        None => Ok(Vec::new()),
        Some(v) => Rule::list(v).map_err(|_| {
            Withheld::policy("its own `redact` rules are invalid, so they cannot be applied")
        }),
    }
}

/// Where content came from, for [`View::source_content`].
pub enum Source<'a> {
    /// Content held by the object itself (e.g. decrypted from a private collection).
    Inline(Option<&'a Value>),
    /// Text a `content_uri` adapter read.
    Text(SourceText<'a>),
}

/// Text read from a source, with what is known about its media type.
pub struct SourceText<'a> {
    pub text: &'a str,
    /// The object's declared `content_type`.
    pub declared_type: Option<&'a str>,
    /// The media type the adapter reported (HTTP header, file extension).
    pub reported_type: Option<&'a str>,
    pub uri: &'a str,
}
