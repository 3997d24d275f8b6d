//! Identifiers a client chooses follow one rule per kind, checked at the door and in the store with the
//! same words: a refused id is refused before anything is stored, and what the door lets in the store
//! keeps.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code, use_chat_body};
use promptgate_store::{NewThread, StoreError};
use reqwest::StatusCode;
use serde_json::json;

const THREAD_RULE: &str = "must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '-'";

#[tokio::test]
async fn a_thread_id_with_a_dot_is_refused_at_the_door_in_the_stores_words() {
    let gw = Gateway::single_user(Backend::Sqlite).await;

    let (status, err) = gw
        .post("/v1/chat", use_chat_body("notes.md", "Hello", "demo"))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(error_code(&err), "invalid_body");
    assert_eq!(err["error"]["message"], format!("id {THREAD_RULE}"));

    let (status, err) = gw.post("/v1/threads", json!({"id": "notes.md"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["message"], format!("id {THREAD_RULE}"));

    let (_, threads) = gw.get("/v1/threads").await;
    assert_eq!(threads, json!([]), "nothing was stored");

    // The store, asked directly, refuses the same id by the same rule.
    let user = gw.store.create_user("ada").await.unwrap();
    let thread = NewThread {
        id: Some("notes.md".to_owned()),
        project_id: None,
        title: None,
    };
    match gw.store.create_thread(&user.id, &thread).await {
        Err(StoreError::Invalid(message)) => assert_eq!(message, format!("thread id {THREAD_RULE}")),
        other => panic!("the store took a thread id the API refuses: {other:?}"),
    }
}

#[tokio::test]
async fn a_message_id_follows_the_thread_id_rule() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let body = json!({
        "id": "t", "trigger": "submit-message", "model": "demo",
        "messages": [{"id": "m.1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]
    });
    let (status, err) = gw.post("/v1/chat", body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["message"], format!("messages[-1].id {THREAD_RULE}"));
}

#[tokio::test]
async fn a_model_id_may_spell_an_upstream_models_name() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    for id in ["llama3:8b", "org/model-4.1"] {
        let (status, model) = gw.post("/v1/models", json!({"id": id, "provider": "demo"})).await;
        assert_eq!(status, StatusCode::CREATED, "{model}");
        assert_eq!(model["id"], id);
    }
    let (status, err) = gw
        .post("/v1/models", json!({"id": "two words", "provider": "demo"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(
        err["error"]["message"],
        "id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':', '/', '-'"
    );
}
