use crate::common::*;

conformance! {
    async fn messages_keep_their_order(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "chat", None, None).await;
        let mut sent = Vec::new();
        for i in 0..12 {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            sent.push(say(store, &alice, "chat", role, &format!("message {i}")).await);
        }
        let listed = store.list_messages(&alice, "chat").await.unwrap();
        assert_eq!(listed, sent);
        assert_eq!(listed.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=12).collect::<Vec<_>>());

        let rich = NewMessage {
            id: Some("msg_client-1".to_owned()),
            thread_id: "chat".to_owned(),
            role: Role::Assistant,
            parts: json!([{ "type": "reasoning", "text": "hmm" }, { "type": "text", "text": "Answer [1]" }]),
            metadata: json!({ "sources": [{ "url": "https://example.com", "title": "Ex" }] }),
            status: Some(MessageStatus::Stopped),
        };
        let stored = store.append_message(&alice, &rich).await.unwrap();
        assert_eq!((stored.id.as_str(), stored.seq), ("msg_client-1", 13));
        assert_eq!(store.list_messages(&alice, "chat").await.unwrap().last(), Some(&stored));
        assert!(matches!(store.append_message(&alice, &rich).await, Err(StoreError::Conflict(_))));

        store
            .update_message(&alice, "msg_client-1", &text("Final"), &json!({ "done": true }), Some(MessageStatus::Complete))
            .await
            .unwrap();
        let last = store.list_messages(&alice, "chat").await.unwrap().pop().unwrap();
        assert_eq!((last.parts, last.metadata, last.status), (text("Final"), json!({ "done": true }), Some(MessageStatus::Complete)));

        // Bob cannot read, append to, or edit Alice's thread.
        assert!(matches!(store.list_messages(&bob, "chat").await, Err(StoreError::NotFound)));
        let mut intrusion = rich.clone();
        intrusion.id = None;
        assert!(matches!(store.append_message(&bob, &intrusion).await, Err(StoreError::NotFound)));
        assert!(matches!(
            store.update_message(&bob, "msg_client-1", &text("x"), &json!({}), None).await,
            Err(StoreError::NotFound)
        ));

        let mut bad = intrusion.clone();
        bad.parts = json!({ "type": "text" });
        assert!(matches!(store.append_message(&alice, &bad).await, Err(StoreError::Invalid(_))));
        let mut bad = intrusion.clone();
        bad.metadata = json!([1]);
        assert!(matches!(store.append_message(&alice, &bad).await, Err(StoreError::Invalid(_))));
        let mut huge = intrusion.clone();
        huge.parts = text(&"x".repeat(5 * 1024 * 1024));
        assert!(matches!(store.append_message(&alice, &huge).await, Err(StoreError::Invalid(_))));
        assert_eq!(store.list_messages(&alice, "chat").await.unwrap().len(), 13);
    }

    async fn concurrent_appends_get_distinct_positions(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "busy", None, None).await;
        let writes = (0..6).map(|i| {
            let store = store.clone();
            let alice = alice.clone();
            async move { say(&store, &alice, "busy", Role::User, &format!("n{i}")).await }
        });
        futures::future::join_all(writes).await;
        let seqs: Vec<i64> = store.list_messages(&alice, "busy").await.unwrap().iter().map(|m| m.seq).collect();
        assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    }
}
