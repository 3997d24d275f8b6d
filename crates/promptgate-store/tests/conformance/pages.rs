//! Pages of the thread list and of a thread's messages.

use crate::common::*;

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|x| id(x).to_owned()).collect()
}

fn after(t: &Thread) -> ThreadsAfter {
    ThreadsAfter {
        updated_at: t.updated_at,
        id: t.id.clone(),
    }
}

conformance! {
    async fn thread_pages_list_each_thread_once_while_threads_are_added(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        for n in 1..=5 {
            thread(store, &alice, &format!("t{n}"), None, None).await;
        }
        thread(store, &bob, "bobs", None, None).await;

        let first = store.list_threads_page(&alice, None, None, 2).await.unwrap();
        assert_eq!(ids(&first.items, |t| &t.id), ["t5", "t4"]);
        assert!(first.more);
        // A thread created between two pages goes to the top; it neither shifts nor repeats a page.
        thread(store, &alice, "t6", None, None).await;
        let second = store.list_threads_page(&alice, None, first.items.last().map(after).as_ref(), 2).await.unwrap();
        assert_eq!(ids(&second.items, |t| &t.id), ["t3", "t2"]);
        assert!(second.more);
        let last = store.list_threads_page(&alice, None, second.items.last().map(after).as_ref(), 2).await.unwrap();
        assert_eq!(ids(&last.items, |t| &t.id), ["t1"]);
        assert!(!last.more);

        // Threads with the same time stay in a total order (by id).
        let tie = ThreadsAfter { updated_at: first.items[0].updated_at, id: "t5".to_owned() };
        let page = store.list_threads_page(&alice, None, Some(&tie), 1).await.unwrap();
        assert_eq!(ids(&page.items, |t| &t.id), ["t4"]);
    }

    async fn thread_pages_follow_the_project(store: &Store) {
        let alice = user(store, "Alice").await;
        let garden = project(store, &alice, "Garden").await;
        for n in 1..=3 {
            thread(store, &alice, &format!("g{n}"), Some(&garden.id), None).await;
            thread(store, &alice, &format!("o{n}"), None, None).await;
        }
        let first = store.list_threads_page(&alice, Some(&garden.id), None, 2).await.unwrap();
        assert_eq!(ids(&first.items, |t| &t.id), ["g3", "g2"]);
        let next = store
            .list_threads_page(&alice, Some(&garden.id), first.items.last().map(after).as_ref(), 2)
            .await
            .unwrap();
        assert_eq!(ids(&next.items, |t| &t.id), ["g1"]);
        assert!(!next.more);
    }

    async fn message_pages_start_at_the_end_and_read_in_order(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "long", None, None).await;
        for n in 1..=5 {
            say(store, &alice, "long", Role::User, &format!("q{n}")).await;
            say(store, &alice, "long", Role::Assistant, &format!("a{n}")).await;
        }
        let texts = |page: &Page<Message>| -> Vec<String> {
            page.items.iter().map(|m| m.parts[0]["text"].as_str().unwrap().to_owned()).collect()
        };
        let newest = store.list_messages_page(&alice, "long", None, 4, false).await.unwrap();
        assert_eq!(texts(&newest), ["q4", "a4", "q5", "a5"]);
        assert!(newest.more);
        let before = newest.items[0].seq;
        // Messages appended meanwhile do not move the older pages.
        say(store, &alice, "long", Role::User, "q6").await;
        let older = store.list_messages_page(&alice, "long", Some(before), 4, false).await.unwrap();
        assert_eq!(texts(&older), ["q2", "a2", "q3", "a3"]);
        let oldest = store.list_messages_page(&alice, "long", Some(older.items[0].seq), 4, false).await.unwrap();
        assert_eq!(texts(&oldest), ["q1", "a1"]);
        assert!(!oldest.more);

        assert!(matches!(store.list_messages_page(&bob, "long", None, 4, false).await, Err(StoreError::NotFound)));
        assert!(matches!(store.list_messages_page(&alice, "nope", None, 4, true).await, Err(StoreError::NotFound)));
        thread(store, &alice, "empty", None, None).await;
        let empty = store.list_messages_page(&alice, "empty", None, 4, false).await.unwrap();
        assert!(empty.items.is_empty() && !empty.more);
        assert!(store.list_messages_page(&alice, "empty", None, 4, true).await.unwrap().items.is_empty());
    }

    async fn message_pages_leave_out_what_was_replaced_unless_asked(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "chat", None, None).await;
        say(store, &alice, "chat", Role::User, "q1").await;
        say(store, &alice, "chat", Role::Assistant, "a1").await;
        say(store, &alice, "chat", Role::Assistant, "a1 again").await;
        say(store, &alice, "chat", Role::User, "q2").await;
        say(store, &alice, "chat", Role::Assistant, "a2").await;
        let texts = |page: &Page<Message>| -> Vec<String> {
            page.items.iter().map(|m| m.parts[0]["text"].as_str().unwrap().to_owned()).collect()
        };
        let current = store.list_messages_page(&alice, "chat", None, 3, false).await.unwrap();
        assert_eq!(texts(&current), ["a1 again", "q2", "a2"], "the regenerated answer replaced the first");
        let rest = store.list_messages_page(&alice, "chat", Some(current.items[0].seq), 3, false).await.unwrap();
        assert_eq!(texts(&rest), ["q1"]);
        assert!(!rest.more);

        let stored = store.list_messages_page(&alice, "chat", None, 4, true).await.unwrap();
        assert_eq!(texts(&stored), ["a1", "a1 again", "q2", "a2"]);
        assert!(stored.more);
        let all: Vec<Message> = store.list_messages(&alice, "chat").await.unwrap();
        let whole = store.list_messages_page(&alice, "chat", None, 100, false).await.unwrap();
        assert_eq!(whole.items, current_conversation(all), "a page is the listing's view, not a copy of it");
    }
}
