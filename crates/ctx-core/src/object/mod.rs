//! The context object: the effective document plus typed metadata parsed once at load.

use chrono::Duration;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{Authority, Classification, ObjectRef, Status, Trust};
use crate::time::{self, Instant};

mod supplied;
pub use supplied::{Supplied, DEFAULTABLE, SUPPLIABLE};

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
    /// The id the file's path gives, as the loader derived it.
    pub path_id: PathId,
}

/// The id an object's path gives it, kept from loading: the id check compares it
/// with the declared id on every run, and deriving it again (a glob match and a
/// few strings per object) was a twentieth of a warm `validate`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathId {
    /// Not from a collection's folder (a `context:` entry, or made in memory):
    /// the check asks the manifest.
    #[default]
    Unknown,
    /// A collection member whose id is the one its path gives.
    Same,
    /// A collection member whose declared id differs from the one its path gives.
    Differs(Box<str>),
}

/// `expires` has three states: omitted (repository ttl applies), `null` (never), or an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expires {
    Omitted,
    Never,
    At(#[serde(with = "crate::load::cache::codec::instant")] Instant),
}

/// Governance fields that were present but invalid, as a compact bit set parsed
/// once at load. An object with any of them is withheld from every consumer-facing
/// output: a value ctx cannot read is never replaced by a permissive default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Faults(u32);

impl Faults {
    /// The fields that govern who sees an object, which version wins and when.
    pub const FIELDS: [&'static str; 21] = [
        "id",
        "version",
        "classification",
        "permissions",
        "permissions.read",
        "permissions.write",
        "permissions.deny",
        "status",
        "authority",
        "trust",
        "created",
        "updated",
        "valid_from",
        "expires",
        "ttl",
        "review",
        "supersedes",
        "superseded_by",
        "redact",
        "content_uri",
        // A top-level key the schema does not define: possibly a misspelt governance field.
        "unknown-field",
    ];

    pub fn from_bits(bits: u32) -> Faults {
        Faults(bits & ((1 << Self::FIELDS.len()) - 1))
    }

    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Record that `field` (one of [`Faults::FIELDS`]) is invalid.
    pub fn mark(&mut self, field: &str) {
        if let Some(i) = Self::FIELDS.iter().position(|f| *f == field) {
            self.0 |= 1 << i;
        }
    }

    pub fn contains(self, field: &str) -> bool {
        Self::FIELDS
            .iter()
            .position(|f| *f == field)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// The governance field a schema path falls under (`permissions.read[0]` → `permissions.read`).
    pub fn field_of(path: &str) -> Option<&'static str> {
        let mut parts = path.split(['.', '[']);
        let top = parts.next()?;
        if top == "permissions" {
            match parts.next() {
                Some("read") => return Some("permissions.read"),
                Some("write") => return Some("permissions.write"),
                Some("deny") => return Some("permissions.deny"),
                _ => {}
            }
        }
        Self::FIELDS.iter().copied().find(|f| *f == top)
    }

    /// Merge two sets.
    pub fn union(self, other: Faults) -> Faults {
        Faults(self.0 | other.0)
    }

    /// What a valid value of `field` looks like (for diagnostics).
    pub fn expected(field: &str) -> &'static str {
        match field {
            "id" => "a dotted lowercase id such as `policies.refunds`",
            "version" => "a whole number, 1 or more",
            "classification" => "public, internal, confidential or restricted",
            "authority" => "canonical, approved, reference, observed, inferred or historical",
            "trust" => "trusted, verified or untrusted",
            "status" => "draft, pending, approved, rejected or retired",
            "created" | "updated" | "valid_from" => "an RFC 3339 timestamp such as 2026-08-01T00:00:00Z",
            "expires" => "an RFC 3339 timestamp such as 2026-08-01T00:00:00Z, or null for never",
            "ttl" => "a duration such as 30d, 12h or 1y",
            "review" => "a mapping of interval (duration), next_review and last_review (dates such as 2026-08-01)",
            "supersedes" => "a list of ids or id@version references",
            "superseded_by" => "an id or id@version reference",
            "redact" => "a list of rules: {path, mode: remove|mask|hash, replacement, reason}",
            "content_uri" => "a non-empty URI",
            "permissions" => "a mapping with read, write and deny lists",
            "permissions.read" | "permissions.write" | "permissions.deny" => "a list of role or agent names",
            _ => "only fields the object schema defines (custom data goes under `extensions`)",
        }
    }

    /// The invalid fields, in [`Faults::FIELDS`] order.
    pub fn fields(self) -> impl Iterator<Item = &'static str> {
        Self::FIELDS
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, f)| *f)
    }
}

