//! A thread's messages: appended, checkpointed while an answer streams, saved final, and listed in
//! order; an edited message takes the place of the one it edits.

use serde_json::Value;
use sqlx::any::AnyRow;

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::search::search_terms;
use crate::statement::Sql;
use crate::types::{Message, MessageStatus, NewMessage, Role};
use crate::util::{Cols, client_id_or_new, from_json, one_row, to_json};

const MAX_PARTS_JSON: usize = 4 * 1024 * 1024;
const MAX_METADATA_JSON: usize = 1024 * 1024;
/// The thread that [`Store::append_messages`] writes to, with the position before its first row:
/// $1 user, $2 thread.
pub(crate) const APPEND_SOURCE: &str = "(SELECT t.user_id, t.id, (SELECT COALESCE(MAX(seq), 0) FROM messages \
     WHERE user_id = $1 AND thread_id = $2) AS base FROM threads t WHERE t.user_id = $1 AND t.id = $2) s";
/// Two writers appending to one thread can pick the same next position; the loser tries again. Every
/// round lets at least one writer through, so this covers that many simultaneous writers to one
/// thread (a turn writes its messages one after another, so real contention is two or three).
const APPEND_ATTEMPTS: usize = 16;

fn role_name(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn status_name(s: MessageStatus) -> &'static str {
    match s {
        MessageStatus::Streaming => "streaming",
        MessageStatus::Complete => "complete",
        MessageStatus::Stopped => "stopped",
        MessageStatus::Error => "error",
        MessageStatus::Interrupted => "interrupted",
    }
}

/// A stored role name.
pub(crate) fn role_from(name: &str) -> Result<Role> {
    match name {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(StoreError::corrupt("message role", other)),
    }
}

/// The largest position of an earlier user message of the thread `s` with the id `$p`: the message
/// an appended one with that id edits. Both planners, left to choose, took the largest position by
/// walking the thread's outline index (it holds ids and roles) backwards until a row had the id,
/// expecting one soon; a new id (every send's) has none, so each send read the whole thread (24 ms
/// at 20,000 messages on Postgres). On Postgres the id is found through the `(user_id, id)` index
/// and the thread checked after (`thread_id || ''` is no index key); SQLite is told to use
/// `(user_id, thread_id, id, seq)`.
fn edit_lookup(backend: Backend, p: usize) -> String {
    let (from, thread) = match backend {
        Backend::Postgres => ("messages", "thread_id || ''"),
        Backend::Sqlite => ("messages INDEXED BY messages_thread_ids", "thread_id"),
    };
    format!(
        "SELECT MAX(seq) FROM {from} WHERE user_id = s.user_id AND id = ${p} AND {thread} = s.id \
         AND role = 'user'"
    )
}

/// A message whose columns start at `at`.
pub(crate) fn message_from(row: &AnyRow, at: usize) -> Result<Message> {
    let role = role_from(&row.text(at + 2)?)?;
    let status = match row.opt_text(at + 5)?.as_deref() {
        None => None,
        Some("streaming") => Some(MessageStatus::Streaming),
        Some("complete") => Some(MessageStatus::Complete),
        Some("stopped") => Some(MessageStatus::Stopped),
        Some("error") => Some(MessageStatus::Error),
        Some("interrupted") => Some(MessageStatus::Interrupted),
        Some(other) => return Err(StoreError::corrupt("message status", other)),
    };
    Ok(Message {
        id: row.text(at)?,
        thread_id: row.text(at + 1)?,
        role,
        parts: from_json("message parts", &row.text(at + 3)?)?,
        metadata: from_json("message metadata", &row.text(at + 4)?)?,
        status,
        created_at: row.int(at + 6)?,
        seq: row.int(at + 7)?,
        edit_of: None,
    })
}

/// The messages of a read of `threads` left-joined with `messages` (the thread's id first, each
/// message's columns from the second): NotFound when no thread row came back, none when the
/// thread has no messages.
pub(crate) fn joined_messages(rows: &[AnyRow]) -> Result<Vec<Message>> {
    if rows.is_empty() {
        return Err(StoreError::NotFound);
    }
    let mut messages = Vec::with_capacity(rows.len());
    for row in rows {
        if row.opt_text(1)?.is_some() {
            messages.push(message_from(row, 1)?);
        }
    }
    Ok(messages)
}

