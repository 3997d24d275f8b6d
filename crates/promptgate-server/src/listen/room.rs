//! Making room at the connection cap. A server that refuses (or leaves in the kernel's queue) every
//! client once its slots are full can be taken down by anyone who opens enough connections and sends
//! nothing. nginx's answer, which this follows, is to treat connections without a request in progress
//! as reusable: when a worker runs out of connections it closes the ones idle longest (keep-alive
//! connections and those still waiting for their first request) and gives their slots to the new
//! clients. A connection in the middle of a request is never taken; when every slot has one, new
//! clients wait in the kernel's accept queue as before.
//!
//! Which idle connection goes first: one that has sent nothing since it opened, then one idle
//! between requests, then one whose request head is still trickling in, each the longest in that
//! state first. A browser's keep-alive connection has answered requests before; a connection that
//! never asked for anything has shown nothing yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::clock::Clock;

/// The connections open now, each by its clock.
#[derive(Default)]
pub(super) struct OpenConnections {
    clocks: Mutex<HashMap<u64, Arc<Clock>>>,
}

impl OpenConnections {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Clock>>> {
        self.clocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts `clock` among the open connections until the returned guard is dropped.
    pub(super) fn add(self: &Arc<Self>, id: u64, clock: Arc<Clock>) -> Registered {
        self.lock().insert(id, clock);
        Registered {
            open: Arc::clone(self),
            id,
        }
    }

    /// Asks the connection that ranks first for eviction to close; returns it, or `None` when every
    /// connection has a request in progress (or is already closing for another newcomer).
    pub(super) fn evict_one(&self) -> Option<Arc<Clock>> {
        let victim = {
            let clocks = self.lock();
            clocks
                .values()
                .filter_map(|clock| clock.standing().map(|rank| (rank, clock)))
                .min_by_key(|(rank, _)| *rank)
                .map(|(_, clock)| Arc::clone(clock))
        }?;
        victim.evict();
        metrics::counter!("promptgate_connections_evicted_total").increment(1);
        tracing::debug!("an idle connection closes to make room for a new one");
        Some(victim)
    }
}

/// An open connection's place in [`OpenConnections`], given up when dropped.
pub(super) struct Registered {
    open: Arc<OpenConnections>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.lock().remove(&self.id);
    }
}
