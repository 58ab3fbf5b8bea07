//! The context object: the effective document plus typed metadata parsed once at load.

use chrono::Duration;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Authority, Classification, ObjectRef, Status, Trust};
use crate::time::{self, Instant};

/// How a file was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Format {
    Markdown,
    Yaml,
    Json,
}

impl Format {
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(Format::Markdown),
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Where an object came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Path relative to the manifest folder, `/`-separated.
    pub file: String,
    pub format: Format,
    /// The collection (or single `context:` entry) that loaded it.
    pub collection: Option<String>,
    /// 1-based line in `file` where the object's YAML/JSON text starts.
    pub line: u32,
}

/// `expires` has three states: omitted (repository ttl applies), `null` (never), or an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expires {
    Omitted,
    Never,
    At(#[serde(with = "crate::load::cache::codec::instant")] Instant),
}

/// Typed governance metadata, parsed once. Defaults follow the spec:
/// authority `reference`, classification `internal`, trust `trusted`.
/// Serde derives feed the parse cache (a binary encoding; see `load::cache`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub authority: Authority,
    pub classification: Classification,
    pub trust: Trust,
    pub status: Option<Status>,
    pub owner: Option<String>,
    #[serde(with = "crate::load::cache::codec::instant_opt")]
    pub created: Option<Instant>,
    #[serde(with = "crate::load::cache::codec::instant_opt")]
    pub updated: Option<Instant>,
    #[serde(with = "crate::load::cache::codec::instant_opt")]
    pub valid_from: Option<Instant>,
    pub expires: Expires,
    #[serde(with = "crate::load::cache::codec::duration_opt")]
    pub ttl: Option<Duration>,
    pub supersedes: Vec<ObjectRef>,
    pub superseded_by: Option<ObjectRef>,
    pub conflicts_with: Vec<ObjectRef>,
    pub references: Vec<ObjectRef>,
    pub depends_on: Vec<ObjectRef>,
    pub confidence: Option<f64>,
    pub canonical_source: bool,
    pub read: Option<Vec<String>>,
    pub write: Vec<String>,
    pub deny: Vec<String>,
    pub kind: String,
    pub layer: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub applies_to: Vec<String>,
    pub content_uri: Option<String>,
    /// Remote sources (`http(s)://`) declared without a digest: (position, uri).
    pub undigested_remote_sources: Vec<(usize, String)>,
    /// The author declared at least one source (loader defaults never count).
    pub declares_sources: bool,
    /// The author declared `canonical_source: true`.
    pub declares_canonical_source: bool,
    /// For an age-encrypted member of a private collection: its armored ciphertext.
    /// The fields above then come from the clear header only, and `content` is None.
    pub sealed: Option<Box<str>>,
}

/// One loaded context object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextObject {
    pub id: String,
    pub version: Option<u64>,
    /// The effective document as compact JSON: what the author declared, plus
    /// derived `id`/`type` and collection/manifest defaults — every field except
    /// `content`. Kept as text because a parsed tree costs ~10 KB per object;
    /// [`ContextObject::fields`] rebuilds it for the few objects that are output.
    pub doc: Box<str>,
    /// The content: the Markdown body, or inline `content` (text or structured).
    /// Not in the derived encoding: the parse cache keeps it apart, so loads that
    /// never read content (validate, doctor) never decode it.
    #[serde(skip)]
    pub content: Option<Value>,
    /// Keys the loader supplied rather than the author (derived or defaulted).
    #[serde(with = "crate::load::cache::codec::supplied")]
    pub supplied: Vec<&'static str>,
    pub origin: Origin,
    pub meta: Meta,
}

fn refs(v: Option<&Value>) -> Vec<ObjectRef> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(ObjectRef::parse)
            .collect(),
        Some(Value::String(s)) => vec![ObjectRef::parse(s)],
        _ => Vec::new(),
    }
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

