//! A thread read backwards: its newest messages a page at a time, and the record that stands in for
//! its compacted older part. A send reads only as far back as its model's window reaches; both reads
//! walk the `(user_id, thread_id, seq)` key backwards from where the last one stopped.

use crate::connect::Store;
use crate::error::Result;
use crate::messages::message_from;
use crate::statement::Sql;
use crate::types::{Message, ThreadContext};
use crate::util::{Cols, bound_limit};

/// The columns a tail read selects, in the order [`tail_message_from`] reads them.
pub(crate) const TAIL_COLS: &str = "m.id, m.thread_id, m.role, m.parts, m.metadata, m.status, m.created_at, \
     m.seq, m.edit_of";

/// The same columns with the parts and metadata left empty, for reads that only count messages.
const TAIL_HEAD_COLS: &str =
    "m.id, m.thread_id, m.role, '[]', '{}', m.status, m.created_at, m.seq, m.edit_of";

/// A message read with [`TAIL_COLS`] starting at column `at`.
pub(crate) fn tail_message_from(row: &sqlx::any::AnyRow, at: usize) -> Result<Message> {
    let mut message = message_from(row, at)?;
    message.edit_of = row.opt_int(at + 8)?;
    Ok(message)
}

impl Store {
    /// Up to `limit` of the thread's messages stored before position `before`, the newest of them,
    /// in order. `bodies: false` leaves their parts and metadata empty, for a read that only needs
    /// to know which messages there are. An unknown thread has no messages.
    pub async fn thread_messages_before(
        &self,
        user: &str,
        thread_id: &str,
        before: i64,
        limit: usize,
        bodies: bool,
    ) -> Result<Vec<Message>> {
        let cols = if bodies { TAIL_COLS } else { TAIL_HEAD_COLS };
        let rows = sqlx::AssertSqlSafe(format!(
            "SELECT {cols} FROM messages m WHERE m.user_id = $1 AND m.thread_id = $2 AND m.seq < $3 \
             ORDER BY m.seq DESC {limit_clause}",
            limit_clause = bound_limit(4)
        ))
        .with_values((user, thread_id, before, i64::try_from(limit).unwrap_or(i64::MAX)))
        .fetch_all(&self.pool, "tail.thread_messages_before")
        .await?;
        let mut messages = rows
            .iter()
            .map(|row| tail_message_from(row, 0))
            .collect::<Result<Vec<_>>>()?;
        messages.reverse();
        Ok(messages)
    }

    /// The record standing in for the thread's compacted older part, if it has one.
    pub async fn thread_context(&self, user: &str, thread_id: &str) -> Result<Option<ThreadContext>> {
        let row = "SELECT through_seq, covered, summarised, summary, created_at FROM thread_contexts \
                   WHERE user_id = $1 AND thread_id = $2"
            .with_values((user, thread_id))
            .fetch_optional(&self.pool, "tail.thread_context")
            .await?;
        row.map(|row| {
            Ok(ThreadContext {
                through_seq: row.int(0)?,
                covered: row.int(1)?,
                summarised: row.int(2)?,
                summary: row.opt_text(3)?,
                created_at: row.int(4)?,
            })
        })
        .transpose()
    }

    /// Replaces the thread's record (its `created_at` is set now). Does nothing when the thread is
    /// gone or not the user's.
    pub async fn save_thread_context(
        &self,
        user: &str,
        thread_id: &str,
        record: &ThreadContext,
    ) -> Result<()> {
        "INSERT INTO thread_contexts (user_id, thread_id, through_seq, covered, summarised, summary, created_at) \
             SELECT user_id, id, $3, $4, $5, $6, $7 FROM threads WHERE user_id = $1 AND id = $2 \
             ON CONFLICT (user_id, thread_id) DO UPDATE SET through_seq = excluded.through_seq, \
             covered = excluded.covered, summarised = excluded.summarised, summary = excluded.summary, \
             created_at = excluded.created_at".with_values((user, thread_id, record.through_seq, record.covered, record.summarised, record.summary.as_deref(), self.now_ms())).execute(&self.writer, "tail.save_thread_context")
        .await?;
        Ok(())
    }
}
