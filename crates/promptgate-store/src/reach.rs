//! Whether Postgres was found unreachable a moment ago.
//!
//! While Postgres is down, a query waits the pool's whole acquire timeout before it fails. A request
//! that makes several queries in a row (the token lookup, then the send's reads) would wait it each
//! time, and a Stop that needs no database at all would wait it for the token. Once a query has
//! waited the timeout in vain, the next ones within that same timeout do not wait again: the token
//! lookup answers from the tokens seen recently, and the send's reads fail at once. The first query
//! after that span asks the database again, so an outage is noticed as over by the first success.
//!
//! The span is the acquire timeout plus [`OVERLAP`]: the instance's heartbeat renews its turns'
//! leases through an outage, a moment after each failed wait, and its waits then keep the database
//! known unreachable without a gap, so a Stop of a turn running here never waits for its token.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::StoreError;

/// How much longer than the failed wait itself the database stays known unreachable.
pub(crate) const OVERLAP: Duration = Duration::from_secs(1);

pub(crate) struct Reachability {
    since: Instant,
    /// How long a failed wait stands for the database's state; `None` (SQLite, a local file) never.
    span: Option<Duration>,
    /// When a query last waited the acquire timeout in vain, in milliseconds after `since` plus one;
    /// 0 after a success.
    timed_out_at: AtomicU64,
}

impl Reachability {
    pub(crate) fn new(span: Option<Duration>) -> Self {
        Self {
            since: Instant::now(),
            span,
            timed_out_at: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).map_or(u64::MAX, |ms| ms.saturating_add(1))
    }

    /// Records what a query's result says about the database.
    pub(crate) fn saw<T>(&self, result: &Result<T, StoreError>) {
        match result {
            Ok(_) => self.timed_out_at.store(0, Ordering::Release),
            Err(err) if err.is_pool_timeout() => self.timed_out_at.store(self.now(), Ordering::Release),
            Err(_) => {}
        }
    }

    /// Whether a query waited the acquire timeout in vain within the last span, with no success since.
    pub(crate) fn known_unreachable(&self) -> bool {
        let Some(span) = self.span else { return false };
        let at = self.timed_out_at.load(Ordering::Acquire);
        at != 0 && self.now().saturating_sub(at) < u64::try_from(span.as_millis()).unwrap_or(u64::MAX)
    }

    /// The error a query gets without asking while the database is known to be unreachable.
    pub(crate) fn refusal() -> StoreError {
        StoreError::Unavailable("the database did not answer a moment ago; not asking again yet".to_owned())
    }
}
