//! Access diffs: what a change lets each role and agent see.
//!
//! For every role and agent defined at either state, the authorized view
//! ([`View`]) is opened on both states of the repository and compared object by
//! object: objects that become visible or invisible (with the cause on each side),
//! fields newly redacted or unredacted, the classification ceiling, and the policy
//! behind them (include and exclude patterns, redaction rules, an agent's roles).
//! Manifest changes and object changes are covered alike, because both states are
//! judged by the same view a consumer would get.
//!
//! The report holds ids, files, field paths, pattern texts, role names and levels —
//! never a value: a redacted or denied field is named by its rule path only.

pub mod causes;
pub mod render;
mod select;
pub mod why;

use std::collections::{BTreeMap, BTreeSet};

use crate::load::Repo;
use crate::model::RedactionMode;
use crate::resolve::ConsumerKind;
use crate::time::Instant;
use crate::view::{View, Who};

pub use why::{ceiling, why, Ceiling, CeilingOrigin, Why};

/// A consumer's standing at one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Not defined at this state.
    Absent,
    /// The manifest's policy has errors at this state, so every consumer is refused.
    Refused(String),
    Active(Policy),
}

/// The policy that decides what a consumer sees (its roles' union).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The roles it holds (a role holds itself), sorted.
    pub roles: Vec<String>,
    pub ceiling: Ceiling,
    pub include: BTreeSet<String>,
    pub exclude: BTreeSet<String>,
    /// Redaction rules in force for every object (manifest and roles): path → mode.
    pub rules: BTreeSet<(String, RedactionMode)>,
}

/// Added and removed members of one policy list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListChange<T> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
}

impl<T> Default for ListChange<T> {
    fn default() -> Self {
        ListChange {
            added: Vec::new(),
            removed: Vec::new(),
        }
    }
}

impl<T: Ord + Clone> ListChange<T> {
    fn of(before: &BTreeSet<T>, after: &BTreeSet<T>) -> ListChange<T> {
        ListChange {
            added: after.difference(before).cloned().collect(),
            removed: before.difference(after).cloned().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// How the policy changed between the two states (only when active at both).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyChange {
    pub roles: ListChange<String>,
    pub include: ListChange<String>,
    pub exclude: ListChange<String>,
    pub rules: ListChange<(String, RedactionMode)>,
}

impl PolicyChange {
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
            && self.include.is_empty()
            && self.exclude.is_empty()
            && self.rules.is_empty()
    }
}

/// One object's access at one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The object does not exist at this state.
    Absent,
    /// The consumer is absent or refused at this state.
    Unserved,
    /// The view's verdict, with its cause.
    Judged(Why),
}

impl Status {
    pub fn is_visible(&self) -> bool {
        matches!(self, Status::Judged(w) if w.is_visible())
    }

    /// The reason code: `absent`, `unserved`, or the verdict's.
    pub fn reason(&self) -> &'static str {
        match self {
            Status::Absent => "absent",
            Status::Unserved => "unserved",
            Status::Judged(w) => w.reason(),
        }
    }

    pub fn detail(&self) -> String {
        match self {
            Status::Absent => "not in the repository at this revision".into(),
            Status::Unserved => "the consumer is not served at this revision".into(),
            Status::Judged(w) => w.detail(),
        }
    }
}

/// An object whose visibility changed for one consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visibility {
    /// `id[@version]` at the later state (the earlier one when removed).
    pub key: String,
    pub file: String,
    pub before: Status,
    pub after: Status,
    /// Fields redacted for this consumer where the object is visible (paths only).
    pub redacted: Vec<String>,
}

/// What was known of an object's redaction for one consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    /// Applied to the object's inline content: the paths that actually matched a field.
    Content,
    /// The content is not readable here (encrypted, or behind `content_uri`): the
    /// rules in force, which redact those paths wherever the field exists.
    Rules,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Content => "content",
            Basis::Rules => "rules",
        }
    }
}

/// A field of a visible object newly redacted, unredacted, or redacted differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRedaction {
    pub key: String,
    pub file: String,
    /// The rule path (never the value).
    pub path: String,
    pub before: Option<RedactionMode>,
    pub after: Option<RedactionMode>,
    pub basis: Basis,
}

