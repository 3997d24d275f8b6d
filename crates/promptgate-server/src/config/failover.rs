//! `[failover]`: how a model with `fallbacks` is asked again and failed over, and when a failing
//! provider is skipped (its circuit breaker). See docs/models.md#fallbacks.

use std::time::Duration;

use promptgate_service::deployment::{BreakerSettings, FailoverSettings, RetryPolicy};
use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailoverConfig {
    /// Requests after the first to a failing model before its next fallback is asked.
    pub retries: u32,
    /// The pause before the first retry; it doubles with each one.
    pub backoff_ms: u64,
    /// The longest `retry-after` of a 429 that is waited for; a longer one moves to the next model.
    pub max_retry_after_secs: u64,
    /// Failures in a row after which a provider is skipped.
    pub breaker_failures: u32,
    /// How long a provider is skipped before one request tries it again.
    pub breaker_cool_down_secs: u64,
}

impl Default for FailoverConfig {
    fn default() -> Self {
        let defaults = FailoverSettings::default();
        Self {
            retries: defaults.policy.retries,
            backoff_ms: u64::try_from(defaults.policy.backoff.as_millis()).unwrap_or(u64::MAX),
            max_retry_after_secs: defaults.policy.max_wait.as_secs(),
            breaker_failures: defaults.breaker.failures_to_open,
            breaker_cool_down_secs: defaults.breaker.cool_down.as_secs(),
        }
    }
}

impl FailoverConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.breaker_failures == 0 {
            return Err(ConfigError::Invalid(
                "failover.breaker_failures must be positive".into(),
            ));
        }
        if self.retries > 10 {
            return Err(ConfigError::Invalid("failover.retries may be at most 10".into()));
        }
        Ok(())
    }

    pub fn settings(&self) -> FailoverSettings {
        FailoverSettings {
            policy: RetryPolicy {
                retries: self.retries,
                backoff: Duration::from_millis(self.backoff_ms),
                max_wait: Duration::from_secs(self.max_retry_after_secs),
            },
            breaker: BreakerSettings {
                failures_to_open: self.breaker_failures,
                cool_down: Duration::from_secs(self.breaker_cool_down_secs),
            },
        }
    }
}
