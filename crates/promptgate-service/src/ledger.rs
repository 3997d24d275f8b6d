//! The usage ledger's side of a turn: what its row says besides the outcome (who, which key,
//! thread, model and provider, the price), the row itself once the turn ended, and the tokens and
//! cost it adds to the metrics. A thread's turn writes the row with its answer's checkpoints after
//! each model step and with its final save ([`crate::record`]); a facade request, which stores
//! nothing else, writes it on its own once it ended.

use std::sync::Arc;

use promptgate_core::pricing::{Price, Spent};
use promptgate_store::{TokenCounts, UsageKind, UsageQuery, UsageRecord};
use promptgate_turn::engine::{TurnOutcome, UsageSoFar};
use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

use crate::budgets::Spender;
use crate::ledger_batch::LedgerBatch;
use crate::{Service, ServiceError};

/// The status of a facade request whose client went away before its end.
const DISCONNECTED: &str = "disconnected";
/// The model label of models users configured themselves: their ids are theirs to choose, so
/// they would make the metric's series unbounded.
const USER_MODEL_LABEL: &str = "user";

/// A model a turn may be answered by, as its ledger row names and prices it.
#[derive(Debug, Clone)]
pub(crate) struct UsageRoute {
    pub model_id: String,
    pub provider: String,
    /// Whether the model is the deployment's (its id may label a metric; only those have prices).
    pub system: bool,
    pub price: Option<Price>,
}

/// What a turn's ledger row knows before the turn runs.
#[derive(Debug, Clone)]
pub(crate) struct UsageTag {
    pub user_id: String,
    pub key_id: Option<String>,
    pub thread_id: Option<String>,
    pub kind: UsageKind,
    /// The turn's own model.
    pub model: UsageRoute,
    /// The models that may answer instead.
    pub fallbacks: Vec<UsageRoute>,
    pub started: Instant,
}

impl UsageTag {
    /// The turn's row.
    pub(crate) fn record(&self, turn_id: &str, outcome: &TurnOutcome) -> UsageRecord {
        let answered_by = outcome.answered_by.as_ref().map(|a| a.model_id.as_str());
        let mut record = self.row(
            turn_id,
            &outcome.usage_total,
            answered_by,
            outcome.status.as_str(),
        );
        record.tool_calls = outcome.tool_calls;
        record.web_calls = outcome.web_calls;
        record
    }

    /// The row of a facade request whose client went away before its end, which drops the turn
    /// unfinished: what the provider reported until then, with status `disconnected`.
    pub(crate) fn disconnected(&self, turn_id: &str, so_far: &UsageSoFar) -> UsageRecord {
        let (usage, answered_by) = so_far.get();
        let answered_by = answered_by.as_ref().map(|a| a.model_id.as_str());
        self.row(turn_id, &usage, answered_by, DISCONNECTED)
    }

    /// A row of `usage`, priced at the model that answered, without tool counts.
    fn row(
        &self,
        turn_id: &str,
        usage: &promptgate_llm::Usage,
        answered_by: Option<&str>,
        status: &str,
    ) -> UsageRecord {
        let route = self.route(answered_by);
        let tokens = token_counts(usage);
        UsageRecord {
            user_id: self.user_id.clone(),
            turn_id: turn_id.to_owned(),
            key_id: self.key_id.clone(),
            thread_id: self.thread_id.clone(),
            kind: self.kind,
            model: route.model_id.clone(),
            provider: route.provider.clone(),
            tokens,
            tool_calls: 0,
            web_calls: 0,
            duration_ms: self.elapsed_ms(),
            status: status.to_owned(),
            cost: cost(route.price, tokens),
        }
    }

    /// The turn's row while it runs, from a checkpoint's metadata: the tokens of the steps that
    /// ended so far (the engine puts them there at each step's end), with status `unfinished`.
    /// `None` when the metadata has no usage yet.
    pub(crate) fn so_far(&self, turn_id: &str, metadata: &Value) -> Option<UsageRecord> {
        let usage = metadata.get("usage")?;
        let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let tokens = TokenCounts {
            input: count("inputTokens"),
            output: count("outputTokens"),
            cache_read: count("cachedInputTokens"),
            cache_write: count("cacheWriteInputTokens"),
            reasoning: count("reasoningTokens"),
        };
        Some(UsageRecord {
            user_id: self.user_id.clone(),
            turn_id: turn_id.to_owned(),
            key_id: self.key_id.clone(),
            thread_id: self.thread_id.clone(),
            kind: self.kind,
            model: self.model.model_id.clone(),
            provider: self.model.provider.clone(),
            tokens,
            tool_calls: 0,
            web_calls: 0,
            duration_ms: self.elapsed_ms(),
            status: promptgate_store::USAGE_UNFINISHED.to_owned(),
            cost: cost(self.model.price, tokens),
        })
    }

    /// What the turn's tokens cost at the price of the model that answered; `None` unpriced.
    pub(crate) fn cost_of(&self, outcome: &TurnOutcome) -> Option<f64> {
        cost(
            self.answered_by(outcome).price,
            token_counts(&outcome.usage_total),
        )
    }

