//! Failover: when a model's provider fails before a step's first event (a connection error, a
//! timeout, a 429 or a 5xx), the step is asked again after a backoff (or the wait a 429 asked for,
//! when it is short enough), then of the model's fallbacks in order. The turn stays the same turn:
//! its web budget, sources and tool results are the turn's, whichever model answers; once an event
//! of a step has reached the turn nothing of that step is asked again. Each provider has a circuit
//! breaker ([`promptgate_core::breaker`]), shared by every turn of the process, so a provider that
//! keeps failing is skipped for a cool-down instead of costing every turn its timeouts.
//!
//! A model without fallbacks fails as before: at once, with the provider's error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptgate_core::breaker::{Breaker, BreakerSettings};
use promptgate_llm::{ChatModel, ChatRequest, EventStream, LlmError, StreamEvent, TimeoutPhase};
use tokio::time::Instant;

use super::step::Interrupt;
use super::turn::Turn;

/// Another model a turn may ask.
#[derive(Clone)]
pub struct Route {
    /// The model id as users know it (the answer's `answeredBy`, the usage ledger).
    pub model_id: String,
    /// The provider's name in the configuration (breakers and metrics go by it).
    pub provider: String,
    pub model: Arc<dyn ChatModel>,
    pub upstream_model: String,
}

/// How often and how long a failing model is asked again before the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests after the first to the same model.
    pub retries: u32,
    /// The first pause; it doubles with each retry.
    pub backoff: Duration,
    /// The longest wait a 429's `retry-after` may impose; a longer one moves on at once.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            retries: 1,
            backoff: Duration::from_millis(200),
            max_wait: Duration::from_secs(10),
        }
    }
}

/// The circuit breakers of every provider, shared by the turns of a process.
pub struct Breakers {
    settings: BreakerSettings,
    inner: Mutex<HashMap<String, Breaker>>,
}

impl Breakers {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            inner: Mutex::new(HashMap::new()),
        }
    }

    fn with<T>(&self, provider: &str, f: impl FnOnce(&mut Breaker) -> T) -> T {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let breaker = inner
            .entry(provider.to_owned())
            .or_insert_with(|| Breaker::new(self.settings));
        f(breaker)
    }

    pub fn allow(&self, provider: &str, now: std::time::Instant) -> bool {
        self.with(provider, |b| b.allow(now))
    }

    pub fn succeeded(&self, provider: &str) {
        self.with(provider, Breaker::succeeded);
    }

    pub fn failed(&self, provider: &str, now: std::time::Instant) {
        self.with(provider, |b| b.failed(now));
    }
}

/// A plan's failover: the provider of its own model, the fallbacks in order, the breakers and the
/// retry policy. The default has no fallbacks, which turns failover off.
#[derive(Clone, Default)]
pub struct Failover {
    pub provider: String,
    pub fallbacks: Vec<Route>,
    pub breakers: Option<Arc<Breakers>>,
    pub policy: RetryPolicy,
}

/// The model that answered a turn when it was not the plan's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredBy {
    pub model_id: String,
    pub provider: String,
}

/// Why a request failed over, as the metric names it; `None` for a failure that another request
/// would meet again (a refused prompt, a broken stream).
fn reason(err: &LlmError) -> Option<&'static str> {
    match err {
        LlmError::Connect(_) => Some("connect"),
        LlmError::Timeout {
            phase: TimeoutPhase::Connect | TimeoutPhase::FirstByte,
            ..
        } => Some("timeout"),
        LlmError::Status { status: 429, .. } => Some("rate_limited"),
        LlmError::Status { status, .. } if (500..600).contains(status) => Some("server_error"),
        _ => None,
    }
}

/// A stream whose first event has arrived (`None`: it ended without one).
pub(super) type Opened = (Option<StreamEvent>, EventStream);

impl Turn {
    /// The model, upstream name and provider of route `index` (0: the plan's own model).
    fn route(&self, index: usize) -> (Arc<dyn ChatModel>, String, String) {
        match index
            .checked_sub(1)
            .and_then(|i| self.plan.failover.fallbacks.get(i))
        {
            Some(route) => (
                Arc::clone(&route.model),
                route.upstream_model.clone(),
                route.provider.clone(),
            ),
            None => (
                Arc::clone(&self.plan.model),
                self.plan.upstream_model.clone(),
                self.plan.failover.provider.clone(),
            ),
        }
    }

