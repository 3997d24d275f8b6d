//! The thread search of `GET /v1/threads?q=`: every thread, by words, ranked, paged, one user's.

use crate::common::*;
use promptgate_store::testing::{postgres_thread_search_generic_plan, thread_search_plan};

async fn found(store: &Store, user: &str, query: &str) -> Vec<String> {
    let page = store.search_threads(user, None, query, 0, 100).await.unwrap();
    page.items.into_iter().map(|t| t.id).collect()
}

conformance! {
    async fn search_finds_a_word_in_the_oldest_of_many_threads(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "oldest", None, Some("Trip notes")).await;
        say(store, &alice, "oldest", Role::User, "Book the zeppelin tour").await;
        for n in 0..1_100 {
            let id = format!("t{n}");
            thread(store, &alice, &id, None, Some("Daily notes")).await;
            say(store, &alice, &id, Role::User, "Nothing special today").await;
        }
        assert_eq!(found(store, &alice, "zeppelin").await, ["oldest"]);
        assert_eq!(found(store, &alice, "ZEPP tour").await, ["oldest"], "every word, as a prefix, any case");

        // Many hits come a page at a time, and the pages add up to all of them.
        let mut seen = std::collections::HashSet::new();
        let mut skip = 0;
        loop {
            let page = store.search_threads(&alice, None, "notes", skip, 400).await.unwrap();
            for t in &page.items {
                assert!(seen.insert(t.id.clone()), "{} twice", t.id);
            }
            skip += 400;
            if !page.more {
                break;
            }
        }
        assert_eq!(seen.len(), 1_101);
    }

    async fn search_matches_title_words_not_substrings(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "plan", None, Some("Plan my garden")).await;
        thread(store, &alice, "explanation", None, Some("An explanation")).await;
        thread(store, &alice, "planets", None, Some("Planets")).await;
        assert_eq!(found(store, &alice, "plan").await.len(), 2, "a word start, never the inside of a word");
        assert!(!found(store, &alice, "plan").await.contains(&"explanation".to_owned()));
        assert_eq!(found(store, &alice, "lan").await, Vec::<String>::new());
        assert_eq!(found(store, &alice, "garden").await, ["plan"], "a thread without messages is found by its title");

        // A rename is searched by its new words only.
        let rename = ThreadUpdate { title: Some(Some("Vegetable patch".to_owned())), project_id: None };
        store.update_thread(&alice, "plan", &rename).await.unwrap();
        assert_eq!(found(store, &alice, "garden").await, Vec::<String>::new());
        assert_eq!(found(store, &alice, "vegetable").await, ["plan"]);
        store.delete_thread(&alice, "plan").await.unwrap();
        assert_eq!(found(store, &alice, "vegetable").await, Vec::<String>::new());
        for query in ["", "  ", "\"*()", "NOT", "a:*"] {
            assert!(store.search_threads(&alice, None, query, 0, 10).await.is_ok(), "{query:?}");
        }
    }

    async fn search_ranks_title_matches_first_and_splits_words_between_title_and_text(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "mention", None, Some("Weekend")).await;
        say(store, &alice, "mention", Role::User, "We talked about roses briefly, then tulips and lilies.").await;
        thread(store, &alice, "titled", None, Some("Roses")).await;
        say(store, &alice, "titled", Role::User, "How do I prune them?").await;
        thread(store, &alice, "later", None, Some("Other")).await;
        say(store, &alice, "later", Role::User, "I planted tulips").await;
        assert_eq!(found(store, &alice, "roses").await, ["titled", "mention"]);
        assert_eq!(found(store, &alice, "roses prune").await, ["titled"], "title and text words together");
        let first = store.search_threads(&alice, None, "roses", 0, 1).await.unwrap();
        assert_eq!(first.items.len(), 1);
        assert!(first.more);
        let second = store.search_threads(&alice, None, "roses", 1, 1).await.unwrap();
        assert_eq!(second.items[0].id, "mention");
        assert!(!second.more);

        // The rank follows a rename: the title's words weigh more as soon as they are its words.
        let rename = ThreadUpdate { title: Some(Some("Tulips".to_owned())), project_id: None };
        store.update_thread(&alice, "mention", &rename).await.unwrap();
        assert_eq!(found(store, &alice, "tulips").await, ["mention", "later"]);

        // A thread started by its first message carries its title into that message's words too.
        let first = NewMessage {
            id: None,
            thread_id: String::new(),
            role: Role::User,
            parts: text("Book the zeppelin"),
            metadata: json!({}),
            status: None,
        };
        let holiday = NewThread { id: Some("holiday".to_owned()), project_id: None, title: Some("Holiday".to_owned()) };
        store.create_thread_with_message(&alice, &holiday, &first).await.unwrap();
        assert_eq!(found(store, &alice, "holiday zeppelin").await, ["holiday"]);
    }

    async fn search_sees_only_the_users_own_threads(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let garden = project(store, &alice, "Garden").await;
        thread(store, &alice, "mine", Some(&garden.id), Some("Compost")).await;
        say(store, &alice, "mine", Role::User, "compost heap").await;
        thread(store, &alice, "loose", None, None).await;
        say(store, &alice, "loose", Role::User, "compost tea").await;
        thread(store, &bob, "his", None, Some("Compost")).await;
        say(store, &bob, "his", Role::User, "compost heap").await;
        thread(store, &bob, "mine", None, None).await;
        say(store, &bob, "mine", Role::User, "compost bins").await;

        let mut alices = found(store, &alice, "compost").await;
        alices.sort();
        assert_eq!(alices, ["loose", "mine"]);
        let bobs = store.search_threads(&bob, None, "bins", 0, 10).await.unwrap();
        assert_eq!(bobs.items.len(), 1);
        assert_eq!(bobs.items[0].title, None, "Bob's own thread `mine`, not Alice's");
        assert_eq!(found(store, &alice, "bins").await, Vec::<String>::new());
        let in_project = store.search_threads(&alice, Some(&garden.id), "compost", 0, 10).await.unwrap();
        assert_eq!(in_project.items.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["mine"]);
    }
}

