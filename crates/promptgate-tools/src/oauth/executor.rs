//! One executor shape for every OAuth-backed tool: a shared per-user client plus which tool to run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// A family of tools served by one API client (the Google tools, the Microsoft tools).
#[async_trait]
pub trait IntegrationTool: Copy + std::fmt::Debug + Send + Sync + 'static {
    type Client: std::fmt::Debug + Send + Sync + 'static;

    /// Every tool of the family.
    const ALL: &'static [Self];

    /// The name the model calls it by.
    fn name(self) -> &'static str;

    /// Parses `input` and runs the tool.
    async fn run(self, client: &Self::Client, input: &Value) -> Result<Value, ToolError>;
}

/// Runs one tool of a family for the user the client belongs to.
#[derive(Debug)]
pub struct IntegrationExecutor<T: IntegrationTool> {
    client: Arc<T::Client>,
    tool: T,
}

impl<T: IntegrationTool> IntegrationExecutor<T> {
    pub fn new(client: Arc<T::Client>, tool: T) -> Self {
        Self { client, tool }
    }

    /// Every tool of the family by name, sharing one client (and so one token source).
    pub fn all(client: Arc<T::Client>) -> Vec<(&'static str, Arc<dyn ToolExecutor>)> {
        T::ALL
            .iter()
            .map(|&tool| {
                (
                    tool.name(),
                    Arc::new(Self::new(client.clone(), tool)) as Arc<dyn ToolExecutor>,
                )
            })
            .collect()
    }
}

#[async_trait]
impl<T: IntegrationTool> ToolExecutor for IntegrationExecutor<T> {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.tool.run(&self.client, &input).await.map(ToolOutput::json)
    }
}
