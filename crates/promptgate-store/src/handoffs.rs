//! Client hand-offs: the steps of a facade turn that its client never saw, kept under a key for
//! the client's next request, which may reach any instance. The store keeps each as opaque JSON
//! text; what it holds is the engine's business (`promptgate_turn::client_tools`).

use std::time::Duration;

use crate::connect::Store;
use crate::error::Result;
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, count_of_user, expiry, per_user_cap};

/// How long hand-offs are kept and how many per user.
#[derive(Debug, Clone, Copy)]
pub struct HandoffLimits {
    pub ttl: Duration,
    /// Keeping one more drops the user's oldest, so one account cannot fill the table.
    pub per_user: usize,
}

/// Keys read in one query; a conversation pointing to more reads the newest of them.
pub const MAX_KEYS_PER_READ: usize = 256;

impl Store {
    /// Keeps `body` under the user's `key` until `limits.ttl` passes (a second keep of the same
    /// key replaces it).
    pub async fn keep_handoff(
        &self,
        user_id: &str,
        key: &str,
        body: &str,
        limits: HandoffLimits,
    ) -> Result<()> {
        let now = self.now_ms();
        let mut tx = self.begin_writing_first().await?;
        "INSERT INTO client_handoffs (user_id, handoff_key, body, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (user_id, handoff_key) DO UPDATE SET body = excluded.body, \
         created_at = excluded.created_at, expires_at = excluded.expires_at"
            .with_values((user_id, key, body, now, expiry(now, limits.ttl)))
            .execute(&mut *tx, "handoffs.keep_handoff")
            .await?;
        let kept = count_of_user(&mut *tx, "client_handoffs", user_id, "handoffs.keep_handoff").await?;
        let per_user = per_user_cap(limits.per_user);
        if kept > per_user {
            "DELETE FROM client_handoffs WHERE user_id = $1 AND handoff_key IN \
             (SELECT handoff_key FROM client_handoffs WHERE user_id = $1 \
              ORDER BY created_at, handoff_key LIMIT $2)"
                .with_values((user_id, kept - per_user))
                .execute(&mut *tx, "handoffs.keep_handoff")
                .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }

    /// The bodies of the user's live hand-offs under `keys` (those kept and not expired), as
    /// `(key, body)` in no particular order. Only the last [`MAX_KEYS_PER_READ`] keys are read.
    pub async fn handoffs(&self, user_id: &str, keys: &[String]) -> Result<Vec<(String, String)>> {
        let keys = &keys[keys.len().saturating_sub(MAX_KEYS_PER_READ)..];
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..keys.len()).map(|i| format!("${}", i + 3)).collect();
        let sql = format!(
            "SELECT handoff_key, body FROM client_handoffs \
             WHERE user_id = $1 AND expires_at > $2 AND handoff_key IN ({})",
            placeholders.join(", ")
        );
        // Only placeholders are formatted in; every value is bound.
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(user_id)
            .bind(self.now_ms());
        for key in keys {
            query = query.bind(key);
        }
        let rows = query.fetch_all(&self.pool).observed("handoffs.handoffs").await?;
        rows.iter().map(|row| Ok((row.text(0)?, row.text(1)?))).collect()
    }
}
