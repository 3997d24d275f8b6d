//! Auth, user isolation, and the CRUD resources over HTTP.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code, test_config};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn token_for(gw: &Gateway, name: &str) -> String {
    let user = gw.store.create_user(name).await.unwrap();
    gw.store.issue_token(&user.id).await.unwrap()
}

async fn users_only_ever_see_their_own_rows(backend: Backend) {
    let gw = Gateway::start(backend, test_config(AuthMode::Tokens)).await;
    let alice = token_for(&gw, "alice").await;
    let bob = token_for(&gw, "bob").await;

    let (status, err) = gw.call(Method::GET, "/v1/settings", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(&err), "unauthorized");
    let (status, _) = gw
        .call(Method::GET, "/v1/settings", None, Some("pg_not-a-real-token"))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, thread) = gw
        .post_as(
            "/v1/threads",
            json!({"id": "alice-chat", "title": "Plans"}),
            &alice,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{thread}");
    gw.put_as("/v1/settings", json!({"preferred_name": "Alice"}), &alice)
        .await;

    // Bob sees none of it, and cannot touch it.
    let (status, err) = gw
        .call(Method::GET, "/v1/threads/alice-chat", None, Some(&bob))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    assert_eq!(
        gw.call(Method::GET, "/v1/threads/alice-chat/messages", None, Some(&bob))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        gw.call(Method::DELETE, "/v1/threads/alice-chat", None, Some(&bob))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    let (_, bobs) = gw.call(Method::GET, "/v1/threads", None, Some(&bob)).await;
    assert_eq!(bobs, json!([]));
    let (_, bob_settings) = gw.call(Method::GET, "/v1/settings", None, Some(&bob)).await;
    assert_eq!(bob_settings["preferred_name"], "");

    // Alice still has hers.
    let (status, mine) = gw
        .call(Method::GET, "/v1/threads/alice-chat", None, Some(&alice))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(mine["title"], "Plans");
}

common::on_both_backends!(users_only_ever_see_their_own_rows);

#[tokio::test]
async fn projects_threads_and_messages() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let pid = gw.create_project("Garden", "Answer in haiku.").await;

    let (status, thread) = gw
        .post("/v1/threads", json!({"project_id": pid, "title": "Roses"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{thread}");
    let tid = thread["id"].as_str().unwrap().to_owned();
    let (_, listed) = gw.get(&format!("/v1/threads?project_id={pid}")).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let (status, msgs) = gw.get(&format!("/v1/threads/{tid}/messages")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(msgs, json!([]));

    let (status, renamed) = gw
        .put(&format!("/v1/threads/{tid}"), json!({"title": "Tulips"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(renamed["title"], "Tulips");
    assert_eq!(
        renamed["project_id"],
        pid.as_str(),
        "an absent field is left alone"
    );
    let (status, moved) = gw
        .put(&format!("/v1/threads/{tid}"), json!({"project_id": null}))
        .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert_eq!(moved["title"], "Tulips");
    assert!(moved.get("project_id").is_none(), "null clears it: {moved}");

    let (status, updated) = gw
        .put(
            &format!("/v1/projects/{pid}"),
            json!({"name": "Orchard", "instructions": null}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["name"], "Orchard");

    // Unknown ids and references are 404s that name what is missing.
    let (status, err) = gw.post("/v1/threads", json!({"project_id": "nope"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(err["error"]["message"].as_str().unwrap().contains("project nope"));
    assert_eq!(gw.get("/v1/projects/nope").await.0, StatusCode::NOT_FOUND);
    assert_eq!(gw.get("/v1/threads/nope/messages").await.0, StatusCode::NOT_FOUND);

    // A client-chosen thread id must be URL-safe, and unique.
    let (status, _) = gw.post("/v1/threads", json!({"id": "has space"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        gw.post("/v1/threads", json!({"id": "dup"})).await.0,
        StatusCode::CREATED
    );
    let (status, err) = gw.post("/v1/threads", json!({"id": "dup"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&err), "conflict");

    assert_eq!(
        gw.delete(&format!("/v1/threads/{tid}")).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        gw.get(&format!("/v1/threads/{tid}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        gw.delete(&format!("/v1/projects/{pid}")).await.0,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn skills_validate_their_slug_and_are_unique() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let skill = json!({"slug": "research", "name": "Research", "description": "Deep research.",
        "instructions": "Search widely.", "enabled": true, "renders_widgets": false});
    let (status, created) = gw.post("/v1/skills", skill.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(gw.post("/v1/skills", skill.clone()).await.0, StatusCode::CONFLICT);
    let mut bad = skill.clone();
    bad["slug"] = json!("not a slug");
    let (status, err) = gw.post("/v1/skills", bad).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(err["error"]["message"].as_str().unwrap().contains("slug"));
    let id = created["id"].as_str().unwrap();
    let mut disabled = skill.clone();
    disabled["enabled"] = json!(false);
    let (status, updated) = gw.put(&format!("/v1/skills/{id}"), disabled).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(updated["enabled"], false);
}

#[tokio::test]
async fn mcp_server_secrets_are_write_only() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let (status, created) = gw
        .post(
            "/v1/mcp-servers",
            json!({"name": "Everything", "url": "http://127.0.0.1:3001/mcp", "enabled": true,
                   "headers": {"X-Api-Key": "super-secret-value"}, "bearer_token": "tok-secret"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    for body in [
        created.clone(),
        gw.get(&format!("/v1/mcp-servers/{id}")).await.1,
        gw.get("/v1/mcp-servers").await.1,
    ] {
        let text = body.to_string();
        assert!(
            !text.contains("super-secret-value") && !text.contains("tok-secret"),
            "secret leaked: {text}"
        );
    }
    assert_eq!(created["header_names"], json!(["X-Api-Key"]));
    assert_eq!(created["has_bearer_token"], true);

    let (status, err) = gw
        .post(
            "/v1/mcp-servers",
            json!({"name": "x", "url": "ftp://nope", "enabled": true}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
}

#[tokio::test]
async fn system_models_are_read_only_and_user_models_need_a_configured_provider() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let (_, models) = gw.get("/v1/models").await;
    // OpenAI's list shape, promptgate's fields alongside.
    assert_eq!(models["object"], "list", "{models}");
    let demo = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "demo")
        .cloned()
        .unwrap();
    assert_eq!(demo["system"], true);
    assert_eq!(demo["object"], "model");
    assert_eq!(demo["owned_by"], "system");
    assert!(demo["created"].is_i64(), "{demo}");
    assert_eq!(demo["provider"], "demo");
    let (_, one) = gw.get("/v1/models/demo").await;
    assert_eq!(one, demo, "one model reads as it does in the list");

    let (status, err) = gw
        .put("/v1/models/demo", json!({"id": "demo", "provider": "demo"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(error_code(&err), "read_only");
    assert_eq!(gw.delete("/v1/models/demo").await.0, StatusCode::FORBIDDEN);

    let (status, err) = gw
        .post("/v1/models", json!({"id": "mine", "provider": "nowhere"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(err["error"]["message"].as_str().unwrap().contains("nowhere"));

    let (status, mine) = gw
        .post(
            "/v1/models",
            json!({"id": "mine", "provider": "demo", "tool_usage": 0,
                                   "profile": {"chat_mode_addendum": "Be brief.", "max_steps": 4}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{mine}");
    assert_eq!(mine["system"], false);
    assert_eq!(mine["profile"]["max_steps"], 4);
    let (status, err) = gw
        .post("/v1/models", json!({"id": "demo", "provider": "demo"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    let (status, err) = gw
        .post(
            "/v1/models",
            json!({"id": "x", "provider": "demo", "engine": "turbo"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    // A profile's temperature is held to the range the chat facade holds a request's to.
    let (status, err) = gw
        .post(
            "/v1/models",
            json!({"id": "hot", "provider": "demo", "profile": {"temperature": 2.5}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(
        err["error"]["message"],
        "profile.temperature must be a number from 0 to 2"
    );
    assert_eq!(gw.delete("/v1/models/mine").await.0, StatusCode::NO_CONTENT);
    let (_, after): (StatusCode, Value) = gw.get("/v1/models/mine").await;
    assert_eq!(error_code(&after), "not_found");
}
