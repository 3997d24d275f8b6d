//! Turns in flight on this instance, per thread. What a retry reuses is kept in the store (see
//! `claims`), with the claims that hold across instances.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::feed::TurnFeed;
use super::hooks::TurnState;
use promptgate_turn::engine::{RequestBudget, ToolCache, TurnLimits};

/// What an automatic retry of a turn inherits: budget, sources, attempt budget and shared results.
#[derive(Clone)]
pub struct Continuation {
    pub turn_id: String,
    pub state: Arc<TurnState>,
    pub requests: Arc<RequestBudget>,
    pub tool_cache: ToolCache,
}

impl Continuation {
    /// What a first attempt starts with: its own budget and sources, a full request budget, no
    /// results yet.
    pub fn fresh(turn_id: &str, state: &Arc<TurnState>, limits: &TurnLimits) -> Self {
        Self {
            turn_id: turn_id.to_owned(),
            state: Arc::clone(state),
            requests: Arc::new(RequestBudget::from_limits(limits)),
            tool_cache: ToolCache::default(),
        }
    }
}

struct Running {
    turn_id: String,
    cancel: CancellationToken,
    /// Its stream, for readers that follow it.
    feed: Arc<TurnFeed>,
}

#[derive(Default)]
struct Inner {
    running: HashMap<(String, String), Running>,
}

#[derive(Default, Clone)]
pub struct LiveTurns {
    inner: Arc<Mutex<Inner>>,
}

/// Holds a thread's slot; dropping it frees the thread for the next send.
pub struct Slot {
    live: LiveTurns,
    key: (String, String),
    turn_id: String,
    /// The thread's claim in the store, once taken.
    pub(super) store_claim: Option<Box<super::claims::StoreClaim>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.live.lock();
        if inner
            .running
            .get(&self.key)
            .is_some_and(|r| r.turn_id == self.turn_id)
        {
            inner.running.remove(&self.key);
        }
    }
}

pub enum Claim {
    Claimed(Slot),
    /// Another turn runs in this thread (or is still storing its answer).
    Busy,
}

impl LiveTurns {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn claim(
        &self,
        user: &str,
        thread: &str,
        turn_id: &str,
        cancel: CancellationToken,
        feed: Arc<TurnFeed>,
    ) -> Claim {
        let key = (user.to_owned(), thread.to_owned());
        let mut inner = self.lock();
        if inner.running.contains_key(&key) {
            return Claim::Busy;
        }
        inner.running.insert(
            key.clone(),
            Running {
                turn_id: turn_id.to_owned(),
                cancel,
                feed,
            },
        );
        Claim::Claimed(Slot {
            live: self.clone(),
            key,
            turn_id: turn_id.to_owned(),
            store_claim: None,
        })
    }

    /// Whether no turn runs on this instance.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().running.is_empty()
    }

    /// Cancels the thread's running turn. False when nothing runs there.
    pub fn stop(&self, user: &str, thread: &str) -> bool {
        let inner = self.lock();
        match inner.running.get(&(user.to_owned(), thread.to_owned())) {
            Some(running) => {
                running.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether the thread's running turn was told to stop and is only finishing (storing its answer).
    pub(crate) fn is_stopping(&self, user: &str, thread: &str) -> bool {
        let inner = self.lock();
        inner
            .running
            .get(&(user.to_owned(), thread.to_owned()))
            .is_some_and(|running| running.cancel.is_cancelled())
    }

    /// The running turn of this user's thread and its stream.
    pub(crate) fn feed(&self, user: &str, thread: &str) -> Option<(String, Arc<TurnFeed>)> {
        let inner = self.lock();
        inner
            .running
            .get(&(user.to_owned(), thread.to_owned()))
            .map(|running| (running.turn_id.clone(), Arc::clone(&running.feed)))
    }

    /// Cancels the running turn `turn_id` (a stop asked at another instance). False when it does
    /// not run here.
    pub(crate) fn stop_turn(&self, turn_id: &str) -> bool {
        let inner = self.lock();
        match inner.running.values().find(|r| r.turn_id == turn_id) {
            Some(running) => {
                running.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The stream of the running turn `turn_id`, if it runs here.
    pub(crate) fn feed_of_turn(&self, turn_id: &str) -> Option<Arc<TurnFeed>> {
        let inner = self.lock();
        inner
            .running
            .values()
            .find(|r| r.turn_id == turn_id)
            .map(|r| Arc::clone(&r.feed))
    }
}
