//! Diagnostics as data: the closed code set of the OpenContext diagnostic schema,
//! rendered separately (see [`render`]) for people and machines.

pub mod render;

use serde::Serialize;
use serde_json::Value;

/// Severity of a finding. Ordered so that `Error > Warning > Info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

macro_rules! codes {
    ($($variant:ident => $text:literal),* $(,)?) => {
        /// The normative, closed set of diagnostic codes (spec §15).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text),* }
            }

            pub fn parse(s: &str) -> Option<Code> {
                match s { $($text => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    SchemaInvalid => "schema-invalid",
    ManifestInvalid => "manifest-invalid",
    DuplicateId => "duplicate-id",
    DuplicateCanonical => "duplicate-canonical",
    UnknownAuthority => "unknown-authority",
    ConflictDeclared => "conflict-declared",
    ConflictAmbiguous => "conflict-ambiguous",
    BrokenSupersession => "broken-supersession",
    SupersessionCycle => "supersession-cycle",
    MultipleActiveVersions => "multiple-active-versions",
    BrokenReference => "broken-reference",
    Orphaned => "orphaned",
    MissingOwner => "missing-owner",
    MissingProvenance => "missing-provenance",
    MissingDigest => "missing-digest",
    Stale => "stale",
    Expired => "expired",
    NotYetValid => "not-yet-valid",
    ReviewOverdue => "review-overdue",
    Unapproved => "unapproved",
    UnknownScheme => "unknown-scheme",
    SourceUnavailable => "source-unavailable",
    PathTraversal => "path-traversal",
    InvalidPermission => "invalid-permission",
    UnknownRole => "unknown-role",
    RoleCycle => "role-cycle",
    EmptyScope => "empty-scope",
    SecretDetected => "secret-detected",
    UntrustedCanonical => "untrusted-canonical",
    UnknownExtension => "unknown-extension",
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding. Field names follow the published diagnostic schema so that the
/// JSON form is the struct itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Path relative to the manifest folder, with `/` separators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity,
            message: message.into(),
            id: None,
            ids: Vec::new(),
            file: None,
            line: None,
            column: None,
            field: None,
            expected: None,
            actual: None,
            remediation: None,
        }
    }

    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, message)
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, message)
    }

    pub fn info(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Info, message)
    }

    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    pub fn ids(mut self, ids: Vec<String>) -> Self {
        self.ids = ids;
        self
    }

    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn line(mut self, line: u32) -> Self {
        self.line = Some(line.max(1));
        self
    }

    pub fn at(mut self, line: u32, column: u32) -> Self {
        self.line = Some(line.max(1));
        self.column = Some(column.max(1));
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn expected(mut self, v: impl Into<Value>) -> Self {
        self.expected = Some(v.into());
        self
    }

    pub fn actual(mut self, v: impl Into<Value>) -> Self {
        self.actual = Some(v.into());
        self
    }

    pub fn fix(mut self, remediation: impl Into<String>) -> Self {
        self.remediation = Some(remediation.into());
        self
    }

    /// Total order used for output wherever findings are listed: most severe
    /// first, then file, line, column, code, id and message. Makes reports
    /// independent of load order and thread count.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            std::cmp::Reverse(self.severity),
            self.file.as_deref().unwrap_or(""),
            self.line.unwrap_or(0),
            self.column.unwrap_or(0),
            self.code,
            self.id.as_deref().unwrap_or(""),
            self.message.as_str(),
        )
    }
}

/// Sort diagnostics into their canonical output order and drop exact repeats.
pub fn normalize(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    diags.dedup();
}

/// Counts per severity.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub errors: usize,
    pub warnings: usize,
    pub info: usize,
}

impl Tally {
    pub fn of(diags: &[Diagnostic]) -> Tally {
        let mut t = Tally::default();
        for d in diags {
            match d.severity {
                Severity::Error => t.errors += 1,
                Severity::Warning => t.warnings += 1,
                Severity::Info => t.info += 1,
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_closed() {
        // The set is closed (seed 003 section 15): exactly the published schema's enum.
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../../schemas/diagnostic.schema.json"))
                .unwrap();
        let published: Vec<&str> = schema["$defs"]["code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(ours, published);
        for c in Code::ALL {
            assert_eq!(Code::parse(c.as_str()), Some(*c));
        }
        assert_eq!(Code::parse("made-up"), None);
    }

    #[test]
    fn normalize_orders_by_severity_then_file() {
        let mut d = vec![
            Diagnostic::info(Code::Orphaned, "o").file("a.md").line(1),
            Diagnostic::warning(Code::Stale, "s").file("a.md").line(2),
            Diagnostic::error(Code::Expired, "e").file("z.md").line(9),
            Diagnostic::warning(Code::Stale, "s").file("b.md").line(1),
        ];
        normalize(&mut d);
        let order: Vec<_> = d
            .iter()
            .map(|d| (d.severity, d.file.clone().unwrap()))
            .collect();
        assert_eq!(
            order,
            vec![
                (Severity::Error, "z.md".into()),
                (Severity::Warning, "a.md".into()),
                (Severity::Warning, "b.md".into()),
                (Severity::Info, "a.md".into()),
            ]
        );
    }

    #[test]
    fn normalize_orders_by_file_then_line() {
        let mut d = vec![
            Diagnostic::error(Code::DuplicateId, "b")
                .file("b.md")
                .line(3),
            Diagnostic::error(Code::DuplicateId, "a")
                .file("a.md")
                .line(9),
            Diagnostic::error(Code::DuplicateId, "a")
                .file("a.md")
                .line(2),
            Diagnostic::error(Code::DuplicateId, "a")
                .file("a.md")
                .line(2),
        ];
        normalize(&mut d);
        let order: Vec<_> = d
            .iter()
            .map(|d| (d.file.clone().unwrap(), d.line.unwrap()))
            .collect();
        assert_eq!(
            order,
            vec![("a.md".into(), 2), ("a.md".into(), 9), ("b.md".into(), 3)]
        );
    }
}
