//! The usage ledger: what each turn and each facade request used and cost, one row per turn.
//!
//! A thread's turn writes its row in the same transaction as its answer's final save, so the two
//! stand or fall together, and with each checkpoint that follows a model step (status
//! `unfinished`), so a process that dies mid-turn leaves the tokens its finished steps used. The
//! row is keyed by the turn (a fresh id for every run, retries and regenerates included): each
//! write replaces the turn's row, so a save tried again after a lost acknowledgement, or the final
//! save after the checkpoints, counts the turn once. (Not `usage.rs`: that is the storage a user
//! keeps.)

use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::messages::UpdatedMessage;
use crate::observed::Observed;
use crate::types::NewMessage;
use crate::util::{Cols, check_len};

/// Ids and names in a record are ours or the configuration's; anything longer is a bug upstream.
const MAX_FIELD: usize = 200;

/// The status of a turn's row until its final save: the tokens of the steps that ended so far. A
/// row left so when its turn's answer is marked interrupted (the process running it died) becomes
/// `interrupted`, keeping its tokens.
pub const USAGE_UNFINISHED: &str = "unfinished";

/// Relabels the row of a turn whose owner died: $1 user, $2 turn. Only a row still `unfinished` is
/// touched; one written by the final save keeps its status.
pub(crate) const INTERRUPT_USAGE: &str = "UPDATE usage_ledger SET status = 'interrupted' \
     WHERE user_id = $1 AND turn_id = $2 AND status = 'unfinished'";

/// Which way a request reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsageKind {
    /// A send in a thread (`POST /v1/chat`, `POST /v1/threads/{id}/messages`).
    Turn,
    /// The OpenAI chat completions facade.
    ChatCompletions,
    /// The OpenAI Responses facade.
    Responses,
    /// The Anthropic Messages facade.
    Messages,
}

impl UsageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::ChatCompletions => "chat_completions",
            Self::Responses => "responses",
            Self::Messages => "messages",
        }
    }
}

/// Token counts as the provider reported them, summed over a turn's model requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Every prompt token, cached or not.
    pub input: u64,
    pub output: u64,
    /// Prompt tokens read from the provider's cache (part of `input`).
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache (part of `input`).
    pub cache_write: u64,
    /// Output tokens spent thinking (part of `output` where the provider counts them there).
    pub reasoning: u64,
}

impl std::ops::AddAssign for TokenCounts {
    fn add_assign(&mut self, other: Self) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
    }
}

/// One ledger row.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecord {
    pub user_id: String,
    pub turn_id: String,
    /// The API key the request came with, when the server knows its id.
    pub key_id: Option<String>,
    pub thread_id: Option<String>,
    pub kind: UsageKind,
    /// The configured model id that answered (a fallback's, after a failover).
    pub model: String,
    pub provider: String,
    pub tokens: TokenCounts,
    pub tool_calls: u32,
    pub web_calls: u32,
    pub duration_ms: u64,
    /// How the turn ended: `complete`, `stopped`, `error`.
    pub status: String,
    /// In the price table's currency; `None` when the model has no price.
    pub cost: Option<f64>,
}

/// What the report adds up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGrouping {
    User,
    Key,
    Model,
    /// UTC days.
    Day,
    /// How the requests ended (`complete`, `stopped`, `error`, `interrupted`, ...).
    Status,
}

impl UsageGrouping {
    fn column(self) -> &'static str {
        match self {
            Self::User => "user_id",
            Self::Key => "COALESCE(key_id, '')",
            Self::Model => "model",
            Self::Day => "CAST(created_at / 86400000 AS TEXT)",
            Self::Status => "status",
        }
    }
}

/// Which rows a report covers: `[from_ms, to_ms)`, one user's or (`user: None`) everyone's.
#[derive(Debug, Clone)]
pub struct UsageQuery {
    pub user: Option<String>,
    pub from_ms: i64,
    pub to_ms: i64,
    pub group_by: UsageGrouping,
    /// A second grouping within each group (a day's rows by user, say), for charts over time.
    pub then_by: Option<UsageGrouping>,
}

/// One group of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageGroup {
    /// The user id, key id, model id, or the day as days since 1970-01-01; empty for requests
    /// without a key.
    pub group: String,
    /// The group within it by the query's `then_by`, named the same way; `None` without one.
    pub subgroup: Option<String>,
    pub requests: u64,
    pub tokens: TokenCounts,
    pub tool_calls: u64,
    pub web_calls: u64,
    pub duration_ms: u64,
    /// The priced requests' cost; `None` when none of them had a price.
    pub cost: Option<f64>,
    /// Requests of models without a price, whose cost `cost` leaves out.
    pub unpriced_requests: u64,
}

