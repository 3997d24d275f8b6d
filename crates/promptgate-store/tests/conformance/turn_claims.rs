//! Turn claims shared by instances: one live claim per thread, races, expired leases.

use std::time::Duration;

use promptgate_store::{
    ClaimOutcome, ClaimRequests, FrameBatch, MessageStatus, NewTurnClaim, OAuthPending, PendingLimits,
    PendingRefused, RetryLookup, RetrySave, TurnSignal,
};

use crate::common::*;

const LONG: Duration = Duration::from_secs(600);

fn claim<'a>(user: &'a str, thread: &'a str, turn: &'a str, instance: &'a str) -> NewTurnClaim<'a> {
    NewTurnClaim {
        user_id: user,
        thread_id: thread,
        turn_id: turn,
        message_id: "msg_answer",
        instance_id: instance,
    }
}

async fn streaming_answer(store: &Store, user: &str, thread_id: &str) {
    thread(store, user, thread_id, None, None).await;
    say(store, user, thread_id, Role::User, "Question").await;
    let answer = NewMessage {
        id: Some("msg_answer".to_owned()),
        thread_id: thread_id.to_owned(),
        role: Role::Assistant,
        parts: text("Half an ans"),
        metadata: json!({}),
        status: Some(MessageStatus::Streaming),
    };
    store.append_message(user, &answer).await.unwrap();
}

async fn answer_status(store: &Store, user: &str, thread_id: &str) -> Option<MessageStatus> {
    let messages = store.list_messages(user, thread_id).await.unwrap();
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| m.status)
}

