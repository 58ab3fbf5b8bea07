//! The tools: input types (their JSON Schemas are derived from these
//! definitions, closed with `additionalProperties: false`), descriptions an
//! LLM can act on, and argument checks the schema alone cannot make.
//!
//! No argument names a consumer: who the server answers for is fixed at
//! launch, and an argument that tries to set it is refused before anything runs.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;

use ctx_core::personal::Tier;

/// Largest serialized `arguments` object a tool accepts (bytes).
pub const MAX_ARGUMENTS_BYTES: usize = 128 * 1024;

/// Argument names that would change who the server answers for.
pub const IDENTITY_KEYS: [&str; 7] = [
    "agent",
    "role",
    "roles",
    "consumer",
    "as",
    "requester",
    "recipient",
];

/// An object id: dotted lowercase segments.
const ID_PATTERN: &str = r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$";

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only this collection (see `context_status` for the names).
    #[schemars(length(min = 1, max = 100))]
    pub collection: Option<String>,
    /// At most this many rows (default 100); `nextCursor` fetches the next page.
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u64>,
    /// The `nextCursor` of the previous page.
    #[schemars(length(min = 1, max = 40))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The object id, e.g. `procedures.add-command` (from `context_list` or `search`).
    #[schemars(
        length(min = 1, max = 200),
        regex(pattern = r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
    )]
    pub id: String,
    /// Size budget of the whole answer in estimated tokens (default 8000).
    #[schemars(range(min = 500, max = 1000000))]
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// Size budget of the whole answer in estimated tokens (default 8000); the least
    /// relevant objects that do not fit are reported as trimmed.
    #[schemars(range(min = 500, max = 1000000))]
    pub max_tokens: Option<u64>,
}

/// Seed 004 sensitivity tiers.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Sensitivity {
    Public,
    Standard,
    Sensitive,
    Critical,
}

