//! The session of a server whose repository did not load and whose consumer is
//! therefore unknown: it answers `initialize` (so the host can show something
//! other than "connection closed"), lists the usual tools, and every call
//! returns the finding and the fix. It reads nothing and serves nothing.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ServerHandler;

/// See the module comment.
#[derive(Clone)]
pub struct Unloaded {
    finding: Arc<String>,
    tools: Arc<Vec<Tool>>,
}

impl Unloaded {
    pub fn new(e: &ctx_core::error::Error) -> Unloaded {
        let mut finding =
            format!("ctx could not load the context repository, so it serves nothing: {e}");
        if let Some(h) = e.help() {
            finding.push_str(&format!("\nhelp: {h}"));
        }
        finding.push_str(
            "\nFix the repository (`ctx validate` shows every finding), then restart this MCP server.",
        );
        Unloaded {
            finding: Arc::new(finding),
            tools: Arc::new(super::tools::all()),
        }
    }
}

impl ServerHandler for Unloaded {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ctx", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.finding.as_str().to_string())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(self.finding.as_str())]).into())
    }
}
