//! Admission under overload: how many turns the server lets run at once, and who may still start one
//! when that many run.
//!
//! The limit is not a fixed count. It follows how long the gateway's own work waits to run (the
//! caller measures it, e.g. as a marker's wait in the run queue), against the smallest delay seen
//! recently: the idea of TCP Vegas and of gradient limiters (Netflix's concurrency-limits, Envoy's
//! adaptive concurrency). While work runs on time and the limit binds (half in use, or a request
//! refused since the last measurement), it grows by its square root; once work runs late, it
//! shrinks by the ratio of the target delay to the measured one. Past
//! the limit a request is refused at once, so what is admitted stays fast instead of everything
//! queueing.
//!
//! A saturated server still admits a client that holds less than its share of the limit (the limit
//! divided among the clients with turns running), so one client flooding the server cannot take
//! all of it from the others.
//!
//! Pure: the delays and the times they were measured at are passed in.

use std::time::Duration;

/// How the limit moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitSettings {
    /// The limit before the first measurement.
    pub initial: usize,
    /// The limit never falls below this, however late work runs.
    pub min: usize,
    /// Nor rises above this (the server's hard ceiling of turns in flight).
    pub max: usize,
    /// Work this much later than the baseline still counts as on time. The baseline itself is
    /// counted up to this much only: a baseline measured while the server was already overloaded
    /// must not make lateness look normal.
    pub tolerance: Duration,
    /// The baseline is the smallest delay of the current and the previous window of this length,
    /// so it follows a machine that got slower for good, a window or two later.
    pub baseline_window: Duration,
    /// How much of each new value the limit takes (0 to 1); the rest is its old value.
    pub smoothing: f64,
}

/// The smallest factor one measurement shrinks the wanted limit by.
const MIN_GRADIENT: f64 = 0.5;

/// A concurrency limit that follows measured delay.
#[derive(Debug, Clone)]
pub struct AdaptiveLimit {
    settings: LimitSettings,
    limit: f64,
    /// The smallest delay in the current window, and when that window opened.
    window_min: Option<Duration>,
    window_opened: Duration,
    /// The smallest delay of the window before.
    previous_min: Option<Duration>,
}

impl AdaptiveLimit {
    pub fn new(settings: LimitSettings) -> Self {
        let settings = LimitSettings {
            min: settings.min.max(1),
            max: settings.max.max(settings.min.max(1)),
            smoothing: settings.smoothing.clamp(0.01, 1.0),
            ..settings
        };
        let limit = settings.initial.clamp(settings.min, settings.max) as f64;
        Self {
            settings,
            limit,
            window_min: None,
            window_opened: Duration::ZERO,
            previous_min: None,
        }
    }

    /// Requests that may run at once now.
    pub fn limit(&self) -> usize {
        (self.limit.floor() as usize).clamp(self.settings.min, self.settings.max)
    }

    /// The delay the limit steers towards: the baseline (at most the tolerance) plus the tolerance.
    pub fn target(&self) -> Duration {
        let baseline = self.baseline().unwrap_or_default().min(self.settings.tolerance);
        baseline + self.settings.tolerance
    }

