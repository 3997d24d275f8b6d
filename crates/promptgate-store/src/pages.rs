//! Pages of the thread list and of a thread's messages, chosen by keys (an `updated_at` and id, a
//! position) rather than offsets, so rows written while a client pages never shift a later page.

use std::collections::HashSet;

use serde_json::Value;

use crate::connect::Store;
use crate::conversation::current_conversation;
use crate::error::{Result, StoreError};
use crate::messages::{joined_messages, message_from, role_from};
use crate::observed::Observed;
use crate::projects::{THREAD_COLS, thread_from};
use crate::statement::Sql;
use crate::types::{Message, Page, Thread, ThreadsAfter};
use crate::util::{Cols, bound_limit, placeholders};

const MESSAGE_COLS: &str = "m.id, m.thread_id, m.role, m.parts, m.metadata, m.status, m.created_at, m.seq";

impl Store {
    /// Up to `limit` threads, most recently updated first, after `after` when given; only the
    /// project's threads when `project_id` is given.
    pub async fn list_threads_page(
        &self,
        user: &str,
        project_id: Option<&str>,
        after: Option<&ThreadsAfter>,
        limit: u32,
    ) -> Result<Page<Thread>> {
        // The statement is built for the filters present rather than with `$n IS NULL OR …`, so
        // every plan (a prepared statement's generic one too) can walk the recency index.
        let mut sql = format!("SELECT {THREAD_COLS} FROM threads WHERE user_id = $1");
        let mut next = 2;
        if project_id.is_some() {
            sql.push_str(&format!(" AND project_id = ${next}"));
            next += 1;
        }
        if after.is_some() {
            sql.push_str(&format!(
                " AND (updated_at < ${a} OR (updated_at = ${a} AND id < ${b}))",
                a = next,
                b = next + 1
            ));
            next += 2;
        }
        sql.push_str(&format!(
            " ORDER BY updated_at DESC, id DESC {}",
            bound_limit(next)
        ));
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(user);
        if let Some(project) = project_id {
            query = query.bind(project);
        }
        if let Some(after) = after {
            query = query.bind(after.updated_at).bind(after.id.as_str());
        }
        let rows = query
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.pool)
            .observed("pages.list_threads_page")
            .await?;
        threads_page(&rows, limit)
    }

    /// Up to `limit` messages of the thread before position `before` (from the newest when absent),
    /// in conversation order: the first page is the end of the thread, the next one what came before
    /// it. Without `replaced`, only the conversation as it reads now. NotFound when the thread is not
    /// the user's.
    pub async fn list_messages_page(
        &self,
        user: &str,
        thread_id: &str,
        before: Option<i64>,
        limit: u32,
        replaced: bool,
    ) -> Result<Page<Message>> {
        let before = before.unwrap_or(i64::MAX);
        if replaced {
            return self.stored_messages_page(user, thread_id, before, limit).await;
        }
        let current = self.current_positions(user, thread_id).await?;
        let older: Vec<i64> = current.into_iter().filter(|seq| *seq < before).collect();
        let keep = older.len().min(usize::try_from(limit).unwrap_or(usize::MAX));
        let page = &older[older.len() - keep..];
        let messages = self.messages_at(user, thread_id, page).await?;
        Ok(Page {
            items: messages,
            more: older.len() > keep,
        })
    }

    /// Every stored message, replaced ones included: a range of positions.
    async fn stored_messages_page(
        &self,
        user: &str,
        thread_id: &str,
        before: i64,
        limit: u32,
    ) -> Result<Page<Message>> {
        // One round trip: the thread row is always there when it exists, messages join onto it.
        let rows = sqlx::AssertSqlSafe(format!(
            "SELECT t.id, {MESSAGE_COLS} FROM threads t \
             LEFT JOIN messages m ON m.user_id = t.user_id AND m.thread_id = t.id AND m.seq < $3 \
             WHERE t.user_id = $1 AND t.id = $2 ORDER BY m.seq DESC {limit_clause}",
            limit_clause = bound_limit(4)
        ))
        .with_values((user, thread_id, before, i64::from(limit) + 1))
        .fetch_all(&self.pool, "pages.stored_messages_page")
        .await?;
        let mut page = Page::of(joined_messages(&rows)?, limit);
        page.items.reverse();
        Ok(page)
    }

    /// The positions of the thread's current conversation, oldest first. Which messages an edit or
    /// a regenerate replaced follows from the ids and roles of all of them, so the thread's outline is
    /// read (from an index that holds it) and run through [`current_conversation`], the one place that
    /// decides it.
    async fn current_positions(&self, user: &str, thread_id: &str) -> Result<Vec<i64>> {
        let rows = "SELECT t.id, m.seq, m.id, m.role FROM threads t \
                    LEFT JOIN messages m ON m.user_id = t.user_id AND m.thread_id = t.id \
                    WHERE t.user_id = $1 AND t.id = $2 ORDER BY m.seq"
            .with_values((user, thread_id))
            .fetch_all(&self.pool, "pages.current_positions")
            .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        let mut outline = Vec::with_capacity(rows.len());
        for row in &rows {
            let Some(seq) = row.opt_int(1)? else { continue };
            outline.push(outline_entry(thread_id, seq, row.text(2)?, &row.text(3)?)?);
        }
        Ok(current_conversation(outline).iter().map(|m| m.seq).collect())
    }

    /// The thread's messages at `positions` (ascending), in that order.
    async fn messages_at(&self, user: &str, thread_id: &str, positions: &[i64]) -> Result<Vec<Message>> {
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {MESSAGE_COLS} FROM messages m WHERE m.user_id = $1 AND m.thread_id = $2 \
             AND m.seq IN ({}) ORDER BY m.seq",
            placeholders(3, positions.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(user).bind(thread_id);
        for seq in positions {
            query = query.bind(*seq);
        }
        let rows = query.fetch_all(&self.pool).observed("pages.messages_at").await?;
        let wanted: HashSet<i64> = positions.iter().copied().collect();
        let messages = rows
            .iter()
            .map(|r| message_from(r, 0))
            .collect::<Result<Vec<_>>>()?;
        Ok(messages.into_iter().filter(|m| wanted.contains(&m.seq)).collect())
    }
}

/// A message with only what decides the conversation (position, id, role); the rest stays empty.
/// A page of threads from `rows` (thread columns first), which hold one more than `limit` when a
/// next page exists.
pub(crate) fn threads_page(rows: &[sqlx::any::AnyRow], limit: u32) -> Result<Page<Thread>> {
    let threads = rows
        .iter()
        .map(|r| thread_from(r, 0))
        .collect::<Result<Vec<_>>>()?;
    Ok(Page::of(threads, limit))
}

fn outline_entry(thread_id: &str, seq: i64, id: String, role: &str) -> Result<Message> {
    Ok(Message {
        id,
        thread_id: thread_id.to_owned(),
        role: role_from(role)?,
        parts: Value::Null,
        metadata: Value::Null,
        status: None,
        created_at: 0,
        seq,
        edit_of: None,
    })
}
