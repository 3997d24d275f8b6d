//! Executors for the tools a composed send offers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_mcp::{McpError, McpHub, McpServerConfig, McpToolResult};

use crate::elicit::ElicitationSetup;
use crate::mcp_oauth::McpGrants;
use serde_json::Value;

/// Forwards a call to the MCP server the tool was discovered on.
pub struct McpToolExecutor {
    pub hub: McpHub,
    pub server: McpServerConfig,
    pub tool_name: String,
    pub timeout: Duration,
    /// Set when the user authorized the server with OAuth: a token the server refuses mid-turn is
    /// renewed and the call made once more.
    pub(crate) grants: Option<McpGrants>,
    /// How a question the server asks during the call reaches the user.
    pub(crate) elicitation: Option<ElicitationSetup>,
}

impl McpToolExecutor {
    async fn call_once(&self, input: Value) -> Result<McpToolResult, McpError> {
        let elicitor = || {
            self.elicitation
                .as_ref()
                .and_then(|setup| setup.for_current_call(&self.server.name))
        };
        let first = self
            .hub
            .call_tool_asking(
                &self.server,
                &self.tool_name,
                input.clone(),
                self.timeout,
                elicitor(),
            )
            .await;
        if let (Err(McpError::InsufficientScope { scope }), Some(grants)) = (&first, &self.grants) {
            grants
                .want_wider_scope(&self.server.user_id, &self.server.id, scope.as_deref())
                .await;
            return first;
        }
        let (Err(McpError::Unauthorized { status: 401 }), Some(grants)) = (&first, &self.grants) else {
            return first;
        };
        let Some(token) = grants
            .access_token(&self.server.user_id, &self.server.id, true)
            .await
        else {
            return first;
        };
        let renewed = McpServerConfig {
            bearer_token: Some(token),
            ..self.server.clone()
        };
        self.hub
            .call_tool_asking(&renewed, &self.tool_name, input, self.timeout, elicitor())
            .await
    }
}

#[async_trait]
impl ToolExecutor for McpToolExecutor {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        match self.call_once(input).await {
            Ok(result) if result.is_error => Err(ToolError::Failed(result.model_text)),
            Ok(result) => Ok(ToolOutput {
                output: result.ui_output,
                model_text: Some(result.model_text),
            }),
            Err(McpError::Timeout(d)) => Err(ToolError::TimedOut(d.as_secs())),
            Err(err) => Err(ToolError::Failed(format!(
                "the MCP server {} failed: {err}",
                self.server.name
            ))),
        }
    }
}

/// The executors available to one send, by tool name.
#[derive(Default)]
pub struct Executors {
    by_name: HashMap<String, Arc<dyn ToolExecutor>>,
}

impl Executors {
    pub fn insert(&mut self, name: &str, executor: Arc<dyn ToolExecutor>) {
        self.by_name.insert(name.to_owned(), executor);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn ToolExecutor>> {
        self.by_name.get(name).cloned()
    }

    /// Keeps the specs that have an executor, in order; the others are logged and not offered.
    pub fn attach(
        &self,
        specs: Vec<ToolSpec>,
    ) -> (Vec<promptgate_turn::engine::RunnableTool>, Vec<ToolSpec>) {
        let mut prepared = Vec::with_capacity(specs.len());
        let mut kept = Vec::with_capacity(specs.len());
        for spec in specs {
            match self.get(&spec.name) {
                Some(executor) => {
                    kept.push(spec.clone());
                    prepared.push(promptgate_turn::engine::RunnableTool::allowed(spec, executor));
                }
                None => {
                    tracing::warn!(tool = %spec.name, "no executor is configured for this tool; not offered")
                }
            }
        }
        (prepared, kept)
    }
}
