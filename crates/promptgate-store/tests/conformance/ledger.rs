//! The usage ledger: a turn's row goes with its answer's final save, once however often the save is
//! tried; reports add rows up by user, key, model and day, over a time range, for one user or all.
//! And the fallbacks a model names (the migration that adds the ledger adds them too).

use crate::common::*;

fn record(user: &str, turn: &str, model: &str, input: u64, output: u64, cost: Option<f64>) -> UsageRecord {
    UsageRecord {
        user_id: user.to_owned(),
        turn_id: turn.to_owned(),
        key_id: None,
        thread_id: None,
        kind: UsageKind::ChatCompletions,
        model: model.to_owned(),
        provider: "openai".to_owned(),
        tokens: TokenCounts {
            input,
            output,
            cache_read: 1,
            cache_write: 2,
            reasoning: 3,
        },
        tool_calls: 2,
        web_calls: 1,
        duration_ms: 40,
        status: "complete".to_owned(),
        cost,
    }
}

fn answer(thread: &str, id: &str, words: &str) -> NewMessage {
    NewMessage {
        id: Some(id.to_owned()),
        thread_id: thread.to_owned(),
        role: Role::Assistant,
        parts: text(words),
        metadata: json!({}),
        status: Some(MessageStatus::Complete),
    }
}

fn everyone(group_by: UsageGrouping) -> UsageQuery {
    UsageQuery {
        user: None,
        from_ms: 0,
        to_ms: i64::MAX,
        group_by,
        then_by: None,
    }
}

