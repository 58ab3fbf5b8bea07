//! The personal vault's tools (seed 004 §9): names and argument shapes as the seed
//! gives them, closed schemas, and descriptions an agent can act on. No argument
//! names a consumer or a token: both are fixed when `ctx mcp` starts.

use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::mcp::tools::{tool, NoArgs, Sensitivity};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The field id, `category.field_name`, e.g. `identity.full_name` or `addresses.current.city`.
    #[schemars(
        length(min = 1, max = 200),
        regex(pattern = r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
    )]
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// Leave out fields above this tier, so nothing waits for the user's approval
    /// (e.g. `standard`). Default: every tier (sensitive and critical need approval).
    pub max_sensitivity: Option<Sensitivity>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestArgs {
    /// The field ids you need; an id also covers the fields under it
    /// (`addresses.current` covers `addresses.current.city`).
    #[schemars(length(min = 1, max = 64), inner(length(min = 1, max = 200)))]
    pub scope: Vec<String>,
    /// Why, in one sentence; shown verbatim to the user when approval is needed.
    #[schemars(length(min = 1, max = 500))]
    pub purpose: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetArgs {
    /// The field id, e.g. `identity.tshirt_size`.
    #[schemars(
        length(min = 1, max = 200),
        regex(pattern = r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
    )]
    pub id: String,
    /// The value: text, or a JSON object or list for a structured field.
    pub value: serde_json::Value,
    /// public | standard | sensitive | critical (default: the field's, or its category's).
    pub sensitivity: Option<Sensitivity>,
}

/// Every tool, in a fixed order.
pub fn all() -> Vec<Tool> {
    vec![
        tool::<NoArgs>(
            "context_status",
            "Vault status",
            "Check whether the personal vault is running and unlocked, how many fields it holds and its \
             categories, and who you are to it (fixed when the server starts). Returns no values. Call it first.",
            true,
        ),
        tool::<NoArgs>(
            "context_list",
            "List fields (metadata only)",
            "List the fields you may see: id, category, sensitivity tier, who wrote it, whether only the user \
             may write it, version. Returns no values. Use it to find ids for context_get or request_context.",
            true,
        ),
        tool::<GetArgs>(
            "context_get",
            "Get one field",
            "Return one field's value. Sensitive fields need the user's approval and critical ones the user \
             retyping the field id as well; the user is asked through your client. Denied: nothing is returned \
             (approval_denied). Fields you may not see are reported as not found.",
            true,
        ),
        tool::<ContextArgs>(
            "context_context",
            "All fields, grouped",
            "Return every field you may see, grouped by category. If sensitive or critical fields are among \
             them the user is asked once for all of them; pass max_sensitivity (e.g. standard) to get only \
             what needs no approval.",
            true,
        ),
        tool::<RequestArgs>(
            "request_context",
            "Request scoped fields",
            "Ask for exactly the fields a task needs (scope: field ids) with a one-sentence purpose. Public and \
             standard fields come at once; sensitive and critical ones after the user approves (the purpose is \
             shown to them verbatim, as the agent's unverified statement).",
            true,
        ),
        tool::<SetArgs>(
            "context_set",
            "Save a field",
            "Save a field to the vault (create or update). Ask the user before calling. You are recorded as the \
             writer; the previous value is kept as history. Sensitive and critical fields need the user's \
             approval; fields only the user may write (tax ids, bank numbers) are refused (user_only_write).",
            false,
        ),
    ]
}
