//! The fallbacks of a send's model, resolved for the engine ([`promptgate_turn::engine::Failover`]):
//! each named model the user may use, with the client of its provider, and the process's circuit
//! breakers. A model without fallbacks costs nothing here; a fallback that no longer exists (or
//! whose provider is gone) is left out with a warning rather than fail the send.

use std::sync::Arc;
use std::time::Duration;

use promptgate_core::breaker::BreakerSettings;
use promptgate_core::settings::Model;
use promptgate_turn::engine::{Failover, RetryPolicy, Route};

use crate::ledger::UsageRoute;
use crate::{ModelProvider, Service};

/// How a failing model is retried and how its provider's breaker behaves.
#[derive(Debug, Clone, Copy)]
pub struct FailoverSettings {
    pub policy: RetryPolicy,
    pub breaker: BreakerSettings,
}

impl Default for FailoverSettings {
    fn default() -> Self {
        Self {
            policy: RetryPolicy::default(),
            breaker: BreakerSettings {
                failures_to_open: 5,
                cool_down: Duration::from_secs(30),
            },
        }
    }
}

/// The providers a turn may be answered from: its model's, and its fallbacks' for the engine and
/// for the usage ledger.
pub(crate) struct ModelRoutes<'p> {
    pub provider: &'p ModelProvider,
    pub failover: Failover,
    pub ledger: Vec<UsageRoute>,
}

impl Service {
    /// The routes of `model`, whose provider is `provider`.
    pub(crate) async fn routes_for<'p>(
        &self,
        user_id: &str,
        model: &Model,
        provider: &'p ModelProvider,
    ) -> ModelRoutes<'p> {
        let mut failover = Failover {
            provider: provider.name.clone(),
            fallbacks: Vec::new(),
            breakers: Some(Arc::clone(&self.breakers)),
            policy: self.config.failover.policy,
        };
        let mut usage = Vec::new();
        for id in &model.fallbacks {
            let fallback = match self.store.get_model(user_id, id).await {
                Ok(Some(fallback)) => fallback,
                Ok(None) => {
                    tracing::warn!(model = %model.id, fallback = %id, "a fallback model does not exist; left out");
                    continue;
                }
                Err(err) => {
                    tracing::warn!(model = %model.id, fallback = %id, error = %err, "a fallback model could not be read; left out");
                    continue;
                }
            };
            let Some(client) = self.providers.get(&fallback.provider) else {
                tracing::warn!(model = %model.id, fallback = %id, provider = %fallback.provider, "a fallback's provider is not configured; left out");
                continue;
            };
            usage.push(self.usage_route(&fallback));
            failover.fallbacks.push(Route {
                model_id: fallback.id.clone(),
                provider: fallback.provider.clone(),
                model: client.model_client(&fallback),
                upstream_model: fallback.upstream_model.clone(),
            });
        }
        ModelRoutes {
            provider,
            failover,
            ledger: usage,
        }
    }
}
