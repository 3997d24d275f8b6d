//! The harness engine's per-thread workspace: files and directories kept with the thread, the
//! `read`, `write`, `edit` and `bash` tools over them, and a simulated shell that cannot reach the
//! network, the host's files or its processes.
//!
//! The send path uses three calls: [`ThreadWorkspace::load`] when a harness turn starts,
//! [`ThreadWorkspace::run_tool`] for each call of a tool named in [`TOOL_NAMES`] (with
//! [`tool_specs`] installed before the app's tools), and [`ThreadWorkspace::save`] after each call
//! (or at the end of the turn) so the files survive a restart.
//!
//! Loading and saving go through core's [`WorkspaceStore`] trait, which the store implements; this
//! crate does not depend on the store (its tests use a real one as a dev-dependency).

mod error;
mod limits;
mod pool;
mod session;
mod shell;
mod tools;
mod tree;

use chrono::{DateTime, Utc};
use promptgate_core::storage::WorkspaceStore;
use serde_json::Value;

pub use error::WorkspaceError;
pub use limits::WorkspaceLimits;
pub use pool::{PoolRefusal, ShellPool, ShellPoolSize};
pub use promptgate_core::tools::workspace_specs as tool_specs;
pub use session::WorkspaceSession;
pub use shell::{BashOutcome, command_names, help_text};
pub use tools::{TOOL_NAMES, ToolOutcome, run_tool};
pub use tree::{PathError, Workspace, resolve};

/// True for the names [`ThreadWorkspace::run_tool`] handles.
pub fn is_workspace_tool(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
}

/// One thread's workspace, bound to its owner and thread for loading and saving.
#[derive(Debug, Clone)]
pub struct ThreadWorkspace {
    owner: String,
    /// `None` for a workspace that is never stored.
    thread: Option<String>,
    workspace: Workspace,
}

impl ThreadWorkspace {
    /// The thread's stored workspace (empty for a thread that never used one). The store answers
    /// NotFound when the thread is not the owner's.
    pub async fn load(
        store: &dyn WorkspaceStore,
        owner: &str,
        thread: &str,
        limits: WorkspaceLimits,
    ) -> Result<ThreadWorkspace, WorkspaceError> {
        let entries = store.load_workspace(owner, thread).await?;
        let workspace = Workspace::from_entries(entries, limits).map_err(|e| WorkspaceError::Corrupt(e.0))?;
        Ok(ThreadWorkspace {
            owner: owner.to_owned(),
            thread: Some(thread.to_owned()),
            workspace,
        })
    }

    /// An empty workspace that saving never stores, for a send that has no thread.
    pub fn ephemeral(limits: WorkspaceLimits) -> ThreadWorkspace {
        ThreadWorkspace {
            owner: String::new(),
            thread: None,
            workspace: Workspace::new(limits),
        }
    }

    /// Runs a workspace tool call, `bash` on `pool`; `None` when `name` is not a workspace tool.
    /// `now` is what `date` shows inside the shell.
    pub async fn run_tool(
        &mut self,
        pool: &ShellPool,
        name: &str,
        args: &Value,
        now: DateTime<Utc>,
    ) -> Option<ToolOutcome> {
        run_tool(&mut self.workspace, pool, name, args, now).await
    }

    /// Writes what changed since loading or the last save; nothing when nothing changed. On failure
    /// the changes stay pending, so a later save retries them.
    pub async fn save(&mut self, store: &dyn WorkspaceStore) -> Result<(), WorkspaceError> {
        let Some(thread) = &self.thread else {
            self.workspace.mark_saved();
            return Ok(());
        };
        let changes = self.workspace.changes();
        if changes.is_empty() {
            return Ok(());
        }
        store.save_workspace(&self.owner, thread, &changes).await?;
        self.workspace.mark_saved();
        Ok(())
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}
