//! A thread's messages: the first one with its thread, order, concurrent appends.

use crate::common::*;

/// Each message's id with its position in the thread.
fn positions(messages: &[Message]) -> Vec<(&str, i64)> {
    messages.iter().map(|m| (m.id.as_str(), m.seq)).collect()
}

conformance! {
    async fn a_thread_starts_with_its_first_message_or_not_at_all(store: &Store) {
        let alice = user(store, "Alice").await;
        let first = NewMessage {
            id: Some("msg_first".to_owned()),
            thread_id: String::new(),
            role: Role::User,
            parts: text("Plan a garden"),
            metadata: json!({}),
            status: None,
        };
        let new_thread = |id: &str| NewThread {
            id: Some(id.to_owned()),
            project_id: None,
            title: Some("Plan a garden".to_owned()),
        };
        let (thread, message) = store
            .create_thread_with_message(&alice, &new_thread("garden"), &first)
            .await
            .unwrap();
        assert_eq!((thread.id.as_str(), thread.title.as_deref()), ("garden", Some("Plan a garden")));
        assert_eq!((message.id.as_str(), message.thread_id.as_str(), message.seq), ("msg_first", "garden", 1));
        assert_eq!(store.get_thread(&alice, "garden").await.unwrap(), Some(thread.clone()));
        assert_eq!(store.list_messages(&alice, "garden").await.unwrap(), vec![message]);
        let hits = store.search_messages(&alice, &["garden".to_owned()], "garden", 8).await.unwrap();
        assert_eq!(hits.len(), 1, "the first message is searchable like any other");
        let reply = say(store, &alice, "garden", Role::Assistant, "Start with the soil.").await;
        assert_eq!(reply.seq, 2);

        // The same thread again: nothing is written.
        let again = store.create_thread_with_message(&alice, &new_thread("garden"), &NewMessage { id: None, ..first.clone() }).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        assert_eq!(store.list_messages(&alice, "garden").await.unwrap().len(), 2);
        // Message ids are the client's and scoped to their thread: another thread may reuse one.
        let (_, reused) = store.create_thread_with_message(&alice, &new_thread("orchard"), &first).await.unwrap();
        assert_eq!((reused.id.as_str(), reused.thread_id.as_str()), ("msg_first", "orchard"));
        assert_eq!(store.list_messages(&alice, "garden").await.unwrap().len(), 2);

        let nobody = store.create_thread_with_message("no-such-user", &new_thread("ghost"), &NewMessage { id: None, ..first.clone() }).await;
        assert!(matches!(nobody, Err(StoreError::NotFound)), "{nobody:?}");
        let in_project = NewThread { project_id: Some("p".to_owned()), ..new_thread("filed") };
        assert!(matches!(
            store.create_thread_with_message(&alice, &in_project, &first).await,
            Err(StoreError::Invalid(_))
        ));
    }

    async fn a_question_and_its_answers_opening_row_are_written_together_or_not_at_all(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let message = |id: &str, thread: &str, role: Role, words: &str| NewMessage {
            id: Some(id.to_owned()),
            thread_id: thread.to_owned(),
            role,
            parts: text(words),
            metadata: json!({}),
            status: (role == Role::Assistant).then_some(MessageStatus::Streaming),
        };
        let new_thread = NewThread { id: Some("pair".to_owned()), project_id: None, title: None };
        let (_, first) = store
            .create_thread_with_messages(
                &alice,
                &new_thread,
                &[message("q1", "", Role::User, "first question"), message("a1", "", Role::Assistant, "")],
            )
            .await
            .unwrap();
        assert_eq!(positions(&first), [("q1", 1), ("a1", 2)]);

        let next = store
            .append_messages(
                &alice,
                &[message("q2", "pair", Role::User, "second question"), message("a2", "pair", Role::Assistant, "")],
            )
            .await
            .unwrap();
        assert_eq!(positions(&next), [("q2", 3), ("a2", 4)]);
        let listed = store.list_messages(&alice, "pair").await.unwrap();
        assert_eq!(listed, [first, next].concat());
        assert_eq!(listed[3].status, Some(MessageStatus::Streaming));

        // Another user's thread, or a row that is too large: neither row is written.
        let refused = store
            .append_messages(&bob, &[message("q3", "pair", Role::User, "mine?"), message("a3", "pair", Role::Assistant, "")])
            .await;
        assert!(matches!(refused, Err(StoreError::NotFound)), "{refused:?}");
        let huge = NewMessage { parts: text(&"x".repeat(5 << 20)), ..message("a3", "pair", Role::Assistant, "") };
        let refused = store.append_messages(&alice, &[message("q3", "pair", Role::User, "big"), huge]).await;
        assert!(matches!(refused, Err(StoreError::Invalid(_))), "{refused:?}");
        assert_eq!(store.list_messages(&alice, "pair").await.unwrap().len(), 4);
    }

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

        store
            .update_message(&alice, "msg_client-1", &text("Final"), &json!({ "done": true }), Some(MessageStatus::Complete))
            .await
            .unwrap();
        let last = store.list_messages(&alice, "chat").await.unwrap().pop().unwrap();
        assert_eq!((last.parts, last.metadata, last.status), (text("Final"), json!({ "done": true }), Some(MessageStatus::Complete)));

        // Ids are not unique keys: an edit is stored under the id of the message it replaces.
        let edit = NewMessage { role: Role::User, parts: text("Edited"), status: None, ..rich.clone() };
        let edit = NewMessage { id: Some("msg_user-1".to_owned()), ..edit };
        let first = store.append_message(&alice, &edit).await.unwrap();
        let again = store.append_message(&alice, &edit).await.unwrap();
        assert_eq!((first.id.as_str(), first.seq, again.id.as_str(), again.seq), ("msg_user-1", 14, "msg_user-1", 15));

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
        assert_eq!(store.list_messages(&alice, "chat").await.unwrap().len(), 15, "the two edits and nothing invalid");
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
