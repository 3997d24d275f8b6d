//! Budgets: the token and money limits an admin sets on a user or on one key, and what is spent
//! against them, per window. Kept in the database, so every instance counts against the same
//! numbers.
//!
//! A period budget's windows start at whole multiples of its period since the epoch (a day's at
//! 00:00 UTC); the per-minute limit's at whole minutes. Spending is settled after a turn with the
//! tokens the upstream reported and their cost, so a turn that starts under a limit may end past
//! it. Money is counted in millionths of the price table's currency, so sums stay exact.

use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::spans::StoreCall;
use crate::statement::Sql;
use crate::util::Cols;

const MINUTE_MS: i64 = 60_000;
/// The longest period a budget may have: a year of 366 days.
pub const MAX_PERIOD_SECS: i64 = 366 * 86_400;

/// What a budget limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetScope {
    User,
    Key,
}

impl BudgetScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Key => "key",
        }
    }

    fn parse(text: &str) -> Self {
        if text == "key" { Self::Key } else { Self::User }
    }
}

/// The limits on one user or key; `None` is off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Tokens per period; a period limit (this or the next) needs the period's length in seconds.
    pub period_tokens: Option<i64>,
    /// Money per period, in millionths of the price table's currency.
    pub period_cost_micros: Option<i64>,
    pub period_secs: Option<i64>,
    pub tokens_per_minute: Option<i64>,
}

/// What one turn spent, as budgets count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetSpend {
    pub tokens: i64,
    /// In millionths of the price table's currency.
    pub cost_micros: i64,
}

/// Which of a budget's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    PeriodTokens,
    /// Money per period (limit and use in millionths of the currency).
    PeriodCost,
    TokensPerMinute,
}

impl LimitKind {
    fn span(self) -> &'static str {
        match self {
            Self::PeriodTokens => "period",
            Self::PeriodCost => "cost",
            Self::TokensPerMinute => "minute",
        }
    }

    /// What of `spend` counts against a limit of this kind.
    fn amount(self, spend: BudgetSpend) -> i64 {
        match self {
            Self::PeriodTokens | Self::TokensPerMinute => spend.tokens,
            Self::PeriodCost => spend.cost_micros,
        }
    }
}

/// Which of a user's subjects have a budget: the user, and which of their keys. Part of the user's
/// setup (kept in memory, forgotten on every instance when `budgets` changes), so a request by a
/// spender without limits reads none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetedSubjects {
    pub user: bool,
    pub keys: Vec<String>,
}

impl BudgetedSubjects {
    /// Whether a request by the user with `key_id` has any limit to check.
    pub fn cover(&self, key_id: Option<&str>) -> bool {
        self.user || key_id.is_some_and(|key| self.keys.iter().any(|k| k == key))
    }
}

/// One limit in force and what its current window has spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitState {
    pub scope: BudgetScope,
    pub kind: LimitKind,
    pub limit: i64,
    pub used: i64,
    /// When the current window ends (epoch milliseconds).
    pub resets_at: i64,
    window_start: i64,
    subject_id: String,
}

impl LimitState {
    /// A limit with nothing spent, whose window ends at `resets_at` (for judging limits elsewhere).
    pub fn new(scope: BudgetScope, kind: LimitKind, limit: i64, resets_at: i64) -> Self {
        Self {
            scope,
            kind,
            limit,
            used: 0,
            resets_at,
            window_start: resets_at,
            subject_id: String::new(),
        }
    }
}

fn check(budget: &Budget) -> Result<()> {
    let positive = |v: Option<i64>| v.is_none_or(|v| v > 0);
    if ![
        budget.period_tokens,
        budget.period_cost_micros,
        budget.tokens_per_minute,
    ]
    .into_iter()
    .all(positive)
    {
        return Err(StoreError::Invalid("a limit must be positive".into()));
    }
    let per_period = budget.period_tokens.is_some() || budget.period_cost_micros.is_some();
    match (per_period, budget.period_secs) {
        (true, Some(secs)) if (1..=MAX_PERIOD_SECS).contains(&secs) => Ok(()),
        (true, _) => Err(StoreError::Invalid(format!(
            "a period limit needs period_secs between 1 and {MAX_PERIOD_SECS}"
        ))),
        (false, Some(_)) => Err(StoreError::Invalid(
            "period_secs needs period_tokens or period_cost".into(),
        )),
        (false, None) => Ok(()),
    }
}

fn budget_from(row: &AnyRow, at: usize) -> Result<Budget> {
    Ok(Budget {
        period_tokens: row.opt_int(at)?,
        period_secs: row.opt_int(at + 1)?,
        tokens_per_minute: row.opt_int(at + 2)?,
        period_cost_micros: row.opt_int(at + 3)?,
    })
}