    /// Sends the step's request and waits for its first event, failing over as the module says
    /// when the plan has fallbacks.
    pub(super) async fn open_stream(&mut self, request: ChatRequest) -> Result<Opened, Interrupt> {
        if self.plan.failover.fallbacks.is_empty() {
            let model = Arc::clone(&self.plan.model);
            return self.first_event(model.as_ref(), request).await;
        }
        let routes = 1 + self.plan.failover.fallbacks.len();
        let policy = self.plan.failover.policy;
        let breakers = self.plan.failover.breakers.clone();
        let mut last = None;
        for index in self.route_index..routes {
            let (model, upstream_model, provider) = self.route(index);
            let next = index + 1 < routes;
            if let Some(breakers) = &breakers
                && !breakers.allow(&provider, std::time::Instant::now())
            {
                if next {
                    count_failover(&provider, "circuit_open");
                }
                continue;
            }
            let mut attempt_request = request.clone();
            attempt_request.model = upstream_model;
            for attempt in 0..=policy.retries {
                let err = match self.first_event(model.as_ref(), attempt_request.clone()).await {
                    Ok(opened) => {
                        if let Some(breakers) = &breakers {
                            breakers.succeeded(&provider);
                        }
                        self.route_index = index;
                        return Ok(opened);
                    }
                    Err(Interrupt::Failed(err)) => err,
                    Err(stopped) => return Err(stopped),
                };
                let Some(why) = reason(&err) else {
                    return Err(Interrupt::Failed(err));
                };
                tracing::warn!(turn = %self.plan.turn_id, provider = %provider, reason = why, error = %err, "model request failed; trying again or the next model");
                if let Some(breakers) = &breakers {
                    breakers.failed(&provider, std::time::Instant::now());
                }
                let wait = err
                    .retry_after()
                    .unwrap_or(policy.backoff.saturating_mul(1 << attempt.min(16)));
                let may_retry = attempt < policy.retries
                    && wait <= policy.max_wait
                    && breakers
                        .as_ref()
                        .is_none_or(|b| b.allow(&provider, std::time::Instant::now()));
                if !may_retry {
                    if next {
                        count_failover(&provider, why);
                    }
                    last = Some(err);
                    break;
                }
                if self
                    .out
                    .wait(tokio::time::sleep_until(Instant::now() + wait))
                    .await
                    .is_none()
                {
                    return Err(Interrupt::Stopped);
                }
            }
        }
        Err(Interrupt::Failed(last.unwrap_or_else(|| {
            LlmError::Connect(
                "every provider of this model is resting after repeated failures; try again shortly"
                    .to_owned(),
            )
        })))
    }

    /// One request, up to its first event.
    async fn first_event(
        &mut self,
        model: &dyn ChatModel,
        request: ChatRequest,
    ) -> Result<Opened, Interrupt> {
        use futures::StreamExt;
        use opentelemetry::context::FutureExt;
        self.upstream_requests += 1;
        // The call's span is attached while the request goes out, so its `traceparent` names the
        // call; the frames of the answer are read outside it (entering a span on every poll was
        // most of what exporting traces cost, docs/benchmarks.md).
        let mut opening = model.stream(request);
        if let Some(context) = self.chat_span.clone() {
            opening = Box::pin(opening.with_context(context));
        }
        let mut stream = match self.out.wait(opening).await {
            None | Some(Err(LlmError::Cancelled)) => return Err(Interrupt::Stopped),
            Some(Err(err)) => return Err(Interrupt::Failed(err)),
            Some(Ok(stream)) => stream,
        };
        match self.out.wait(stream.next()).await {
            None | Some(Some(Err(LlmError::Cancelled))) => Err(Interrupt::Stopped),
            Some(Some(Err(err))) => Err(Interrupt::Failed(err)),
            Some(Some(Ok(first))) => Ok((Some(first), stream)),
            Some(None) => Ok((None, stream)),
        }
    }

    /// The model that answered, when a fallback did.
    pub(super) fn answered_by(&self) -> Option<AnsweredBy> {
        let route = self.route_index.checked_sub(1)?;
        let route = self.plan.failover.fallbacks.get(route)?;
        Some(AnsweredBy {
            model_id: route.model_id.clone(),
            provider: route.provider.clone(),
        })
    }
}

fn count_failover(provider: &str, reason: &'static str) {
    metrics::counter!("promptgate_failovers_total", "provider" => provider.to_owned(), "reason" => reason)
        .increment(1);
}