/// A visible object whose content became withheld (or no longer is): its redaction
/// could not (or now can) be guaranteed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withholding {
    pub key: String,
    pub file: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Everything that changed for one consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerDiff {
    pub kind: ConsumerKind,
    pub name: String,
    pub before: Standing,
    pub after: Standing,
    pub policy: PolicyChange,
    /// Objects it may now see, by key.
    pub visible: Vec<Visibility>,
    /// Objects it may no longer see, by key.
    pub invisible: Vec<Visibility>,
    pub redaction: Vec<FieldRedaction>,
    pub withheld: Vec<Withholding>,
}

impl ConsumerDiff {
    /// The ceiling before and after, when it changed level.
    pub fn ceiling_change(&self) -> Option<(&Ceiling, &Ceiling)> {
        match (&self.before, &self.after) {
            (Standing::Active(b), Standing::Active(a)) if b.ceiling.level != a.ceiling.level => {
                Some((&b.ceiling, &a.ceiling))
            }
            _ => None,
        }
    }

    /// Did the consumer's standing change (defined, refused, or not)?
    pub fn standing_changed(&self) -> bool {
        !matches!(
            (&self.before, &self.after),
            (Standing::Active(_), Standing::Active(_))
                | (Standing::Absent, Standing::Absent)
                | (Standing::Refused(_), Standing::Refused(_))
        )
    }

    pub fn is_empty(&self) -> bool {
        !self.standing_changed()
            && self.ceiling_change().is_none()
            && self.policy.is_empty()
            && self.visible.is_empty()
            && self.invisible.is_empty()
            && self.redaction.is_empty()
            && self.withheld.is_empty()
    }
}

/// The access difference between two states of a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessDiff {
    /// Every role, then every agent, defined at either state, by name.
    pub consumers: Vec<ConsumerDiff>,
}

impl AccessDiff {
    pub fn is_empty(&self) -> bool {
        self.consumers.iter().all(ConsumerDiff::is_empty)
    }

    pub fn changed(&self) -> impl Iterator<Item = &ConsumerDiff> {
        self.consumers.iter().filter(|c| !c.is_empty())
    }
}

/// One object as one consumer may see it at one state.
struct Seen {
    file: String,
    why: Why,
    /// Redacted paths with their mode, when visible.
    redaction: Option<(Basis, BTreeMap<String, RedactionMode>)>,
    withheld: Option<String>,
}

/// One consumer at one state: its standing and, when active, every object by key.
struct Side {
    standing: Standing,
    objects: BTreeMap<String, Seen>,
}

/// Compare what every role and agent may see in `before` and in `after` at `at`.
pub fn diff(before: &Repo, after: &Repo, at: Instant) -> AccessDiff {
    // Roles (0) before agents (1), each by name.
    let mut consumers: BTreeSet<(u8, String)> = BTreeSet::new();
    for repo in [before, after] {
        let m = &repo.manifest;
        consumers.extend(m.roles.keys().map(|r| (0, r.clone())));
        consumers.extend(m.agents.keys().map(|a| (1, a.clone())));
    }
    let pairs = pair_keys(before, after);
    let consumers = consumers
        .into_iter()
        .map(|(k, name)| {
            let kind = if k == 0 {
                ConsumerKind::Role
            } else {
                ConsumerKind::Agent
            };
            let b = side(before, &kind, &name, at);
            let a = side(after, &kind, &name, at);
            compare(kind, name, b, a, &pairs)
        })
        .collect();
    AccessDiff { consumers }
}

/// Keys of the earlier state renamed in the later one: an object that only gained
/// or changed its version number in the same file is the same object.
fn pair_keys(before: &Repo, after: &Repo) -> BTreeMap<String, String> {
    let keys = |r: &Repo| -> BTreeMap<String, (String, String)> {
        r.objects
            .iter()
            .map(|o| (o.key(), (o.id.clone(), o.origin.file.clone())))
            .collect()
    };
    let (b, a) = (keys(before), keys(after));
    let mut by_place: BTreeMap<(String, String), Vec<&String>> = BTreeMap::new();
    for (k, place) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
        by_place.entry(place.clone()).or_default().push(k);
    }
    let mut out = BTreeMap::new();
    for (k, place) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
        if let Some([one]) = by_place.get(place).map(Vec::as_slice) {
            out.insert(k.clone(), (*one).clone());
        }
    }
    out
}

