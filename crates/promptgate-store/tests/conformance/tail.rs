//! A long thread read backwards: the newest page with the send's context, older pages on demand,
//! edits marked with the message they replace, and the record of a compacted older part.

use crate::common::*;

async fn say_as(store: &Store, user: &str, thread: &str, id: &str, role: Role, words: &str) -> Message {
    say_with_id(store, user, thread, Some(id), role, words).await
}

/// Alice's thread "long" of 150 messages, user and assistant in turn, message `n` with id `m{n}`
/// and the text "message {n}".
async fn long_thread(store: &Store) -> String {
    let alice = user(store, "Alice").await;
    store.seed_system_models(&[model("demo")]).await.unwrap();
    thread(store, &alice, "long", None, None).await;
    for n in 1..=150 {
        let role = if n % 2 == 1 { Role::User } else { Role::Assistant };
        say_as(
            store,
            &alice,
            "long",
            &format!("m{n}"),
            role,
            &format!("message {n}"),
        )
        .await;
    }
    alice
}

conformance! {
    async fn a_send_reads_the_newest_messages_first_and_older_ones_on_demand(store: &Store) {
        let alice = long_thread(store).await;
        let ctx = store.load_send_context(&alice, Some("long"), None, "demo", None).await.unwrap();
        let tail = &ctx.tail;
        assert!(!tail.from_start, "150 messages are more than one read");
        assert_eq!(tail.messages.len(), 64);
        assert_eq!(tail.oldest_seq(), Some(87));
        assert_eq!(tail.messages.last().unwrap().parts, text("message 150"));

        let older = store.thread_messages_before(&alice, "long", 87, 50, true).await.unwrap();
        assert_eq!(older.iter().map(|m| m.seq).collect::<Vec<_>>(), (37..87).collect::<Vec<_>>());
        assert_eq!(older[0].parts, text("message 37"));
        let heads = store.thread_messages_before(&alice, "long", 37, 100, false).await.unwrap();
        assert_eq!(heads.len(), 36, "the rest, as far as the thread goes");
        assert_eq!(heads[0].seq, 1);
        assert_eq!(heads[0].parts, json!([]), "a count needs no bodies");
        assert_eq!(heads[0].role, Role::User);

        // Another user reads nothing of it.
        let bob = user(store, "Bob").await;
        assert!(store.thread_messages_before(&bob, "long", 200, 10, true).await.unwrap().is_empty());
    }

    async fn a_send_that_holds_the_older_part_reads_from_its_newest_held_message_on(store: &Store) {
        let alice = long_thread(store).await;
        let page = store.load_send_context(&alice, Some("long"), None, "demo", None).await.unwrap();
        let born = page.thread.as_ref().unwrap().created_at;
        let load = |seq: i64, id: &'static str, thread_created_at: i64| {
            let alice = alice.clone();
            async move {
                let from = ReadFrom { seq, id, thread_created_at };
                store.load_send_context(&alice, Some("long"), None, "demo", Some(from)).await.unwrap()
            }
        };

        // Held up to message 146: it and what is newer come back, nothing said of the start.
        let ctx = load(146, "m146", born).await;
        let seqs: Vec<i64> = ctx.tail.messages.iter().map(|m| m.seq).collect();
        assert_eq!(seqs, vec![146, 147, 148, 149, 150]);
        assert!(!ctx.tail.from_start);
        assert_eq!(ctx.thread, page.thread);

        // Anything else reads the newest page as without it: another message at that position,
        // a thread made at another time (deleted and made again under its id), or a message
        // further back than one page (another instance wrote more than a page since).
        for (seq, id, made) in [(146, "m145", born), (146, "m146", born + 1), (20, "m20", born)] {
            let ctx = load(seq, id, made).await;
            assert_eq!(ctx.tail, page.tail, "from {seq} {id} made at {made}");
        }
    }

    async fn an_edit_is_stored_with_the_position_of_the_message_it_replaces(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "t", None, None).await;
        thread(store, &alice, "other", None, None).await;
        let first = say_as(store, &alice, "t", "m1", Role::User, "Hi").await;
        assert_eq!(first.edit_of, None);
        say_as(store, &alice, "t", "a1", Role::Assistant, "Hello").await;
        // The same id in another thread is no edit; an answer is never one.
        assert_eq!(say_as(store, &alice, "other", "m1", Role::User, "Hi").await.edit_of, None);
        assert_eq!(say_as(store, &alice, "t", "a1", Role::Assistant, "Again").await.edit_of, None);
        let edit = say_as(store, &alice, "t", "m1", Role::User, "Hi there").await;
        assert_eq!(edit.edit_of, Some(first.seq));
        let again = say_as(store, &alice, "t", "m1", Role::User, "Hi there!").await;
        assert_eq!(again.edit_of, Some(edit.seq), "the latest version is the one replaced");

        let read = store.thread_messages_before(&alice, "t", i64::MAX, 10, true).await.unwrap();
        let marks: Vec<Option<i64>> = read.iter().map(|m| m.edit_of).collect();
        assert_eq!(marks, vec![None, None, None, Some(1), Some(4)]);
        let messages = read.into_iter().map(std::sync::Arc::new).collect();
        let tail = ThreadTail { messages, from_start: true, context: None };
        let end: Vec<&str> = tail.settled_end().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(end, ["m1"]);
    }

    async fn the_record_of_a_compacted_thread_is_kept_with_it_and_replaced(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.seed_system_models(&[model("demo")]).await.unwrap();
        thread(store, &alice, "t", None, None).await;
        say(store, &alice, "t", Role::User, "Hi").await;
        assert_eq!(store.thread_context(&alice, "t").await.unwrap(), None);

        let record = ThreadContext {
            through_seq: 40,
            covered: 38,
            summarised: 30,
            summary: Some("They planned a garden.".to_owned()),
            created_at: 0,
        };
        store.save_thread_context(&alice, "t", &record).await.unwrap();
        let stored = store.thread_context(&alice, "t").await.unwrap().unwrap();
        assert_eq!(ThreadContext { created_at: 0, ..stored.clone() }, record);
        assert!(stored.created_at > 0);
        let ctx = store.load_send_context(&alice, Some("t"), None, "demo", None).await.unwrap();
        assert_eq!(ctx.tail.context.as_ref().map(|c| c.through_seq), Some(40));

        let dropped = ThreadContext { through_seq: 90, covered: 80, summarised: 0, summary: None, ..record };
        store.save_thread_context(&alice, "t", &dropped).await.unwrap();
        let replaced = store.thread_context(&alice, "t").await.unwrap().unwrap();
        assert_eq!((replaced.through_seq, replaced.summary), (90, None));

        // Nobody else reads or writes it, and it goes with its thread.
        assert_eq!(store.thread_context(&bob, "t").await.unwrap(), None);
        store.save_thread_context(&bob, "t", &dropped).await.unwrap();
        assert_eq!(store.thread_context(&bob, "t").await.unwrap(), None);
        store.delete_thread(&alice, "t").await.unwrap();
        assert_eq!(store.thread_context(&alice, "t").await.unwrap(), None);
    }
}