/// Typed governance metadata, parsed once. Defaults follow the spec:
/// authority `reference`, classification `internal`, trust `trusted`.
/// Serde derives feed the parse cache (a binary encoding; see `load::cache`).
/// The fields most objects never declare are in [`Rare`], boxed only when one is
/// set, and read through `Deref` (`meta.supersedes`): every loaded object carries
/// a `Meta`, and those fields inline were ~40% of its size.
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
    pub expires: Expires,
    pub references: Vec<ObjectRef>,
    pub confidence: Option<f64>,
    pub canonical_source: bool,
    pub kind: String,
    pub layer: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub applies_to: Vec<String>,
    /// The author declared at least one source (loader defaults never count).
    pub declares_sources: bool,
    /// The author declared `canonical_source: true`.
    pub declares_canonical_source: bool,
    /// A declared source says the material was observed, overheard or inferred
    /// (`type: observation | conversation | inference`) or is untrusted.
    pub observed_origin: bool,
    /// Governance fields present but invalid: such an object is never served.
    pub faults: Faults,
    /// None when every field of [`Rare`] is empty (see [`Meta::rare_mut`]).
    rare: Option<Box<Rare>>,
}

/// The fields of [`Meta`] few objects set: lifecycle links, permissions, a
/// `content_uri`, sealed private members.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rare {
    #[serde(with = "crate::load::cache::codec::instant_opt")]
    pub valid_from: Option<Instant>,
    #[serde(with = "crate::load::cache::codec::duration_opt")]
    pub ttl: Option<Duration>,
    pub supersedes: Vec<ObjectRef>,
    pub superseded_by: Option<ObjectRef>,
    pub conflicts_with: Vec<ObjectRef>,
    pub depends_on: Vec<ObjectRef>,
    pub read: Option<Vec<String>>,
    pub write: Vec<String>,
    pub deny: Vec<String>,
    pub content_uri: Option<String>,
    /// Remote sources (`http(s)://`) declared without a digest: (position, uri).
    pub undigested_remote_sources: Vec<(usize, String)>,
    /// A default authority that was refused because it would have made untrusted or
    /// observed material canonical or approved (the object then resolves as observed).
    pub default_refused: Option<Authority>,
    /// For an age-encrypted member of a private collection: its armored ciphertext.
    /// The fields above then come from the clear header only, and `content` is None.
    pub sealed: Option<Box<str>>,
}

/// What [`Meta`] reads when no rare field is set (and how it tells none is).
static NO_RARE: Rare = Rare {
    valid_from: None,
    ttl: None,
    supersedes: Vec::new(),
    superseded_by: None,
    conflicts_with: Vec::new(),
    depends_on: Vec::new(),
    read: None,
    write: Vec::new(),
    deny: Vec::new(),
    content_uri: None,
    undigested_remote_sources: Vec::new(),
    default_refused: None,
    sealed: None,
};

impl std::ops::Deref for Meta {
    type Target = Rare;

    fn deref(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }
}

impl Meta {
    /// The rare fields, to set one (boxed on first use).
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }
}

/// What validate, doctor and the pre-commit hook look for in an object's document
/// rather than its typed metadata (fields, as they appear in its compact JSON, and
/// the `file://` sources doctor checks). A checks-only load keeps the documents that
/// mention one of them, and those of sealed private members, and elides the rest
/// (most of a repository's metadata by size); reading anything else from an elided
/// document is a bug, caught by debug assertions in [`ContextObject::field`] and
/// [`ContextObject::document`].
pub const CHECKED_FIELDS: [&str; 6] = [
    "\"redact\"",
    "\"bundle\"",
    "\"review\"",
    "\"approval\"",
    "\"ttl\"",
    "file://",
];

