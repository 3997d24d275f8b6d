//! Executors for the tools a composed send offers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_mcp::{McpError, McpHub, McpServerConfig, McpToolResult};

use crate::consent::{Consent, ConsentSetup, MAX_CONSENTS_PER_CALL};
use crate::elicit::ElicitationSetup;
use crate::mcp_known::has_static_secret;
use crate::mcp_oauth::McpGrants;
use promptgate_core::settings::IntegrationProvider;
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
    /// How the user is asked to authorize the server again mid-call, when it refuses the grant.
    pub(crate) consent: Option<ConsentSetup>,
}

impl McpToolExecutor {
    /// One attempt with `server`'s credentials; a token the server refuses is renewed once and
    /// the call made again.
    async fn attempt(&self, server: &McpServerConfig, input: Value) -> Result<McpToolResult, McpError> {
        let elicitor = || {
            self.elicitation
                .as_ref()
                .and_then(|setup| setup.for_current_call(&self.server.name))
        };
        let first = self
            .hub
            .call_tool_asking(server, &self.tool_name, input.clone(), self.timeout, elicitor())
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
            ..server.clone()
        };
        self.hub
            .call_tool_asking(&renewed, &self.tool_name, input, self.timeout, elicitor())
            .await
    }

    /// The consent a failed attempt calls for: a server the user authorized (or that has no
    /// static secret) still refusing after a renewal, or asking for scopes the grant lacks.
    async fn consent_for(&self, failed: &McpError) -> Option<Consent> {
        let grants = self.grants.as_ref()?;
        let (user_id, id) = (&self.server.user_id, &self.server.id);
        let challenged = match failed {
            McpError::Unauthorized { status: 401 } => None,
            McpError::InsufficientScope { scope } => scope.clone(),
            _ => return None,
        };
        if has_static_secret(&self.server, grants.has_grant(user_id, id).await) {
            return None;
        }
        // What the card shows is what authorizing asks for: the scopes granted and wanted since,
        // with the challenge's.
        let wanted = grants.wanted_scopes(user_id, id).await;
        Some(Consent::Mcp {
            server_id: id.clone(),
            name: self.server.name.clone(),
            scope: promptgate_mcp::oauth::union_scopes([wanted.as_deref(), challenged.as_deref()]),
        })
    }

    /// The call, with the user asked to authorize the server (again) when it refuses the grant,
    /// and made again once they did.
    async fn call_consenting(&self, input: Value) -> Result<McpToolResult, ToolError> {
        let mut server = self.server.clone();
        let mut asked = 0;
        loop {
            let error = match self.attempt(&server, input.clone()).await {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            let (Some(setup), Some(consent)) = (&self.consent, self.consent_for(&error).await) else {
                return Err(self.tool_error(error));
            };
            if asked == MAX_CONSENTS_PER_CALL {
                return Err(self.tool_error(error));
            }
            asked += 1;
            setup.ask(&consent).await?;
            // The new grant's token: the one the call held is the refused one.
            if let Some(grants) = &self.grants {
                server.bearer_token = grants
                    .access_token(&self.server.user_id, &self.server.id, false)
                    .await
                    .or(server.bearer_token);
            }
        }
    }

    fn tool_error(&self, error: McpError) -> ToolError {
        match error {
            McpError::Timeout(d) => ToolError::TimedOut(d.as_secs()),
            err => ToolError::Failed(format!("the MCP server {} failed: {err}", self.server.name)),
        }
    }
}

#[async_trait]
impl ToolExecutor for McpToolExecutor {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let result = self.call_consenting(input).await?;
        if result.is_error {
            return Err(ToolError::Failed(result.model_text));
        }
        Ok(ToolOutput {
            output: result.ui_output,
            model_text: Some(result.model_text),
        })
    }
}

/// Runs an integration's tool, and when the provider no longer accepts the user's grant, asks the
/// user to connect it again mid-turn and runs the tool once more.
pub(crate) struct ConsentingExecutor {
    pub inner: Arc<dyn ToolExecutor>,
    pub provider: IntegrationProvider,
    pub consent: ConsentSetup,
}

#[async_trait]
impl ToolExecutor for ConsentingExecutor {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        match self.inner.call(input.clone()).await {
            Err(ToolError::Unauthorized(_)) => {
                self.consent.ask(&Consent::Integration(self.provider)).await?;
                self.inner.call(input).await
            }
            other => other,
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
