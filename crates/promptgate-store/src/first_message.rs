//! A new thread and its first message, written together.
//!
//! The first send to a thread creates it and stores the user's message before the model is asked.
//! Written one after the other these are two commits and, on Postgres, two round trips on the way to
//! the first byte; together they are one commit, and on Postgres one statement.

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::messages::{MESSAGE_INSERT_COLS, MessageRow};
use crate::observed::Observed;
use crate::projects::{THREAD_INSERT_COLS, ThreadRow};
use crate::types::{Message, NewMessage, NewThread, Thread};
use crate::util::{Cols, one_row};

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
        if t.project_id.is_some() {
            return Err(StoreError::Invalid(
                "a thread started by a message belongs to no project".to_owned(),
            ));
        }
        let thread = ThreadRow::of(t)?;
        let first = NewMessage {
            thread_id: thread.id.clone(),
            ..first.clone()
        };
        let message = MessageRow::of(&first)?;
        let now = self.now_ms();
        let conflict = |e: sqlx::Error| match StoreError::from(e) {
            StoreError::Conflict(_) => StoreError::Conflict(format!("thread {:?} exists", thread.id)),
            other => other,
        };
        let seq = match self.backend() {
            Backend::Postgres => {
                // The message's foreign key and the trigger that touches its thread run at the end
                // of the statement, when the thread row from the WITH clause is there. The title's
                // search terms are given to the message here: the trigger that copies them from the
                // thread runs before that row is there.
                let inserted = message
                    .bind(
                        sqlx::query(sqlx::AssertSqlSafe(format!(
                            "WITH t AS (INSERT INTO threads ({THREAD_INSERT_COLS}) \
                             SELECT id, $3, NULL, $11, $12, $10, $10 FROM users WHERE id = $1 \
                             RETURNING user_id, id) \
                             INSERT INTO messages ({MESSAGE_INSERT_COLS}, title_terms) \
                             SELECT t.user_id, $2, t.id, 1, $4, $5, $6, $7, $8, $9, $10, $12 FROM t \
                             RETURNING seq"
                        ))),
                        user,
                        &thread.id,
                        now,
                    )
                    .bind(t.title.as_deref())
                    .bind(&thread.title_terms)
                    .fetch_optional(&self.pool)
                    .observed("first_message.create_thread_with_message")
                    .await
                    .map_err(conflict)?;
                match inserted {
                    Some(row) => row.int(0)?,
                    None => return Err(StoreError::NotFound),
                }
            }
            Backend::Sqlite => {
                let mut tx = self.begin_write().await?;
                let created = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO threads ({THREAD_INSERT_COLS}) \
                     SELECT id, $2, NULL, $3, $5, $4, $4 FROM users WHERE id = $1"
                )))
                .bind(user)
                .bind(&thread.id)
                .bind(t.title.as_deref())
                .bind(now)
                .bind(&thread.title_terms)
                .execute(&mut *tx)
                .observed("first_message.create_thread_with_message")
                .await
                .map_err(conflict)?;
                one_row(created.rows_affected())?;
                message
                    .bind(
                        sqlx::query(sqlx::AssertSqlSafe(format!(
                            "INSERT INTO messages ({MESSAGE_INSERT_COLS}) \
                             VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, $9, $10)"
                        ))),
                        user,
                        &thread.id,
                        now,
                    )
                    .execute(&mut *tx)
                    .observed("first_message.create_thread_with_message")
                    .await
                    .map_err(conflict)?;
                tx.commit().observed("transaction.commit").await?;
                1
            }
        };
        Ok((thread.stored(t, now), message.stored(&first, now, seq, None)))
    }
}
