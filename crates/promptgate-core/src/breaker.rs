//! A circuit breaker per model provider: after `failures_to_open` failures in a row the provider
//! is skipped for `cool_down`; then one request goes through as a probe (half-open), which closes
//! the breaker when it succeeds and opens it for another cool-down when it fails. The time is the
//! caller's (`now`), so a test walks through it without waiting.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    pub failures_to_open: u32,
    pub cool_down: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Requests go through; `failures` in a row so far.
    Closed { failures: u32 },
    /// Requests are refused until `until`.
    Open { until: Instant },
    /// One probe is under way; everything else is refused until it reports.
    HalfOpen,
}

#[derive(Debug, Clone)]
pub struct Breaker {
    settings: BreakerSettings,
    state: BreakerState,
}

impl Breaker {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            state: BreakerState::Closed { failures: 0 },
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a request may go now. Past the cool-down the first caller is let through as the
    /// probe.
    pub fn allow(&mut self, now: Instant) -> bool {
        match self.state {
            BreakerState::Closed { .. } => true,
            BreakerState::Open { until } if now >= until => {
                self.state = BreakerState::HalfOpen;
                true
            }
            BreakerState::Open { .. } | BreakerState::HalfOpen => false,
        }
    }

    pub fn succeeded(&mut self) {
        self.state = BreakerState::Closed { failures: 0 };
    }

    pub fn failed(&mut self, now: Instant) {
        let open = BreakerState::Open {
            until: now + self.settings.cool_down,
        };
        self.state = match self.state {
            BreakerState::Closed { failures } if failures + 1 < self.settings.failures_to_open.max(1) => {
                BreakerState::Closed {
                    failures: failures + 1,
                }
            }
            _ => open,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_failures_in_a_row_and_closes_after_a_good_probe() {
        let start = Instant::now();
        let cool_down = Duration::from_secs(30);
        let mut breaker = Breaker::new(BreakerSettings {
            failures_to_open: 3,
            cool_down,
        });
        breaker.failed(start);
        breaker.succeeded();
        breaker.failed(start);
        breaker.failed(start);
        assert!(
            breaker.allow(start),
            "a success in between starts the count again"
        );
        breaker.failed(start);
        assert!(
            !breaker.allow(start + Duration::from_secs(29)),
            "open during the cool-down"
        );
        let later = start + cool_down;
        assert!(breaker.allow(later), "the probe goes through");
        assert!(!breaker.allow(later), "one probe at a time");
        breaker.failed(later);
        assert_eq!(
            breaker.state(),
            BreakerState::Open {
                until: later + cool_down
            }
        );
        assert!(breaker.allow(later + cool_down));
        breaker.succeeded();
        assert!(breaker.allow(later + cool_down) && breaker.allow(later + cool_down));
    }
}
