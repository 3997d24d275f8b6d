//! Tool calls waiting for the user's approval, kept with the answer that asked (see migration
//! 0020). Each is answered once: taking it for a continuation and cancelling it both move it out
//! of `pending` in a single conditional update, so two devices (or instances) answering at once,
//! or an answer sent again, find it gone.

use std::time::Duration;

use crate::connect::Store;
use crate::error::Result;
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, expiry};

/// A call to keep as waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApproval {
    pub approval_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The call's input as JSON text.
    pub input: String,
    /// The model that made the call.
    pub model_id: String,
}

/// A waiting call as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredApproval {
    pub approval_id: String,
    pub thread_id: String,
    pub message_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: String,
    pub model_id: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// Its time is up: an answer to it now counts as a denial.
    pub expired: bool,
}

/// How long answered, cancelled and expired approvals are kept after they expire, so a late or
/// replayed answer is told what became of its call rather than that it never existed.
pub(crate) const KEPT_AFTER_EXPIRY_MS: i64 = 24 * 60 * 60 * 1000;

const COLUMNS: &str =
    "approval_id, thread_id, message_id, tool_call_id, tool_name, input, created_at, expires_at, model_id";

impl Store {
    /// Keeps the calls of `message_id` that wait for approval, each until `ttl` from now. Keeping
    /// one again changes nothing (a retried save).
    pub async fn keep_approvals(
        &self,
        user_id: &str,
        thread_id: &str,
        message_id: &str,
        approvals: &[NewApproval],
        ttl: Duration,
    ) -> Result<()> {
        let now = self.now_ms();
        let mut tx = self.begin_writing_first().await?;
        for approval in approvals {
            "INSERT INTO tool_approvals (user_id, approval_id, thread_id, message_id, tool_call_id, \
             tool_name, input, state, created_at, expires_at, model_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10) \
             ON CONFLICT (user_id, approval_id) DO NOTHING"
                .with_values((
                    user_id,
                    &approval.approval_id,
                    thread_id,
                    message_id,
                    &approval.tool_call_id,
                    &approval.tool_name,
                    &approval.input,
                    now,
                    expiry(now, ttl),
                    &approval.model_id,
                ))
                .execute(&mut *tx, "approvals.keep_approvals")
                .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }

    /// The thread's calls still waiting for an answer, expired ones included (marked), oldest first.
    pub async fn pending_approvals(&self, user_id: &str, thread_id: &str) -> Result<Vec<StoredApproval>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tool_approvals WHERE user_id = $1 AND thread_id = $2 AND state = 'pending' \
             ORDER BY created_at, approval_id"
        );
        let rows = sqlx::AssertSqlSafe(sql)
            .with_values((user_id, thread_id))
            .fetch_all(&self.pool, "approvals.pending_approvals")
            .await?;
        let now = self.now_ms();
        rows.iter().map(|row| read(row, now)).collect()
    }

    /// Takes the answered calls out of `pending`, all or none: false when any of them is no longer
    /// pending (answered before, cancelled, or unknown), and then nothing changed.
    pub async fn use_approvals(
        &self,
        user_id: &str,
        thread_id: &str,
        approval_ids: &[String],
    ) -> Result<bool> {
        self.settle_approvals(user_id, thread_id, approval_ids, "used")
            .await
    }

    /// Cancels the thread's waiting calls (Stop) and returns them.
    pub async fn cancel_approvals(&self, user_id: &str, thread_id: &str) -> Result<Vec<StoredApproval>> {
        let pending = self.pending_approvals(user_id, thread_id).await?;
        let ids: Vec<String> = pending.iter().map(|a| a.approval_id.clone()).collect();
        if ids.is_empty()
            || !self
                .settle_approvals(user_id, thread_id, &ids, "cancelled")
                .await?
        {
            // Answered by someone else in between: nothing of it is cancelled here.
            return Ok(Vec::new());
        }
        Ok(pending)
    }

    async fn settle_approvals(
        &self,
        user_id: &str,
        thread_id: &str,
        approval_ids: &[String],
        state: &str,
    ) -> Result<bool> {
        let mut tx = self.begin_writing_first().await?;
        for id in approval_ids {
            let done = "UPDATE tool_approvals SET state = $4 \
                        WHERE user_id = $1 AND thread_id = $2 AND approval_id = $3 AND state = 'pending'"
                .with_values((user_id, thread_id, id, state))
                .execute(&mut *tx, "approvals.settle_approvals")
                .await?;
            if done.rows_affected() != 1 {
                tx.rollback().observed("transaction.rollback").await?;
                return Ok(false);
            }
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(true)
    }
}

fn read(row: &impl Cols, now: i64) -> Result<StoredApproval> {
    let expires_at = row.int(7)?;
    Ok(StoredApproval {
        approval_id: row.text(0)?,
        thread_id: row.text(1)?,
        message_id: row.text(2)?,
        tool_call_id: row.text(3)?,
        tool_name: row.text(4)?,
        input: row.text(5)?,
        model_id: row.text(8)?,
        created_at: row.int(6)?,
        expires_at,
        expired: expires_at <= now,
    })
}
