//! The context object: the effective document plus typed metadata parsed once at load.

use chrono::Duration;
use serde_json::{Map, Value};

use crate::model::{Authority, Classification, ObjectRef, Status, Trust};
use crate::time::{self, Instant};

/// How a file was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expires {
    Omitted,
    Never,
    At(Instant),
}

/// Typed governance metadata, parsed once. Defaults follow the spec:
/// authority `reference`, classification `internal`, trust `trusted`.
#[derive(Debug, Clone)]
pub struct Meta {
    pub authority: Authority,
    pub classification: Classification,
    pub trust: Trust,
    pub status: Option<Status>,
    pub owner: Option<String>,
    pub created: Option<Instant>,
    pub updated: Option<Instant>,
    pub valid_from: Option<Instant>,
    pub expires: Expires,
    pub ttl: Option<Duration>,
    pub supersedes: Vec<ObjectRef>,
    pub superseded_by: Option<ObjectRef>,
    pub conflicts_with: Vec<ObjectRef>,
    pub references: Vec<ObjectRef>,
    pub depends_on: Vec<ObjectRef>,
    pub confidence: Option<f64>,
    pub canonical_source: bool,
    pub read: Option<Vec<String>>,
    pub deny: Vec<String>,
}

/// One loaded context object.
#[derive(Debug, Clone)]
pub struct ContextObject {
    pub id: String,
    pub version: Option<u64>,
    /// The effective document: what the author declared, plus derived `id`/`type`
    /// and collection/manifest defaults. `content` holds the Markdown body when there is one.
    pub fields: Map<String, Value>,
    /// Keys the loader supplied rather than the author (derived or defaulted).
    pub supplied: Vec<&'static str>,
    pub origin: Origin,
    pub meta: Meta,
}

fn refs(v: Option<&Value>) -> Vec<ObjectRef> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(ObjectRef::parse).collect(),
        Some(Value::String(s)) => vec![ObjectRef::parse(s)],
        _ => Vec::new(),
    }
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
}

impl Meta {
    /// Parse typed metadata from the effective fields. Invalid values fall back to
    /// defaults here; the schema check reports them.
    pub fn from_fields(f: &Map<String, Value>) -> Meta {
        let s = |k: &str| f.get(k).and_then(Value::as_str);
        let ts = |k: &str| s(k).and_then(time::parse_timestamp);
        Meta {
            authority: s("authority").and_then(Authority::parse).unwrap_or(Authority::Reference),
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
            canonical_source: f.get("canonical_source").and_then(Value::as_bool).unwrap_or(false),
            read: f.get("permissions").and_then(|p| strings(p.get("read"))),
            deny: f.get("permissions").and_then(|p| strings(p.get("deny"))).unwrap_or_default(),
        }
    }
}

impl ContextObject {
    pub fn kind(&self) -> &str {
        self.fields.get("type").and_then(Value::as_str).unwrap_or("")
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    pub fn title(&self) -> Option<&str> {
        self.str_field("title")
    }

    /// `id@version` when a version is declared, else the id.
    pub fn key(&self) -> String {
        match self.version {
            Some(v) => format!("{}@{}", self.id, v),
            None => self.id.clone(),
        }
    }

    /// Was this field written by the author (as opposed to supplied by the loader)?
    pub fn declared(&self, key: &str) -> bool {
        self.fields.contains_key(key) && !self.supplied.contains(&key)
    }
}