fn who(kind: &ConsumerKind, name: &str) -> Who {
    match kind {
        ConsumerKind::Role => Who {
            agent: None,
            roles: vec![name.to_string()],
        },
        ConsumerKind::Agent => Who {
            agent: Some(name.to_string()),
            roles: Vec::new(),
        },
    }
}

fn side(repo: &Repo, kind: &ConsumerKind, name: &str, at: Instant) -> Side {
    let m = &repo.manifest;
    let defined = match kind {
        ConsumerKind::Role => m.roles.contains_key(name),
        ConsumerKind::Agent => m.agents.contains_key(name),
    };
    let absent = Side {
        standing: Standing::Absent,
        objects: BTreeMap::new(),
    };
    if !defined {
        return absent;
    }
    let view = match View::open(repo, &who(kind, name), at) {
        Ok(v) => v,
        Err(e) => {
            // The gate's message names the first error; the first line is enough here.
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or_default().to_string();
            return Side {
                standing: Standing::Refused(first),
                objects: BTreeMap::new(),
            };
        }
    };
    let (Some(consumer), Some(scope)) = (view.consumer(), view.scope()) else {
        return absent;
    };
    let mut roles: Vec<String> = scope.principals.iter().cloned().collect();
    roles.sort();
    let rules: BTreeSet<(String, RedactionMode)> = m
        .redact
        .iter()
        .chain(scope.redact.iter())
        .map(|r| (r.path.clone(), r.mode))
        .collect();
    let policy = Policy {
        roles,
        ceiling: ceiling(m, &consumer.roles),
        include: scope.include.iter().map(|p| p.as_str().into()).collect(),
        exclude: scope.exclude.iter().map(|p| p.as_str().into()).collect(),
        rules,
    };
    let mut objects = BTreeMap::new();
    for (i, o) in repo.objects.iter().enumerate() {
        let why = why::why(&view, i);
        let (redaction, withheld) = if why.is_visible() {
            redaction_of(&view, i)
        } else {
            (None, None)
        };
        // A duplicate key keeps its first file; duplicates are validate's business.
        objects.entry(o.key()).or_insert(Seen {
            file: o.origin.file.clone(),
            why,
            redaction,
            withheld,
        });
    }
    Side {
        standing: Standing::Active(policy),
        objects,
    }
}

type Redacted = (
    Option<(Basis, BTreeMap<String, RedactionMode>)>,
    Option<String>,
);

/// What the view redacts of visible object `i`: the paths that matched its inline
/// content, or — when the content is not readable here — the rules in force.
fn redaction_of(view: &View<'_>, i: usize) -> Redacted {
    let o = &view.repo().objects[i];
    // Cheap test before parsing the document: most objects declare no rules.
    let own = match o
        .mentions("\"redact\"")
        .then(|| o.field("redact"))
        .flatten()
    {
        Some(v) => crate::resolve::redact::Rule::list(&v).unwrap_or_default(),
        None => Vec::new(),
    };
    let rules = view.rules(&own);
    let mode_of = |path: &str| {
        rules
            .iter()
            .find(|r| r.path == path)
            .map(|r| r.mode)
            .unwrap_or(RedactionMode::Remove)
    };
    let opaque = o.meta.sealed.is_some() || (o.content.is_none() && o.meta.content_uri.is_some());
    if opaque {
        let paths = rules.iter().map(|r| (r.path.clone(), r.mode)).fold(
            BTreeMap::new(),
            |mut m, (p, mode)| {
                m.entry(p).or_insert(mode);
                m
            },
        );
        return (Some((Basis::Rules, paths)), None);
    }
    match view.inline_content(i) {
        Ok(shown) => {
            let paths = shown
                .redacted
                .iter()
                .map(|p| (p.clone(), mode_of(p)))
                .collect();
            (Some((Basis::Content, paths)), None)
        }
        Err(w) => (None, Some(w.detail)),
    }
}

