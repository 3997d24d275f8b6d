//! The contract between the turn engine and whatever runs a tool: the engine calls through it and
//! never knows which crate implements it (built-in tools, integrations, MCP, the workspace).

use async_trait::async_trait;
use serde_json::Value;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Shown to the UI as the `output` of `tool-output-available`.
    pub output: Value,
    /// What the model receives as the tool message. `None` means the JSON text of `output`.
    pub model_text: Option<String>,
}

impl ToolOutput {
    pub fn json(output: Value) -> Self {
        Self {
            output,
            model_text: None,
        }
    }

    /// The tool message content for the model.
    pub fn text_for_model(&self) -> String {
        match &self.model_text {
            Some(text) => text.clone(),
            None => self.output.to_string(),
        }
    }
}

/// A failed call. The message is shown to the model (so it can correct itself) and to the UI
/// as `errorText`; it must never carry secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
    /// The user's authorization with the service the tool calls has ended (revoked, or expired
    /// past renewal): only the user can restore it, by connecting again. The text names the service.
    #[error("{0}")]
    Unauthorized(String),
    #[error("the tool call timed out after {0} s")]
    TimedOut(u64),
    #[error("the tool call was cancelled")]
    Cancelled,
}

/// Runs one tool. Implementations must be cancel-safe: the turn drops the future on Stop.
#[async_trait]
pub trait ToolExecutor: Send + Sync {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError>;
}
