//! Tokens seen valid recently, so that a user can still stop a running turn while the database is
//! unreachable. Consulted only when the database cannot answer: a token revoked elsewhere keeps
//! working at most that long after its last check, and only during an outage; a key past its
//! expiry does not.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::keys::Caller;

/// How long after its last successful check a token is still honoured during an outage.
const HONOURED_FOR: Duration = Duration::from_secs(600);
/// Bound on remembered tokens; past it the memory starts over (an outage then refuses more).
const MAX_REMEMBERED: usize = 10_000;

/// A token's caller, when its check last succeeded, and when its key expires (epoch ms).
type Seen = (Caller, Instant, Option<i64>);

#[derive(Default)]
pub(crate) struct RecentTokens {
    by_hash: Mutex<HashMap<String, Seen>>,
}

impl RecentTokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        self.by_hash
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn remember(&self, hash: &str, caller: &Caller, expires_at: Option<i64>) {
        let mut by_hash = self.lock();
        if by_hash.len() >= MAX_REMEMBERED && !by_hash.contains_key(hash) {
            by_hash.clear();
        }
        by_hash.insert(hash.to_owned(), (caller.clone(), Instant::now(), expires_at));
    }

    /// The caller of a token seen valid within [`HONOURED_FOR`] whose key has not expired by
    /// `now_ms`: an expiry is known here, unlike a revocation made elsewhere.
    pub(crate) fn recall(&self, hash: &str, now_ms: i64) -> Option<Caller> {
        self.lock()
            .get(hash)
            .filter(|(_, at, expires_at)| {
                at.elapsed() < HONOURED_FOR && expires_at.is_none_or(|expiry| expiry > now_ms)
            })
            .map(|(caller, _, _)| caller.clone())
    }

    /// A token the database no longer knows (revoked, or its user deleted).
    pub(crate) fn forget_hash(&self, hash: &str) {
        self.lock().remove(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::RecentTokens;
    use crate::keys::Caller;
    use crate::types::User;

    fn caller() -> Caller {
        Caller {
            user: User {
                id: "u1".to_owned(),
                name: "Ada".to_owned(),
                created_at: 0,
            },
            key_id: "key_1".to_owned(),
            admin: false,
        }
    }

    #[test]
    fn a_key_is_honoured_until_its_expiry_and_not_after() {
        let recent = RecentTokens::default();
        recent.remember("h1", &caller(), Some(5_000));
        recent.remember("h2", &caller(), None);
        assert_eq!(recent.recall("h1", 4_999), Some(caller()));
        assert_eq!(recent.recall("h1", 5_000), None, "expired at its time");
        assert_eq!(recent.recall("h2", i64::MAX - 1), Some(caller()), "no expiry");
        recent.forget_hash("h2");
        assert_eq!(recent.recall("h2", 0), None);
    }
}
