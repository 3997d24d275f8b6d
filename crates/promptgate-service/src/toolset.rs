//! Executors for the tools a composed send offers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_mcp::{McpError, McpHub, McpServerConfig};
use serde_json::Value;

/// Forwards a call to the MCP server the tool was discovered on.
pub struct McpToolExecutor {
    pub hub: McpHub,
    pub server: McpServerConfig,
    pub tool_name: String,
    pub timeout: Duration,
}

#[async_trait]
impl ToolExecutor for McpToolExecutor {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        match self
            .hub
            .call_tool(&self.server, &self.tool_name, input, self.timeout)
            .await
        {
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
                    prepared.push(promptgate_turn::engine::RunnableTool { spec, executor });
                }
                None => {
                    tracing::warn!(tool = %spec.name, "no executor is configured for this tool; not offered")
                }
            }
        }
        (prepared, kept)
    }
}
