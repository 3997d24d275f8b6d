//! Turns in flight, per thread, and the state of recent turns that an automatic retry may reuse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::feed::TurnFeed;
use super::hooks::TurnState;
use crate::engine::{RequestBudget, ToolCache};

/// How long a finished turn's state stays available to `retry_of`.
const RETRY_WINDOW: Duration = Duration::from_secs(600);
/// Bound on remembered turns, whatever their age.
const MAX_REMEMBERED: usize = 10_000;

/// What an automatic retry of a turn inherits: budget, sources, attempt budget and shared results.
#[derive(Clone)]
pub struct Continuation {
    pub turn_id: String,
    pub state: Arc<TurnState>,
    pub requests: Arc<RequestBudget>,
    pub tool_cache: ToolCache,
}

struct Running {
    turn_id: String,
    cancel: CancellationToken,
    /// Its stream, for readers that follow it.
    feed: Arc<TurnFeed>,
}

struct Remembered {
    owner: (String, String),
    continuation: Continuation,
    at: Instant,
}

#[derive(Default)]
struct Inner {
    running: HashMap<(String, String), Running>,
    remembered: HashMap<String, Remembered>,
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
        })
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

    /// The running turn of this user's thread and its stream.
    pub(crate) fn feed(&self, user: &str, thread: &str) -> Option<(String, Arc<TurnFeed>)> {
        let inner = self.lock();
        inner
            .running
            .get(&(user.to_owned(), thread.to_owned()))
            .map(|running| (running.turn_id.clone(), Arc::clone(&running.feed)))
    }

    pub fn remember(&self, user: &str, thread: &str, continuation: Continuation) {
        let mut inner = self.lock();
        let now = Instant::now();
        inner
            .remembered
            .retain(|_, r| now.duration_since(r.at) < RETRY_WINDOW);
        if inner.remembered.len() >= MAX_REMEMBERED
            && let Some(oldest) = inner
                .remembered
                .iter()
                .min_by_key(|(_, r)| r.at)
                .map(|(k, _)| k.clone())
        {
            inner.remembered.remove(&oldest);
        }
        inner.remembered.insert(
            continuation.turn_id.clone(),
            Remembered {
                owner: (user.to_owned(), thread.to_owned()),
                continuation,
                at: now,
            },
        );
    }

    /// The state of a recent turn of this user's thread, for an automatic retry.
    pub fn recall(&self, user: &str, thread: &str, turn_id: &str) -> Option<Continuation> {
        let inner = self.lock();
        inner
            .remembered
            .get(turn_id)
            .filter(|r| r.owner.0 == user && r.owner.1 == thread && r.at.elapsed() < RETRY_WINDOW)
            .map(|r| r.continuation.clone())
    }
}