/// One long thread among many short ones, as a heavy user's: the statistics say a thread is short.
async fn one_long_thread_among_short_ones(store: &Store, user: &str) {
    for n in 0..200 {
        let id = format!("short{n}");
        thread(store, user, &id, None, None).await;
        say(store, user, &id, Role::User, "Hello").await;
        say(store, user, &id, Role::Assistant, "Hi there").await;
    }
    thread(store, user, "long", None, None).await;
    for n in 0..1_500 {
        let role = if n % 2 == 0 { Role::User } else { Role::Assistant };
        say(store, user, "long", role, &format!("message {n}")).await;
    }
}

#[tokio::test]
async fn postgres_append_looks_an_edit_up_by_its_id_not_along_the_thread() {
    let db = promptgate_store::testing::TestDb::postgres().await;
    let alice = user(&db, "Alice").await;
    one_long_thread_among_short_ones(&db, &alice).await;
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(db.url())
        .await
        .unwrap();
    sqlx::query("ANALYZE").execute(&mut conn).await.unwrap();
    // Every send appends a message with a new id, and the append asks whether an earlier user
    // message has it (an edit). The old statement asked for the largest position of that id by
    // walking the thread's positions backwards until one had it: a new id has none, so each send
    // read the whole thread (24 ms at 20,000 messages). The id index answers it in one lookup.
    let plan = promptgate_store::testing::postgres_append_generic_plan(&db, &alice, "long", "m-new").await;
    let by_position = plan
        .iter()
        .filter(|n| {
            matches!(
                n.index.as_deref(),
                Some("messages_conversation_outline" | "messages_pkey")
            )
        })
        .count();
    assert!(
        plan.iter().any(|n| n.index.as_deref() == Some("messages_by_id")),
        "{plan:#?}"
    );
    assert!(
        by_position <= 1,
        "only the next position is read by position: {plan:#?}"
    );
    db.close().await;
}

#[tokio::test]
async fn sqlite_append_looks_an_edit_up_by_thread_and_id() {
    let db = promptgate_store::testing::TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    one_long_thread_among_short_ones(&db, &alice).await;
    let plan = promptgate_store::testing::append_plan(&db, &alice, "long", "m-new")
        .await
        .join("\n");
    // The lookup goes by the thread and the id at once, never along the thread or the user.
    assert!(plan.contains("thread_id=? AND id=?"), "{plan}");
    assert!(
        !plan
            .lines()
            .any(|l| l.contains("SCAN messages") || l.contains("(user_id=?)")),
        "{plan}"
    );
    db.close().await;
}
