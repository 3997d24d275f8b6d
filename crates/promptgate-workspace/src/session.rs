//! One send's handle on its thread's workspace, shared by the four tools' executors.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use promptgate_core::storage::WorkspaceStore;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::{ShellPool, ThreadWorkspace, ToolOutcome, WorkspaceError, WorkspaceLimits, is_workspace_tool};

/// Loads the workspace on the first tool call (a send that never touches it costs no query) and
/// saves after every call that changed something, so what a turn did survives a crash in the middle
/// of it. Calls run one at a time: parallel tool calls of one step see each other's files in order.
///
/// A send without a thread (the OpenAI-compatible facade) gets a workspace that lives for the send
/// only.
pub struct WorkspaceSession {
    store: Arc<dyn WorkspaceStore>,
    owner: String,
    thread: Option<String>,
    limits: WorkspaceLimits,
    /// Where its `bash` calls run, shared by every send of the server.
    shell: ShellPool,
    loaded: Mutex<Option<ThreadWorkspace>>,
}

impl WorkspaceSession {
    pub fn new(
        store: Arc<dyn WorkspaceStore>,
        owner: &str,
        thread: Option<&str>,
        limits: WorkspaceLimits,
        shell: ShellPool,
    ) -> WorkspaceSession {
        WorkspaceSession {
            store,
            owner: owner.to_owned(),
            thread: thread.map(str::to_owned),
            limits,
            shell,
            loaded: Mutex::new(None),
        }
    }

    /// Runs the workspace tool `name`. Err only when the workspace cannot be loaded or `name` is not
    /// a workspace tool; a failed save is logged and retried with the next call (the change stays
    /// in this send's copy meanwhile).
    pub async fn call(
        &self,
        name: &str,
        args: &Value,
        now: DateTime<Utc>,
    ) -> Result<ToolOutcome, WorkspaceError> {
        if !is_workspace_tool(name) {
            return Err(WorkspaceError::UnknownTool(name.to_owned()));
        }
        let mut guard = self.loaded.lock().await;
        let ws = match &mut *guard {
            Some(ws) => ws,
            empty => {
                let ws = match &self.thread {
                    Some(thread) => {
                        ThreadWorkspace::load(self.store.as_ref(), &self.owner, thread, self.limits.clone())
                            .await?
                    }
                    None => ThreadWorkspace::ephemeral(self.limits.clone()),
                };
                empty.insert(ws)
            }
        };
        let outcome = ws
            .run_tool(&self.shell, name, args, now)
            .await
            .ok_or_else(|| WorkspaceError::UnknownTool(name.to_owned()))?;
        if let Err(err) = ws.save(self.store.as_ref()).await {
            tracing::warn!(thread = ?self.thread, error = %err, "workspace changes not saved yet; the next call retries");
        }
        Ok(outcome)
    }

    /// Saves what is still pending (after a failed save); nothing when all is saved or the
    /// workspace was never loaded.
    pub async fn flush(&self) -> Result<(), WorkspaceError> {
        match &mut *self.loaded.lock().await {
            Some(ws) => ws.save(self.store.as_ref()).await,
            None => Ok(()),
        }
    }
}
