//! Client hand-offs: kept per user under a key, read back by key, gone once expired or crowded out.

use std::time::Duration;

use promptgate_store::HandoffLimits;

use crate::common::*;

const DAY: HandoffLimits = HandoffLimits {
    ttl: Duration::from_secs(86_400),
    per_user: 100,
};

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

async fn bodies(store: &Store, user: &str, names: &[&str]) -> Vec<(String, String)> {
    let mut found = store.handoffs(user, &keys(names)).await.unwrap();
    found.sort();
    found
}

conformance! {
    async fn a_handoff_is_read_back_by_its_user_only(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.keep_handoff(&alice, "k1", r#"{"a":1}"#, DAY).await.unwrap();
        store.keep_handoff(&alice, "k2", r#"{"a":2}"#, DAY).await.unwrap();
        assert_eq!(
            bodies(store, &alice, &["k1", "k2", "unknown"]).await,
            [("k1".to_owned(), r#"{"a":1}"#.to_owned()), ("k2".to_owned(), r#"{"a":2}"#.to_owned())]
        );
        assert!(bodies(store, &bob, &["k1", "k2"]).await.is_empty(), "a key is no capability");
        assert!(bodies(store, &alice, &[]).await.is_empty());
        // Keeping the same key again replaces it.
        store.keep_handoff(&alice, "k1", r#"{"a":3}"#, DAY).await.unwrap();
        assert_eq!(bodies(store, &alice, &["k1"]).await, [("k1".to_owned(), r#"{"a":3}"#.to_owned())]);
    }

    async fn an_expired_handoff_is_gone(store: &Store) {
        let alice = user(store, "Alice").await;
        let gone = HandoffLimits { ttl: Duration::ZERO, ..DAY };
        store.keep_handoff(&alice, "old", "{}", gone).await.unwrap();
        assert!(bodies(store, &alice, &["old"]).await.is_empty());
        store.expire_turn_claims().await.unwrap();
        store.keep_handoff(&alice, "fresh", "{}", DAY).await.unwrap();
        assert_eq!(bodies(store, &alice, &["old", "fresh"]).await.len(), 1);
    }

    async fn a_user_keeps_at_most_their_limit_and_loses_the_oldest(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let two = HandoffLimits { per_user: 2, ..DAY };
        store.keep_handoff(&bob, "b1", "{}", two).await.unwrap();
        for key in ["a1", "a2", "a3"] {
            store.keep_handoff(&alice, key, "{}", two).await.unwrap();
        }
        let kept: Vec<String> = bodies(store, &alice, &["a1", "a2", "a3"]).await.into_iter().map(|(key, _)| key).collect();
        assert_eq!(kept, ["a2", "a3"]);
        assert_eq!(bodies(store, &bob, &["b1"]).await.len(), 1, "another user's hand-offs stay");
    }
}