    fn answered_by(&self, outcome: &TurnOutcome) -> &UsageRoute {
        self.route(outcome.answered_by.as_ref().map(|a| a.model_id.as_str()))
    }

    /// The route `model_id` names (the turn's own model when it names none or none known).
    fn route(&self, model_id: Option<&str>) -> &UsageRoute {
        model_id
            .and_then(|id| self.fallbacks.iter().find(|route| route.model_id == id))
            .unwrap_or(&self.model)
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Adds a stored row's tokens and cost to the metrics, by model.
    pub(crate) fn count(&self, record: &UsageRecord) {
        let route = self.route(Some(&record.model));
        let model = if route.system {
            route.model_id.clone()
        } else {
            USER_MODEL_LABEL.to_owned()
        };
        let tokens = record.tokens;
        for (kind, n) in [
            ("input", tokens.input),
            ("output", tokens.output),
            ("cache_read", tokens.cache_read),
            ("cache_write", tokens.cache_write),
            ("reasoning", tokens.reasoning),
        ] {
            metrics::counter!("promptgate_usage_tokens_total", "model" => model.clone(), "type" => kind)
                .increment(n);
        }
        if let Some(cost) = record.cost {
            metrics::counter!("promptgate_usage_cost_total", "model" => model).increment(to_micros(cost));
        }
    }
}

fn token_counts(usage: &promptgate_llm::Usage) -> TokenCounts {
    TokenCounts {
        input: usage.prompt_tokens,
        output: usage.completion_tokens,
        cache_read: usage.cached_tokens.unwrap_or(0),
        cache_write: usage.cache_write_tokens.unwrap_or(0),
        reasoning: usage.reasoning_tokens.unwrap_or(0),
    }
}

fn cost(price: Option<Price>, tokens: TokenCounts) -> Option<f64> {
    price.map(|price| {
        price.cost(Spent {
            input: tokens.input,
            cached_input: tokens.cache_read,
            output: tokens.output,
        })
    })
}

/// A cost in millionths, as the counter counts it (counters take whole numbers).
fn to_micros(cost: f64) -> u64 {
    let micros = (cost * 1_000_000.0).round();
    if micros.is_finite() && micros > 0.0 {
        micros as u64
    } else {
        0
    }
}

/// How a facade request's row is written: what it is, and what it learns as the turn runs.
pub(crate) struct FacadeUsage {
    pub tag: UsageTag,
    pub turn_id: String,
    /// What the turn used so far, for a request its client leaves before the end.
    pub so_far: Arc<UsageSoFar>,
    /// Whose limits such a request's tokens count against (the turn's own end settles the others).
    pub spender: Option<Spender>,
}

/// Gathers a facade request's row once its turn ended, in the background, so the client's stream
/// never waits for it; or, when the client went away first (which drops the turn unfinished), the
/// row of what it used until then, counted against its budgets too. The rows go to the store in
/// batches ([`LedgerBatch`]); the turn's id keys the row: a second write of it adds nothing.
pub(crate) fn record_facade(
    batch: &Arc<LedgerBatch>,
    facade: FacadeUsage,
    outcome: tokio::sync::oneshot::Receiver<TurnOutcome>,
) {
    let rows = Arc::clone(batch);
    let work = async move {
        let FacadeUsage {
            tag,
            turn_id,
            so_far,
            spender,
        } = facade;
        let record = match outcome.await {
            Ok(outcome) => tag.record(&turn_id, &outcome),
            Err(_) => {
                let record = tag.disconnected(&turn_id, &so_far);
                if let Some(spender) = &spender {
                    crate::budgets::settle(rows.store(), spender, &so_far.get().0, record.cost).await;
                }
                record
            }
        };
        rows.push(record, tag);
    };
    batch.tasks().spawn(work.instrument(tracing::Span::current()));
}

impl Service {
    /// The ledger summed as `query` asks. Whose rows it covers is the caller's decision
    /// (`query.user`): the transport knows who may see everyone's.
    pub async fn usage_report(
        &self,
        query: &UsageQuery,
    ) -> Result<Vec<promptgate_store::UsageGroup>, ServiceError> {
        Ok(self.store.usage_report(query).await?)
    }

    /// The ledger tag of a turn on `model` (or one of `fallbacks`) for `user_id`.
    pub(crate) fn usage_tag(
        &self,
        user_id: &str,
        key_id: Option<String>,
        thread_id: Option<String>,
        kind: UsageKind,
        model: &promptgate_core::settings::Model,
        fallbacks: Vec<UsageRoute>,
    ) -> UsageTag {
        UsageTag {
            user_id: user_id.to_owned(),
            key_id,
            thread_id,
            kind,
            model: self.usage_route(model),
            fallbacks,
            started: Instant::now(),
        }
    }

    /// How the ledger names and prices `model`: only the deployment's models have prices.
    pub(crate) fn usage_route(&self, model: &promptgate_core::settings::Model) -> UsageRoute {
        UsageRoute {
            model_id: model.id.clone(),
            provider: model.provider.clone(),
            system: model.system,
            price: self.config.prices.price(&model.id).filter(|_| model.system),
        }
    }
}