impl Sensitivity {
    pub fn tier(self) -> Tier {
        match self {
            Sensitivity::Public => Tier::Public,
            Sensitivity::Standard => Tier::Standard,
            Sensitivity::Sensitive => Tier::Sensitive,
            Sensitivity::Critical => Tier::Critical,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetArgs {
    /// The id to record the value under, e.g. `notes.customer-timezone`.
    #[schemars(
        length(min = 1, max = 200),
        regex(pattern = r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
    )]
    pub id: String,
    /// The value (Markdown text).
    #[schemars(length(min = 1, max = 65536))]
    pub value: String,
    /// public | standard (internal) | sensitive (confidential) | critical (restricted).
    pub sensitivity: Option<Sensitivity>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestArgs {
    /// What you need: object ids or id patterns (`customers.acme`, `policies.*`).
    #[schemars(length(min = 1, max = 32), inner(length(min = 1, max = 200)))]
    pub scope: Vec<String>,
    /// Why you need it, in one sentence; shown verbatim to the user when approval is needed.
    #[schemars(length(min = 1, max = 500))]
    pub purpose: String,
    /// Size budget of the whole answer in estimated tokens (default 8000).
    #[schemars(range(min = 500, max = 1000000))]
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveArgs {
    /// The task, in words (drives relevance ranking), e.g. "add a command".
    #[schemars(length(min = 1, max = 1000))]
    pub task: String,
    /// Keep at most this many objects (the rest are reported as excluded).
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<u64>,
    /// Size budget of the whole answer in estimated tokens (default 8000): the most
    /// relevant objects that fit are kept (the estimate is stated in the result).
    #[schemars(range(min = 500, max = 1000000))]
    pub max_tokens: Option<u64>,
    /// Narrow to these id patterns (never widens what you may see).
    #[schemars(length(max = 32), inner(length(min = 1, max = 200)))]
    pub include: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words to look for in ids, titles, tags and content.
    #[schemars(length(min = 1, max = 500))]
    pub query: String,
    /// At most this many hits (default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut s = rmcp::handler::server::tool::schema_for_type::<T>();
    // Closed and self-contained: no `$schema`/`title` noise for the model.
    let map = Arc::make_mut(&mut s);
    map.remove("$schema");
    map.remove("title");
    map.entry("properties")
        .or_insert_with(|| serde_json::json!({}));
    s
}

pub(crate) fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &str,
    read_only: bool,
) -> Tool {
    let mut t = Tool::new(name, description.to_string(), schema::<T>());
    t.title = Some(title.to_string());
    let ann = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(false)
        .idempotent(read_only)
        .open_world(false);
    t.annotations = Some(ann);
    t
}

/// Every tool, in a fixed order.
pub fn all() -> Vec<Tool> {
    vec![
        tool::<NoArgs>(
            "context_status",
            "Context status",
            "Check the context repository: whether it loads, who you are to it (your consumer identity is fixed \
             when the server starts), how many objects you may see and in which collections. No approval \
             needed. Call this first.",
            true,
        ),
        tool::<ListArgs>(
            "context_list",
            "List context (metadata only)",
            "List the objects you may see: id, collection, type, title, sensitivity tier and whether reading it \
             needs the user's approval. Returns no values. Use it to discover ids for context_get or \
             request_context.",
            true,
        ),
        tool::<GetArgs>(
            "context_get",
            "Get one object",
            "Return one object as you may see it (authorized, redacted, current version), as Markdown. Sensitive \
             (confidential) objects need the user's approval and critical (restricted) ones a typed \
             confirmation as well; the user is asked through your client. If the user declines, nothing is \
             returned. Objects you may not see are reported as not found.",
            true,
        ),
        tool::<ContextArgs>(
            "context_context",
            "All context, grouped",
            "Return everything you may see, grouped by collection, within a size budget (max_tokens, default \
             8000 estimated tokens). The least relevant objects that do not fit are listed as trimmed. \
             Sensitive objects are included only with the user's approval; otherwise they are listed as withheld.",
            true,
        ),
        tool::<SetArgs>(
            "context_set",
            "Propose a value",
            "Record something you learned (e.g. a preference or fact) under an id. This never overwrites \
             context: where the repository grants you write access to a new id it is written through the \
             governed write path (sensitive or critical values after the user approves); otherwise it becomes \
             a proposal a person reviews. Ask the user before calling. Your identity is recorded as the writer.",
            false,
        ),
        tool::<RequestArgs>(
            "request_context",
            "Request scoped context",
            "Ask for exactly the context a task needs: give the ids or id patterns (scope) and a one-sentence \
             purpose. Public and internal objects in scope are returned at once; sensitive and critical ones \
             after the user approves (the purpose is shown to them verbatim). Selectors that match nothing you \
             may see are reported as not granted.",
            true,
        ),
        tool::<ResolveArgs>(
            "resolve",
            "Resolve context for a task",
            "Resolve the context you may see for a task, ranked by relevance, as a Markdown bundle ready for a \
             prompt, with its deterministic digest (the same digest `ctx resolve` gives). Use max_tokens to fit \
             your context window; trimmed objects are listed. Sensitive objects need the user's approval.",
            true,
        ),
        tool::<SearchArgs>(
            "search",
            "Search context",
            "Search what you may see by words: returns ids, titles and scores (no values). Follow up with \
             context_get or resolve.",
            true,
        ),
    ]
}

/// A tool argument the schema allows but the tool refuses (an MCP
/// `invalid_params` error; the text names the argument, never its value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error(
        "`id` must be a dotted lowercase object id (pattern {ID_PATTERN}), at most 200 characters"
    )]
    Id,
    /// Lengths are in characters.
    #[error("`{name}` must be {min} to {max} characters long, got {got}")]
    Length {
        name: &'static str,
        min: usize,
        max: usize,
        got: usize,
    },
    #[error("`{name}` must be between {min} and {max}, got {got}")]
    Range {
        name: &'static str,
        min: u64,
        max: u64,
        got: u64,
    },
}

/// Checks the schema states but deserialization does not enforce.
pub fn check_id(id: &str) -> Result<(), ArgError> {
    if id.len() <= 200 && regex_lite_match(id) {
        Ok(())
    } else {
        Err(ArgError::Id)
    }
}

fn regex_lite_match(id: &str) -> bool {
    !id.is_empty()
        && id.split('.').all(|s| {
            let mut c = s.chars();
            c.next()
                .is_some_and(|f| f.is_ascii_lowercase() || f.is_ascii_digit())
                && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-' || x == '_')
        })
}

/// A string argument's length bounds (in characters).
pub fn check_len(name: &'static str, s: &str, min: usize, max: usize) -> Result<(), ArgError> {
    let got = s.chars().count();
    if got < min || got > max {
        return Err(ArgError::Length {
            name,
            min,
            max,
            got,
        });
    }
    Ok(())
}

/// An integer argument's bounds.
pub fn check_range(
    name: &'static str,
    v: Option<u64>,
    min: u64,
    max: u64,
) -> Result<Option<usize>, ArgError> {
    match v {
        None => Ok(None),
        Some(got) if got < min || got > max => Err(ArgError::Range {
            name,
            min,
            max,
            got,
        }),
        Some(x) => Ok(Some(x as usize)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_name_the_argument_and_its_bounds() {
        assert_eq!(
            check_len("query", "", 1, 500).unwrap_err().to_string(),
            "`query` must be 1 to 500 characters long, got 0"
        );
        assert_eq!(
            check_range("limit", Some(0), 1, 100)
                .unwrap_err()
                .to_string(),
            "`limit` must be between 1 and 100, got 0"
        );
        assert_eq!(check_id("Policies.x"), Err(ArgError::Id));
        assert!(check_id("policies.returns-v2").is_ok());
    }
}