fn compare(
    kind: ConsumerKind,
    name: String,
    b: Side,
    a: Side,
    pairs: &BTreeMap<String, String>,
) -> ConsumerDiff {
    let policy = match (&b.standing, &a.standing) {
        (Standing::Active(pb), Standing::Active(pa)) => PolicyChange {
            roles: ListChange::of(
                &pb.roles.iter().cloned().collect(),
                &pa.roles.iter().cloned().collect(),
            ),
            include: ListChange::of(&pb.include, &pa.include),
            exclude: ListChange::of(&pb.exclude, &pa.exclude),
            rules: ListChange::of(&pb.rules, &pa.rules),
        },
        _ => PolicyChange::default(),
    };
    let status = |side: &Side, key: Option<&str>| match &side.standing {
        Standing::Active(_) => key
            .and_then(|k| side.objects.get(k))
            .map_or(Status::Absent, |s| Status::Judged(s.why.clone())),
        _ => Status::Unserved,
    };
    // Every key at either state (when served), the earlier key renamed to the later.
    let mut keys: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    let all = |s: &Side| -> Vec<String> { s.objects.keys().cloned().collect() };
    for k in all(&b) {
        let later = pairs.get(&k).cloned().unwrap_or_else(|| k.clone());
        keys.entry(later).or_default().0 = Some(k);
    }
    for k in all(&a) {
        keys.entry(k.clone()).or_default().1 = Some(k.clone());
    }
    let mut d = ConsumerDiff {
        kind,
        name,
        before: b.standing.clone(),
        after: a.standing.clone(),
        policy,
        visible: Vec::new(),
        invisible: Vec::new(),
        redaction: Vec::new(),
        withheld: Vec::new(),
    };
    for (key, (kb, ka)) in keys {
        let sb = status(&b, kb.as_deref());
        let sa = status(&a, ka.as_deref());
        let seen_b = kb.as_deref().and_then(|k| b.objects.get(k));
        let seen_a = ka.as_deref().and_then(|k| a.objects.get(k));
        let file = seen_a
            .or(seen_b)
            .map(|s| s.file.clone())
            .unwrap_or_default();
        let shown_key = if ka.is_some() {
            key.clone()
        } else {
            kb.clone().unwrap_or_else(|| key.clone())
        };
        let paths = |s: Option<&Seen>| -> Vec<String> {
            s.and_then(|s| s.redaction.as_ref())
                .map(|(_, m)| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        match (sb.is_visible(), sa.is_visible()) {
            (false, true) => d.visible.push(Visibility {
                key: shown_key,
                file,
                before: sb,
                after: sa,
                redacted: paths(seen_a),
            }),
            (true, false) => d.invisible.push(Visibility {
                key: shown_key,
                file,
                before: sb,
                after: sa,
                redacted: paths(seen_b),
            }),
            (true, true) => {
                let (Some(x), Some(y)) = (seen_b, seen_a) else {
                    continue;
                };
                redaction_changes(&shown_key, &file, x, y, &mut d);
            }
            (false, false) => {}
        }
    }
    d
}

fn redaction_changes(key: &str, file: &str, b: &Seen, a: &Seen, d: &mut ConsumerDiff) {
    if b.withheld != a.withheld {
        d.withheld.push(Withholding {
            key: key.into(),
            file: file.into(),
            before: b.withheld.clone(),
            after: a.withheld.clone(),
        });
    }
    let (Some((bb, rb)), Some((ba, ra))) = (&b.redaction, &a.redaction) else {
        return;
    };
    let basis = (*bb).max(*ba);
    let paths: BTreeSet<&String> = rb.keys().chain(ra.keys()).collect();
    for p in paths {
        let (x, y) = (rb.get(p).copied(), ra.get(p).copied());
        if x != y {
            d.redaction.push(FieldRedaction {
                key: key.into(),
                file: file.into(),
                path: p.clone(),
                before: x,
                after: y,
                basis,
            });
        }
    }
}

#[cfg(test)]
mod tests;
