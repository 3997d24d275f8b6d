//! Keyword search over chats: ranking, scope, odd queries, edits and excerpts, alike on both backends.

use crate::common::*;

async fn setup(store: &Store) -> (String, Vec<String>) {
    let alice = user(store, "Alice").await;
    let garden = project(store, &alice, "Garden").await;
    thread(store, &alice, "roses", Some(&garden.id), Some("Pruning roses")).await;
    thread(store, &alice, "soil", Some(&garden.id), Some("Soil")).await;
    thread(store, &alice, "other", None, Some("Roses elsewhere")).await;
    say(
        store,
        &alice,
        "soil",
        Role::User,
        "Which compost suits roses best in spring?",
    )
    .await;
    say(
        store,
        &alice,
        "soil",
        Role::Assistant,
        "Well-rotted manure works; add it in early spring.",
    )
    .await;
    say(store, &alice, "roses", Role::User, "When should I prune?").await;
    say(store, &alice, "other", Role::User, "roses roses roses").await;
    (alice, vec!["roses".to_owned(), "soil".to_owned()])
}

conformance! {
    async fn search_ranks_titles_higher_and_stays_in_scope(store: &Store) {
        let (alice, siblings) = setup(store).await;
        let hits = store.search_messages(&alice, &siblings, "roses", 8).await.unwrap();
        let threads: Vec<&str> = hits.iter().map(|h| h.thread_id.as_str()).collect();
        // The title match outranks a body match, and the out-of-scope thread never shows.
        assert_eq!(threads, ["roses", "soil"], "{hits:?}");
        assert_eq!(hits[0].excerpt, "When should I prune?", "a title-only hit shows the message start");
        assert_eq!(hits[1].excerpt, "Which compost suits roses best in spring?");

        let limited = store.search_messages(&alice, &siblings, "roses", 1).await.unwrap();
        assert_eq!(limited.len(), 1);
        assert_eq!(limited[0].thread_id, "roses");

        // Every word must match; matching is by prefix and ignores case.
        let hits = store.search_messages(&alice, &siblings, "SPRI manu", 8).await.unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].excerpt, "Well-rotted manure works; add it in early spring.");
        assert!(store.search_messages(&alice, &siblings, "spring tulips", 8).await.unwrap().is_empty());
        assert!(store.search_messages(&alice, &siblings, "pring", 8).await.unwrap().is_empty(), "prefix, not infix");
        assert!(store.search_messages(&alice, &[], "roses", 8).await.unwrap().is_empty());

        // A message without text (only a tool call) has no excerpt to show, even when the title matches.
        let tool_only = NewMessage {
            id: None,
            thread_id: "roses".to_owned(),
            role: Role::Assistant,
            parts: json!([{ "type": "tool-search", "toolCallId": "c1", "input": { "query": "roses" } }]),
            metadata: json!({}),
            status: Some(MessageStatus::Complete),
        };
        store.append_message(&alice, &tool_only).await.unwrap();
        let hits = store.search_messages(&alice, &siblings, "roses", 8).await.unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!(hits.iter().all(|h| !h.excerpt.is_empty()));
    }

    async fn search_queries_are_never_syntax_errors(store: &Store) {
        let (alice, siblings) = setup(store).await;
        for query in [
            "\"roses", "roses\"", "'", "\"\"", "roses OR", "NOT roses", "AND", "NEAR(roses)", "ros*",
            "roses:*", "!roses & |", "(", "a'b\"c", "-roses", "^", "\\", "   ", "", "😀", "col:roses",
        ] {
            let hits = store.search_messages(&alice, &siblings, query, 8).await;
            assert!(hits.is_ok(), "{query:?} failed: {hits:?}");
        }
        let hits = store.search_messages(&alice, &siblings, "\"compost\"", 8).await.unwrap();
        assert_eq!(hits.len(), 1, "quotes are ignored, the word still matches");
        let hits = store.search_messages(&alice, &siblings, "NOT compost", 8).await.unwrap();
        assert!(hits.is_empty(), "operators are plain words: {hits:?}");
    }

    async fn search_follows_edits_and_users(store: &Store) {
        let (alice, siblings) = setup(store).await;
        let bob = user(store, "Bob").await;
        // Bob naming Alice's thread ids finds nothing.
        assert!(store.search_messages(&bob, &siblings, "roses", 8).await.unwrap().is_empty());

        let msg = say(store, &alice, "soil", Role::Assistant, "draft").await;
        assert!(store.search_messages(&alice, &siblings, "mulch", 8).await.unwrap().is_empty());
        store.update_message(&alice, &msg.id, &text("Use bark mulch."), &json!({}), None).await.unwrap();
        let hits = store.search_messages(&alice, &siblings, "mulch", 8).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert!(store.search_messages(&alice, &siblings, "draft", 8).await.unwrap().is_empty());

        // Renaming a thread re-weights its messages.
        let rename = ThreadUpdate { title: Some(Some("Hedgehogs".to_owned())), project_id: None };
        store.update_thread(&alice, "soil", &rename).await.unwrap();
        let hits = store.search_messages(&alice, &siblings, "hedgehog", 8).await.unwrap();
        assert_eq!(hits.len(), 3, "{hits:?}");
        assert!(hits.iter().all(|h| h.thread_id == "soil"));
        assert!(store.search_messages(&alice, &siblings, "soil", 8).await.unwrap().is_empty());
    }

    async fn search_sees_the_same_words_on_both_backends(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "words", None, Some("Ärger mit Übersetzungen")).await;
        say(store, &alice, "words", Role::User, "Pi is 3.14; see docs.example.com/pi or ask O'Brien.").await;
        let scope = ["words".to_owned()];
        for query in ["3.14", "14", "example", "com/pi", "o'brien", "BRIEN", "ärger", "ÜBERSETZUNG", "DOCS"] {
            let hits = store.search_messages(&alice, &scope, query, 8).await.unwrap();
            assert_eq!(hits.len(), 1, "{query:?} should match: {hits:?}");
        }
        let hits = store.search_messages(&alice, &scope, "example", 8).await.unwrap();
        assert_eq!(hits[0].excerpt, "Pi is 3.14; see docs.example.com/pi or ask O'Brien.", "excerpts keep the original text");
    }

    async fn search_excerpts_are_bounded(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "long", None, None).await;
        let body = format!("{} the lighthouse keeper {}", "filler ".repeat(100), "after ".repeat(100));
        say(store, &alice, "long", Role::User, &body).await;
        let hits = store.search_messages(&alice, &["long".to_owned()], "lighthouse", 8).await.unwrap();
        assert_eq!(hits.len(), 1);
        let excerpt = &hits[0].excerpt;
        assert!(excerpt.contains("the lighthouse keeper"), "{excerpt}");
        assert!(excerpt.starts_with('…') && excerpt.ends_with('…'), "{excerpt}");
        assert!(excerpt.chars().count() <= 202, "{excerpt}");
    }
}
