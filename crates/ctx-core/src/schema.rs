//! The project's own JSON Schemas, embedded in the binary and compiled once.

use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::{json, Value};

/// The eight document kinds of OpenContext v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Manifest,
    Object,
    Role,
    Provenance,
    Decision,
    Diagnostic,
    Bundle,
    AuditEvent,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Manifest,
        Kind::Object,
        Kind::Role,
        Kind::Provenance,
        Kind::Decision,
        Kind::Diagnostic,
        Kind::Bundle,
        Kind::AuditEvent,
    ];

    /// Short name, as used by `ctx schema <name>` and the schema file names.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Manifest => "manifest",
            Kind::Object => "object",
            Kind::Role => "role",
            Kind::Provenance => "provenance",
            Kind::Decision => "decision",
            Kind::Diagnostic => "diagnostic",
            Kind::Bundle => "bundle",
            Kind::AuditEvent => "audit-event",
        }
    }

    /// Accepts `object`, `opencontext-object` (conformance suite spelling) and the like.
    pub fn parse(s: &str) -> Option<Kind> {
        let s = s.strip_prefix("opencontext-").unwrap_or(s);
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The schema document text, embedded at build time.
    pub fn text(self) -> &'static str {
        match self {
            Kind::Manifest => include_str!("../../../schemas/manifest.schema.json"),
            Kind::Object => include_str!("../../../schemas/object.schema.json"),
            Kind::Role => include_str!("../../../schemas/role.schema.json"),
            Kind::Provenance => include_str!("../../../schemas/provenance.schema.json"),
            Kind::Decision => include_str!("../../../schemas/decision.schema.json"),
            Kind::Diagnostic => include_str!("../../../schemas/diagnostic.schema.json"),
            Kind::Bundle => include_str!("../../../schemas/bundle.schema.json"),
            Kind::AuditEvent => include_str!("../../../schemas/audit-event.schema.json"),
        }
    }

    fn index(self) -> usize {
        Kind::ALL.iter().position(|k| *k == self).expect("listed")
    }

    /// The compiled validator, built on first use and shared across threads.
    pub fn validator(self) -> &'static Validator {
        static COMPILED: [OnceLock<Validator>; 8] = [const { OnceLock::new() }; 8];
        COMPILED[self.index()].get_or_init(|| {
            let schema: Value =
                serde_json::from_str(self.text()).expect("embedded schema is valid JSON");
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&schema)
                .expect("embedded schema compiles")
        })
    }
}

/// One schema violation, already shaped for a diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Path to the offending value, as keys and indexes.
    pub path: Vec<PathItem>,
    /// Dotted rendering of `path` (e.g. `sources[0].uri`), empty for the document root.
    pub field: String,
    pub message: String,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathItem {
    Key(String),
    Index(usize),
}

/// Validate `doc` against the schema of `kind`. The valid case costs one pass.
pub fn check(kind: Kind, doc: &Value) -> Vec<Violation> {
    let validator = kind.validator();
    if validator.is_valid(doc) {
        return Vec::new();
    }
    let mut out: Vec<Violation> = validator.iter_errors(doc).map(|e| violation(&e)).collect();
    out.sort_by(|a, b| a.field.cmp(&b.field).then(a.message.cmp(&b.message)));
    out.dedup();
    out
}

fn parse_pointer(ptr: &str) -> Vec<PathItem> {
    if ptr.is_empty() {
        return Vec::new();
    }
    ptr.trim_start_matches('/')
        .split('/')
        .map(|raw| {
            let s = raw.replace("~1", "/").replace("~0", "~");
            match s.parse::<usize>() {
                Ok(i) => PathItem::Index(i),
                Err(_) => PathItem::Key(s),
            }
        })
        .collect()
}

/// `a.b[0].c` from a path.
pub fn dotted(path: &[PathItem]) -> String {
    let mut s = String::new();
    for item in path {
        match item {
            PathItem::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathItem::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

/// Keep actual values short: a schema error must not dump a whole document.
fn abbreviate(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 120 => {
            Value::String(format!("{}…", s.chars().take(120).collect::<String>()))
        }
        Value::Object(_) => Value::String("(an object)".into()),
        Value::Array(a) if a.len() > 8 => Value::String(format!("(an array of {})", a.len())),
        other => other.clone(),
    }
}

fn violation(e: &jsonschema::ValidationError<'_>) -> Violation {
    let mut path = parse_pointer(e.instance_path().as_str());
    let actual = Some(abbreviate(e.instance()));
    let (message, expected, actual) = match e.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default().to_string();
            path.push(PathItem::Key(name.clone()));
            (
                format!("`{name}` is required"),
                Some(json!("a value")),
                Some(json!("missing")),
            )
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let name = unexpected.first().cloned().unwrap_or_default();
            path.push(PathItem::Key(name.clone()));
            (
                format!(
                    "unknown field{} {}",
                    if unexpected.len() > 1 { "s" } else { "" },
                    unexpected
                        .iter()
                        .map(|u| format!("`{u}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(json!(
                    "only fields defined by the schema (custom data goes under `extensions`)"
                )),
                Some(json!(unexpected)),
            )
        }
        ValidationErrorKind::Enum { options } => (
            "value is not one of the allowed values".to_string(),
            Some((**options).clone()),
            actual,
        ),
        ValidationErrorKind::Pattern { pattern } => (
            "value does not have the required form".to_string(),
            Some(json!(format!("a string matching {pattern}"))),
            actual,
        ),
        ValidationErrorKind::Format { format } => (
            format!("value is not a valid {format}"),
            Some(json!(match format.as_str() {
                "date-time" => "an RFC 3339 timestamp such as 2026-08-01T00:00:00Z".to_string(),
                "date" => "a date such as 2026-08-01".to_string(),
                other => other.to_string(),
            })),
            actual,
        ),
        ValidationErrorKind::Type { kind } => (
            "value has the wrong type".to_string(),
            Some(json!(format!("{kind:?}").to_lowercase())),
            actual,
        ),
        ValidationErrorKind::PropertyNames { error } => {
            let name = error.instance().as_str().unwrap_or_default().to_string();
            path.push(PathItem::Key(name.clone()));
            (
                format!("key `{name}` is not allowed here: {error}"),
                None,
                Some(json!(name)),
            )
        }
        _ => (e.to_string(), None, actual),
    };
    Violation {
        field: dotted(&path),
        path,
        message,
        expected,
        actual,
    }
}
