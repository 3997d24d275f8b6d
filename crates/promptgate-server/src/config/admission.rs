//! The `[admission]` section: how many turns the server lets run at once, adapted to what the machine
//! carries, and how a saturated server shares them among its clients.

use std::time::Duration;

use promptgate_core::admission::LimitSettings;
use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdmissionConfig {
    /// Whether the limit adapts at all; off, only `turn.max_in_flight` bounds turns.
    pub adaptive: bool,
    /// The limit at start, before anything was measured.
    pub initial_limit: usize,
    /// The limit never falls below this.
    pub min_limit: usize,
    /// Nor rises above this; unset, `turn.max_in_flight` (which it may not pass).
    pub max_limit: Option<usize>,
    /// A wait in the run queue this many milliseconds over the baseline still counts as on time.
    pub delay_tolerance_ms: u64,
    /// A write's wait for the database this many milliseconds over the baseline still counts as on
    /// time; past it the sends that store their answers are limited too.
    pub store_delay_tolerance_ms: u64,
    /// How often the server measures how long its own work waits to run.
    pub probe_interval_ms: u64,
    /// What `Retry-After` says on a refusal.
    pub retry_after_secs: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            adaptive: true,
            initial_limit: 256,
            min_limit: 8,
            max_limit: None,
            // A request waits in the run queue a dozen times or so (its head, the model's answer,
            // each write), so a few milliseconds per wait is already tens of milliseconds per answer.
            delay_tolerance_ms: 1,
            // Sends write four or five times each: 20 ms per write keeps an answered send under
            // 250 ms at the p99 past saturation, where 100 ms let sends queue for a quarter second.
            store_delay_tolerance_ms: 20,
            probe_interval_ms: 10,
            retry_after_secs: 1,
        }
    }
}

/// The baseline is the smallest delay of the current and the previous window of this length.
const BASELINE_WINDOW: Duration = Duration::from_secs(10);
/// Each measurement moves the limit this far towards the value it asks for.
const SMOOTHING: f64 = 0.2;

impl AdmissionConfig {
    /// The limiter's settings, under `ceiling` (the server's `turn.max_in_flight`).
    pub fn limit_settings(&self, ceiling: usize) -> LimitSettings {
        let max = self.max_limit.unwrap_or(ceiling).min(ceiling);
        LimitSettings {
            initial: self.initial_limit,
            min: self.min_limit.min(max),
            max,
            tolerance: Duration::from_millis(self.delay_tolerance_ms),
            baseline_window: BASELINE_WINDOW,
            smoothing: SMOOTHING,
        }
    }

    /// The settings of the limit on sends that store their answers, which follows how long writes
    /// wait for the database: the same bounds, its own tolerance.
    pub fn store_limit_settings(&self, ceiling: usize) -> LimitSettings {
        LimitSettings {
            tolerance: Duration::from_millis(self.store_delay_tolerance_ms),
            ..self.limit_settings(ceiling)
        }
    }

    pub fn probe_interval(&self) -> Duration {
        Duration::from_millis(self.probe_interval_ms)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("admission.initial_limit", self.initial_limit as u64),
            ("admission.min_limit", self.min_limit as u64),
            ("admission.max_limit", self.max_limit.unwrap_or(1) as u64),
            ("admission.delay_tolerance_ms", self.delay_tolerance_ms),
            (
                "admission.store_delay_tolerance_ms",
                self.store_delay_tolerance_ms,
            ),
            ("admission.probe_interval_ms", self.probe_interval_ms),
            ("admission.retry_after_secs", self.retry_after_secs),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{key} must be positive")));
        }
        if self.max_limit.is_some_and(|max| max < self.min_limit) {
            return Err(ConfigError::Invalid(
                "admission.max_limit must be at least admission.min_limit".into(),
            ));
        }
        Ok(())
    }
}