/// The columns a new message is written with, in the order of [`MessageRows::insert`]'s values.
pub(crate) const MESSAGE_INSERT_COLS: &str = "user_id, id, thread_id, seq, role, parts, metadata, status, \
     search_text, search_terms, created_at";

/// A new message's values, encoded and checked once (an append may be tried more than once).
pub(crate) struct MessageRow {
    pub(crate) id: String,
    role: &'static str,
    status: Option<&'static str>,
    parts: String,
    metadata: String,
    text: String,
    terms: String,
}

impl MessageRow {
    pub(crate) fn of(m: &NewMessage) -> Result<MessageRow> {
        let id = client_id_or_new("message", m.id.as_deref())?;
        let (parts, metadata) = encode_body(&m.parts, &m.metadata)?;
        let text = search_text(&m.parts);
        let terms = search_terms(&text);
        Ok(MessageRow {
            id,
            role: role_name(m.role),
            status: m.status.map(status_name),
            parts,
            metadata,
            text,
            terms,
        })
    }

    /// The message as stored at `seq`.
    pub(crate) fn stored(&self, m: &NewMessage, created_at: i64, seq: i64, edit_of: Option<i64>) -> Message {
        Message {
            id: self.id.clone(),
            thread_id: m.thread_id.clone(),
            role: m.role,
            parts: m.parts.clone(),
            metadata: m.metadata.clone(),
            status: m.status,
            created_at,
            seq,
            edit_of,
        }
    }
}

/// Messages written together at the end of one thread, in order, in one statement: a send stores its
/// user's message and its answer's opening row at once, so the answer exists before its first byte
/// goes out and costs no round trip of its own.
pub(crate) struct MessageRows<'m> {
    messages: &'m [NewMessage],
    rows: Vec<MessageRow>,
}

impl<'m> MessageRows<'m> {
    pub(crate) fn of(messages: &'m [NewMessage]) -> Result<Self> {
        if messages.is_empty() {
            return Err(StoreError::Invalid("no message to write".to_owned()));
        }
        let rows = messages.iter().map(MessageRow::of).collect::<Result<_>>()?;
        Ok(Self { messages, rows })
    }

    /// The `INSERT` of every row, one `SELECT` each: `source` yields the thread's `user_id`, `id` and
    /// `base`, the position before the first row; `time` is the parameter of the creation time and
    /// the rows' own parameters start at `$first`. `title_terms`, when given, is the expression of
    /// the rows' title terms (Postgres, for a thread created in the same statement, which its trigger
    /// cannot see yet). A user message whose id an earlier user message of the thread has is an edit
    /// of the latest of them (`edit_of`, see [`edit_lookup`]).
    pub(crate) fn insert(
        &self,
        backend: Backend,
        source: &str,
        time: &str,
        first: usize,
        title_terms: Option<&str>,
    ) -> String {
        let (terms_col, terms) = match title_terms {
            Some(expr) => (", title_terms", format!(", {expr}")),
            None => ("", String::new()),
        };
        let selects: Vec<String> = (0..self.rows.len())
            .map(|k| {
                let p = first + k * 7;
                let role = p + 1;
                format!(
                    "SELECT s.user_id, ${p}, s.id, s.base + {}, ${role}, ${}, ${}, ${}, ${}, ${}, {time}{terms}, \
                     CASE WHEN ${role} = 'user' THEN ({}) END FROM {source}",
                    k + 1,
                    p + 2,
                    p + 3,
                    p + 4,
                    p + 5,
                    p + 6,
                    edit_lookup(backend, p),
                )
            })
            .collect();
        format!(
            "INSERT INTO messages ({MESSAGE_INSERT_COLS}{terms_col}, edit_of) {} RETURNING seq, edit_of",
            selects.join(" UNION ALL ")
        )
    }

    /// Binds the rows' own parameters, in the order [`MessageRows::insert`] numbers them.
    pub(crate) fn bind<'q>(
        &'q self,
        mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
        for row in &self.rows {
            query = query
                .bind(&row.id)
                .bind(row.role)
                .bind(&row.parts)
                .bind(&row.metadata)
                .bind(row.status)
                .bind(&row.text)
                .bind(&row.terms);
        }
        query
    }

    /// The messages as stored at `created_at`, at the positions an insert returned (see
    /// [`positions`]).
    pub(crate) fn stored(&self, created_at: i64, positions: &[(i64, Option<i64>)]) -> Vec<Message> {
        self.rows
            .iter()
            .zip(self.messages)
            .zip(positions)
            .map(|((row, m), &(seq, edit_of))| row.stored(m, created_at, seq, edit_of))
            .collect()
    }
}

