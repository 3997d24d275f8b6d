//! A new thread and its first messages, written together.
//!
//! The first send to a thread creates it and stores the user's message (and its answer's opening row)
//! before the model is asked. Written one after the other these are several commits and, on
//! Postgres, several round trips on the way to the first byte; together they are one commit, and on
//! Postgres one statement.

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::messages::{MessageRows, positions};
use crate::observed::Observed;
use crate::projects::{THREAD_INSERT_COLS, ThreadRow};
use crate::statement::Sql;
use crate::types::{Message, NewMessage, NewThread, Thread};
use crate::util::one_row;

impl Store {
    /// Creates thread `t` (no project) with `first` as its first message (whatever thread id `first`
    /// names), both or neither. Conflict when the user already has a thread with that id; NotFound
    /// when the user does not exist.
    pub async fn create_thread_with_message(
        &self,
        user: &str,
        t: &NewThread,
        first: &NewMessage,
    ) -> Result<(Thread, Message)> {
        let (thread, mut messages) = self
            .create_thread_with_messages(user, t, std::slice::from_ref(first))
            .await?;
        let first = messages.pop().ok_or(StoreError::NotFound)?;
        Ok((thread, first))
    }

    /// Creates thread `t` (no project) with `messages` in order as its first messages (whatever
    /// thread id they name), all or nothing. Errors as [`Store::create_thread_with_message`].
    pub async fn create_thread_with_messages(
        &self,
        user: &str,
        t: &NewThread,
        messages: &[NewMessage],
    ) -> Result<(Thread, Vec<Message>)> {
        if t.project_id.is_some() {
            return Err(StoreError::Invalid(
                "a thread started by a message belongs to no project".to_owned(),
            ));
        }
        let _write = self.write_waits.wait();
        let thread = ThreadRow::of(t)?;
        let messages: Vec<NewMessage> = messages
            .iter()
            .map(|m| NewMessage {
                thread_id: thread.id.clone(),
                ..m.clone()
            })
            .collect();
        let rows = MessageRows::of(&messages)?;
        let now = self.now_ms();
        let conflict = |e: sqlx::Error| match StoreError::from(e) {
            StoreError::Conflict(_) => StoreError::Conflict(format!("thread {:?} exists", thread.id)),
            other => other,
        };
        let stored_at = match self.backend() {
            Backend::Postgres => {
                // The messages' foreign key and the trigger that touches their thread run at the end
                // of the statement, when the thread row from the WITH clause is there. The title's
                // search terms are given to the messages here: the trigger that copies them from the
                // thread runs before that row is there.
                let insert = rows.insert(
                    Backend::Postgres,
                    "(SELECT user_id, id, 0 AS base FROM t) s",
                    "$3",
                    6,
                    Some("$5"),
                );
                let query = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "WITH t AS (INSERT INTO threads ({THREAD_INSERT_COLS}) \
                     SELECT id, $2, NULL, $4, $5, $3, $3 FROM users WHERE id = $1 \
                     RETURNING user_id, id) {insert}"
                )))
                .bind(user)
                .bind(&thread.id)
                .bind(now)
                .bind(t.title.as_deref())
                .bind(&thread.title_terms);
                let returned = rows
                    .bind(query)
                    .fetch_all(&self.writer)
                    .observed("first_message.create_thread_with_message")
                    .await
                    .map_err(conflict)?;
                positions(&returned)?
            }
            Backend::Sqlite => {
                let mut tx = self.begin_write().await?;
                let created = sqlx::AssertSqlSafe(format!(
                    "INSERT INTO threads ({THREAD_INSERT_COLS}) \
                     SELECT id, $2, NULL, $3, $5, $4, $4 FROM users WHERE id = $1"
                ))
                .with_values((user, &thread.id, t.title.as_deref(), now, &thread.title_terms))
                .execute(&mut *tx, "first_message.create_thread_with_message")
                .await
                .map_err(conflict)?;
                one_row(created.rows_affected())?;
                let insert = rows.insert(
                    Backend::Sqlite,
                    "(SELECT $1 AS user_id, $2 AS id, 0 AS base) s",
                    "$3",
                    4,
                    None,
                );
                let query = sqlx::query(sqlx::AssertSqlSafe(insert))
                    .bind(user)
                    .bind(&thread.id)
                    .bind(now);
                let returned = rows
                    .bind(query)
                    .fetch_all(&mut *tx)
                    .observed("first_message.create_thread_with_message")
                    .await
                    .map_err(conflict)?;
                tx.commit().observed("transaction.commit").await?;
                positions(&returned)?
            }
        };
        Ok((thread.stored(t, now), rows.stored(now, &stored_at)))
    }
}
