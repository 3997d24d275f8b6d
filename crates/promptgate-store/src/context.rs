//! What one send reads before its first byte, in as few round trips as the backends allow: the
//! user's setup, the thread with its project and history, and the model asked for.

use std::sync::Arc;

use promptgate_core::settings::Project;

use crate::connect::Store;
use crate::conversation::ThreadTail;
use crate::error::Result;
use crate::projects::thread_from;
use crate::spans::StoreCall;
use crate::statement::Sql;
use crate::tail::{TAIL_COLS, tail_message_from};
use crate::types::{SendChecks, SendContext, StorageUsage, Thread, ThreadContext};
use crate::util::Cols;

/// Messages the first read of a send takes from the end of its thread. Most threads are shorter,
/// so one read holds them whole; a longer one is read further back only as far as its model's
/// window needs.
pub const FIRST_PAGE: usize = 64;

/// A message of the thread that the caller already holds with everything before it (see
/// [`Store::load_send_context`]): the first read then takes only it and what is newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFrom<'a> {
    pub seq: i64,
    pub id: &'a str,
    /// When the thread was made: one deleted and made again under its id is another thread.
    pub thread_created_at: i64,
}

impl Store {
    /// Everything one send needs, with the model `requested` (else the user's default model, else
    /// `server_default`). The user's setup comes from [`Store::user_setup`]; it, the thread with its
    /// newest messages, and the record of its compacted part are read concurrently. Without a
    /// `thread_id` (a stateless completion) no thread is read.
    ///
    /// A caller that holds the thread's older part up to `from` gets the thread's messages from
    /// `from` on (at most [`FIRST_PAGE`] of them) instead of its newest page. `from` must come back
    /// as it was, on the thread made when it says; otherwise the newest page is read as without it
    /// (the thread was made again under its id, or more than a page was added since).
    pub async fn load_send_context(
        &self,
        user: &str,
        thread_id: Option<&str>,
        requested_model: Option<&str>,
        server_default: &str,
        from: Option<ReadFrom<'_>>,
    ) -> Result<SendContext> {
        // A send made right after a query waited in vain for the database fails at once instead of
        // waiting again (see `reach`).
        if self.reach.known_unreachable() {
            return Err(crate::reach::Reachability::refusal());
        }
        let loaded = futures::try_join!(self.user_setup(user), async {
            match thread_id {
                Some(thread_id) => {
                    let read = self.thread_with_history(user, thread_id, from);
                    let loaded = self.traced(StoreCall::LoadHistory, read).await?;
                    match from {
                        Some(from) if !loaded.starts_at(from) => {
                            let read = self.thread_with_history(user, thread_id, None);
                            self.traced(StoreCall::LoadHistory, read).await
                        }
                        _ => Ok(loaded),
                    }
                }
                None => Ok(LoadedThread::default()),
            }
        },);
        self.reach.saw(&loaded);
        let (setup, loaded) = loaded?;
        let model_id = requested_model
            .map(str::to_owned)
            .or_else(|| setup.settings.default_model.clone())
            .unwrap_or_else(|| server_default.to_owned());
        Ok(SendContext {
            settings: setup.settings.clone(),
            integrations: setup.integrations,
            model: setup.model(&model_id).cloned(),
            model_id,
            thread: loaded.thread,
            project: loaded.project,
            sibling_count: loaded.siblings,
            skills: setup.skills.clone(),
            mcp_servers: setup.mcp_servers.clone(),
            tail: loaded.tail,
            checks: loaded.checks,
        })
    }