/// The limits of `budget` at `now`, each with its window (spent still zero).
fn windows(scope: BudgetScope, subject_id: &str, budget: &Budget, now: i64) -> Vec<LimitState> {
    let state = |kind, limit, length: i64| {
        let window_start = now - now.rem_euclid(length);
        LimitState {
            scope,
            kind,
            limit,
            used: 0,
            resets_at: window_start + length,
            window_start,
            subject_id: subject_id.to_owned(),
        }
    };
    let mut limits = Vec::new();
    if let (Some(limit), Some(secs)) = (budget.period_tokens, budget.period_secs) {
        limits.push(state(LimitKind::PeriodTokens, limit, secs * 1000));
    }
    if let (Some(limit), Some(secs)) = (budget.period_cost_micros, budget.period_secs) {
        limits.push(state(LimitKind::PeriodCost, limit, secs * 1000));
    }
    if let Some(limit) = budget.tokens_per_minute {
        limits.push(state(LimitKind::TokensPerMinute, limit, MINUTE_MS));
    }
    limits
}

impl Store {
    /// Sets the limits of a user (`subject_id` is the user) or of one of their keys; a budget with
    /// every limit off removes it. NotFound when the subject is not the user's.
    pub async fn set_budget(
        &self,
        scope: BudgetScope,
        user_id: &str,
        subject_id: &str,
        budget: &Budget,
    ) -> Result<()> {
        check(budget)?;
        let mut tx = self.begin_write().await?;
        let owned = match scope {
            BudgetScope::User => sqlx::query("SELECT id FROM users WHERE id = $1 AND id = $2"),
            BudgetScope::Key => sqlx::query("SELECT id FROM api_tokens WHERE user_id = $1 AND id = $2"),
        }
        .bind(user_id)
        .bind(subject_id)
        .fetch_optional(&mut *tx)
        .observed("budgets.set")
        .await?;
        if owned.is_none() {
            return Err(StoreError::NotFound);
        }
        "DELETE FROM budgets WHERE scope = $1 AND subject_id = $2"
            .with_values((scope.as_str(), subject_id))
            .execute(&mut *tx, "budgets.set")
            .await?;
        if *budget != Budget::default() {
            "INSERT INTO budgets (scope, subject_id, user_id, period_tokens, period_secs, \
             tokens_per_minute, period_cost_micros, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                .with_values((
                    scope.as_str(),
                    subject_id,
                    user_id,
                    budget.period_tokens,
                    budget.period_secs,
                    budget.tokens_per_minute,
                    budget.period_cost_micros,
                    self.now_ms(),
                ))
                .execute(&mut *tx, "budgets.set")
                .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        // This instance's next request sees it at once; the others through the counter's trigger.
        self.setup_changed(user_id);
        Ok(())
    }

    /// Which of the user's subjects have a budget (read with the user's setup).
    pub(crate) async fn budgeted_subjects(&self, user_id: &str) -> Result<BudgetedSubjects> {
        let rows = "SELECT scope, subject_id FROM budgets WHERE user_id = $1"
            .with_values((user_id,))
            .fetch_all(&self.pool, "budgets.subjects")
            .await?;
        let mut subjects = BudgetedSubjects::default();
        for row in &rows {
            match BudgetScope::parse(&row.text(0)?) {
                BudgetScope::User => subjects.user = true,
                BudgetScope::Key => subjects.keys.push(row.text(1)?),
            }
        }
        Ok(subjects)
    }

    /// The limits set on a user or key (all off when none are).
    pub async fn budget(&self, scope: BudgetScope, subject_id: &str) -> Result<Budget> {
        let row = "SELECT period_tokens, period_secs, tokens_per_minute, period_cost_micros FROM budgets \
                   WHERE scope = $1 AND subject_id = $2"
            .with_values((scope.as_str(), subject_id))
            .fetch_optional(&self.pool, "budgets.get")
            .await?;
        row.map_or(Ok(Budget::default()), |row| budget_from(&row, 0))
    }

    /// The limits in force on a request by `user_id` with `key_id`, at `now` (epoch ms), with what
    /// their current windows have spent. Empty when none are set: without a query while the user's
    /// setup in memory says so (see [`crate::setup`]). The database read is a [`StoreCall::CheckBudget`]
    /// span.
    pub async fn limit_states(
        &self,
        user_id: &str,
        key_id: Option<&str>,
        now: i64,
    ) -> Result<Vec<LimitState>> {
        // The first read of a send: right after a query waited in vain for the database, it fails
        // at once instead of waiting again (see `reach`).
        if self.reach.known_unreachable() {
            return Err(crate::reach::Reachability::refusal());
        }
        if !self.user_setup(user_id).await?.budgeted.cover(key_id) {
            return Ok(Vec::new());
        }
        // Traced only here: a spender without limits is answered from memory, and a span named
        // after a query that never ran would mislead whoever reads the trace.
        let read = self.limits_with_spend(user_id, key_id, now);
        self.traced(StoreCall::CheckBudget, read).await
    }

    /// The limits on `user_id` and `key_id` at `now`, with what their windows have spent.
    async fn limits_with_spend(
        &self,
        user_id: &str,
        key_id: Option<&str>,
        now: i64,
    ) -> Result<Vec<LimitState>> {
        let limits = self.limits_of(user_id, key_id, now).await;
        self.reach.saw(&limits);
        let mut limits = limits?;
        if limits.is_empty() {
            return Ok(limits);
        }
        let rows = "SELECT scope, subject_id, span, window_start, tokens, cost_micros FROM budget_spend \
             WHERE user_id = $1 AND ((scope = 'user' AND subject_id = $1) OR (scope = 'key' AND subject_id = $2))".with_values((user_id, key_id.unwrap_or(""))).fetch_all(&self.pool, "budgets.spent")
        .await?;
        for row in &rows {
            let (scope, subject, span) = (BudgetScope::parse(&row.text(0)?), row.text(1)?, row.text(2)?);
            let start = row.int(3)?;
            let spent = BudgetSpend {
                tokens: row.int(4)?,
                cost_micros: row.int(5)?,
            };
            if let Some(limit) = limits.iter_mut().find(|l| {
                l.scope == scope
                    && l.subject_id == subject
                    && l.kind.span() == span
                    && l.window_start == start
            }) {
                limit.used = limit.kind.amount(spent);
            }
        }
        Ok(limits)
    }

    async fn limits_of(&self, user_id: &str, key_id: Option<&str>, now: i64) -> Result<Vec<LimitState>> {
        let rows = "SELECT scope, subject_id, period_tokens, period_secs, tokens_per_minute, period_cost_micros FROM budgets \
             WHERE user_id = $1 AND ((scope = 'user' AND subject_id = $1) OR (scope = 'key' AND subject_id = $2))".with_values((user_id, key_id.unwrap_or(""))).fetch_all(&self.pool, "budgets.limits")
        .await?;
        let mut limits = Vec::new();
        for row in &rows {
            let scope = BudgetScope::parse(&row.text(0)?);
            limits.extend(windows(scope, &row.text(1)?, &budget_from(row, 2)?, now));
        }
        Ok(limits)
    }

    /// Counts what a turn spent against every limit on `user_id` and `key_id` at `now`, in one
    /// transaction, and drops the windows that ended. Nothing is written when no limit is set.
    pub async fn settle_budget(
        &self,
        user_id: &str,
        key_id: Option<&str>,
        spend: BudgetSpend,
        now: i64,
    ) -> Result<()> {
        if self.reach.known_unreachable() {
            return Err(crate::reach::Reachability::refusal());
        }
        let limits = self.limits_of(user_id, key_id, now).await?;
        let limits: Vec<_> = limits
            .into_iter()
            .filter(|limit| limit.kind.amount(spend) > 0)
            .collect();
        if limits.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        for limit in &limits {
            let amount = limit.kind.amount(spend);
            let (tokens, cost_micros) = match limit.kind {
                LimitKind::PeriodCost => (0, amount),
                LimitKind::PeriodTokens | LimitKind::TokensPerMinute => (amount, 0),
            };
            "INSERT INTO budget_spend (scope, subject_id, span, window_start, user_id, tokens, cost_micros) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, subject_id, span, window_start) \
             DO UPDATE SET tokens = budget_spend.tokens + excluded.tokens, \
             cost_micros = budget_spend.cost_micros + excluded.cost_micros"
                .with_values((
                    limit.scope.as_str(),
                    &limit.subject_id,
                    limit.kind.span(),
                    limit.window_start,
                    user_id,
                    tokens,
                    cost_micros,
                ))
                .execute(&mut *tx, "budgets.settle")
                .await?;
            "DELETE FROM budget_spend WHERE scope = $1 AND subject_id = $2 AND span = $3 \
             AND window_start < $4"
                .with_values((
                    limit.scope.as_str(),
                    &limit.subject_id,
                    limit.kind.span(),
                    limit.window_start,
                ))
                .execute(&mut *tx, "budgets.settle")
                .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }
}