/// The position and `edit_of` of every row an insert returned, in the rows' order; NotFound when it
/// wrote none (the thread is not the user's).
pub(crate) fn positions(returned: &[AnyRow]) -> Result<Vec<(i64, Option<i64>)>> {
    let mut positions = returned
        .iter()
        .map(|row| Ok((row.int(0)?, row.opt_int(1)?)))
        .collect::<Result<Vec<_>>>()?;
    if positions.is_empty() {
        return Err(StoreError::NotFound);
    }
    positions.sort_unstable();
    Ok(positions)
}

/// Serialised parts and metadata, checked for shape and size.
fn encode_body(parts: &Value, metadata: &Value) -> Result<(String, String)> {
    if !parts.is_array() {
        return Err(StoreError::Invalid(
            "message parts must be a JSON array".to_owned(),
        ));
    }
    if !metadata.is_object() {
        return Err(StoreError::Invalid(
            "message metadata must be a JSON object".to_owned(),
        ));
    }
    let parts_json = to_json("message parts", parts)?;
    let metadata_json = to_json("message metadata", metadata)?;
    if parts_json.len() > MAX_PARTS_JSON {
        return Err(StoreError::Invalid(format!(
            "message parts are larger than {MAX_PARTS_JSON} bytes"
        )));
    }
    if metadata_json.len() > MAX_METADATA_JSON {
        return Err(StoreError::Invalid(format!(
            "message metadata is larger than {MAX_METADATA_JSON} bytes"
        )));
    }
    Ok((parts_json, metadata_json))
}

/// A message's new parts, metadata and status, encoded once, for an update that may run inside a
/// larger transaction ([`Store::save_answer_with_usage`](crate::Store::save_answer_with_usage)).
pub(crate) struct UpdatedMessage {
    id: String,
    parts: String,
    metadata: String,
    status: Option<&'static str>,
    text: String,
    terms: String,
}

impl UpdatedMessage {
    fn new(id: &str, parts: &Value, metadata: &Value, status: Option<MessageStatus>) -> Result<Self> {
        let (parts_json, metadata_json) = encode_body(parts, metadata)?;
        let text = search_text(parts);
        let terms = search_terms(&text);
        Ok(Self {
            id: id.to_owned(),
            parts: parts_json,
            metadata: metadata_json,
            status: status.map(status_name),
            text,
            terms,
        })
    }

    /// The update of `m`, which must name its row.
    pub(crate) fn of(m: &NewMessage) -> Result<Self> {
        let id =
            m.id.as_deref()
                .ok_or_else(|| StoreError::Invalid("an answer to save needs its id".to_owned()))?;
        Self::new(id, &m.parts, &m.metadata, m.status)
    }

    /// Runs the update; returns how many rows it changed (0: the row is not there).
    pub(crate) async fn run<'e, E>(&self, executor: E, user: &str) -> Result<u64>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let done = "UPDATE messages SET parts = $3, metadata = $4, status = $5, search_text = $6, \
                    search_terms = $7 WHERE user_id = $1 AND id = $2"
            .with_values((
                user,
                &self.id,
                &self.parts,
                &self.metadata,
                self.status,
                &self.text,
                &self.terms,
            ))
            .execute(executor, "messages.update_message")
            .await?;
        Ok(done.rows_affected())
    }
}

/// The searchable text of a message: its `text` parts, one per line. The parts themselves are kept
/// as JSON, where U+0000 is an escape, but this column is plain text, which Postgres refuses to
/// hold a NUL in; search loses nothing by skipping it.
pub(crate) fn search_text(parts: &Value) -> String {
    let texts = parts.as_array().into_iter().flatten().filter_map(|part| {
        (part.get("type").and_then(Value::as_str) == Some("text"))
            .then(|| part.get("text").and_then(Value::as_str))
            .flatten()
    });
    let mut text = texts.collect::<Vec<_>>().join("\n");
    text.retain(|c| c != '\0');
    text
}

