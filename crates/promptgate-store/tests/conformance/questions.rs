//! Tool questions: kept per user and thread, answered once (a second answer, another user's, one
//! after the time ran out or after Stop finds it settled), and read back in the state they ended.

use std::time::Duration;

use crate::common::*;

const MINUTE: Duration = Duration::from_secs(60);

fn asking(id: &str) -> NewQuestion {
    NewQuestion {
        question_id: id.to_owned(),
        thread_id: "t1".to_owned(),
        message_id: "m1".to_owned(),
        turn_id: "turn1".to_owned(),
        tool_call_id: "c1".to_owned(),
        kind: "elicitation".to_owned(),
        question: r#"{"message":"Which table?"}"#.to_owned(),
    }
}

conformance! {
    async fn a_question_is_answered_once_and_only_by_its_user(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "t1", None, None).await;
        store.keep_question(&alice, &asking("q1"), MINUTE).await.unwrap();
        let pending = store.pending_questions(&alice, "t1").await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].asked.question, r#"{"message":"Which table?"}"#);
        assert_eq!((pending[0].asked.turn_id.as_str(), pending[0].state), ("turn1", QuestionState::Pending));
        assert!(store.pending_questions(&bob, "t1").await.unwrap().is_empty());
        assert!(!store.answer_question(&bob, "t1", "q1", r#"{"action":"decline"}"#).await.unwrap());
        assert!(store.answer_question(&alice, "t1", "q1", r#"{"action":"accept"}"#).await.unwrap());
        assert!(!store.answer_question(&alice, "t1", "q1", r#"{"action":"decline"}"#).await.unwrap());
        // An answer that lost the race cannot end it either.
        assert!(!store.end_question(&alice, "q1", QuestionState::Cancelled).await.unwrap());
        let answered = store.question(&alice, "t1", "q1").await.unwrap().unwrap();
        assert_eq!(answered.state, QuestionState::Answered);
        assert_eq!(answered.answer.as_deref(), Some(r#"{"action":"accept"}"#));
        assert!(store.pending_questions(&alice, "t1").await.unwrap().is_empty());
    }

    async fn an_expired_or_stopped_question_takes_no_answer(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "t1", None, None).await;
        store.keep_question(&alice, &asking("late"), Duration::ZERO).await.unwrap();
        assert!(store.pending_questions(&alice, "t1").await.unwrap().is_empty(), "its time is up");
        assert!(store.question(&alice, "t1", "late").await.unwrap().unwrap().expired);
        assert!(!store.answer_question(&alice, "t1", "late", "{}").await.unwrap());
        assert!(store.end_question(&alice, "late", QuestionState::Expired).await.unwrap());
        store.keep_question(&alice, &asking("stopped"), MINUTE).await.unwrap();
        assert_eq!(store.cancel_questions(&alice, "t1").await.unwrap(), 1);
        assert!(!store.answer_question(&alice, "t1", "stopped", "{}").await.unwrap());
        let stopped = store.question(&alice, "t1", "stopped").await.unwrap().unwrap();
        assert_eq!(stopped.state, QuestionState::Cancelled);
        // The periodic expiry keeps a freshly expired row (a late answer is still told so).
        store.expire_turn_claims().await.unwrap();
        assert!(store.question(&alice, "t1", "late").await.unwrap().is_some());
    }
}
