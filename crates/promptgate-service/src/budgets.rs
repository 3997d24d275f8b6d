//! Budgets on a send: checked before the model is called (a limit already spent refuses the send
//! with when it resets), settled after the turn with the tokens the upstream reported. The numbers
//! live in the store, so every instance enforces the same limits.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use promptgate_llm::Usage;
use promptgate_store::{BudgetScope, LimitKind, LimitState, Store};
use promptgate_turn::engine::{AnswerRecorder, TurnOutcome};
use serde_json::{Value, json};

use crate::{Service, ServiceError};

/// Past this share of a limit, the answer's metadata carries a warning.
pub const WARN_AT_PERCENT: i64 = 80;

/// Whose limits a turn's tokens count against: the user's, and the key's the request came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spender {
    pub user_id: String,
    pub key_id: Option<String>,
}

/// A limit that refused a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRefusal {
    pub scope: BudgetScope,
    pub kind: LimitKind,
    pub limit: i64,
    /// Epoch milliseconds at which the limit's window ends.
    pub resets_at: i64,
    /// How long until then.
    pub retry_after: Duration,
}

impl BudgetRefusal {
    /// The error code that names the limit.
    pub fn code(&self) -> &'static str {
        match self.kind {
            LimitKind::PeriodTokens => "budget_exceeded",
            LimitKind::TokensPerMinute => "tokens_per_minute_exceeded",
        }
    }
}

impl std::fmt::Display for BudgetRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = match self.scope {
            BudgetScope::User => "your",
            BudgetScope::Key => "this key's",
        };
        let what = match self.kind {
            LimitKind::PeriodTokens => "token budget for the period",
            LimitKind::TokensPerMinute => "tokens-per-minute limit",
        };
        let resets = chrono::DateTime::from_timestamp_millis(self.resets_at)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        write!(
            f,
            "{whose} {what} ({} tokens) is spent; it resets at {resets}",
            self.limit
        )
    }
}

/// What a send may go on with: the limits in force (none: nothing to settle) and the warnings for
/// the answer's metadata.
#[derive(Debug, Clone, Default)]
pub struct BudgetCheck {
    pub limited: bool,
    pub warnings: Vec<Value>,
}

/// The refusal, when a limit is spent (the one that resets last, so that waiting for it is
/// enough), else the warnings of limits past [`WARN_AT_PERCENT`].
pub fn judge(states: &[LimitState], now_ms: i64) -> Result<BudgetCheck, BudgetRefusal> {
    let spent = states
        .iter()
        .filter(|s| s.used >= s.limit)
        .max_by_key(|s| s.resets_at);
    if let Some(state) = spent {
        let wait = u64::try_from(state.resets_at - now_ms).unwrap_or(0);
        return Err(BudgetRefusal {
            scope: state.scope,
            kind: state.kind,
            limit: state.limit,
            resets_at: state.resets_at,
            retry_after: Duration::from_millis(wait),
        });
    }
    let warnings = states
        .iter()
        .filter(|s| s.used.saturating_mul(100) >= s.limit.saturating_mul(WARN_AT_PERCENT))
        .map(|s| {
            json!({
                "scope": s.scope.as_str(),
                "limit": match s.kind {
                    LimitKind::PeriodTokens => "period_tokens",
                    LimitKind::TokensPerMinute => "tokens_per_minute",
                },
                "used": s.used,
                "max": s.limit,
                "resetsAt": s.resets_at,
            })
        })
        .collect();
    Ok(BudgetCheck {
        limited: !states.is_empty(),
        warnings,
    })
}

/// What a turn spent, as budgets count it. Tokens today; a price table would add money here.
pub fn spent_tokens(usage: &Usage) -> i64 {
    let total = usage
        .total_tokens
        .max(usage.prompt_tokens + usage.completion_tokens);
    i64::try_from(total).unwrap_or(i64::MAX)
}

/// Counts a finished turn's tokens against the spender's limits. A failure is logged: the answer
/// is the user's whatever happens to the count.
pub(crate) async fn settle(store: &Store, spender: &Spender, usage: &Usage) {
    let now = crate::now().timestamp_millis();
    let tokens = spent_tokens(usage);
    if let Err(err) = store
        .settle_budget(&spender.user_id, spender.key_id.as_deref(), tokens, now)
        .await
    {
        tracing::warn!(user = %spender.user_id, tokens, error = %err, "the turn's tokens were not counted against its budget");
    }
}

/// Settles a facade turn, which keeps no answer: its only end-of-turn write.
pub(crate) struct SettleOnly {
    pub store: Store,
    pub spender: Spender,
}

impl AnswerRecorder for SettleOnly {
    fn checkpoint(&self, _parts: Vec<Value>, _metadata: Value) {}

    fn finish(&self, outcome: TurnOutcome) -> Pin<Box<dyn Future<Output = bool> + Send>> {
        let (store, spender) = (self.store.clone(), self.spender.clone());
        Box::pin(async move {
            settle(&store, &spender, &outcome.usage_total).await;
            true
        })
    }
}

impl Service {
    /// Refuses a send past one of its spender's limits; otherwise says whether any limit is in
    /// force and which are near.
    pub async fn check_budget(&self, spender: &Spender) -> Result<BudgetCheck, ServiceError> {
        let now = crate::now().timestamp_millis();
        let states = self
            .store
            .limit_states(&spender.user_id, spender.key_id.as_deref(), now);
        let states = self
            .store
            .traced(promptgate_store::StoreCall::CheckBudget, states)
            .await?;
        judge(&states, now).map_err(ServiceError::OverBudget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(kind: LimitKind, limit: i64, used: i64, resets_at: i64) -> LimitState {
        let mut state = LimitState::new(BudgetScope::User, kind, limit, resets_at);
        state.used = used;
        state
    }

    #[test]
    fn a_spent_limit_refuses_and_the_later_reset_is_named() {
        let states = [
            state(LimitKind::TokensPerMinute, 100, 100, 60_000),
            state(LimitKind::PeriodTokens, 1_000, 1_000, 86_400_000),
        ];
        let refusal = judge(&states, 30_000).unwrap_err();
        assert_eq!(refusal.kind, LimitKind::PeriodTokens);
        assert_eq!(refusal.retry_after, Duration::from_millis(86_370_000));
        assert_eq!(refusal.code(), "budget_exceeded");
        assert!(refusal.to_string().contains("1970-01-02T00:00:00Z"), "{refusal}");
    }

    #[test]
    fn near_a_limit_the_answer_is_warned() {
        let check = judge(&[state(LimitKind::PeriodTokens, 1_000, 799, 10)], 0).unwrap();
        assert!(check.limited && check.warnings.is_empty());
        let check = judge(&[state(LimitKind::PeriodTokens, 1_000, 800, 10)], 0).unwrap();
        assert_eq!(check.warnings[0]["limit"], "period_tokens");
        assert_eq!(check.warnings[0]["used"], 800);
        assert!(!judge(&[], 0).unwrap().limited);
    }
}