    /// The thread, its project, whether that project has other threads, the record of its compacted
    /// part and its newest [`FIRST_PAGE`] messages, with what the send must check before it writes
    /// (the user's stored bytes and threads, and whether a call of the thread waits for an
    /// approval), in one statement: a send reads them all before its first byte, and a round trip
    /// per part would be paid by every send. One row comes back even for a thread not created yet,
    /// so a first send learns the user's usage too. The thread's columns repeat on each message row;
    /// the sibling check is a subquery of its own, run once whatever the history's length, and stops
    /// at the first sibling (counting them all cost a send 50 ms in a project of 100,000 chats); the
    /// record (its summary may be long) comes with the newest row only.
    ///
    /// The page size is written into the statement, not bound: SQLite recompiles a statement whose
    /// `LIMIT` is a bound parameter every time it is run with a new binding. The lowest position
    /// read is bound (0 without `from`), so both reads are one statement, with the same plan.
    async fn thread_with_history(
        &self,
        user: &str,
        thread_id: &str,
        from: Option<ReadFrom<'_>>,
    ) -> Result<LoadedThread> {
        let rows = sqlx::AssertSqlSafe(format!(
            "WITH t AS (SELECT user_id, id, project_id, title, created_at, updated_at FROM threads \
             WHERE user_id = $1 AND id = $2), \
             m AS (SELECT {TAIL_COLS} FROM messages m WHERE m.user_id = $1 AND m.thread_id = $2 \
             AND m.seq >= $4 ORDER BY m.seq DESC LIMIT {FIRST_PAGE}) \
             SELECT t.id, t.project_id, t.title, t.created_at, t.updated_at, p.id, p.name, \
             p.instructions, (SELECT COUNT(*) FROM (SELECT 1 FROM threads s JOIN t o \
             ON s.user_id = o.user_id AND s.project_id = o.project_id AND s.id <> o.id LIMIT 1) one), \
             c.through_seq, c.covered, c.summarised, c.summary, c.created_at, \
             u.bytes, u.threads, (SELECT COUNT(*) FROM tool_approvals a WHERE a.user_id = $1 \
             AND a.thread_id = $2 AND a.state = 'pending' AND a.expires_at > $3), m.* \
             FROM (SELECT 1 AS one) k LEFT JOIN t ON 1 = 1 \
             LEFT JOIN projects p ON p.id = t.project_id AND p.user_id = t.user_id \
             LEFT JOIN m ON 1 = 1 \
             LEFT JOIN thread_contexts c ON c.user_id = t.user_id AND c.thread_id = t.id \
             AND (m.seq IS NULL OR m.seq = (SELECT MAX(seq) FROM m)) \
             LEFT JOIN user_storage u ON u.user_id = $1 ORDER BY m.seq"
        ))
        .with_values((user, thread_id, self.now_ms(), from.map_or(0, |from| from.seq)))
        .fetch_all(&self.pool, "context.thread_with_history")
        .await?;
        let Some(first) = rows.first() else {
            return Ok(LoadedThread::default());
        };
        let checks = SendChecks {
            storage: StorageUsage {
                bytes: first.opt_int(14)?.map_or(0, |n| u64::try_from(n).unwrap_or(0)),
                threads: first.opt_int(15)?.map_or(0, |n| u64::try_from(n).unwrap_or(0)),
            },
            approval_waiting: first.int(16)? > 0,
        };
        // A thread not created yet comes back as one row whose thread and message columns are NULL.
        if first.opt_text(0)?.is_none() {
            return Ok(LoadedThread {
                checks: Some(checks),
                ..LoadedThread::default()
            });
        }
        let thread = thread_from(first, 0)?;
        let project = match first.opt_text(5)? {
            Some(id) => Some(Project {
                id,
                name: first.text(6)?,
                instructions: first.opt_text(7)?,
            }),
            None => None,
        };
        let siblings = u32::try_from(first.int(8)?).unwrap_or(u32::MAX);
        let mut messages = Vec::with_capacity(rows.len());
        let mut context = None;
        for row in &rows {
            if let Some(through_seq) = row.opt_int(9)? {
                context = Some(ThreadContext {
                    through_seq,
                    covered: row.int(10)?,
                    summarised: row.int(11)?,
                    summary: row.opt_text(12)?,
                    created_at: row.int(13)?,
                });
            }
            // A thread without messages comes back as one row whose message columns are NULL.
            if row.opt_text(MESSAGE_AT)?.is_some() {
                messages.push(Arc::new(tail_message_from(row, MESSAGE_AT)?));
            }
        }
        let tail = ThreadTail {
            // Read from a message on, the thread may hold more before it.
            from_start: messages.len() < FIRST_PAGE && from.is_none(),
            messages,
            context,
        };
        Ok(LoadedThread {
            thread: Some(thread),
            project,
            siblings,
            tail,
            checks: Some(checks),
        })
    }
}

impl LoadedThread {
    /// The thread read is the one `from` was taken from, and its messages start at `from`.
    fn starts_at(&self, from: ReadFrom<'_>) -> bool {
        let same_thread = self
            .thread
            .as_ref()
            .is_some_and(|thread| thread.created_at == from.thread_created_at);
        let first = self.tail.messages.first();
        same_thread && first.is_some_and(|m| m.seq == from.seq && m.id == from.id)
    }
}

/// Where a message's columns start in a row of [`Store::thread_with_history`].
const MESSAGE_AT: usize = 17;

/// What [`Store::thread_with_history`] read: nothing of a thread not created yet, except the checks.
#[derive(Default)]
struct LoadedThread {
    thread: Option<Thread>,
    project: Option<Project>,
    siblings: u32,
    tail: ThreadTail,
    checks: Option<SendChecks>,
}
