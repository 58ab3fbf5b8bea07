//! ctx's own closed JSON Schemas for the Context Layer objects (in
//! `schemas/context-layer/`), embedded at build time and compiled once.
//! They check shape only; the local-profile semantics live in the modules
//! that build and consume each object.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

/// The Context Layer object kinds ctx validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClKind {
    ContextRequest,
    PolicyDecision,
    ScopedContextBundle,
    Receipt,
    MemoryUpdateProposal,
    MinimumRevealResponse,
}

impl ClKind {
    pub const ALL: [ClKind; 6] = [
        ClKind::ContextRequest,
        ClKind::PolicyDecision,
        ClKind::ScopedContextBundle,
        ClKind::Receipt,
        ClKind::MemoryUpdateProposal,
        ClKind::MinimumRevealResponse,
    ];

    /// The schema name (`context-request`, ...), as the conformance kit spells it.
    pub fn name(self) -> &'static str {
        match self {
            ClKind::ContextRequest => "context-request",
            ClKind::PolicyDecision => "policy-decision",
            ClKind::ScopedContextBundle => "scoped-context-bundle",
            ClKind::Receipt => "receipt",
            ClKind::MemoryUpdateProposal => "memory-update-proposal",
            ClKind::MinimumRevealResponse => "minimum-reveal-response",
        }
    }

    /// The object `type` member of this kind.
    pub fn object_type(self) -> &'static str {
        match self {
            ClKind::ContextRequest => "context_request",
            ClKind::PolicyDecision => "policy_decision",
            ClKind::ScopedContextBundle => "scoped_context_bundle",
            ClKind::Receipt => "receipt",
            ClKind::MemoryUpdateProposal => "memory_update_proposal",
            ClKind::MinimumRevealResponse => "minimum_reveal_response",
        }
    }

    pub fn parse(s: &str) -> Option<ClKind> {
        ClKind::ALL
            .into_iter()
            .find(|k| k.name() == s || k.object_type() == s)
    }

    pub fn text(self) -> &'static str {
        match self {
            ClKind::ContextRequest => {
                include_str!("../../../../schemas/context-layer/context-request.schema.json")
            }
            ClKind::PolicyDecision => {
                include_str!("../../../../schemas/context-layer/policy-decision.schema.json")
            }
            ClKind::ScopedContextBundle => {
                include_str!("../../../../schemas/context-layer/scoped-context-bundle.schema.json")
            }
            ClKind::Receipt => {
                include_str!("../../../../schemas/context-layer/receipt.schema.json")
            }
            ClKind::MemoryUpdateProposal => {
                include_str!("../../../../schemas/context-layer/memory-update-proposal.schema.json")
            }
            ClKind::MinimumRevealResponse => include_str!(
                "../../../../schemas/context-layer/minimum-reveal-response.schema.json"
            ),
        }
    }

    fn validator(self) -> &'static Validator {
        static COMPILED: [OnceLock<Validator>; 6] = [const { OnceLock::new() }; 6];
        let i = ClKind::ALL.iter().position(|k| *k == self).expect("listed");
        COMPILED[i].get_or_init(|| {
            let schema: Value =
                serde_json::from_str(self.text()).expect("embedded schema is valid JSON");
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&schema)
                .expect("embedded schema compiles")
        })
    }
}

/// One shape problem: where, and what is wrong (never the offending value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeProblem {
    /// JSON pointer to the offending value (`/selectors/0/predicate`), `/` for the root.
    pub pointer: String,
    pub message: String,
}

/// Does `doc` have the closed shape of `kind`? (The 0.2 form: translate 0.1 first.)
pub fn is_valid(kind: ClKind, doc: &Value) -> bool {
    kind.validator().is_valid(doc) && dates_are_strict(kind, doc)
}

/// Every shape problem, sorted and de-duplicated.
pub fn problems(kind: ClKind, doc: &Value) -> Vec<ShapeProblem> {
    let v = kind.validator();
    let mut out: Vec<ShapeProblem> = v
        .iter_errors(doc)
        .map(|e| {
            let pointer = e.instance_path().as_str().to_string();
            ShapeProblem {
                pointer: if pointer.is_empty() {
                    "/".into()
                } else {
                    pointer
                },
                message: describe(&e),
            }
        })
        .collect();
    if out.is_empty() && !dates_are_strict(kind, doc) {
        out.push(ShapeProblem {
            pointer: "/".into(),
            message:
                "a timestamp is not a strict RFC 3339 date-time (offset hours 00-23, minutes 00-59)"
                    .into(),
        });
    }
    out.sort_by(|a, b| a.pointer.cmp(&b.pointer).then(a.message.cmp(&b.message)));
    out.dedup();
    out
}

/// A one-line summary of the first few problems, for error messages.
pub fn summary(kind: ClKind, doc: &Value) -> Option<String> {
    let p = problems(kind, doc);
    if p.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = p
        .iter()
        .take(4)
        .map(|x| format!("{}: {}", x.pointer, x.message))
        .collect();
    if p.len() > 4 {
        parts.push(format!("and {} more", p.len() - 4));
    }
    Some(parts.join("; "))
}

/// Messages that describe the rule, not the (possibly private) value.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match e.kind() {
        K::Required { property } => format!("`{}` is required", property.as_str().unwrap_or("?")),
        K::AdditionalProperties { unexpected } => format!(
            "unknown member{} {} (the object is closed)",
            if unexpected.len() > 1 { "s" } else { "" },
            unexpected
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        K::Pattern { pattern } => format!("does not match {pattern}"),
        K::Format { format } => format!("is not a valid {format}"),
        K::Type { kind } => format!("has the wrong type (expected {kind:?})").to_lowercase(),
        K::Enum { options } => format!("must be one of {options}"),
        K::Constant { expected_value } => format!("must be {expected_value}"),
        K::MinItems { limit } => format!("needs at least {limit} item(s)"),
        K::MaxItems { limit } => format!("allows at most {limit} item(s)"),
        K::UniqueItems => "items must be unique".into(),
        K::MinLength { limit } => format!("must be at least {limit} character(s)"),
        K::MaxLength { limit } => format!("must be at most {limit} character(s)"),
        K::Minimum { limit } => format!("must be >= {limit}"),
        K::Maximum { limit } => format!("must be <= {limit}"),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => {
            "does not match exactly one allowed form".into()
        }
        K::AnyOf { .. } => "does not match any allowed form".into(),
        _ => "violates the schema".into(),
    }
}

/// The schema's `date-time` format is RFC 3339; the profile's readers also
/// refuse impossible offsets (`+00:60`), which some validators let through.
fn dates_are_strict(kind: ClKind, doc: &Value) -> bool {
    let keys: &[&str] = match kind {
        ClKind::ContextRequest => &["created_at", "expires_at"],
        ClKind::PolicyDecision => &["created_at", "expires_at"],
        ClKind::ScopedContextBundle => &["created_at", "issued_at", "expires_at"],
        ClKind::Receipt => &["created_at", "started_at", "completed_at"],
        ClKind::MemoryUpdateProposal => &["created_at", "expires_at"],
        ClKind::MinimumRevealResponse => &["created_at", "expires_at"],
    };
    keys.iter()
        .all(|k| match doc.get(*k).and_then(Value::as_str) {
            Some(s) => super::canon::parse_time(s).is_some(),
            None => true,
        })
}