#[tokio::test]
async fn sqlite_search_is_driven_by_the_full_text_index() {
    let db = promptgate_store::testing::TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    let plan = thread_search_plan(&db, &alice, "roses garden").await.join("\n");
    // Both full-text tables answer the match (FTS5's `M` constraint) and every other table is
    // reached by key from their rows: no step walks messages or threads.
    assert_eq!(plan.matches("VIRTUAL TABLE INDEX 0:M").count(), 2, "{plan}");
    for line in plan.lines() {
        assert!(
            !line.trim_start().starts_with("SCAN m")
                && !line.contains("SCAN threads")
                && !line.contains("SCAN h"),
            "{plan}"
        );
    }
    db.close().await;
}

#[tokio::test]
async fn postgres_search_has_no_generic_plan_trap() {
    let db = promptgate_store::testing::TestDb::postgres().await;
    let heavy = user(&db, "Heavy").await;
    for n in 0..400 {
        let id = format!("t{n}");
        thread(&db, &heavy, &id, None, Some("Weekly notes")).await;
        for _ in 0..3 {
            say(
                &db,
                &heavy,
                &id,
                Role::User,
                "notes about the garden and the roses",
            )
            .await;
        }
    }
    for n in 0..40 {
        let light = user(&db, &format!("Light {n}")).await;
        thread(&db, &light, "only", None, Some("Roses")).await;
        say(&db, &light, "only", Role::User, "roses").await;
    }
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(db.url())
        .await
        .unwrap();
    sqlx::query("ANALYZE").execute(&mut conn).await.unwrap();
    // The plan a reused prepared statement falls back to is made for no user and no words in
    // particular; it must still find messages and threads through the keyed search indexes rather
    // than walk a user's rows (the old statement reached messages by the user's key and checked
    // each one against a list of threads: 4-8 s for a heavy user).
    let plan = postgres_thread_search_generic_plan(&db, &heavy, "roses").await;
    let uses = |index: &str| plan.iter().any(|n| n.index.as_deref() == Some(index));
    assert!(
        uses("messages_user_search") && uses("threads_user_search"),
        "{plan:#?}"
    );
    for node in &plan {
        let on = |table: &str| node.relation.as_deref() == Some(table);
        assert!(
            !(node.node_type == "Seq Scan" && (on("messages") || on("threads"))),
            "no step reads every row of a table: {node:?}\n{plan:#?}"
        );
        // Whatever index a step reads, for the hits (`m` messages, `h` titles) only the search index
        // keyed by user; the page's own threads (`t`) by their key.
        let reads = node.alias.as_deref().or(node.parent_alias.as_deref());
        if let (Some(index), Some(alias)) = (node.index.as_deref(), reads) {
            let allowed = match alias {
                "m" => "messages_user_search",
                "h" => "threads_user_search",
                "t" => "threads_pkey",
                _ => index,
            };
            assert_eq!(index, allowed, "{node:?}\n{plan:#?}");
        }
        // A match is ranked from its stored vector: no row's words are tokenised again per search
        // (a word in 1% of a heavy user's threads was 2,000 rows re-tokenised, ~80 ms).
        assert!(node.output.iter().all(|o| !o.contains("to_tsvector")), "{node:?}");
    }
    drop(conn);
    db.close().await;
}
