//! An automatic retry (`retry_of`): it answers the question its turn answered without storing it
//! again, it must name a turn of its thread, and it is refused once its window has passed, before
//! anything is stored.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use crate::common;

use common::{conversation, finish, finished_turn, message, plain_service, retry, service, upstream};
use promptgate_llm::scripted::text;
use promptgate_service::ServiceError;
use promptgate_store::testing::TestDb;

async fn a_retry_answers_its_question_again_without_storing_it_twice(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    upstream.push(text(["Half an answer."]));
    let turn = finished_turn(&service, message("t", Some("q"), "Tides?")).await;

    // The thread-messages route sends no message id; the retry is recognised by its words.
    upstream.push(text(["The whole answer."]));
    let again = service
        .send(retry(message("t", None, "Tides?"), &turn))
        .await
        .unwrap();
    assert_eq!(finish(again).await, "The whole answer.");
    let now = conversation(&service, "t", false).await;
    assert_eq!(now.len(), 2, "{now:?}");
    assert_eq!(now[1].1, "The whole answer.");
    let users = conversation(&service, "t", true)
        .await
        .into_iter()
        .filter(|(role, _)| *role == "user")
        .count();
    assert_eq!(users, 1, "the question is stored once");
}

async fn a_retry_must_name_a_turn_of_its_thread(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    upstream.push(text(["Elsewhere."]));
    let other_turn = finished_turn(&service, message("other", Some("q"), "Hi")).await;

    // Each in a thread of its own: a refused send frees its thread's claim in the background.
    for (thread, turn) in [("t1", "turn_0000"), ("t2", other_turn.as_str())] {
        match service.send(retry(message(thread, Some("q"), "Hi"), turn)).await {
            Err(ServiceError::UnknownTurn(named)) => assert_eq!(named, turn),
            Err(err) => panic!("{err}"),
            Ok(_) => panic!("a retry of {turn} started in a thread it is not a turn of"),
        }
        assert!(
            service.thread(common::USER, thread).await.is_err(),
            "a refused retry creates no thread"
        );
    }
    assert_eq!(upstream.calls(), 1);
}

async fn a_retry_after_its_window_is_refused_and_stores_nothing(db: TestDb) {
    let upstream = upstream().await;
    let service = service(db.store().clone(), &upstream, |config| {
        config.instance.retry_window = Duration::ZERO;
    })
    .await;
    upstream.push(text(["First."]));
    let turn = finished_turn(&service, message("late", Some("q1"), "Hi")).await;

    match service
        .send(retry(message("late", Some("q2"), "Again"), &turn))
        .await
    {
        Err(ServiceError::RetryExpired(named, window)) => {
            assert_eq!((named.as_str(), window), (turn.as_str(), 0))
        }
        Err(err) => panic!("{err}"),
        Ok(_) => panic!("a retry past its window started a turn"),
    }
    assert_eq!(
        conversation(&service, "late", true).await.len(),
        2,
        "nothing of the refused retry is stored"
    );
    assert_eq!(upstream.calls(), 1);
}

promptgate_store::on_both_backends!(
    a_retry_answers_its_question_again_without_storing_it_twice,
    a_retry_must_name_a_turn_of_its_thread,
    a_retry_after_its_window_is_refused_and_stores_nothing,
);
