//! One background task per hub entry, its keeper: it checks a server in use once per liveness
//! interval, reconnects a failed one on its backoff schedule (quietly: the entry logs only the change
//! from working to failing and back), and closes the entry once nobody used it for the idle limit.
//! It holds the entry weakly, so an entry the pool evicts ends its keeper too.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::entry::{Due, ServerEntry, lock};
use crate::pool::Pool;

/// No user waits on a background attempt, so it may take longer than a send's budget.
const ATTEMPT_BUDGET: Duration = Duration::from_secs(9);

/// Starts the keeper of a new entry, unless the hub is shutting down.
pub(crate) fn spawn(entry: &Arc<ServerEntry>, pool: &Arc<Mutex<Pool>>) {
    let shared = &entry.shared;
    if shared.stopping.is_cancelled() {
        return;
    }
    let stopping = shared.stopping.clone();
    let wake = entry.wake.clone();
    let entry = Arc::downgrade(entry);
    let pool = Arc::downgrade(pool);
    shared.background.spawn(async move {
        tokio::select! {
            () = stopping.cancelled() => {}
            () = keep(entry, pool, wake) => {}
        }
    });
}

async fn keep(entry: Weak<ServerEntry>, pool: Weak<Mutex<Pool>>, wake: Arc<Notify>) {
    loop {
        let wake_at = match entry.upgrade() {
            Some(entry) => entry.next_wake(Instant::now()),
            None => return,
        };
        tokio::select! {
            () = tokio::time::sleep_until(wake_at.into()) => {}
            () = wake.notified() => {}
        }
        let Some(entry) = entry.upgrade() else { return };
        let now = Instant::now();
        if entry.idle(now) {
            if let Some(pool) = pool.upgrade() {
                lock(&pool).remove_if_same(&entry.key, &entry);
            }
            tracing::debug!(server_id = %entry.config.id, "closed an unused MCP server's entry");
            return;
        }
        match entry.due(now) {
            Some(Due::Reconnect) => entry.reconnect(ATTEMPT_BUDGET).await,
            Some(Due::Check) => entry.check_alive(ATTEMPT_BUDGET).await,
            None => {}
        }
    }
}
