//! One rmcp server for the tests that need tools of their own: it lists the tools it is given and
//! answers every call with the test's function, so each test says only what differs (its tools, its
//! answers, what it records) and the `ServerHandler` plumbing is written once.

use std::sync::Arc;

use promptgate_mcp::testing::McpTestServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;

/// What the server answers to a `tools/call`, given the request and its context.
type Answer =
    Arc<dyn Fn(&CallToolRequestParams, &RequestContext<RoleServer>) -> CallToolResult + Send + Sync>;

#[derive(Clone)]
pub struct ToolsServer {
    name: &'static str,
    version: &'static str,
    instructions: Option<&'static str>,
    tools: Vec<Tool>,
    ttl_ms: Option<u64>,
    answer: Answer,
}

impl ToolsServer {
    /// A server that calls itself `name` `version`, lists `tools` and answers calls with `answer`.
    pub fn new(
        name: &'static str,
        version: &'static str,
        tools: Vec<Tool>,
        answer: impl Fn(&CallToolRequestParams, &RequestContext<RoleServer>) -> CallToolResult
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            name,
            version,
            instructions: None,
            tools,
            ttl_ms: None,
            answer: Arc::new(answer),
        }
    }

    pub fn with_instructions(mut self, instructions: &'static str) -> Self {
        self.instructions = Some(instructions);
        self
    }

    /// Puts `ttlMs` on the tool list, as servers do that want clients to reuse it.
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Serves it on loopback at `/mcp`.
    pub async fn start(self) -> McpTestServer {
        McpTestServer::with_handler(self).await
    }
}

/// An input schema with one string property, `argument`.
pub fn one_string_argument(argument: &str) -> Arc<JsonObject> {
    let schema = json!({"type": "object", "properties": {argument: {"type": "string"}}});
    Arc::new(schema.as_object().cloned().unwrap())
}

impl ServerHandler for ToolsServer {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name, self.version));
        match self.instructions {
            Some(instructions) => info.with_instructions(instructions),
            None => info,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let list = ListToolsResult::with_all_items(self.tools.clone());
        Ok(match self.ttl_ms {
            Some(ttl_ms) => list.with_ttl_ms(ttl_ms),
            None => list,
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok((self.answer)(&request, &context).into())
    }
}