    fn baseline(&self) -> Option<Duration> {
        match (self.window_min, self.previous_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes one measurement: work due at some moment ran `delay` late, with the limit used as
    /// `usage` says, at `at` (any fixed origin). Returns the new limit.
    pub fn observe(&mut self, delay: Duration, usage: Usage, at: Duration) -> usize {
        self.track_baseline(delay, at);
        let target = self.target().as_secs_f64();
        let measured = delay.as_secs_f64().max(f64::MIN_POSITIVE);
        let gradient = (target / measured).clamp(MIN_GRADIENT, 1.0);
        // Grow only while the limit binds: half its places taken, or a request refused for it since
        // the last measurement. An idle server learns nothing about its capacity, and a limit grown
        // without load would let the next burst in whole. The refusals count because requests
        // arrive in bursts: a probe between two can find few in flight though the limit just
        // refused, and with growth waiting for a full limit at the probe's moment while shrinking
        // waits for nothing, the limit drifted towards its floor (8 to 12 through one step test,
        // where another run of the same steps held 20 to 40).
        let binding = usage.refused || usage.in_flight.saturating_mul(2) >= self.limit();
        let headroom = if gradient >= 1.0 && binding {
            self.limit.sqrt()
        } else {
            0.0
        };
        let wanted = self.limit * gradient + headroom;
        let s = self.settings.smoothing;
        self.limit =
            ((1.0 - s) * self.limit + s * wanted).clamp(self.settings.min as f64, self.settings.max as f64);
        self.limit()
    }

    fn track_baseline(&mut self, delay: Duration, at: Duration) {
        if at.saturating_sub(self.window_opened) >= self.settings.baseline_window {
            self.previous_min = self.window_min;
            self.window_min = None;
            self.window_opened = at;
        }
        self.window_min = Some(self.window_min.map_or(delay, |m| m.min(delay)));
    }
}

/// Why a request was not admitted.
/// How the limit was used when a measurement was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Requests admitted at that moment.
    pub in_flight: usize,
    /// Whether a request was refused for the limit since the measurement before.
    pub refused: bool,
}

impl Usage {
    /// `in_flight` admitted, none refused.
    pub fn admitted(in_flight: usize) -> Self {
        Self {
            in_flight,
            refused: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server runs its limit and this client already holds its share of it.
    Saturated,
    /// The server runs its hard ceiling of turns, shares or not.
    Ceiling,
    /// The sends that store their answers run their own limit, set by how long the database's
    /// writes wait, and this client already holds its share of it.
    StoreBusy,
}

impl Refusal {
    /// The label of this reason in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Saturated => "saturated",
            Refusal::Ceiling => "ceiling",
            Refusal::StoreBusy => "store",
        }
    }
}

/// What the server runs when a request arrives, and what its client holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// Requests admitted and not yet finished, all clients.
    pub in_flight: usize,
    /// The adaptive limit now.
    pub limit: usize,
    /// The hard ceiling, which nothing passes.
    pub ceiling: usize,
    /// Requests of this request's client admitted and not yet finished.
    pub own: usize,
    /// Clients with a request admitted and not finished, this one counted even when it holds none.
    pub clients: usize,
}