conformance! {
    async fn a_final_save_writes_its_ledger_row_once_however_often_it_is_tried(store: &Store) {
        let ada = user(store, "Ada").await;
        thread(store, &ada, "t", None, None).await;
        say(store, &ada, "t", Role::User, "Tides?").await;
        let mut streaming = answer("t", "a1", "");
        streaming.status = Some(MessageStatus::Streaming);
        store.append_message(&ada, &streaming).await.unwrap();

        let mut usage = record(&ada, "turn_1", "gpt", 100, 20, Some(0.5));
        usage.thread_id = Some("t".to_owned());
        usage.kind = UsageKind::Turn;
        // A checkpoint after the turn's first step, then the final save: one row, the final one.
        let mut so_far = record(&ada, "turn_1", "gpt", 60, 5, Some(0.1));
        so_far.status = "unfinished".to_owned();
        let mut checkpoint = answer("t", "a1", "High");
        checkpoint.status = Some(MessageStatus::Streaming);
        store.save_answer_with_usage(&ada, &checkpoint, &so_far).await.unwrap();
        let report = store.usage_report(&everyone(UsageGrouping::Model)).await.unwrap();
        assert_eq!((report[0].requests, report[0].tokens.input, report[0].cost), (1, 60, Some(0.1)));
        // The second try is a save whose success went unheard: it changes the answer, not the ledger.
        store.save_answer_with_usage(&ada, &answer("t", "a1", "High at noon."), &usage).await.unwrap();
        store.save_answer_with_usage(&ada, &answer("t", "a1", "High at noon."), &usage).await.unwrap();
        let messages = store.list_messages(&ada, "t").await.unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].status, Some(MessageStatus::Complete));
        let report = store.usage_report(&everyone(UsageGrouping::Model)).await.unwrap();
        assert_eq!(report.len(), 1, "{report:?}");
        assert_eq!((report[0].requests, report[0].tokens.input, report[0].tokens.output), (1, 100, 20));
        assert_eq!(report[0].cost, Some(0.5));

        // The opening row was never written: the final save creates it, with its row in the ledger.
        let late = record(&ada, "turn_2", "gpt", 7, 3, None);
        store.save_answer_with_usage(&ada, &answer("t", "a2", "Low at six."), &late).await.unwrap();
        assert_eq!(store.list_messages(&ada, "t").await.unwrap().len(), 3);
        let report = store.usage_report(&everyone(UsageGrouping::Model)).await.unwrap();
        assert_eq!((report[0].requests, report[0].tokens.input), (2, 107));

        // The thread is gone: neither the answer nor its row is written.
        let orphan = record(&ada, "turn_3", "gpt", 1000, 1000, None);
        let refused = store.save_answer_with_usage(&ada, &answer("gone", "a3", "?"), &orphan).await;
        assert!(matches!(refused, Err(StoreError::NotFound)), "{refused:?}");
        let report = store.usage_report(&everyone(UsageGrouping::Model)).await.unwrap();
        assert_eq!((report[0].requests, report[0].tokens.input), (2, 107));
    }

    async fn a_turns_row_counts_when_its_answer_was_last_saved_not_at_its_first_checkpoint(store: &Store) {
        let ada = user(store, "Ada").await;
        thread(store, &ada, "t", None, None).await;
        say(store, &ada, "t", Role::User, "A long one?").await;
        let mut so_far = record(&ada, "turn_1", "gpt", 60, 5, None);
        so_far.status = "unfinished".to_owned();
        so_far.thread_id = Some("t".to_owned());
        let mut checkpoint = answer("t", "a1", "Part");
        checkpoint.status = Some(MessageStatus::Streaming);
        store.save_answer_with_usage(&ada, &checkpoint, &so_far).await.unwrap();
        // A report's range boundary falls between the checkpoint and the turn's end.
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let boundary = chrono::Utc::now().timestamp_millis();
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let mut done = record(&ada, "turn_1", "gpt", 100, 20, None);
        done.thread_id = Some("t".to_owned());
        store.save_answer_with_usage(&ada, &answer("t", "a1", "Part and whole."), &done).await.unwrap();

        let range = |from_ms, to_ms| UsageQuery { from_ms, to_ms, ..everyone(UsageGrouping::Model) };
        let after = store.usage_report(&range(boundary, i64::MAX)).await.unwrap();
        assert_eq!(after.len(), 1, "the turn ended after the boundary: {after:?}");
        assert_eq!((after[0].requests, after[0].tokens.input), (1, 100));
        let before = store.usage_report(&range(0, boundary)).await.unwrap();
        assert!(before.is_empty(), "counted once, where it ended: {before:?}");
    }

    async fn reports_add_up_by_user_key_model_and_day_for_one_user_or_everyone(store: &Store) {
        let ada = user(store, "Ada").await;
        let bob = user(store, "Bob").await;
        let mut keyed = record(&ada, "t1", "gpt", 100, 10, Some(0.25));
        keyed.key_id = Some("key_a".to_owned());
        store.record_usage(&keyed).await.unwrap();
        store.record_usage(&keyed).await.unwrap();
        store.record_usage(&record(&ada, "t2", "claude", 50, 5, None)).await.unwrap();
        store.record_usage(&record(&bob, "t3", "gpt", 1, 1, Some(0.5))).await.unwrap();

        let by_model = store.usage_report(&everyone(UsageGrouping::Model)).await.unwrap();
        let groups: Vec<_> = by_model.iter().map(|g| (g.group.as_str(), g.requests, g.tokens.input, g.cost, g.unpriced_requests)).collect();
        assert_eq!(groups, vec![("claude", 1, 50, None, 1), ("gpt", 2, 101, Some(0.75), 0)]);
        assert_eq!((by_model[1].tool_calls, by_model[1].web_calls, by_model[1].tokens.reasoning), (4, 2, 6));

        let by_key = store.usage_report(&everyone(UsageGrouping::Key)).await.unwrap();
        let keys: Vec<_> = by_key.iter().map(|g| (g.group.as_str(), g.requests)).collect();
        assert_eq!(keys, vec![("", 2), ("key_a", 1)], "requests without a key are one group");

        let mut ada_only = everyone(UsageGrouping::User);
        ada_only.user = Some(ada.clone());
        let mine = store.usage_report(&ada_only).await.unwrap();
        assert_eq!(mine.len(), 1);
        assert_eq!((mine[0].group.as_str(), mine[0].requests, mine[0].tokens.input), (ada.as_str(), 2, 150));
        assert_eq!(store.usage_report(&everyone(UsageGrouping::User)).await.unwrap().len(), 2);

        let days = store.usage_report(&everyone(UsageGrouping::Day)).await.unwrap();
        assert_eq!(days.len(), 1, "{days:?}");
        let day: i64 = days[0].group.parse().unwrap();
        assert!(day > 20_000, "days since 1970: {day}");
        assert_eq!(days[0].requests, 3);

        let mut before = everyone(UsageGrouping::Model);
        before.to_ms = day * 86_400_000;
        assert!(store.usage_report(&before).await.unwrap().is_empty(), "nothing before today");

        // A day's rows by user and by model, as a chart over time reads them.
        let mut by_day_user = everyone(UsageGrouping::Day);
        by_day_user.then_by = Some(UsageGrouping::User);
        let rows = store.usage_report(&by_day_user).await.unwrap();
        let rows: Vec<_> = rows.iter().map(|g| (g.group.parse::<i64>().unwrap(), g.subgroup.clone().unwrap(), g.tokens.input)).collect();
        let mut expected = vec![(day, ada.clone(), 150), (day, bob.clone(), 1)];
        expected.sort();
        assert_eq!(rows, expected);
        by_day_user.then_by = Some(UsageGrouping::Model);
        let rows = store.usage_report(&by_day_user).await.unwrap();
        let rows: Vec<_> = rows.iter().map(|g| (g.subgroup.as_deref().unwrap(), g.requests, g.tokens.output)).collect();
        assert_eq!(rows, vec![("claude", 1, 5), ("gpt", 2, 11)]);
        assert_eq!(days[0].subgroup, None, "no second grouping unless asked");
    }

    async fn a_batch_of_rows_counts_each_turn_once_and_a_bad_row_stops_the_batch(store: &Store) {
        let ada = user(store, "Ada").await;
        let bob = user(store, "Bob").await;
        let mut unfinished = record(&ada, "t1", "gpt", 1, 1, None);
        unfinished.status = "disconnected".to_owned();
        // Rows of several users and turns, one turn twice (the later row stands), more than one
        // statement's worth.
        let mut batch = vec![unfinished, record(&bob, "t1", "gpt", 5, 5, None)];
        batch.extend((0..300).map(|n| record(&bob, &format!("many{n}"), "claude", 1, 0, None)));
        batch.push(record(&ada, "t1", "gpt", 100, 10, Some(0.25)));
        store.record_usages(&batch).await.unwrap();
        store.record_usages(&batch).await.unwrap();
        store.record_usages(&[]).await.unwrap();

        let by_user = store.usage_report(&everyone(UsageGrouping::User)).await.unwrap();
        let mut seen: Vec<_> = by_user.iter().map(|g| (g.group.clone(), g.requests, g.tokens.input, g.cost)).collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let mut expected = vec![(ada.clone(), 1, 100, Some(0.25)), (bob.clone(), 301, 305, None)];
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(seen, expected);
        let by_status = store.usage_report(&everyone(UsageGrouping::Status)).await.unwrap();
        assert_eq!(by_status.len(), 1, "the later row of t1 replaced the disconnected one: {by_status:?}");

        // All or none: a batch with an invalid row writes nothing.
        let mut bad = record(&ada, "t9", "gpt", 7, 7, None);
        bad.cost = Some(f64::NAN);
        let err = store.record_usages(&[record(&ada, "t8", "gpt", 7, 7, None), bad]).await;
        assert!(matches!(err, Err(StoreError::Invalid(_))), "{err:?}");
        let mut ada_only = everyone(UsageGrouping::User);
        ada_only.user = Some(ada.clone());
        assert_eq!(store.usage_report(&ada_only).await.unwrap()[0].requests, 1);
    }

    async fn a_models_fallbacks_are_kept_in_order_and_checked(store: &Store) {
        let ada = user(store, "Ada").await;
        let mine = Model {
            fallbacks: vec!["second".to_owned(), "third".to_owned()],
            ..model("first")
        };
        store.create_model(&ada, &mine).await.unwrap();
        let stored = store.get_model(&ada, "first").await.unwrap().unwrap();
        assert_eq!(stored.fallbacks, ["second", "third"]);
        let own = Model {
            fallbacks: vec!["first".to_owned()],
            ..model("first")
        };
        assert!(matches!(store.update_model(&ada, &own).await, Err(StoreError::Invalid(_))));
        let many = Model {
            fallbacks: (0..5).map(|n| format!("m{n}")).collect(),
            ..model("first")
        };
        assert!(matches!(store.update_model(&ada, &many).await, Err(StoreError::Invalid(_))));
    }
}
