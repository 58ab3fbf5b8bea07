//! One parse-cache entry as a typed record, so a cache hit costs one small
//! derive-based parse instead of re-reading the whole document into a map.
//! Every [`Meta`] field is listed: a new field fails to compile here until it is cached.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Authority, Classification, ObjectRef, Status, Trust};
use crate::object::{Expires, Meta};

/// An instant as seconds and nanoseconds (exact, unlike a float).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct At(i64, u32);

impl At {
    fn of(t: &DateTime<Utc>) -> At {
        At(t.timestamp(), t.timestamp_subsec_nanos())
    }

    fn get(self) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(self.0, self.1)
    }
}

fn refs(v: &[ObjectRef]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

fn unrefs(v: &[String]) -> Vec<ObjectRef> {
    v.iter().map(|s| ObjectRef::parse(s)).collect()
}

/// [`Meta`], field for field.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedMeta {
    authority: Authority,
    classification: Classification,
    trust: Trust,
    status: Option<Status>,
    owner: Option<String>,
    created: Option<At>,
    updated: Option<At>,
    valid_from: Option<At>,
    /// 0 omitted, 1 never, 2 at `expires_at`.
    expires: u8,
    expires_at: Option<At>,
    /// Seconds and nanoseconds.
    ttl: Option<(i64, i32)>,
    supersedes: Vec<String>,
    superseded_by: Option<String>,
    conflicts_with: Vec<String>,
    references: Vec<String>,
    depends_on: Vec<String>,
    /// The bits of the float, so it round-trips exactly.
    confidence: Option<u64>,
    canonical_source: bool,
    read: Option<Vec<String>>,
    write: Vec<String>,
    deny: Vec<String>,
    kind: String,
    layer: Option<String>,
    title: Option<String>,
    summary: Option<String>,
    tags: Vec<String>,
    applies_to: Vec<String>,
    content_uri: Option<String>,
    undigested_remote_sources: Vec<(usize, String)>,
    declares_sources: bool,
    declares_canonical_source: bool,
    observed_origin: bool,
    default_refused: Option<Authority>,
    /// The armored ciphertext of a private-collection member (not a secret: it is in the file).
    sealed: Option<String>,
    /// [`crate::object::Faults`] bits.
    faults: u32,
}

impl CachedMeta {
    pub fn of(m: &Meta) -> CachedMeta {
        let (expires, expires_at) = match m.expires {
            Expires::Omitted => (0, None),
            Expires::Never => (1, None),
            Expires::At(t) => (2, Some(At::of(&t))),
        };
        CachedMeta {
            authority: m.authority,
            classification: m.classification,
            trust: m.trust,
            status: m.status,
            owner: m.owner.clone(),
            created: m.created.as_ref().map(At::of),
            updated: m.updated.as_ref().map(At::of),
            valid_from: m.valid_from.as_ref().map(At::of),
            expires,
            expires_at,
            ttl: m.ttl.map(|d| (d.num_seconds(), d.subsec_nanos())),
            supersedes: refs(&m.supersedes),
            superseded_by: m.superseded_by.as_ref().map(ToString::to_string),
            conflicts_with: refs(&m.conflicts_with),
            references: refs(&m.references),
            depends_on: refs(&m.depends_on),
            confidence: m.confidence.map(f64::to_bits),
            canonical_source: m.canonical_source,
            read: m.read.clone(),
            write: m.write.clone(),
            deny: m.deny.clone(),
            kind: m.kind.clone(),
            layer: m.layer.clone(),
            title: m.title.clone(),
            summary: m.summary.clone(),
            tags: m.tags.clone(),
            applies_to: m.applies_to.clone(),
            content_uri: m.content_uri.clone(),
            undigested_remote_sources: m.undigested_remote_sources.clone(),
            declares_sources: m.declares_sources,
            declares_canonical_source: m.declares_canonical_source,
            observed_origin: m.observed_origin,
            default_refused: m.default_refused,
            sealed: m.sealed.as_deref().map(str::to_string),
            faults: m.faults.bits(),
        }
    }

    pub fn meta(self) -> Option<Meta> {
        let at = |a: Option<At>| -> Option<Option<DateTime<Utc>>> {
            match a {
                None => Some(None),
                Some(a) => a.get().map(Some),
            }
        };
        Some(Meta {
            authority: self.authority,
            classification: self.classification,
            trust: self.trust,
            status: self.status,
            owner: self.owner,
            created: at(self.created)?,
            updated: at(self.updated)?,
            valid_from: at(self.valid_from)?,
            expires: match (self.expires, self.expires_at) {
                (0, _) => Expires::Omitted,
                (1, _) => Expires::Never,
                (_, Some(t)) => Expires::At(t.get()?),
                _ => return None,
            },
            ttl: self
                .ttl
                .map(|(s, n)| Duration::seconds(s) + Duration::nanoseconds(n.into())),
            supersedes: unrefs(&self.supersedes),
            superseded_by: self.superseded_by.as_deref().map(ObjectRef::parse),
            conflicts_with: unrefs(&self.conflicts_with),
            references: unrefs(&self.references),
            depends_on: unrefs(&self.depends_on),
            confidence: self.confidence.map(f64::from_bits),
            canonical_source: self.canonical_source,
            read: self.read,
            write: self.write,
            deny: self.deny,
            kind: self.kind,
            layer: self.layer,
            title: self.title,
            summary: self.summary,
            tags: self.tags,
            applies_to: self.applies_to,
            content_uri: self.content_uri,
            undigested_remote_sources: self.undigested_remote_sources,
            declares_sources: self.declares_sources,
            declares_canonical_source: self.declares_canonical_source,
            observed_origin: self.observed_origin,
            default_refused: self.default_refused,
            sealed: self.sealed.map(String::into_boxed_str),
            faults: crate::object::Faults::from_bits(self.faults),
        })
    }
}

/// Everything but the document: identity, origin, metadata and the file's findings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub id: Option<String>,
    pub version: Option<u64>,
    pub supplied: Vec<String>,
    pub format: String,
    pub collection: Option<String>,
    pub line: u32,
    pub meta: Option<CachedMeta>,
    /// Findings as the diagnostic schema writes them.
    pub diags: Vec<Value>,
}
