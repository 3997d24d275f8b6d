//! Executors of the harness workspace's `read`, `write`, `edit` and `bash`, over one session per send.

use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::compose::ComposedSend;
use promptgate_core::tools::names;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_store::{SendContext, Store};
use promptgate_workspace::{ShellPool, WorkspaceLimits, WorkspaceSession};
use serde_json::Value;

use super::toolset::Executors;

/// One workspace tool, sharing the send's session with the other three.
struct WorkspaceTool {
    session: Arc<WorkspaceSession>,
    name: &'static str,
}

#[async_trait]
impl ToolExecutor for WorkspaceTool {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        match self.session.call(self.name, &input, super::now()).await {
            Ok(outcome) => match outcome.error_message() {
                Some(message) => Err(ToolError::Failed(message.to_owned())),
                None => Ok(ToolOutput {
                    model_text: Some(outcome.model_text()),
                    output: outcome.output,
                }),
            },
            Err(err) => Err(ToolError::Failed(format!(
                "the workspace is not available: {err}"
            ))),
        }
    }
}

/// Registers the workspace tools when the composed toolset offers them (a harness model that can call tools),
/// and returns their session, which the end of the turn flushes. Nothing is loaded until the model
/// calls one.
pub(super) fn register(
    executors: &mut Executors,
    store: &Store,
    user_id: &str,
    ctx: &SendContext,
    composed: &ComposedSend,
    limits: &WorkspaceLimits,
    shell: &ShellPool,
) -> Option<Arc<WorkspaceSession>> {
    if !composed
        .tools
        .iter()
        .any(|t| names::WORKSPACE.contains(&t.name.as_str()))
    {
        return None;
    }
    let thread = ctx.thread.as_ref().map(|t| t.id.as_str());
    let session = Arc::new(WorkspaceSession::new(
        Arc::new(store.clone()),
        user_id,
        thread,
        limits.clone(),
        shell.clone(),
    ));
    for name in names::WORKSPACE {
        executors.insert(
            name,
            Arc::new(WorkspaceTool {
                session: Arc::clone(&session),
                name,
            }),
        );
    }
    Some(session)
}
