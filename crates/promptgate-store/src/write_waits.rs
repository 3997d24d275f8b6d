//! How long the writes of a send wait for the database: from asking for a write transaction to
//! holding one, and for the writes that start a send (its claim on the thread, the thread and its
//! messages), from asking to done.
//!
//! On SQLite that is mostly the wait for the one writer (and for a pooled connection); on Postgres
//! the wait for a pooled connection and for locks. A server whose database cannot keep up queues its
//! writes there, where a look at the async workers' run queue sees nothing: the waiting tasks are
//! asleep. The admission gate reads this queue to refuse sends before they join it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The writes waiting now and the longest wait that ended since the last look.
#[derive(Debug, Default)]
pub struct WriteWaits {
    state: Mutex<Waits>,
}

#[derive(Debug, Default)]
struct Waits {
    next_id: u64,
    /// When each waiting write asked, by ticket; the first entry is the oldest.
    waiting: BTreeMap<u64, Instant>,
    longest_ended: Duration,
}

impl WriteWaits {
    /// The longest wait since the last call: of the writes still waiting at `now`, and of those that
    /// stopped waiting since. A write stuck behind a held lock counts while it waits, so a stalled
    /// writer shows at once rather than when its queue finally moves.
    pub fn longest_since_last(&self, now: Instant) -> Duration {
        let mut waits = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = waits
            .waiting
            .values()
            .next()
            .map_or(Duration::ZERO, |asked| now.saturating_duration_since(*asked));
        let ended = std::mem::take(&mut waits.longest_ended);
        waiting.max(ended)
    }

    /// Notes a write that starts waiting now; the wait ends when the ticket is dropped.
    pub(crate) fn wait(self: &Arc<Self>) -> WaitTicket {
        let asked = Instant::now();
        let mut waits = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let id = waits.next_id;
        waits.next_id += 1;
        waits.waiting.insert(id, asked);
        WaitTicket {
            waits: Arc::clone(self),
            id,
        }
    }
}

/// A write waiting for its transaction.
pub(crate) struct WaitTicket {
    waits: Arc<WriteWaits>,
    id: u64,
}

impl Drop for WaitTicket {
    fn drop(&mut self) {
        let mut waits = self.waits.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(asked) = waits.waiting.remove(&self.id) {
            let waited = asked.elapsed();
            waits.longest_ended = waits.longest_ended.max(waited);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_still_waiting_counts_and_an_ended_wait_is_reported_once() {
        let waits = Arc::new(WriteWaits::default());
        let start = Instant::now();
        assert_eq!(waits.longest_since_last(start), Duration::ZERO);
        let ticket = waits.wait();
        let later = Instant::now() + Duration::from_millis(300);
        assert!(waits.longest_since_last(later) >= Duration::from_millis(300));
        drop(ticket);
        // The ended wait is reported by the next look only.
        let _ = waits.longest_since_last(Instant::now());
        assert_eq!(waits.longest_since_last(Instant::now()), Duration::ZERO);
    }
}
