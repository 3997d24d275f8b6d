//! Per-user storage quotas (`[quotas]`): a user at their thread limit or past their byte quota is
//! refused with 403 `quota_exceeded` before anything is written, an answer that takes them past the
//! quota is still stored whole, deleting threads gives the room back, and one user's quota never
//! touches another's.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code, scripted_config_with, stored_text, use_chat_body};
use promptgate_llm::scripted::{ScriptedUpstream, text};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn gateway(backend: Backend, mode: AuthMode, quotas: &str) -> (Gateway, ScriptedUpstream) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Noted."]));
    let config = scripted_config_with(mode, &upstream.base_url(), &format!("[quotas]\n{quotas}\n"));
    (Gateway::start(backend, config).await, upstream)
}

async fn token_for(gw: &Gateway, name: &str) -> String {
    let user = gw.store.create_user(name).await.unwrap();
    gw.store.issue_token(&user.id).await.unwrap()
}

async fn send(gw: &Gateway, token: &str, thread: &str) -> (StatusCode, Value) {
    let body = use_chat_body(thread, "remember this", "scripted");
    gw.call(Method::POST, "/v1/chat", Some(body), Some(token)).await
}

async fn thread_ids(gw: &Gateway, token: &str) -> Vec<String> {
    let (status, body) = gw.call(Method::GET, "/v1/threads", None, Some(token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let list = body["data"]
        .as_array()
        .or(body.as_array())
        .cloned()
        .unwrap_or_default();
    let mut ids: Vec<String> = list
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn assert_quota_exceeded(status: StatusCode, body: &Value) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(error_code(body), "quota_exceeded", "{body}");
    assert!(common::error_message(body).contains("delete threads"), "{body}");
}

async fn a_user_at_the_thread_limit_is_refused_and_nothing_is_written(backend: Backend) {
    let (gw, _upstream) = gateway(backend, AuthMode::Tokens, "max_threads = 2").await;
    let alice = token_for(&gw, "Alice").await;
    let bob = token_for(&gw, "Bob").await;
    let (status, body) = gw.post_as("/v1/threads", json!({"id": "a1"}), &alice).await;
    assert!(status.is_success(), "{body}");
    assert_eq!(send(&gw, &alice, "a2").await.0, StatusCode::OK);

    let (status, body) = send(&gw, &alice, "a3").await;
    assert_quota_exceeded(status, &body);
    let (status, body) = gw.post_as("/v1/threads", json!({"id": "a4"}), &alice).await;
    assert_quota_exceeded(status, &body);
    assert_eq!(thread_ids(&gw, &alice).await, ["a1", "a2"], "nothing was written");
    let (status, _) = gw
        .call(Method::GET, "/v1/threads/a3/messages", None, Some(&alice))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        send(&gw, &alice, "a2").await.0,
        StatusCode::OK,
        "a thread she has takes more sends"
    );

    for id in ["b1", "b2"] {
        assert_eq!(
            send(&gw, &bob, id).await.0,
            StatusCode::OK,
            "Alice's limit is not Bob's"
        );
    }

    let (status, body) = gw
        .call(Method::DELETE, "/v1/threads/a1", None, Some(&alice))
        .await;
    assert!(status.is_success(), "{body}");
    assert_eq!(
        send(&gw, &alice, "a3").await.0,
        StatusCode::OK,
        "deleting made room"
    );
    assert_eq!(thread_ids(&gw, &alice).await, ["a2", "a3"]);
}

async fn past_the_byte_quota_sends_are_refused_but_the_answer_that_crossed_it_is_kept(backend: Backend) {
    let (gw, upstream) = gateway(backend, AuthMode::SingleUser, "max_stored_bytes = 4000").await;
    let long: Vec<String> = (0..1_000).map(|i| format!("w{i:04} ")).collect();
    upstream.push(text(long.iter().map(String::as_str)));
    let sse = gw.chat("t1", "tell me a lot").await;
    assert_eq!(sse.text(), long.concat(), "the whole answer was streamed");
    let messages = gw.stored_messages("t1", 2).await;
    assert_eq!(
        stored_text(&messages[1]),
        long.concat(),
        "and stored whole, past the quota"
    );
    assert_eq!(messages[1]["status"], "complete", "{}", messages[1]["status"]);

    let (status, usage) = gw.get("/v1/usage/storage").await;
    assert_eq!(status, StatusCode::OK, "{usage}");
    assert_eq!(usage["max_stored_bytes"], 4000);
    assert_eq!(usage["threads"], 1);
    assert!(usage["stored_bytes"].as_u64().unwrap() > 6_000, "{usage}");

    let (status, body) = gw
        .post("/v1/chat", use_chat_body("t1", "and more", "scripted"))
        .await;
    assert_quota_exceeded(status, &body);
    let (status, body) = gw
        .post("/v1/chat", use_chat_body("t2", "elsewhere", "scripted"))
        .await;
    assert_quota_exceeded(status, &body);
    let (_, messages) = gw.get("/v1/threads/t1/messages").await;
    assert_eq!(
        messages.as_array().unwrap().len(),
        2,
        "the refused question was not stored: {messages}"
    );
    assert_eq!(gw.get("/v1/threads/t2/messages").await.0, StatusCode::NOT_FOUND);

    assert!(gw.delete("/v1/threads/t1").await.0.is_success());
    let (_, usage) = gw.get("/v1/usage/storage").await;
    assert_eq!(
        (usage["stored_bytes"].as_u64(), usage["threads"].as_u64()),
        (Some(0), Some(0)),
        "{usage}"
    );
    let sse = gw.chat("t2", "elsewhere").await;
    assert_eq!(sse.text(), "Noted.", "deleting made room");
}

async fn a_user_past_the_byte_quota_does_not_hold_back_another(backend: Backend) {
    let (gw, upstream) = gateway(backend, AuthMode::Tokens, "max_stored_bytes = 3000").await;
    let alice = token_for(&gw, "Alice").await;
    let bob = token_for(&gw, "Bob").await;
    upstream.push(text(["x".repeat(5_000).as_str()]));
    assert_eq!(send(&gw, &alice, "big").await.0, StatusCode::OK);
    let (status, body) = send(&gw, &alice, "big").await;
    assert_quota_exceeded(status, &body);

    assert_eq!(send(&gw, &bob, "small").await.0, StatusCode::OK);
    let (_, usage) = gw.call(Method::GET, "/v1/usage/storage", None, Some(&bob)).await;
    let bobs = usage["stored_bytes"].as_u64().unwrap();
    assert!(
        bobs > 0 && bobs < 3_000,
        "Bob's usage counts his own messages only: {usage}"
    );
}

common::on_both_backends!(
    a_user_at_the_thread_limit_is_refused_and_nothing_is_written,
    past_the_byte_quota_sends_are_refused_but_the_answer_that_crossed_it_is_kept,
    a_user_past_the_byte_quota_does_not_hold_back_another
);
