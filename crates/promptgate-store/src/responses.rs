//! Responses kept for the OpenAI Responses API: the response as its client saw it, the input items of
//! its request, and the conversation the model saw up to its end, which `previous_response_id`
//! continues from. Each row holds its whole conversation, so a chain never depends on an older row.
//!
//! Rows live for the deployment's retention, and each user keeps at most the deployment's number of
//! them: older ones are invisible to every read and are deleted when their user stores a new
//! response, as are those past the number, oldest first.

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::statement::Sql;
use crate::types::{NewResponse, StoredResponse};
use crate::util::{Cols, from_json, one_row, to_json};

/// The most one response may take in the database (its body, input items and conversation
/// together); a chain that grows past it cannot be stored, and is refused before it runs.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Ids are the gateway's own (`resp_` and a UUID); anything longer is not one of ours.
const MAX_ID_CHARS: usize = 128;

/// Deletes the user's ($1) responses created before $2, and those past the newest $3 (the time of
/// the one at that offset and older: of rows stamped alike, all go).
const EXPIRE: &str = "DELETE FROM responses WHERE user_id = $1 AND (created_at < $2 OR created_at <= \
     (SELECT created_at FROM responses WHERE user_id = $1 ORDER BY created_at DESC LIMIT 1 OFFSET $3))";
/// Keeps a response of the user $1 (nothing when there is no such user).
const INSERT: &str = "INSERT INTO responses (user_id, id, previous_response_id, body, input_items, \
     conversation, created_at) SELECT id, $2, $3, $4, $5, $6, $7 FROM users WHERE id = $1";
/// [`EXPIRE`] and then [`INSERT`] in one Postgres statement, the insert's values from $4 on.
const EXPIRE_AND_INSERT: &str = "WITH expired AS (DELETE FROM responses WHERE user_id = $1 AND \
     (created_at < $2 OR created_at <= (SELECT created_at FROM responses WHERE user_id = $1 \
     ORDER BY created_at DESC LIMIT 1 OFFSET $3))) INSERT INTO responses (user_id, id, \
     previous_response_id, body, input_items, conversation, created_at) \
     SELECT id, $4, $5, $6, $7, $8, $9 FROM users WHERE id = $1";

/// A response's values as its insert binds them, after the user (and the cutoff).
struct ResponseRow<'a> {
    response: &'a NewResponse,
    body: String,
    items: String,
    conversation: String,
    now: i64,
}

impl<'a> ResponseRow<'a> {
    fn bind(
        &'a self,
        query: sqlx::query::Query<'a, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> sqlx::query::Query<'a, sqlx::Any, sqlx::any::AnyArguments> {
        query
            .bind(&self.response.id)
            .bind(self.response.previous_response_id.as_deref())
            .bind(&self.body)
            .bind(&self.items)
            .bind(&self.conversation)
            .bind(self.now)
    }
}

impl Store {
    /// Keeps a response, and deletes the user's responses older than `max_age_ms` and, oldest
    /// first, those beyond the newest `per_user` (this one among them).
    pub async fn save_response(
        &self,
        user: &str,
        response: &NewResponse,
        max_age_ms: i64,
        per_user: usize,
    ) -> Result<()> {
        check_id(&response.id)?;
        let body = to_json("response body", &response.body)?;
        let items = to_json("response input items", &response.input_items)?;
        let conversation = to_json("response conversation", &response.conversation)?;
        if body.len() + items.len() + conversation.len() > MAX_RESPONSE_BYTES {
            return Err(StoreError::Invalid(format!(
                "a response with its conversation is larger than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        let now = self.now_ms();
        let cutoff = now.saturating_sub(max_age_ms);
        // The newest `per_user - 1` others stay beside the new one.
        let kept_others = i64::try_from(per_user.saturating_sub(1)).unwrap_or(i64::MAX);
        let row = ResponseRow {
            response,
            body,
            items,
            conversation,
            now,
        };
        // The client may continue from this response as soon as its stream ends, so this write is
        // on the stream's path: on Postgres one statement (one round trip) expires and inserts; on
        // SQLite, which cannot delete in a WITH, one transaction that holds the writer from its
        // start, so it never has to give way half done.
        let done = match self.backend() {
            Backend::Postgres => {
                let save = sqlx::query(EXPIRE_AND_INSERT)
                    .bind(user)
                    .bind(cutoff)
                    .bind(kept_others);
                row.bind(save)
                    .execute(&self.writer)
                    .observed("responses.save")
                    .await
            }
            Backend::Sqlite => {
                let mut tx = self.begin_write().await?;
                EXPIRE
                    .with_values((user, cutoff, kept_others))
                    .execute(&mut *tx, "responses.expire")
                    .await?;
                let done = row
                    .bind(sqlx::query(INSERT).bind(user))
                    .execute(&mut *tx)
                    .observed("responses.save")
                    .await;
                if done.is_ok() {
                    tx.commit().observed("transaction.commit").await?;
                }
                done
            }
        }
        .map_err(|err| match StoreError::from(err) {
            StoreError::Conflict(_) => StoreError::Conflict(format!("response {} exists", response.id)),
            other => other,
        })?;
        one_row(done.rows_affected())
    }

    /// The response as its client saw it, with its request's input items.
    pub async fn get_response(
        &self,
        user: &str,
        id: &str,
        max_age_ms: i64,
    ) -> Result<Option<StoredResponse>> {
        self.read_response(
            user,
            id,
            max_age_ms,
            "body, input_items, created_at",
            "responses.get",
        )
        .await?
        .map(|row| {
            Ok(StoredResponse {
                id: id.to_owned(),
                body: from_json("response body", &row.text(0)?)?,
                input_items: from_json("response input items", &row.text(1)?)?,
                created_at: row.int(2)?,
            })
        })
        .transpose()
    }

    /// The conversation the model saw up to the end of the response, for the request that continues
    /// it: the JSON text as kept, which the caller parses into its own types (and whose size it
    /// may check first).
    pub async fn response_conversation(
        &self,
        user: &str,
        id: &str,
        max_age_ms: i64,
    ) -> Result<Option<String>> {
        self.read_response(user, id, max_age_ms, "conversation", "responses.conversation")
            .await?
            .map(|row| row.text(0))
            .transpose()
    }

    /// Deletes a response; NotFound when the user has none by that id.
    pub async fn delete_response(&self, user: &str, id: &str) -> Result<()> {
        let done = "DELETE FROM responses WHERE user_id = $1 AND id = $2"
            .with_values((user, id))
            .execute(&self.writer, "responses.delete")
            .await?;
        one_row(done.rows_affected())
    }

    async fn read_response(
        &self,
        user: &str,
        id: &str,
        max_age_ms: i64,
        columns: &'static str,
        op: &'static str,
    ) -> Result<Option<sqlx::any::AnyRow>> {
        if check_id(id).is_err() {
            return Ok(None);
        }
        let kept_since = self.now_ms().saturating_sub(max_age_ms);
        Ok(sqlx::AssertSqlSafe(format!(
            "SELECT {columns} FROM responses WHERE user_id = $1 AND id = $2 AND created_at >= $3"
        ))
        .with_values((user, id, kept_since))
        .fetch_optional(&self.pool, op)
        .await?)
    }
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
        return Err(StoreError::Invalid(format!(
            "a response id is 1 to {MAX_ID_CHARS} characters"
        )));
    }
    Ok(())
}