/// Whether a request may start. Under the limit everyone may; at it, only a client holding less
/// than its share (the limit divided among the clients running requests), so a client that holds
/// more than its share is refused while the others still get in.
pub fn decide(load: Load) -> Result<(), Refusal> {
    if load.in_flight >= load.ceiling {
        return Err(Refusal::Ceiling);
    }
    if load.in_flight < load.limit {
        return Ok(());
    }
    let share = load.limit.div_ceil(load.clients.max(1)).max(1);
    if load.own < share && load.clients > 1 {
        Ok(())
    } else {
        Err(Refusal::Saturated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LimitSettings {
        LimitSettings {
            initial: 20,
            min: 4,
            max: 1000,
            tolerance: Duration::from_millis(5),
            baseline_window: Duration::from_secs(10),
            smoothing: 0.2,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn on_time_work_with_the_limit_in_use_grows_the_limit() {
        let mut limit = AdaptiveLimit::new(settings());
        let mut last = limit.limit();
        for step in 0..100 {
            let now = limit.observe(ms(1), Usage::admitted(last), ms(step * 10));
            assert!(now >= last, "step {step}: {now} < {last}");
            last = now;
        }
        assert!(last > 100, "grew only to {last}");
    }

    #[test]
    fn an_idle_server_does_not_grow_its_limit() {
        let mut limit = AdaptiveLimit::new(settings());
        for step in 0..50 {
            limit.observe(ms(1), Usage::admitted(2), ms(step * 10));
        }
        assert_eq!(limit.limit(), 20);
    }

    #[test]
    fn a_refusal_since_the_last_measurement_lets_on_time_work_grow_the_limit() {
        // Arrivals in bursts: the limit refused some, yet at each measurement few are in flight.
        let mut limit = AdaptiveLimit::new(settings());
        let usage = Usage {
            in_flight: 2,
            refused: true,
        };
        for step in 0..50 {
            limit.observe(ms(1), usage, ms(step * 10));
        }
        assert!(limit.limit() > 40, "grew only to {}", limit.limit());
    }

    #[test]
    fn late_work_shrinks_the_limit_however_few_are_in_flight() {
        // A stalled database: three sends wait on it, far below the limit.
        let mut limit = AdaptiveLimit::new(settings());
        limit.observe(ms(1), Usage::admitted(20), ms(0));
        for step in 1..50 {
            limit.observe(ms(100), Usage::admitted(3), ms(step * 10));
        }
        assert_eq!(limit.limit(), 4);
    }

    #[test]
    fn late_work_shrinks_the_limit_towards_the_floor() {
        let mut limit = AdaptiveLimit::new(LimitSettings {
            initial: 500,
            ..settings()
        });
        limit.observe(ms(1), Usage::admitted(500), ms(0));
        let mut last = limit.limit();
        for step in 1..60 {
            let now = limit.observe(ms(100), Usage::admitted(last), ms(step * 10));
            assert!(now <= last, "step {step}: {now} > {last}");
            last = now;
        }
        assert_eq!(last, 4, "the floor holds");
    }

    #[test]
    fn a_small_lateness_within_the_tolerance_is_on_time() {
        let mut limit = AdaptiveLimit::new(settings());
        limit.observe(ms(1), Usage::admitted(20), ms(0));
        let before = limit.limit();
        // The target is the baseline (1 ms) plus the tolerance (5 ms).
        assert_eq!(limit.target(), ms(6));
        assert!(limit.observe(ms(6), Usage::admitted(before), ms(10)) >= before);
    }

    #[test]
    fn a_baseline_measured_under_overload_does_not_raise_the_target_past_twice_the_tolerance() {
        let mut limit = AdaptiveLimit::new(settings());
        for step in 0..10 {
            limit.observe(ms(80), Usage::admitted(20), ms(step * 10));
        }
        assert_eq!(limit.target(), ms(10));
    }

    #[test]
    fn the_baseline_forgets_a_minimum_two_windows_old() {
        let mut limit = AdaptiveLimit::new(settings());
        limit.observe(ms(0), Usage::admitted(1), ms(0));
        limit.observe(ms(3), Usage::admitted(1), Duration::from_secs(11));
        assert_eq!(limit.target(), ms(5), "the previous window's 0 ms still counts");
        limit.observe(ms(3), Usage::admitted(1), Duration::from_secs(22));
        assert_eq!(limit.target(), ms(8), "two windows on, only 3 ms was seen");
    }

    #[test]
    fn settings_out_of_order_are_put_in_order() {
        let limit = AdaptiveLimit::new(LimitSettings {
            initial: 0,
            min: 0,
            max: 0,
            ..settings()
        });
        assert_eq!(limit.limit(), 1);
    }

    fn load(in_flight: usize, own: usize, clients: usize) -> Load {
        Load {
            in_flight,
            limit: 10,
            ceiling: 30,
            own,
            clients,
        }
    }

    #[test]
    fn under_the_limit_everyone_is_admitted() {
        assert_eq!(decide(load(9, 9, 1)), Ok(()));
    }

    #[test]
    fn at_the_limit_a_lone_client_is_refused() {
        assert_eq!(decide(load(10, 10, 1)), Err(Refusal::Saturated));
    }

    #[test]
    fn at_the_limit_a_client_under_its_share_still_gets_in() {
        // One client holds all ten; a second arrives: its share is five.
        assert_eq!(decide(load(10, 0, 2)), Ok(()));
        assert_eq!(decide(load(14, 4, 2)), Ok(()));
        assert_eq!(decide(load(15, 5, 2)), Err(Refusal::Saturated));
        // The flooding client is refused while it holds more than its share.
        assert_eq!(decide(load(15, 10, 2)), Err(Refusal::Saturated));
    }

    #[test]
    fn the_ceiling_holds_whatever_the_shares() {
        assert_eq!(decide(load(30, 0, 5)), Err(Refusal::Ceiling));
    }
}
