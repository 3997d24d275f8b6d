//! Tokens seen valid recently, so that a user can still stop a running turn while the database is
//! unreachable. Consulted only when the database cannot answer: a token revoked elsewhere keeps
//! working at most that long after its last check, and only during an outage.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::keys::Caller;

/// How long after its last successful check a token is still honoured during an outage.
const HONOURED_FOR: Duration = Duration::from_secs(600);
/// Bound on remembered tokens; past it the memory starts over (an outage then refuses more).
const MAX_REMEMBERED: usize = 10_000;

#[derive(Default)]
pub(crate) struct RecentTokens {
    by_hash: Mutex<HashMap<String, (Caller, Instant)>>,
}

impl RecentTokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Caller, Instant)>> {
        self.by_hash
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn remember(&self, hash: &str, caller: &Caller) {
        let mut by_hash = self.lock();
        if by_hash.len() >= MAX_REMEMBERED && !by_hash.contains_key(hash) {
            by_hash.clear();
        }
        by_hash.insert(hash.to_owned(), (caller.clone(), Instant::now()));
    }

    pub(crate) fn recall(&self, hash: &str) -> Option<Caller> {
        self.lock()
            .get(hash)
            .filter(|(_, at)| at.elapsed() < HONOURED_FOR)
            .map(|(caller, _)| caller.clone())
    }

    /// A token the database no longer knows (revoked, or its user deleted).
    pub(crate) fn forget_hash(&self, hash: &str) {
        self.lock().remove(hash);
    }
}
