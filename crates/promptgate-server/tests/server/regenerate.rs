//! Regenerating an answer (`trigger: regenerate-message`) against a scripted upstream on loopback.
//! The replaced answer stays stored but leaves the conversation: the model and the default message
//! listing see only the new one.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, sent_to_model, single_user_gateway, stored_turns};
use promptgate_llm::scripted::text;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(r, t)| ((*r).to_owned(), (*t).to_owned()))
        .collect()
}

/// Waits until the thread's listing ends with an answer reading `answer` (it is stored as the turn
/// ends, just after the stream closes).
async fn listing_once_answered(gw: &Gateway, path: &str, answer: &str) -> Value {
    for _ in 0..200 {
        let (status, messages) = gw.get(path).await;
        assert_eq!(status, StatusCode::OK, "{messages}");
        if stored_turns(&messages).last().is_some_and(|(_, t)| t == answer) {
            return messages;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{path} never ended with the answer {answer:?}");
}

async fn a_regenerated_answer_replaces_the_old_one(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    upstream.push(text(["First answer."]));
    let sse = gw.chat("regen", "Why is the sky blue?").await;
    assert_eq!(sse.text(), "First answer.");
    let stored = gw.stored_messages("regen", 2).await;

    // useChat drops the answer and sends the conversation up to the question again.
    upstream.push(text(["Second answer."]));
    let regenerate = json!({
        "id": "regen",
        "messages": [stored[0].clone()],
        "trigger": "regenerate-message",
        "messageId": stored[1]["id"],
        "model": "scripted",
    });
    let sse = gw.stream("/v1/chat", regenerate).await;
    assert_eq!(sse.text(), "Second answer.");
    assert_eq!(
        sent_to_model(&upstream.last_request().unwrap()),
        pairs(&[("user", "Why is the sky blue?")]),
        "the regenerate does not show the model the answer it replaces"
    );

    let current = listing_once_answered(&gw, "/v1/threads/regen/messages", "Second answer.").await;
    assert_eq!(
        stored_turns(&current),
        pairs(&[("user", "Why is the sky blue?"), ("assistant", "Second answer.")])
    );
    let (_, everything) = gw.get("/v1/threads/regen/messages?replaced=true").await;
    assert_eq!(
        stored_turns(&everything),
        pairs(&[
            ("user", "Why is the sky blue?"),
            ("assistant", "First answer."),
            ("assistant", "Second answer."),
        ]),
        "the replaced answer is still stored"
    );

    // The next message's history carries one answer per question: the one the user kept.
    upstream.push(text(["Follow-up answer."]));
    let sse = gw.chat("regen", "And at sunset?").await;
    assert_eq!(sse.text(), "Follow-up answer.");
    assert_eq!(
        sent_to_model(&upstream.last_request().unwrap()),
        pairs(&[
            ("user", "Why is the sky blue?"),
            ("assistant", "Second answer."),
            ("user", "And at sunset?"),
        ])
    );
    assert_eq!(upstream.calls(), 3);

    let (status, err) = gw.get("/v1/threads/regen/messages?replaced=maybe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(common::error_code(&err), "invalid_query");
    let (status, _) = gw.get("/v1/threads/no-such-thread/messages").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

common::on_both_backends!(a_regenerated_answer_replaces_the_old_one);
