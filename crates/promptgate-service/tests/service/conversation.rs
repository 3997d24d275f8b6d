//! What a send does to the stored conversation: a question sent again is stored once, an edit takes
//! the place of the message it edits and of what followed it, and a regenerate answers the newest
//! question again.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;

use common::{USER, conversation, finish, message, plain_service};
use promptgate_llm::scripted::text;
use promptgate_service::{SendInput, ServiceError};
use promptgate_store::testing::TestDb;
use promptgate_store::{NewMessage, NewThread, Role};
use serde_json::json;

fn said(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs
        .iter()
        .map(|(role, text)| (*role, (*text).to_owned()))
        .collect()
}

async fn a_question_whose_turn_left_no_answer_is_answered_not_stored_again(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    // An instance stored the question, then died before its turn wrote anything.
    let thread = NewThread {
        id: Some("t".to_owned()),
        project_id: None,
        title: None,
    };
    let question = NewMessage {
        id: Some("q1".to_owned()),
        thread_id: "t".to_owned(),
        role: Role::User,
        parts: json!([{"type": "text", "text": "When is high tide?"}]),
        metadata: json!({}),
        status: None,
    };
    db.store()
        .create_thread_with_message(USER, &thread, &question)
        .await
        .unwrap();

    upstream.push(text(["At six."]));
    let handle = service
        .send(message("t", Some("q1"), "When is high tide?"))
        .await
        .unwrap();
    assert_eq!(finish(handle).await, "At six.");
    assert_eq!(
        conversation(&service, "t", true).await,
        said(&[("user", "When is high tide?"), ("assistant", "At six.")])
    );
}

async fn an_edit_replaces_its_message_and_what_followed(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    for (id, words, answer) in [("m1", "Hi", "Hello."), ("m2", "Tides?", "Twice a day.")] {
        upstream.push(text([answer]));
        finish(service.send(message("e", Some(id), words)).await.unwrap()).await;
    }
    upstream.push(text(["Hello again."]));
    finish(service.send(message("e", Some("m1"), "Hi there")).await.unwrap()).await;

    assert_eq!(
        conversation(&service, "e", false).await,
        said(&[("user", "Hi there"), ("assistant", "Hello again.")])
    );
    let sent = upstream.last_request().unwrap();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user"],
        "the model sees the edited conversation only"
    );
    assert_eq!(
        conversation(&service, "e", true).await.len(),
        6,
        "the old versions stay stored"
    );
}

async fn a_regenerate_answers_the_newest_question_again(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    let regenerate = |thread: &str| {
        let mut request = message(thread, None, "");
        request.input = SendInput::Regenerate;
        request
    };
    match service.send(regenerate("empty")).await {
        Err(ServiceError::InvalidMessage(reason)) => assert!(reason.contains("no user message"), "{reason}"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a regenerate in an empty thread started a turn"),
    }

    upstream.push(text(["First answer."]));
    finish(service.send(message("r", Some("q"), "Why?")).await.unwrap()).await;
    upstream.push(text(["Second answer."]));
    assert_eq!(
        finish(service.send(regenerate("r")).await.unwrap()).await,
        "Second answer."
    );
    assert_eq!(
        conversation(&service, "r", false).await,
        said(&[("user", "Why?"), ("assistant", "Second answer.")])
    );
}

promptgate_store::on_both_backends!(
    a_question_whose_turn_left_no_answer_is_answered_not_stored_again,
    an_edit_replaces_its_message_and_what_followed,
    a_regenerate_answers_the_newest_question_again,
);