const INSERT_INTO: &str = "INSERT INTO usage_ledger (user_id, turn_id, key_id, thread_id, kind, model, provider, \
     input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, tool_calls, \
     web_calls, duration_ms, status, cost, created_at) VALUES ";
/// A row written again replaces the turn's row: each write of a turn counts it once, at the time of
/// its latest write. A long turn's row is written first at a checkpoint; dated there, a turn that
/// ran past midnight counted on the day before, while its budget is charged when it ends.
const ON_CONFLICT: &str = " ON CONFLICT (user_id, turn_id) DO UPDATE SET key_id = excluded.key_id, \
     thread_id = excluded.thread_id, kind = excluded.kind, model = excluded.model, \
     provider = excluded.provider, input_tokens = excluded.input_tokens, \
     output_tokens = excluded.output_tokens, cache_read_tokens = excluded.cache_read_tokens, \
     cache_write_tokens = excluded.cache_write_tokens, reasoning_tokens = excluded.reasoning_tokens, \
     tool_calls = excluded.tool_calls, web_calls = excluded.web_calls, duration_ms = excluded.duration_ms, \
     status = excluded.status, cost = excluded.cost, created_at = excluded.created_at";
/// Values a row binds.
const COLUMNS: usize = 18;
/// Rows one statement writes at most: well inside both databases' limits on bound values.
const USAGE_ROWS_PER_STATEMENT: usize = 256;

/// The insert of `rows` rows.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::with_capacity(INSERT_INTO.len() + ON_CONFLICT.len() + rows * COLUMNS * 5);
    sql.push_str(INSERT_INTO);
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..COLUMNS {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(row * COLUMNS + column + 1).to_string());
        }
        sql.push(')');
    }
    sql.push_str(ON_CONFLICT);
    sql
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn check(record: &UsageRecord) -> Result<()> {
    check_len("usage turn id", &record.turn_id, MAX_FIELD)?;
    check_len("usage model", &record.model, MAX_FIELD)?;
    check_len("usage provider", &record.provider, MAX_FIELD)?;
    check_len("usage status", &record.status, MAX_FIELD)?;
    if record.cost.is_some_and(|cost| !cost.is_finite()) {
        return Err(StoreError::Invalid(
            "a usage cost must be a finite number".to_owned(),
        ));
    }
    Ok(())
}

/// Runs the ledger's insert of `records` (at most [`USAGE_ROWS_PER_STATEMENT`], each turn once) on
/// `executor`, as one statement.
async fn insert<'e, E>(executor: E, records: &[&UsageRecord], now: i64) -> Result<()>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    // Only placeholders vary: every value is bound.
    let sql = insert_sql(records.len());
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()));
    for record in records {
        query = query
            .bind(&record.user_id)
            .bind(&record.turn_id)
            .bind(record.key_id.as_deref())
            .bind(record.thread_id.as_deref())
            .bind(record.kind.as_str())
            .bind(&record.model)
            .bind(&record.provider)
            .bind(count(record.tokens.input))
            .bind(count(record.tokens.output))
            .bind(count(record.tokens.cache_read))
            .bind(count(record.tokens.cache_write))
            .bind(count(record.tokens.reasoning))
            .bind(i64::from(record.tool_calls))
            .bind(i64::from(record.web_calls))
            .bind(count(record.duration_ms))
            .bind(&record.status)
            .bind(record.cost)
            .bind(now);
    }
    query.execute(executor).observed("ledger.insert").await?;
    Ok(())
}

/// The last of each turn's rows in `records`, in their order: one statement may not touch a row
/// twice.
fn last_of_each_turn(records: &[UsageRecord]) -> Vec<&UsageRecord> {
    let mut kept: Vec<&UsageRecord> = Vec::with_capacity(records.len());
    for record in records {
        let same = |k: &&UsageRecord| k.user_id == record.user_id && k.turn_id == record.turn_id;
        match kept.iter().position(same) {
            Some(at) => kept[at] = record,
            None => kept.push(record),
        }
    }
    kept
}

fn unsigned(row: &AnyRow, at: usize) -> Result<u64> {
    Ok(u64::try_from(row.opt_int(at)?.unwrap_or(0)).unwrap_or(0))
}

