//! `GET /v1/prompt`: the prompt and toolset of a new chat's first send, before there is a thread,
//! the same as that send then gets; and why web tools are off when they are.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code, single_user_gateway};
use promptgate_llm::scripted::text;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect()
}

async fn a_new_chat_shows_its_first_send(backend: Backend) {
    let gw = Gateway::single_user(backend).await;
    gw.put("/v1/settings", json!({"preferred_name": "Ada"})).await;

    let (status, preview) = gw.get("/v1/prompt?model=demo").await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["model"], "demo");
    assert!(preview["stable"].as_str().unwrap().contains("User name: Ada"));
    assert!(!preview["stable"].as_str().unwrap().contains("# Project"));
    assert_eq!(
        tool_names(&preview["tools"]),
        ["render_html", "search", "fetch_content", "skill"]
    );
    assert_eq!(preview["has_web_tools"], true);
    assert!(preview.get("web_tools_off").is_none(), "{preview}");
    assert_eq!(preview["context"]["sent_messages"], 0);
    assert_eq!(preview["context"]["compaction_due"], false);
    // Previewing creates nothing.
    let (_, threads) = gw.get("/v1/threads").await;
    assert_eq!(threads, json!([]));

    // Voice mode, as a send's `voice_mode` says, reaches the notes.
    let (_, spoken) = gw.get("/v1/prompt?model=demo&voice_mode=true").await;
    let notes = spoken["notes"].to_string();
    assert!(notes.contains("voice mode"), "{notes}");
    assert!(!preview["notes"].to_string().contains("voice mode"));
}

common::on_both_backends!(a_new_chat_shows_its_first_send);

async fn a_new_chat_in_a_project_reads_the_project(backend: Backend) {
    let gw = Gateway::single_user(backend).await;
    let pid = gw.create_project("Launch", "Keep a changelog.").await;

    let (status, first) = gw.get(&format!("/v1/prompt?project_id={pid}")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let stable = first["stable"].as_str().unwrap();
    assert!(stable.contains("# Project: Launch") && stable.contains("Keep a changelog."));
    // The project's first chat has no other chats to search.
    assert!(!tool_names(&first["tools"]).contains(&"search_project_chats".to_owned()));

    gw.post("/v1/threads", json!({"id": "earlier", "project_id": pid}))
        .await;
    let (_, next) = gw.get(&format!("/v1/prompt?project_id={pid}")).await;
    assert_eq!(
        tool_names(&next["tools"]).last().map(String::as_str),
        Some("search_project_chats")
    );

    // A thread's project is its own: its preview takes none.
    let (status, err) = gw
        .get(&format!("/v1/threads/earlier/prompt?project_id={pid}"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(error_code(&err), "invalid_query");

    let (status, err) = gw.get("/v1/prompt?project_id=nowhere").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{err}");
    assert_eq!(error_code(&err), "not_found");
    let (status, err) = gw.get("/v1/prompt?model=gpt-nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{err}");
    let (status, err) = gw.get("/v1/prompt?thread=x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(error_code(&err), "invalid_query");
}

common::on_both_backends!(a_new_chat_in_a_project_reads_the_project);

/// What the preview shows is what the first send then gives the model: the stable prompt and the
/// tools, with the reason web tools are missing (this gateway has no search backend).
async fn the_first_send_gets_what_the_preview_showed(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    let (status, preview) = gw.get("/v1/prompt?model=scripted").await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["has_web_tools"], false);
    assert_eq!(preview["web_tools_off"], "no_search_backend");

    upstream.push(text(["Hello."]));
    let sse = gw.chat("fresh", "Hi").await;
    assert_eq!(sse.text(), "Hello.");
    // The answer's own request comes first (a title may be asked for after it).
    let sent = upstream.requests().remove(0);
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with(preview["stable"].as_str().unwrap()),
        "preview:\n{}\nsent:\n{system}",
        preview["stable"]
    );
    assert_eq!(tool_names(&sent["tools"]), tool_names(&preview["tools"]));

    // Web tools turned off by the user: the preview names the setting, not the deployment.
    gw.put("/v1/settings", json!({"web_tools_enabled": false})).await;
    let (_, off) = gw.get("/v1/prompt?model=scripted").await;
    assert_eq!(off["web_tools_off"], "settings");
    gw.post(
        "/v1/models",
        json!({"id": "plain", "provider": "scripted", "tool_usage": 0}),
    )
    .await;
    let (_, plain) = gw.get("/v1/prompt?model=plain").await;
    assert_eq!(plain["tools"], json!([]));
    assert_eq!(plain["web_tools_off"], "model");
}

common::on_both_backends!(the_first_send_gets_what_the_preview_showed);
