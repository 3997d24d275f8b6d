//! A user's task list, as the `addTasks`, `getTasks` and `deleteTasks` tools keep it (the store is
//! their `TaskStore`).

use async_trait::async_trait;
use promptgate_core::storage::{StorageError, Task, TaskStore};
use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, check_name, new_id, placeholders};

/// One tool call adds or deletes at most this many tasks.
const MAX_BATCH: usize = 100;
const MAX_ITEM: usize = 2_000;

fn task_from(row: &AnyRow) -> Result<Task> {
    Ok(Task {
        id: row.text(0)?,
        item: row.text(1)?,
        completed: row.flag(2)?,
        created_at: row.int(3)?,
    })
}

fn check_batch(len: usize) -> Result<()> {
    if len > MAX_BATCH {
        return Err(StoreError::Invalid(format!("at most {MAX_BATCH} tasks at once")));
    }
    Ok(())
}

impl Store {
    /// Adds the items in order, all or nothing. NotFound when the user does not exist.
    pub async fn add_tasks(&self, user: &str, items: &[String]) -> Result<Vec<Task>> {
        check_batch(items.len())?;
        for item in items {
            check_name("task", item, MAX_ITEM)?;
        }
        let mut tx = self.begin_writing_first().await?;
        let mut tasks = Vec::with_capacity(items.len());
        for item in items {
            let task = Task {
                id: new_id(),
                item: item.trim().to_owned(),
                completed: false,
                created_at: self.now_ms(),
            };
            let done = "INSERT INTO tasks (id, user_id, item, completed, created_at) \
                        SELECT $1, id, $3, 0, $4 FROM users WHERE id = $2"
                .with_values((&task.id, user, &task.item, task.created_at))
                .execute(&mut *tx, "tasks.add_tasks")
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
            tasks.push(task);
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(tasks)
    }

    /// Oldest first.
    pub async fn list_tasks(&self, user: &str) -> Result<Vec<Task>> {
        let rows = "SELECT id, item, completed, created_at FROM tasks WHERE user_id = $1 \
                    ORDER BY created_at, id"
            .with_values((user,))
            .fetch_all(&self.pool, "tasks.list_tasks")
            .await?;
        rows.iter().map(task_from).collect()
    }

    /// Deletes those of `ids` that are the user's tasks and returns how many went.
    pub async fn delete_tasks(&self, user: &str, ids: &[String]) -> Result<u64> {
        check_batch(ids.len())?;
        if ids.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "DELETE FROM tasks WHERE user_id = $1 AND id IN ({})",
            placeholders(2, ids.len())
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(user);
        for id in ids {
            q = q.bind(id.as_str());
        }
        Ok(q.execute(&self.writer)
            .observed("tasks.delete_tasks")
            .await?
            .rows_affected())
    }
}

#[async_trait]
impl TaskStore for Store {
    async fn add_tasks(&self, user_id: &str, items: &[String]) -> Result<Vec<Task>, StorageError> {
        Ok(Store::add_tasks(self, user_id, items).await?)
    }

    async fn list_tasks(&self, user_id: &str) -> Result<Vec<Task>, StorageError> {
        Ok(Store::list_tasks(self, user_id).await?)
    }

    async fn delete_tasks(&self, user_id: &str, ids: &[String]) -> Result<u64, StorageError> {
        Ok(Store::delete_tasks(self, user_id, ids).await?)
    }
}
