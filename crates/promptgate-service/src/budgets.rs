//! Budgets on a send: checked before the model is called (a limit already spent refuses the send
//! with when it resets), settled after the turn with the tokens the upstream reported and what
//! they cost. The numbers live in the store, so every instance enforces the same limits.
//!
//! A money limit can only hold where every request has a price: while one is in force, a send to
//! a model without a price (or with a fallback without one) is refused before anything is stored.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use promptgate_llm::Usage;
use promptgate_store::{BudgetScope, BudgetSpend, LimitKind, LimitState, Store};
use promptgate_turn::engine::{AnswerRecorder, TurnOutcome};
use serde_json::{Value, json};

use crate::ledger::UsageRoute;
use crate::{Service, ServiceError};

/// Past this share of a limit, the answer's metadata carries a warning.
pub const WARN_AT_PERCENT: i64 = 80;
/// Money in a budget is counted in millionths of the price table's currency.
pub const MICROS_PER_UNIT: f64 = 1_000_000.0;

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
            LimitKind::PeriodCost => "cost_budget_exceeded",
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
        let (what, amount) = match self.kind {
            LimitKind::PeriodTokens => ("token budget for the period", format!("{} tokens", self.limit)),
            LimitKind::PeriodCost => (
                "money budget for the period",
                format!("{} in the price table's currency", money(self.limit)),
            ),
            LimitKind::TokensPerMinute => ("tokens-per-minute limit", format!("{} tokens", self.limit)),
        };
        let resets = chrono::DateTime::from_timestamp_millis(self.resets_at)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        write!(f, "{whose} {what} ({amount}) is spent; it resets at {resets}")
    }
}

/// What a send may go on with: the limits in force (none: nothing to settle) and the warnings for
/// the answer's metadata.
#[derive(Debug, Clone, Default)]
pub struct BudgetCheck {
    pub limited: bool,
    /// A money limit is among them: every model the send may reach needs a price.
    pub money: bool,
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
            let (limit, used, max) = match s.kind {
                LimitKind::PeriodTokens => ("period_tokens", json!(s.used), json!(s.limit)),
                LimitKind::PeriodCost => ("period_cost", json!(money(s.used)), json!(money(s.limit))),
                LimitKind::TokensPerMinute => ("tokens_per_minute", json!(s.used), json!(s.limit)),
            };
            json!({
                "scope": s.scope.as_str(),
                "limit": limit,
                "used": used,
                "max": max,
                "resetsAt": s.resets_at,
            })
        })
        .collect();
    Ok(BudgetCheck {
        limited: !states.is_empty(),
        money: states.iter().any(|s| s.kind == LimitKind::PeriodCost),
        warnings,
    })
}

/// Millionths of the currency as the currency.
pub fn money(micros: i64) -> f64 {
    micros as f64 / MICROS_PER_UNIT
}

/// The currency in millionths, rounded; `None` when it is not a finite amount a budget can hold.
pub fn to_micros(amount: f64) -> Option<i64> {
    let micros = (amount * MICROS_PER_UNIT).round();
    (micros.is_finite() && micros.abs() < 9.0e18).then_some(micros as i64)
}

/// What a turn spent, as budgets count it: its tokens, and their cost (`None`: the model has no
/// price, which a money limit refuses before the turn; counted as nothing).
pub fn spent(usage: &Usage, cost: Option<f64>) -> BudgetSpend {
    let total = usage
        .total_tokens
        .max(usage.prompt_tokens + usage.completion_tokens);
    BudgetSpend {
        tokens: i64::try_from(total).unwrap_or(i64::MAX),
        cost_micros: cost.and_then(to_micros).unwrap_or(0).max(0),
    }
}

/// Counts a finished turn's tokens and cost against the spender's limits. A failure is logged:
/// the answer is the user's whatever happens to the count.
pub(crate) async fn settle(store: &Store, spender: &Spender, usage: &Usage, cost: Option<f64>) {
    let now = crate::now().timestamp_millis();
    let spend = spent(usage, cost);
    if let Err(err) = store
        .settle_budget(&spender.user_id, spender.key_id.as_deref(), spend, now)
        .await
    {
        tracing::warn!(user = %spender.user_id, tokens = spend.tokens, cost_micros = spend.cost_micros, error = %err, "the turn's spending was not counted against its budget");
    }
}

/// Settles a facade turn, which keeps no answer: its only end-of-turn write.
pub(crate) struct SettleOnly {
    pub store: Store,
    pub spender: Spender,
    /// Prices the turn's tokens, by the model that answered.
    pub usage: crate::ledger::UsageTag,
}

impl AnswerRecorder for SettleOnly {
    fn checkpoint(&self, _parts: Vec<Value>, _metadata: Value) {}

    fn finish(&self, outcome: TurnOutcome) -> Pin<Box<dyn Future<Output = bool> + Send>> {
        let (store, spender) = (self.store.clone(), self.spender.clone());
        let cost = self.usage.cost_of(&outcome);
        Box::pin(async move {
            settle(&store, &spender, &outcome.usage_total, cost).await;
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
            .limit_states(&spender.user_id, spender.key_id.as_deref(), now)
            .await?;
        judge(&states, now).map_err(ServiceError::OverBudget)
    }

    /// Refuses a send under a money limit to `model` when it, or one of the fallbacks that may
    /// answer for it, has no price: its cost could not be counted.
    pub(crate) async fn refuse_unpriced(
        &self,
        budget: &BudgetCheck,
        user_id: &str,
        model: &promptgate_core::settings::Model,
    ) -> Result<(), ServiceError> {
        if !budget.money {
            return Ok(());
        }
        let mut routes = vec![self.usage_route(model)];
        for id in &model.fallbacks {
            // A fallback that does not exist is left out of the turn anyway.
            if let Some(fallback) = self.store.get_model(user_id, id).await? {
                routes.push(self.usage_route(&fallback));
            }
        }
        match routes.iter().find(|route: &&UsageRoute| route.price.is_none()) {
            Some(route) => Err(ServiceError::UnpricedModel(route.model_id.clone())),
            None => Ok(()),
        }
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