conformance! {
    async fn a_thread_holds_one_live_claim_whichever_instance_asks(store: &Store) {
        let alice = user(store, "Alice").await;
        let first = store.claim_turn(&claim(&alice, "t", "turn_1", "instance_a"), LONG).await.unwrap();
        assert_eq!(first, ClaimOutcome::Claimed);
        let second = store.claim_turn(&claim(&alice, "t", "turn_2", "instance_b"), LONG).await.unwrap();
        assert_eq!(second, ClaimOutcome::Busy);
        let running = store.running_turn(&alice, "t").await.unwrap().unwrap();
        assert_eq!((running.turn_id.as_str(), running.instance_id.as_str()), ("turn_1", "instance_a"));
        // The instance that holds it may replace its own claim (a failed send's release not landed yet).
        let again = store.claim_turn(&claim(&alice, "t", "turn_1b", "instance_a"), LONG).await.unwrap();
        assert_eq!(again, ClaimOutcome::Claimed);
        store.end_turn(&alice, "t", "turn_1", None).await.unwrap();
        let running = store.running_turn(&alice, "t").await.unwrap().unwrap();
        assert_eq!(running.turn_id, "turn_1b", "the late release of the old claim does not free the thread");
        store.end_turn(&alice, "t", "turn_1b", None).await.unwrap();
        store.claim_turn(&claim(&alice, "t", "turn_1", "instance_a"), LONG).await.unwrap();
        // Another user's thread of the same id is another thread.
        let bob = user(store, "Bob").await;
        assert_eq!(store.claim_turn(&claim(&bob, "t", "turn_3", "instance_b"), LONG).await.unwrap(), ClaimOutcome::Claimed);

        // Ending the turn frees the thread and keeps its retry state for the window.
        store.end_turn(&alice, "t", "turn_1", Some(RetrySave { state: r#"{"budget":1}"#, window: LONG, retried: None })).await.unwrap();
        assert_eq!(store.running_turn(&alice, "t").await.unwrap(), None);
        assert_eq!(store.claim_turn(&claim(&alice, "t", "turn_2", "instance_b"), LONG).await.unwrap(), ClaimOutcome::Claimed);
        assert_eq!(store.retry_state(&alice, "t", "turn_1").await.unwrap(), RetryLookup::Found(r#"{"budget":1}"#.to_owned()));
        assert_eq!(store.retry_state(&bob, "t", "turn_1").await.unwrap(), RetryLookup::Unknown, "another user's turn");
        assert_eq!(store.retry_state(&alice, "t", "turn_9").await.unwrap(), RetryLookup::Unknown);
        // A retry's state also answers for the turn it retried: the budget stands where the retry left it.
        store.end_turn(&alice, "t", "turn_2", Some(RetrySave { state: r#"{"budget":2}"#, window: LONG, retried: Some("turn_1") })).await.unwrap();
        assert_eq!(store.retry_state(&alice, "t", "turn_1").await.unwrap(), RetryLookup::Found(r#"{"budget":2}"#.to_owned()));
        // Another user's turn id is not overwritten by naming it.
        store.end_turn(&bob, "t", "turn_3", Some(RetrySave { state: "{}", window: LONG, retried: Some("turn_1") })).await.unwrap();
        assert_eq!(store.retry_state(&alice, "t", "turn_1").await.unwrap(), RetryLookup::Found(r#"{"budget":2}"#.to_owned()));
        store.claim_turn(&claim(&alice, "t", "turn_4", "instance_b"), LONG).await.unwrap();
        store.end_turn(&alice, "t", "turn_4", Some(RetrySave { state: "{}", window: Duration::ZERO, retried: None })).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.retry_state(&alice, "t", "turn_4").await.unwrap(), RetryLookup::Expired);
    }

    async fn many_instances_racing_for_one_thread_get_one_claim(store: &Store) {
        let alice = user(store, "Alice").await;
        let turns: Vec<String> = (0..12).map(|i| format!("turn_{i}")).collect();
        let claims = turns.iter().map(|turn| {
            let alice = alice.clone();
            async move { store.claim_turn(&claim(&alice, "raced", turn, turn), LONG).await.unwrap() }
        });
        let outcomes = futures::future::join_all(claims).await;
        assert_eq!(outcomes.iter().filter(|o| **o == ClaimOutcome::Claimed).count(), 1, "{outcomes:?}");
    }

    async fn an_expired_lease_interrupts_its_answer_and_frees_the_thread(store: &Store) {
        let alice = user(store, "Alice").await;
        streaming_answer(store, &alice, "dead").await;
        // A lease of zero has run out by the next statement: its owner stopped renewing it.
        store.claim_turn(&claim(&alice, "dead", "turn_dead", "instance_a"), Duration::ZERO).await.unwrap();
        assert_eq!(store.running_turn(&alice, "dead").await.unwrap(), None);
        let expired = store.expire_turn_claims().await.unwrap();
        assert_eq!(expired.iter().map(|e| (e.turn_id.as_str(), e.answer_interrupted)).collect::<Vec<_>>(), [("turn_dead", true)]);
        assert_eq!(answer_status(store, &alice, "dead").await, Some(MessageStatus::Interrupted));
        assert!(store.expire_turn_claims().await.unwrap().is_empty(), "handled once");

        // A new send may also take the thread over directly.
        streaming_answer(store, &alice, "dead2").await;
        store.claim_turn(&claim(&alice, "dead2", "turn_dead2", "instance_a"), Duration::ZERO).await.unwrap();
        let taken = store.claim_turn(&claim(&alice, "dead2", "turn_new", "instance_b"), LONG).await.unwrap();
        assert_eq!(taken, ClaimOutcome::TookOver { interrupted_turn: "turn_dead2".to_owned(), answer_interrupted: true });
        assert_eq!(answer_status(store, &alice, "dead2").await, Some(MessageStatus::Interrupted));

        // An owner that died after storing its answer's end, or before writing it: nothing to mark,
        // and the take-over says so.
        thread(store, &alice, "ended", None, None).await;
        store.claim_turn(&claim(&alice, "ended", "turn_ended", "instance_a"), Duration::ZERO).await.unwrap();
        let taken = store.claim_turn(&claim(&alice, "ended", "turn_after", "instance_b"), LONG).await.unwrap();
        assert_eq!(taken, ClaimOutcome::TookOver { interrupted_turn: "turn_ended".to_owned(), answer_interrupted: false });
        store.claim_turn(&claim(&alice, "ended2", "turn_ended2", "instance_a"), Duration::ZERO).await.unwrap();
        let expired = store.expire_turn_claims().await.unwrap();
        assert_eq!(expired.iter().map(|e| (e.turn_id.as_str(), e.answer_interrupted)).collect::<Vec<_>>(), [("turn_ended2", false)]);
    }

    async fn a_renewed_lease_outlives_its_first_term_and_reports_stops(store: &Store) {
        let alice = user(store, "Alice").await;
        store.claim_turn(&claim(&alice, "a", "turn_a", "instance_a"), Duration::ZERO).await.unwrap();
        store.claim_turn(&claim(&alice, "b", "turn_b", "instance_b"), LONG).await.unwrap();
        assert_eq!(store.renew_turn_claims("instance_a", LONG).await.unwrap(), ClaimRequests::default());
        assert!(store.expire_turn_claims().await.unwrap().is_empty(), "renewed in time");
        assert!(store.running_turn(&alice, "a").await.unwrap().is_some());

        let mut signals = store.turn_signals();
        let stopped = store.request_turn_stop(&alice, "a").await.unwrap().unwrap();
        assert_eq!(stopped.instance_id, "instance_a");
        assert_eq!(store.request_turn_stop(&alice, "idle").await.unwrap(), None);
        assert_eq!(store.renew_turn_claims("instance_a", LONG).await.unwrap().stop, vec!["turn_a".to_owned()]);
        assert_eq!(store.renew_turn_claims("instance_b", LONG).await.unwrap(), ClaimRequests::default());
        // The owner also hears it at once (Postgres: through the listener; SQLite: in process).
        let heard = tokio::time::timeout(Duration::from_secs(30), signals.recv()).await.unwrap().unwrap();
        assert_eq!(heard, TurnSignal::Stop { turn_id: "turn_a".to_owned() });

        // A reader elsewhere asks to follow: the owner hears it, and its heartbeat finds it too.
        let followed = store.request_turn_follow(&alice, "b").await.unwrap().unwrap();
        assert_eq!(followed.turn_id, "turn_b");
        assert_eq!(store.request_turn_follow(&alice, "idle").await.unwrap(), None);
        let heard = tokio::time::timeout(Duration::from_secs(30), signals.recv()).await.unwrap().unwrap();
        assert_eq!(heard, TurnSignal::Follow { turn_id: "turn_b".to_owned() });
        let requests = store.renew_turn_claims("instance_b", LONG).await.unwrap();
        assert_eq!((requests.stop, requests.follow), (vec![], vec!["turn_b".to_owned()]));
        // Releasing a followed turn says so, so its owner writes the frames it owes even if it never
        // heard the request; an unfollowed one does not.
        assert!(store.end_turn(&alice, "b", "turn_b", None).await.unwrap());
        assert!(!store.end_turn(&alice, "a", "turn_a", Some(RetrySave { state: "{}", window: LONG, retried: None })).await.unwrap());
    }

    async fn start_up_interrupts_only_answers_no_live_claim_covers(store: &Store) {
        let alice = user(store, "Alice").await;
        streaming_answer(store, &alice, "live").await;
        streaming_answer(store, &alice, "orphan").await;
        store.claim_turn(&claim(&alice, "live", "turn_live", "instance_a"), LONG).await.unwrap();
        assert_eq!(store.interrupt_unclaimed_answers(false).await.unwrap(), 1);
        assert_eq!(answer_status(store, &alice, "live").await, Some(MessageStatus::Streaming));
        assert_eq!(answer_status(store, &alice, "orphan").await, Some(MessageStatus::Interrupted));
        // One instance per database: every claim is a previous run's.
        assert_eq!(store.interrupt_unclaimed_answers(true).await.unwrap(), 1);
        assert_eq!(answer_status(store, &alice, "live").await, Some(MessageStatus::Interrupted));
        assert_eq!(store.running_turn(&alice, "live").await.unwrap(), None);
    }

    async fn an_unfinished_ledger_row_is_relabelled_with_its_interrupted_answer(store: &Store) {
        let alice = user(store, "Alice").await;
        for (thread, turn) in [("live", "turn_live"), ("orphan", "turn_orphan"), ("expired", "turn_expired")] {
            streaming_answer(store, &alice, thread).await;
            let row = UsageRecord {
                user_id: alice.clone(),
                turn_id: turn.to_owned(),
                key_id: None,
                thread_id: Some(thread.to_owned()),
                kind: UsageKind::Turn,
                model: "gpt".to_owned(),
                provider: "openai".to_owned(),
                tokens: TokenCounts { input: 10, output: 5, ..TokenCounts::default() },
                tool_calls: 0,
                web_calls: 0,
                duration_ms: 1,
                status: USAGE_UNFINISHED.to_owned(),
                cost: None,
            };
            store.record_usage(&row).await.unwrap();
        }
        store.claim_turn(&claim(&alice, "live", "turn_live", "instance_a"), LONG).await.unwrap();
        store.claim_turn(&claim(&alice, "expired", "turn_expired", "instance_b"), Duration::ZERO).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let by_status = || async {
            let query = UsageQuery { user: None, from_ms: 0, to_ms: i64::MAX, group_by: UsageGrouping::Status, then_by: Some(UsageGrouping::User) };
            let report = store.usage_report(&query).await.unwrap();
            report.iter().map(|g| (g.group.clone(), g.requests, g.tokens.input)).collect::<Vec<_>>()
        };
        // The expired claim's turn and the orphan's are interrupted; the live turn runs on.
        store.expire_turn_claims().await.unwrap();
        assert_eq!(by_status().await, vec![("interrupted".to_owned(), 1, 10), ("unfinished".to_owned(), 2, 20)]);
        assert_eq!(store.interrupt_unclaimed_answers(false).await.unwrap(), 1);
        assert_eq!(by_status().await, vec![("interrupted".to_owned(), 2, 20), ("unfinished".to_owned(), 1, 10)]);
        // One instance per database: the live claim was a previous run's too.
        store.interrupt_unclaimed_answers(true).await.unwrap();
        assert_eq!(by_status().await, vec![("interrupted".to_owned(), 3, 30)]);
    }

    async fn frames_of_a_followed_turn_come_back_in_order(store: &Store) {
        for (seq, frames, done) in [(1, "data: a\n\n", false), (2, "data: b\n\n", false), (3, "data: [DONE]\n\n", true)] {
            store.put_turn_frames("turn_f", &FrameBatch { seq, frames: frames.to_owned(), done }).await.unwrap();
        }
        let all = store.turn_frames_after("turn_f", 0).await.unwrap();
        assert_eq!(all.iter().map(|b| b.frames.as_str()).collect::<String>(), "data: a\n\ndata: b\n\ndata: [DONE]\n\n");
        let rest = store.turn_frames_after("turn_f", 2).await.unwrap();
        assert_eq!(rest.len(), 1);
        assert!(rest[0].done);
        // A batch written again (its first write answered lost) is taken and changes nothing.
        store.put_turn_frames("turn_f", &FrameBatch { seq: 2, frames: "data: b, again\n\n".to_owned(), done: false }).await.unwrap();
        let again = store.turn_frames_after("turn_f", 1).await.unwrap();
        assert_eq!(again.iter().map(|b| b.frames.as_str()).collect::<String>(), "data: b\n\ndata: [DONE]\n\n");
    }

    async fn oauth_authorizations_are_taken_once_and_capped_per_user(store: &Store) {
        let pending = |user: &str| OAuthPending {
            user_id: user.to_owned(),
            provider: "google".to_owned(),
            code_verifier: "verifier".to_owned(),
            details: None,
        };
        let limits = PendingLimits { ttl: LONG, per_user: 2, total: 3 };
        for state in ["s1", "s2", "s3"] {
            store.put_oauth_pending(state, &pending("alice"), limits).await.unwrap().unwrap();
        }
        // The third of Alice's dropped her oldest.
        assert_eq!(store.take_oauth_pending("s1").await.unwrap(), None);
        assert_eq!(store.take_oauth_pending("s2").await.unwrap(), Some(pending("alice")));
        assert_eq!(store.take_oauth_pending("s2").await.unwrap(), None, "used once");
        store.put_oauth_pending("b1", &pending("bob"), limits).await.unwrap().unwrap();
        store.put_oauth_pending("b2", &pending("bob"), limits).await.unwrap().unwrap();
        assert_eq!(
            store.put_oauth_pending("c1", &pending("carol"), limits).await.unwrap(),
            Err(PendingRefused::TooMany)
        );
        let expired = PendingLimits { ttl: Duration::ZERO, ..limits };
        store.take_oauth_pending("s3").await.unwrap();
        store.put_oauth_pending("gone", &pending("dave"), expired).await.unwrap().unwrap();
        assert_eq!(store.take_oauth_pending("gone").await.unwrap(), None, "expired");
    }

    async fn a_burst_of_calls_keeps_the_stores_times_within_a_second_of_the_clock(store: &Store) {
        // Each call that asks for the time takes a millisecond of the store's strictly increasing
        // times; thousands within a fraction of a second must not carry them seconds ahead.
        let ada = user(store, "Ada").await;
        for _ in 0..3_000 {
            store.running_turn(&ada, "t").await.unwrap();
        }
        thread(store, &ada, "t", None, None).await;
        let wall = chrono::Utc::now().timestamp_millis();
        let stamped = store.get_thread(&ada, "t").await.unwrap().unwrap().created_at;
        assert!(stamped <= wall + 1_000, "stamped {} ms ahead of the clock", stamped - wall);
    }
}