fn group_from(row: &AnyRow, then_by: bool) -> Result<UsageGroup> {
    let requests = unsigned(row, 1)?;
    let priced = unsigned(row, 10)?;
    Ok(UsageGroup {
        group: row.opt_text(0)?.unwrap_or_default(),
        subgroup: if then_by {
            Some(row.opt_text(12)?.unwrap_or_default())
        } else {
            None
        },
        requests,
        tokens: TokenCounts {
            input: unsigned(row, 2)?,
            output: unsigned(row, 3)?,
            cache_read: unsigned(row, 4)?,
            cache_write: unsigned(row, 5)?,
            reasoning: unsigned(row, 6)?,
        },
        tool_calls: unsigned(row, 7)?,
        web_calls: unsigned(row, 8)?,
        duration_ms: unsigned(row, 9)?,
        cost: if priced == 0 {
            None
        } else {
            sqlx::Row::try_get::<Option<f64>, _>(row, 11)?
        },
        unpriced_requests: requests.saturating_sub(priced),
    })
}

impl Store {
    /// Saves a turn's answer (final, or a checkpoint) and its ledger row together: both or
    /// neither. The answer's row is updated, or appended when the write that was to create it at
    /// the turn's start failed. The turn's ledger row, when there is one, is replaced.
    pub async fn save_answer_with_usage(
        &self,
        user: &str,
        m: &NewMessage,
        usage: &UsageRecord,
    ) -> Result<()> {
        check(usage)?;
        let update = UpdatedMessage::of(m)?;
        // The second round follows an append of the missing row; a third is never needed.
        for _ in 0..2 {
            let mut tx = self.begin_write().await?;
            if update.run(&mut *tx, user).await? == 0 {
                tx.rollback().await?;
                match self.append_message(user, m).await {
                    Ok(_) | Err(StoreError::Conflict(_)) => continue,
                    Err(err) => return Err(err),
                }
            }
            insert(&mut *tx, &[usage], self.now_ms()).await?;
            tx.commit().observed("transaction.commit").await?;
            return Ok(());
        }
        Err(StoreError::NotFound)
    }

    /// Writes a ledger row on its own (a facade request, which stores no answer), replacing the
    /// turn's row when there is one.
    pub async fn record_usage(&self, usage: &UsageRecord) -> Result<()> {
        self.record_usages(std::slice::from_ref(usage)).await
    }

    /// Writes ledger rows of several turns in one transaction (the facades' rows, collected for a
    /// moment), one statement per [`USAGE_ROWS_PER_STATEMENT`] rows: all or none. Each replaces
    /// its turn's row; of two rows of one turn the later one stands.
    pub async fn record_usages(&self, usages: &[UsageRecord]) -> Result<()> {
        usages.iter().try_for_each(check)?;
        let rows = last_of_each_turn(usages);
        let now = self.now_ms();
        match rows.as_slice() {
            [] => Ok(()),
            few if few.len() <= USAGE_ROWS_PER_STATEMENT => insert(&self.writer, few, now).await,
            many => {
                let mut tx = self.begin_write().await?;
                for chunk in many.chunks(USAGE_ROWS_PER_STATEMENT) {
                    insert(&mut *tx, chunk, now).await?;
                }
                tx.commit().observed("transaction.commit").await?;
                Ok(())
            }
        }
    }

    /// The ledger summed by `query.group_by`, over its time range and user, in group order.
    pub async fn usage_report(&self, query: &UsageQuery) -> Result<Vec<UsageGroup>> {
        let group = query.group_by.column();
        // The second grouping's column comes last, so the sums keep their places.
        let (sub_select, sub_group) = match query.then_by {
            Some(then_by) => (
                format!(", {}", then_by.column()),
                format!(", {}", then_by.column()),
            ),
            None => (String::new(), String::new()),
        };
        let user_filter = if query.user.is_some() {
            " AND user_id = $3"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {group}, COUNT(*), CAST(SUM(input_tokens) AS BIGINT), CAST(SUM(output_tokens) AS BIGINT), \
             CAST(SUM(cache_read_tokens) AS BIGINT), CAST(SUM(cache_write_tokens) AS BIGINT), \
             CAST(SUM(reasoning_tokens) AS BIGINT), CAST(SUM(tool_calls) AS BIGINT), \
             CAST(SUM(web_calls) AS BIGINT), CAST(SUM(duration_ms) AS BIGINT), COUNT(cost), \
             SUM(cost){sub_select} FROM usage_ledger WHERE created_at >= $1 AND created_at < $2{user_filter} \
             GROUP BY {group}{sub_group} ORDER BY {group}{sub_group}"
        );
        let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(query.from_ms)
            .bind(query.to_ms);
        if let Some(user) = &query.user {
            statement = statement.bind(user);
        }
        let rows = statement
            .fetch_all(&self.pool)
            .observed("ledger.usage_report")
            .await?;
        rows.iter()
            .map(|row| group_from(row, query.then_by.is_some()))
            .collect()
    }
}
