//! The harness workspace's files: loaded whole when a thread's harness starts, written back as the
//! set of paths that changed. Rows cascade away with their thread.

use async_trait::async_trait;
use promptgate_core::storage::{StorageError, WorkspaceChanges, WorkspaceEntry, WorkspaceStore};
use sqlx::Row;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, check_client_id, flag};

/// The largest single file the store accepts; the workspace's own limits are stricter by default.
pub const MAX_WORKSPACE_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Longest path kept, in bytes (what Linux allows).
const MAX_PATH_BYTES: usize = 4096;

fn check_entry(entry: &WorkspaceEntry) -> Result<()> {
    check_path(&entry.path)?;
    if entry.content.len() > MAX_WORKSPACE_FILE_BYTES {
        return Err(StoreError::Invalid(format!(
            "workspace file {} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes",
            entry.path
        )));
    }
    if entry.is_dir && !entry.content.is_empty() {
        return Err(StoreError::Invalid(format!(
            "workspace directory {} cannot have content",
            entry.path
        )));
    }
    Ok(())
}

fn check_path(path: &str) -> Result<()> {
    if !path.starts_with('/') || path.len() > MAX_PATH_BYTES || path.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "workspace path must be absolute and at most {MAX_PATH_BYTES} bytes"
        )));
    }
    Ok(())
}

impl Store {
    /// Every entry of the thread's workspace, sorted by path (parents before children). An empty
    /// list for a thread that never used one; NotFound when the thread is not the user's.
    pub async fn load_workspace(&self, user: &str, thread_id: &str) -> Result<Vec<WorkspaceEntry>> {
        check_client_id("thread", thread_id)?;
        self.require_thread(user, thread_id).await?;
        let rows = "SELECT path, is_dir, content FROM workspace_files \
                    WHERE user_id = $1 AND thread_id = $2 ORDER BY path"
            .with_values((user, thread_id))
            .fetch_all(&self.pool, "workspace.load_workspace")
            .await?;
        rows.iter()
            .map(|row| {
                Ok(WorkspaceEntry {
                    path: row.text(0)?,
                    is_dir: row.flag(1)?,
                    content: row.try_get::<Vec<u8>, _>(2)?,
                })
            })
            .collect()
    }

    /// Applies one run's changes atomically: removals first (a path may be removed and written
    /// again), then writes. NotFound when the thread is not the user's; nothing is written then.
    pub async fn save_workspace(
        &self,
        user: &str,
        thread_id: &str,
        changes: &WorkspaceChanges,
    ) -> Result<()> {
        check_client_id("thread", thread_id)?;
        for entry in &changes.written {
            check_entry(entry)?;
        }
        for path in &changes.removed {
            check_path(path)?;
        }
        let now = self.now_ms();
        // It reads before it writes: on SQLite the lock is taken at the start (see `begin_write`).
        let mut tx = self.begin_write().await?;
        let owned = "SELECT 1 FROM threads WHERE user_id = $1 AND id = $2"
            .with_values((user, thread_id))
            .fetch_optional(&mut *tx, "workspace.save_workspace")
            .await?;
        if owned.is_none() {
            return Err(StoreError::NotFound);
        }
        for path in &changes.removed {
            "DELETE FROM workspace_files WHERE user_id = $1 AND thread_id = $2 AND path = $3"
                .with_values((user, thread_id, path))
                .execute(&mut *tx, "workspace.save_workspace")
                .await?;
        }
        for entry in &changes.written {
            "INSERT INTO workspace_files (user_id, thread_id, path, is_dir, content, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (user_id, thread_id, path) DO UPDATE SET \
             is_dir = excluded.is_dir, content = excluded.content, updated_at = excluded.updated_at"
                .with_values((
                    user,
                    thread_id,
                    &entry.path,
                    flag(entry.is_dir),
                    entry.content.clone(),
                    now,
                ))
                .execute(&mut *tx, "workspace.save_workspace")
                .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }

    async fn require_thread(&self, user: &str, thread_id: &str) -> Result<()> {
        "SELECT 1 FROM threads WHERE user_id = $1 AND id = $2"
            .with_values((user, thread_id))
            .fetch_optional(&self.pool, "workspace.require_thread")
            .await?
            .map(|_| ())
            .ok_or(StoreError::NotFound)
    }
}

#[async_trait]
impl WorkspaceStore for Store {
    async fn load_workspace(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Vec<WorkspaceEntry>, StorageError> {
        Ok(Store::load_workspace(self, user_id, thread_id).await?)
    }

    async fn save_workspace(
        &self,
        user_id: &str,
        thread_id: &str,
        changes: &WorkspaceChanges,
    ) -> Result<(), StorageError> {
        Ok(Store::save_workspace(self, user_id, thread_id, changes).await?)
    }
}
