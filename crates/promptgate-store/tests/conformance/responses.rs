//! Responses kept for the Responses API: read back by their user only, a deleted one leaves those that
//! continue it, and each is bounded in size, kept for a bounded time, and a user keeps a bounded
//! number of them, the oldest going first.

use crate::common::*;

/// A day: long enough that nothing in a test expires unless the test says so.
const DAY_MS: i64 = 86_400_000;
/// Responses a user keeps in these cases, more than any of them stores.
const KEEP: usize = 100;

fn response(id: &str, previous: Option<&str>, said: &str) -> NewResponse {
    NewResponse {
        id: id.to_owned(),
        previous_response_id: previous.map(str::to_owned),
        body: json!({"id": id, "object": "response", "status": "completed",
                     "output": [{"type": "message", "content": [{"type": "output_text", "text": said}]}]}),
        input_items: json!([{"id": format!("{id}_in0"), "type": "message", "role": "user", "content": "hi"}]),
        conversation: json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": said}]),
    }
}

async fn conversation(store: &Store, user: &str, id: &str) -> Option<Value> {
    let text = store.response_conversation(user, id, DAY_MS).await.unwrap()?;
    Some(serde_json::from_str(&text).unwrap())
}

conformance! {
    async fn a_kept_response_is_read_back_by_its_user_only(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let first = response("resp_1", None, "Hello.");
        store.save_response(&alice, &first, DAY_MS, KEEP).await.unwrap();

        let kept = store.get_response(&alice, "resp_1", DAY_MS).await.unwrap().unwrap();
        assert_eq!(kept.body, first.body);
        assert_eq!(kept.input_items, first.input_items);
        assert_eq!(
            conversation(store, &alice, "resp_1").await,
            Some(first.conversation.clone())
        );
        assert_eq!(store.get_response(&bob, "resp_1", DAY_MS).await.unwrap(), None);
        assert_eq!(store.response_conversation(&bob, "resp_1", DAY_MS).await.unwrap(), None);
        assert!(matches!(store.delete_response(&bob, "resp_1").await, Err(StoreError::NotFound)));

        // The same id twice is a conflict, not a silent overwrite; Bob may use it for his own.
        assert!(matches!(store.save_response(&alice, &first, DAY_MS, KEEP).await, Err(StoreError::Conflict(_))));
        store.save_response(&bob, &response("resp_1", None, "Other."), DAY_MS, KEEP).await.unwrap();
        assert_eq!(store.get_response(&alice, "resp_1", DAY_MS).await.unwrap().unwrap().body, first.body);
    }

    async fn deleting_a_response_leaves_the_responses_that_continue_it(store: &Store) {
        let alice = user(store, "Alice").await;
        store.save_response(&alice, &response("resp_a", None, "One."), DAY_MS, KEEP).await.unwrap();
        let second = response("resp_b", Some("resp_a"), "Two.");
        store.save_response(&alice, &second, DAY_MS, KEEP).await.unwrap();

        store.delete_response(&alice, "resp_a").await.unwrap();
        assert_eq!(store.get_response(&alice, "resp_a", DAY_MS).await.unwrap(), None);
        assert!(matches!(store.delete_response(&alice, "resp_a").await, Err(StoreError::NotFound)));
        assert_eq!(
            conversation(store, &alice, "resp_b").await,
            Some(second.conversation)
        );
    }

    async fn responses_past_the_retention_are_gone(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.save_response(&alice, &response("resp_old", None, "Old."), DAY_MS, KEEP).await.unwrap();
        store.save_response(&bob, &response("resp_bob", None, "Bob's."), DAY_MS, KEEP).await.unwrap();
        // The store's clock moves on with every write, so with no retention at all the older
        // response is already past it: invisible at once, and deleted by Alice's next save.
        assert_eq!(store.get_response(&alice, "resp_old", 0).await.unwrap(), None);
        assert_eq!(store.response_conversation(&alice, "resp_old", 0).await.unwrap(), None);
        store.save_response(&alice, &response("resp_new", None, "New."), 0, KEEP).await.unwrap();
        assert_eq!(store.get_response(&alice, "resp_old", DAY_MS).await.unwrap(), None);
        assert!(store.get_response(&alice, "resp_new", DAY_MS).await.unwrap().is_some());
        // Only Alice's own old responses went.
        assert!(store.get_response(&bob, "resp_bob", DAY_MS).await.unwrap().is_some());
    }

    async fn a_user_keeps_at_most_the_set_number_of_responses_the_oldest_going_first(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.save_response(&bob, &response("resp_bob", None, "Bob's."), DAY_MS, 2).await.unwrap();
        for n in 1..=5 {
            let id = format!("resp_{n}");
            store.save_response(&alice, &response(&id, None, "Kept."), DAY_MS, 3).await.unwrap();
        }
        let mut kept = Vec::new();
        for n in 1..=5 {
            let id = format!("resp_{n}");
            if store.get_response(&alice, &id, DAY_MS).await.unwrap().is_some() {
                kept.push(id);
            }
        }
        assert_eq!(kept, ["resp_3", "resp_4", "resp_5"]);
        // Another user's responses are not counted, nor dropped.
        assert!(store.get_response(&bob, "resp_bob", DAY_MS).await.unwrap().is_some());
    }

    async fn responses_are_bounded_and_belong_to_a_user(store: &Store) {
        let alice = user(store, "Alice").await;
        let mut big = response("resp_big", None, "Big.");
        big.conversation = json!(["x".repeat(MAX_RESPONSE_BYTES)]);
        assert!(matches!(store.save_response(&alice, &big, DAY_MS, KEEP).await, Err(StoreError::Invalid(_))));
        assert!(matches!(
            store.save_response("no-such-user", &response("resp_x", None, "x"), DAY_MS, KEEP).await,
            Err(StoreError::NotFound)
        ));
        let long_id = "r".repeat(500);
        assert!(matches!(
            store.save_response(&alice, &response(&long_id, None, "x"), DAY_MS, KEEP).await,
            Err(StoreError::Invalid(_))
        ));
        assert_eq!(store.get_response(&alice, &long_id, DAY_MS).await.unwrap(), None);
    }
}