/// One loaded context object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextObject {
    pub id: String,
    pub version: Option<u64>,
    /// The effective document as compact JSON: what the author declared, plus
    /// derived `id`/`type` and collection/manifest defaults — every field except
    /// `content`. Kept as text because a parsed tree costs ~10 KB per object;
    /// [`ContextObject::fields`] rebuilds it for the few objects that are output.
    /// Empty when a checks-only load elided it ([`ContextObject::elide_doc`]). The
    /// parse cache stores it beside the derived encoding, so such a load never
    /// allocates it.
    #[serde(skip)]
    pub doc: Box<str>,
    /// The content: the Markdown body, or inline `content` (text or structured).
    /// Not in the derived encoding: the parse cache keeps it apart, so loads that
    /// never read content (validate, doctor) never decode it.
    #[serde(skip)]
    pub content: Option<Value>,
    /// Keys the loader supplied rather than the author (derived or defaulted).
    pub supplied: Supplied,
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
    /// Parse typed metadata from the effective fields. Defaults apply only to absent
    /// fields: a present governance field that does not parse is recorded in
    /// [`Meta::faults`] (the lenient value below is then never used to serve it).
    pub fn from_fields(f: &Map<String, Value>) -> Meta {
        let s = |k: &str| f.get(k).and_then(Value::as_str);
        let ts = |k: &str| s(k).and_then(time::parse_timestamp);
        let rare = Rare {
            valid_from: ts("valid_from"),
            ttl: s("ttl").and_then(time::parse_duration),
            supersedes: refs(f.get("supersedes")),
            superseded_by: s("superseded_by").map(ObjectRef::parse),
            conflicts_with: refs(f.get("conflicts_with")),
            depends_on: refs(f.get("depends_on")),
            read: f.get("permissions").and_then(|p| strings(p.get("read"))),
            write: f
                .get("permissions")
                .and_then(|p| strings(p.get("write")))
                .unwrap_or_default(),
            deny: f
                .get("permissions")
                .and_then(|p| strings(p.get("deny")))
                .unwrap_or_default(),
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
            default_refused: None,
            sealed: None,
        };
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
            expires: match f.get("expires") {
                None => Expires::Omitted,
                Some(Value::Null) => Expires::Never,
                Some(Value::String(t)) => match time::parse_timestamp(t) {
                    Some(at) => Expires::At(at),
                    None => Expires::Omitted,
                },
                Some(_) => Expires::Omitted,
            },
            references: refs(f.get("references")),
            confidence: f.get("confidence").and_then(Value::as_f64),
            canonical_source: f
                .get("canonical_source")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            kind: s("type").unwrap_or_default().to_string(),
            layer: s("layer").map(str::to_string),
            title: s("title").map(str::to_string),
            summary: s("summary").map(str::to_string),
            tags: strings(f.get("tags")).unwrap_or_default(),
            applies_to: strings(f.get("applies_to")).unwrap_or_default(),
            declares_sources: f
                .get("sources")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            declares_canonical_source: f
                .get("canonical_source")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            observed_origin: f.get("sources").and_then(Value::as_array).is_some_and(|a| {
                a.iter().any(|src| {
                    matches!(
                        src.get("type").and_then(Value::as_str),
                        Some("observation" | "conversation" | "inference")
                    ) || src.get("trust").and_then(Value::as_str) == Some("untrusted")
                })
            }),
            faults: governance_faults(f),
            rare: (rare != NO_RARE).then(|| Box::new(rare)),
        }
    }
}

fn is_ref(s: &str) -> bool {
    let id = match s.rsplit_once('@') {
        Some((id, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => id,
        _ => s,
    };
    crate::pattern::valid_id(id)
}

fn string_list(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|a| a.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty())))
}

