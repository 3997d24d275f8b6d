//! Small pieces every repository module uses: ids, input bounds, and column conversions.

use std::time::Duration;

use promptgate_core::ids::{CLIENT_ID, IdRule};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Result, StoreError};
use crate::statement::{On, Sql};

pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// An id the client chose, checked by the rule its kind shares with the API's handlers.
pub(crate) fn check_id(rule: IdRule, what: &str, id: &str) -> Result<()> {
    rule.check(what, id)
        .map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Thread, message and user ids: [`CLIENT_ID`].
pub(crate) fn check_client_id(what: &str, id: &str) -> Result<()> {
    check_id(CLIENT_ID, &format!("{what} id"), id)
}

/// The id the client chose, once checked, or a fresh one.
pub(crate) fn client_id_or_new(what: &str, id: Option<&str>) -> Result<String> {
    match id {
        Some(id) => {
            check_client_id(what, id)?;
            Ok(id.to_owned())
        }
        None => Ok(new_id()),
    }
}

/// A required text field: trimmed non-empty, at most `max` characters.
pub(crate) fn check_name(what: &str, value: &str, max: usize) -> Result<()> {
    if value.trim().is_empty() {
        return Err(StoreError::Invalid(format!("{what} must not be empty")));
    }
    check_len(what, value, max)
}

pub(crate) fn check_len(what: &str, value: &str, max: usize) -> Result<()> {
    if value.chars().count() > max {
        return Err(StoreError::Invalid(format!(
            "{what} is longer than {max} characters"
        )));
    }
    Ok(())
}

pub(crate) fn check_opt_len(what: &str, value: Option<&str>, max: usize) -> Result<()> {
    value.map_or(Ok(()), |v| check_len(what, v, max))
}

/// `LIMIT` with its row count bound as parameter `$n`. SQLite takes a bare bound `LIMIT` into the
/// statement's plan, so it compiles the statement again every time the parameter is bound; through
/// the cast the count is read when the statement runs and the compiled statement is kept. Postgres
/// reads the cast of a bigint as nothing.
pub(crate) fn bound_limit(n: usize) -> String {
    format!("LIMIT CAST(${n} AS BIGINT)")
}

pub(crate) fn flag(b: bool) -> i64 {
    i64::from(b)
}

pub(crate) fn to_json<T: Serialize>(what: &str, value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("{what}: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt(what, e))
}

/// Typed column access by position, with sqlx errors folded into [`StoreError`].
pub(crate) trait Cols {
    fn text(&self, i: usize) -> Result<String>;
    fn opt_text(&self, i: usize) -> Result<Option<String>>;
    fn int(&self, i: usize) -> Result<i64>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>>;
    fn flag(&self, i: usize) -> Result<bool> {
        Ok(self.int(i)? != 0)
    }
}

impl Cols for AnyRow {
    fn text(&self, i: usize) -> Result<String> {
        Ok(self.try_get::<String, _>(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        Ok(self.try_get::<Option<String>, _>(i)?)
    }
    fn int(&self, i: usize) -> Result<i64> {
        Ok(self.try_get::<i64, _>(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        Ok(self.try_get::<Option<i64>, _>(i)?)
    }
}

/// `$first, $first+1, …` for an `IN (…)` list of `count` bound values.
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deletes row `id` of `user` from `table` (a table with `user_id` and `id` columns).
pub(crate) async fn delete_owned(
    store: &crate::connect::Store,
    table: &'static str,
    user: &str,
    id: &str,
) -> Result<()> {
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE user_id = $1 AND id = $2"
    )))
    .bind(user)
    .bind(id)
    .execute(&store.writer)
    .await?;
    one_row(done.rows_affected())
}

/// `cols` of `user`'s row `id` in `table` (a table with `user_id` and `id` columns), if there is one.
pub(crate) async fn owned_row(
    store: &crate::connect::Store,
    cols: &str,
    table: &'static str,
    user: &str,
    id: &str,
    op: &'static str,
) -> Result<Option<AnyRow>> {
    keyed_row(store, cols, table, "id", user, id, op).await
}

/// `cols` of `user`'s row in `table` whose `key_col` is `key` (the row's key within the user's).
pub(crate) async fn keyed_row(
    store: &crate::connect::Store,
    cols: &str,
    table: &'static str,
    key_col: &'static str,
    user: &str,
    key: &str,
    op: &'static str,
) -> Result<Option<AnyRow>> {
    let row = sqlx::AssertSqlSafe(format!(
        "SELECT {cols} FROM {table} WHERE user_id = $1 AND {key_col} = $2"
    ))
    .with_values((user, key))
    .fetch_optional(&store.pool, op)
    .await?;
    Ok(row)
}

/// `cols` of `user`'s rows in `table` (a table with `user_id`, `id`, `created_at` and an `enabled`
/// flag), in creation order: every row, or with `enabled_only` the enabled ones.
pub(crate) async fn owned_rows(
    store: &crate::connect::Store,
    cols: &str,
    table: &'static str,
    user: &str,
    enabled_only: bool,
    op: &'static str,
) -> Result<Vec<AnyRow>> {
    // Flags are 0/1, so `enabled >= 0` keeps every row and `enabled >= 1` only enabled ones.
    let rows = sqlx::AssertSqlSafe(format!(
        "SELECT {cols} FROM {table} WHERE user_id = $1 AND enabled >= $2 ORDER BY created_at, id"
    ))
    .with_values((user, flag(enabled_only)))
    .fetch_all(&store.pool, op)
    .await?;
    Ok(rows)
}

/// A duration as the milliseconds the tables store; one too long to count reads as forever.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The `expires_at` of a row kept for `ttl` from `now`.
pub(crate) fn expiry(now: i64, ttl: Duration) -> i64 {
    now.saturating_add(millis(ttl))
}

/// How many of `user`'s rows `table` holds (a table with a `user_id` column), for a per-user limit.
pub(crate) async fn count_of_user<'c>(
    on: impl On<'c>,
    table: &'static str,
    user: &str,
    op: &'static str,
) -> Result<i64> {
    sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table} WHERE user_id = $1"))
        .with_values((user,))
        .fetch_one(on, op)
        .await?
        .int(0)
}

/// A per-user row limit as the count it is compared with; at least one, so the row being kept
/// always fits.
pub(crate) fn per_user_cap(per_user: usize) -> i64 {
    i64::try_from(per_user.max(1)).unwrap_or(i64::MAX)
}

/// Affected-row count of a write that targets one row by key: zero means the row is not the caller's.
pub(crate) fn one_row(affected: u64) -> Result<()> {
    if affected == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}
