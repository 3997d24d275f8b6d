//! How many probes each user may make: a probe opens a fresh connection wherever the user's URL
//! points, so without a bound one user could keep the server connecting out as fast as it can.
//! Each user has a number running at once and an allowance per minute (a burst of that many,
//! refilled evenly); past either, a probe is refused before it connects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::McpError;

/// Past this many remembered users, those with nothing running and a full allowance are dropped.
const PRUNE_ABOVE: usize = 10_000;

pub(crate) struct ProbeLimits {
    per_minute: f64,
    in_flight: usize,
    users: Mutex<HashMap<String, Usage>>,
}

struct Usage {
    running: usize,
    /// Probes still allowed now; refills at `per_minute` a minute up to `per_minute`.
    allowance: f64,
    refilled_at: Instant,
}

impl Usage {
    fn refilled(&self, now: Instant, per_minute: f64) -> f64 {
        let minutes = now.saturating_duration_since(self.refilled_at).as_secs_f64() / 60.0;
        (self.allowance + minutes * per_minute).min(per_minute)
    }
}

/// One running probe of a user; dropping it frees the place.
#[must_use = "the probe's place is freed when the permit is dropped"]
pub struct ProbePermit {
    limits: Arc<ProbeLimits>,
    user: String,
}

impl ProbeLimits {
    pub fn new(per_minute: u32, in_flight: usize) -> Arc<Self> {
        Arc::new(Self {
            per_minute: f64::from(per_minute.max(1)),
            in_flight: in_flight.max(1),
            users: Mutex::new(HashMap::new()),
        })
    }

    fn users(&self) -> MutexGuard<'_, HashMap<String, Usage>> {
        self.users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a probe for `user`, or says how long to wait before the next one is allowed.
    pub fn admit(self: &Arc<Self>, user: &str, now: Instant) -> Result<ProbePermit, McpError> {
        let per_minute = self.per_minute;
        let mut users = self.users();
        if users.len() > PRUNE_ABOVE {
            users.retain(|_, u| u.running > 0 || u.refilled(now, per_minute) < per_minute);
        }
        let usage = users.entry(user.to_owned()).or_insert(Usage {
            running: 0,
            allowance: per_minute,
            refilled_at: now,
        });
        usage.allowance = usage.refilled(now, per_minute);
        usage.refilled_at = now;
        if usage.running >= self.in_flight {
            // A probe ends within its timeout; a second is a fair hint.
            return Err(McpError::TooManyProbes {
                retry_after: Duration::from_secs(1),
            });
        }
        if usage.allowance < 1.0 {
            let missing = 1.0 - usage.allowance;
            return Err(McpError::TooManyProbes {
                retry_after: Duration::from_secs_f64(missing * 60.0 / per_minute),
            });
        }
        usage.allowance -= 1.0;
        usage.running += 1;
        Ok(ProbePermit {
            limits: Arc::clone(self),
            user: user.to_owned(),
        })
    }
}

impl Drop for ProbePermit {
    fn drop(&mut self) {
        if let Some(usage) = self.limits.users().get_mut(&self.user) {
            usage.running = usage.running.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_for(result: Result<ProbePermit, McpError>) -> Duration {
        match result {
            Err(McpError::TooManyProbes { retry_after }) => retry_after,
            Err(other) => panic!("unexpected error {other:?}"),
            Ok(_) => panic!("the probe was let through"),
        }
    }

    #[test]
    fn probes_running_at_once_are_capped_per_user() {
        let limits = ProbeLimits::new(100, 2);
        let now = Instant::now();
        let first = limits.admit("u", now).unwrap();
        let _second = limits.admit("u", now).unwrap();
        refused_for(limits.admit("u", now));
        assert!(limits.admit("v", now).is_ok(), "another user is not affected");
        drop(first);
        assert!(limits.admit("u", now).is_ok(), "an ended probe frees its place");
    }

    #[test]
    fn the_allowance_refills_over_the_minute() {
        let limits = ProbeLimits::new(6, 10);
        let start = Instant::now();
        for _ in 0..6 {
            drop(limits.admit("u", start).unwrap());
        }
        let wait = refused_for(limits.admit("u", start));
        assert_eq!(
            wait,
            Duration::from_secs(10),
            "one probe comes back every ten seconds"
        );
        assert!(limits.admit("u", start + Duration::from_secs(10)).is_ok());
        refused_for(limits.admit("u", start + Duration::from_secs(11)));
    }
}