/// The governance fields of `f` that are present but do not parse.
fn governance_faults(f: &Map<String, Value>) -> Faults {
    let mut out = Faults::default();
    // A decision record has its own status vocabulary (decision schema).
    let decision = f.get("type").and_then(Value::as_str) == Some("decision");
    let ts = |v: &Value| v.as_str().and_then(time::parse_timestamp).is_some();
    for (key, v) in f {
        let ok = match key.as_str() {
            "id" => v.as_str().is_some_and(crate::pattern::valid_id),
            "version" => v.as_u64().is_some_and(|n| n >= 1),
            "classification" => v.as_str().and_then(Classification::parse).is_some(),
            "authority" => v.as_str().and_then(Authority::parse).is_some(),
            "trust" => v.as_str().and_then(Trust::parse).is_some(),
            "status" if decision => v.as_str().is_some_and(|s| {
                [
                    "proposed",
                    "accepted",
                    "rejected",
                    "superseded",
                    "deprecated",
                ]
                .contains(&s)
            }),
            "status" => v.as_str().and_then(Status::parse).is_some(),
            "created" | "updated" | "valid_from" => ts(v),
            "expires" => v.is_null() || ts(v),
            "ttl" => v.as_str().and_then(time::parse_duration).is_some(),
            "content_uri" => v.as_str().is_some_and(|s| !s.is_empty()),
            "superseded_by" => v.as_str().is_some_and(is_ref),
            "supersedes" => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.as_str().is_some_and(is_ref))),
            "redact" => crate::resolve::redact::Rule::list(v).is_ok(),
            "review" => v.as_object().is_some_and(|r| {
                r.iter().all(|(k, x)| match k.as_str() {
                    "interval" => x.as_str().and_then(time::parse_duration).is_some(),
                    "next_review" | "last_review" => {
                        x.as_str().and_then(time::parse_date).is_some()
                    }
                    "required_approvers" => x.as_u64().is_some_and(|n| n >= 1),
                    _ => false,
                })
            }),
            "permissions" => {
                let Some(p) = v.as_object() else {
                    out.mark("permissions");
                    continue;
                };
                for (k, list) in p {
                    match k.as_str() {
                        "read" | "write" | "deny" if string_list(list) => {}
                        "read" => out.mark("permissions.read"),
                        "write" => out.mark("permissions.write"),
                        "deny" => out.mark("permissions.deny"),
                        _ => out.mark("permissions"),
                    }
                }
                true
            }
            _ => true,
        };
        if !ok {
            out.mark(key);
        }
    }
    out
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
        let mut map: Map<String, Value> = serde_json::from_str(self.document()).unwrap_or_default();
        if let Some(c) = &self.content {
            map.insert("content".into(), c.clone());
        }
        map
    }

    /// One field of the effective document: reads `doc` up to that key and builds
    /// only its value (absent keys cost a substring search).
    pub fn field(&self, key: &str) -> Option<Value> {
        if key == "content" {
            return self.content.clone();
        }
        if self.doc.is_empty() {
            // Elided: it mentions none of the fields checks read from documents.
            debug_assert!(
                CHECKED_FIELDS.contains(&format!("\"{key}\"").as_str()),
                "`{key}` of {} read from a document a checks-only load elided",
                self.id
            );
            return None;
        }
        crate::json::member(&self.doc, key)
    }

    /// Does the document mention `needle` (a quoted field name, or `file://`)? The
    /// cheap test callers make before parsing a field out of it. On a document a
    /// checks-only load elided, only the [`CHECKED_FIELDS`] may be asked about
    /// (their absence is what elision proved); anything else is a bug, caught here.
    pub fn mentions(&self, needle: &str) -> bool {
        if self.doc.is_empty() {
            debug_assert!(
                CHECKED_FIELDS.contains(&needle),
                "{needle} looked for in the document of {}, which a checks-only load elided",
                self.id
            );
            return false;
        }
        self.doc.contains(needle)
    }

    /// The effective document as compact JSON (for the few callers that parse it whole).
    pub fn document(&self) -> &str {
        debug_assert!(
            !self.doc.is_empty(),
            "the document of {} was elided by a checks-only load",
            self.id
        );
        &self.doc
    }

    /// Does a checks-only load keep this object's document? When it mentions one of
    /// the [`CHECKED_FIELDS`] (a mention need not be a key: keeping a document too
    /// many costs memory, never a finding), or it belongs to a sealed private member.
    pub fn doc_is_checked(&self) -> bool {
        self.meta.sealed.is_some() || CHECKED_FIELDS.iter().any(|f| self.doc.contains(f))
    }

    /// Drop the effective document unless checks read it ([`Self::doc_is_checked`]).
    pub fn elide_doc(&mut self) {
        if !self.doc_is_checked() {
            self.doc = Box::from("");
        }
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
        self.supplied.contains(key)
    }
}

#[cfg(test)]
mod tests;