impl Store {
    /// Appends a message at the end of its thread; the thread's `updated_at` follows (a trigger). NotFound when the
    /// thread is not the user's. Ids need not be unique: a user message whose id repeats an earlier one in
    /// the thread is an edit (see [`crate::current_conversation`]).
    pub async fn append_message(&self, user: &str, m: &NewMessage) -> Result<Message> {
        let mut stored = self.append_messages(user, std::slice::from_ref(m)).await?;
        stored.pop().ok_or(StoreError::NotFound)
    }

    /// Appends `messages` (all of the thread the first names) at the end of their thread, in order
    /// and all or none, in one statement. NotFound when the thread is not the user's.
    pub async fn append_messages(&self, user: &str, messages: &[NewMessage]) -> Result<Vec<Message>> {
        let _write = self.write_waits.wait();
        let rows = MessageRows::of(messages)?;
        let thread_id = &messages[0].thread_id;
        let sql = rows.insert(self.backend(), APPEND_SOURCE, "$3", 4, None);
        for attempt in 1..=APPEND_ATTEMPTS {
            let now = self.now_ms();
            let query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(user)
                .bind(thread_id)
                .bind(now);
            let inserted = rows
                .bind(query)
                .fetch_all(&self.writer)
                .observed("messages.append_message")
                .await;
            match inserted {
                Ok(returned) => return Ok(rows.stored(now, &positions(&returned)?)),
                Err(e) => match StoreError::from(e) {
                    // Only the position is unique: another writer took it, so try the next one.
                    StoreError::Conflict(_) if attempt < APPEND_ATTEMPTS => continue,
                    other => return Err(other),
                },
            }
        }
        Err(StoreError::Conflict(
            "the thread is being written concurrently".to_owned(),
        ))
    }

    /// Replaces a message's parts, metadata and status (a streamed answer being finished).
    pub async fn update_message(
        &self,
        user: &str,
        id: &str,
        parts: &Value,
        metadata: &Value,
        status: Option<MessageStatus>,
    ) -> Result<()> {
        let update = UpdatedMessage::new(id, parts, metadata, status)?;
        one_row(update.run(&self.writer, user).await?)
    }

    /// Writes an answer whatever became of its earlier writes: updates the row when it exists, else
    /// appends it (the write that created it at the turn's start may have failed). NotFound when
    /// the thread is gone.
    pub async fn save_message(&self, user: &str, m: &NewMessage) -> Result<()> {
        let Some(id) = m.id.as_deref() else {
            return self.append_message(user, m).await.map(|_| ());
        };
        match self
            .update_message(user, id, &m.parts, &m.metadata, m.status)
            .await
        {
            Err(StoreError::NotFound) => match self.append_message(user, m).await {
                Ok(_) => Ok(()),
                // Created in between by an earlier write that was slow to land.
                Err(StoreError::Conflict(_)) => {
                    self.update_message(user, id, &m.parts, &m.metadata, m.status)
                        .await
                }
                Err(err) => Err(err),
            },
            other => other,
        }
    }

    /// Marks every answer still `streaming` as `interrupted`: run at start-up, when no turn of this
    /// store's can be running any more. Returns how many answers were marked.
    pub async fn interrupt_streaming(&self) -> Result<u64> {
        let done = "UPDATE messages SET status = 'interrupted' WHERE status = 'streaming'"
            .with_values(())
            .execute(&self.writer, "messages.interrupt_streaming")
            .await?;
        Ok(done.rows_affected())
    }

    /// The thread's messages in order. NotFound when the thread is not the user's.
    pub async fn list_messages(&self, user: &str, thread_id: &str) -> Result<Vec<Message>> {
        // One round trip: the thread row is always there when it exists, messages join onto it.
        let rows =
            "SELECT t.id, m.id, m.thread_id, m.role, m.parts, m.metadata, m.status, m.created_at, m.seq \
             FROM threads t LEFT JOIN messages m ON m.user_id = t.user_id AND m.thread_id = t.id \
             WHERE t.user_id = $1 AND t.id = $2 ORDER BY m.seq"
                .with_values((user, thread_id))
                .fetch_all(&self.pool, "messages.list_messages")
                .await?;
        joined_messages(&rows)
    }
}