impl Meta {
    /// Parse typed metadata from the effective fields. Invalid values fall back to
    /// defaults here; the schema check reports them.
    pub fn from_fields(f: &Map<String, Value>) -> Meta {
        let s = |k: &str| f.get(k).and_then(Value::as_str);
        let ts = |k: &str| s(k).and_then(time::parse_timestamp);
        Meta {
            authority: s("authority")
                .and_then(Authority::parse)
                .unwrap_or(Authority::Reference),
            classification: s("classification")
                .and_then(Classification::parse)
                .unwrap_or(Classification::Internal),
            trust: s("trust").and_then(Trust::parse).unwrap_or(Trust::Trusted),
            status: s("status").and_then(Status::parse),
            owner: s("owner").map(str::to_string),
            created: ts("created"),
            updated: ts("updated"),
            valid_from: ts("valid_from"),
            expires: match f.get("expires") {
                None => Expires::Omitted,
                Some(Value::Null) => Expires::Never,
                Some(Value::String(t)) => match time::parse_timestamp(t) {
                    Some(at) => Expires::At(at),
                    None => Expires::Omitted,
                },
                Some(_) => Expires::Omitted,
            },
            ttl: s("ttl").and_then(time::parse_duration),
            supersedes: refs(f.get("supersedes")),
            superseded_by: s("superseded_by").map(ObjectRef::parse),
            conflicts_with: refs(f.get("conflicts_with")),
            references: refs(f.get("references")),
            depends_on: refs(f.get("depends_on")),
            confidence: f.get("confidence").and_then(Value::as_f64),
            canonical_source: f
                .get("canonical_source")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            read: f.get("permissions").and_then(|p| strings(p.get("read"))),
            write: f
                .get("permissions")
                .and_then(|p| strings(p.get("write")))
                .unwrap_or_default(),
            deny: f
                .get("permissions")
                .and_then(|p| strings(p.get("deny")))
                .unwrap_or_default(),
            kind: s("type").unwrap_or_default().to_string(),
            layer: s("layer").map(str::to_string),
            title: s("title").map(str::to_string),
            summary: s("summary").map(str::to_string),
            tags: strings(f.get("tags")).unwrap_or_default(),
            applies_to: strings(f.get("applies_to")).unwrap_or_default(),
            content_uri: s("content_uri").map(str::to_string),
            undigested_remote_sources: f
                .get("sources")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .enumerate()
                        .filter_map(|(n, src)| {
                            let uri = src.get("uri").and_then(Value::as_str)?;
                            let remote = uri.starts_with("http://") || uri.starts_with("https://");
                            (remote && src.get("digest").is_none()).then(|| (n, uri.to_string()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            declares_sources: f
                .get("sources")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            declares_canonical_source: f
                .get("canonical_source")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            sealed: None,
        }
    }
}

impl ContextObject {
    pub fn kind(&self) -> &str {
        &self.meta.kind
    }

    pub fn title(&self) -> Option<&str> {
        self.meta.title.as_deref()
    }

    /// The full effective document, content included (parsed from `doc`).
    pub fn fields(&self) -> Map<String, Value> {
        let mut map: Map<String, Value> = serde_json::from_str(&self.doc).unwrap_or_default();
        if let Some(c) = &self.content {
            map.insert("content".into(), c.clone());
        }
        map
    }

    /// One field of the effective document (parses `doc`; not for hot loops).
    pub fn field(&self, key: &str) -> Option<Value> {
        if key == "content" {
            return self.content.clone();
        }
        let mut map: Map<String, Value> = serde_json::from_str(&self.doc).ok()?;
        map.remove(key)
    }

    /// `id@version` when a version is declared, else the id.
    pub fn key(&self) -> String {
        match self.version {
            Some(v) => format!("{}@{}", self.id, v),
            None => self.id.clone(),
        }
    }

    /// Was this field supplied by the loader (derived or defaulted) rather than the author?
    pub fn supplied(&self, key: &str) -> bool {
        self.supplied.contains(&key)
    }
}
