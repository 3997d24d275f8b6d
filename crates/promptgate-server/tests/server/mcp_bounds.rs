//! What bounds a user's MCP servers through the API: how many they may register, how often they may
//! probe, the sessions the instance holds (shown in `/metrics`), and the log of what a send leaves
//! out of the toolset, said once rather than per tool and per send. The servers are real rmcp
//! servers on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{Backend, Gateway, error_code};
use promptgate_llm::scripted::{ScriptedUpstream, text};
use promptgate_mcp::testing::{Logs, McpTestServer, ServerOptions};
use reqwest::{Method, StatusCode};
use serde_json::json;

async fn gateway(backend: Backend, mcp_toml: &str) -> (Gateway, ScriptedUpstream) {
    common::single_user_gateway_with(backend, &format!("[mcp]\n{mcp_toml}")).await
}

async fn registering_past_the_server_limit_is_refused(backend: Backend) {
    let (gw, _upstream) = gateway(backend, "max_servers_per_user = 2\n").await;
    let server = McpTestServer::start(ServerOptions::default()).await;
    let mut ids = Vec::new();
    for name in ["One", "Two"] {
        let body = gw.register_mcp_server(name, &server.url()).await;
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    let (status, body) = gw
        .post("/v1/mcp-servers", json!({"name": "Three", "url": server.url()}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "mcp_server_limit");
    assert!(common::error_message(&body).contains("2 MCP servers"), "{body}");
    assert!(body["error"]["request_id"].is_string(), "{body}");

    let (status, _) = gw.delete(&format!("/v1/mcp-servers/{}", ids[0])).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = gw
        .post("/v1/mcp-servers", json!({"name": "Three", "url": server.url()}))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a deleted server frees its place: {body}"
    );
}

common::on_both_backends!(registering_past_the_server_limit_is_refused);

#[tokio::test]
async fn probing_past_the_allowance_is_refused_with_a_wait() {
    let (gw, _upstream) = gateway(
        Backend::Sqlite,
        "probes_per_minute = 2\noauth_redirect_base_url = \"http://gw.test\"\n",
    )
    .await;
    let server = McpTestServer::start(ServerOptions::default()).await;
    let (_, body) = gw
        .post("/v1/mcp-servers", json!({"name": "Files", "url": server.url()}))
        .await;
    let id = body["id"].as_str().unwrap();
    // Starting an authorization reaches the server on demand as a probe does (and may register a
    // client at its authorization server): it takes a place too, whether or not the server asks.
    let (status, body) = gw
        .post(&format!("/v1/mcp-servers/{id}/authorize"), json!({}))
        .await;
    assert_ne!(error_code(&body), "too_many_probes", "{status} {body}");
    let probe = format!("/v1/mcp-servers/{id}/probe");
    let (status, body) = gw.post(&probe, json!({})).await;
    assert_eq!((status, &body["ok"]), (StatusCode::OK, &json!(true)), "{body}");
    let listed = server.state.list_calls.load(std::sync::atomic::Ordering::SeqCst);
    let response = gw.response(Method::POST, &probe, Some(&json!({})), None).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(error_code(&body), "too_many_probes");
    assert_eq!(
        server.state.list_calls.load(std::sync::atomic::Ordering::SeqCst),
        listed,
        "a refused probe reaches no server"
    );
}

#[tokio::test]
async fn open_sessions_and_their_memory_show_in_metrics() {
    let (gw, upstream) = gateway(Backend::Sqlite, "").await;
    let server = McpTestServer::start(ServerOptions::default()).await;
    gw.post("/v1/mcp-servers", json!({"name": "Files", "url": server.url()}))
        .await;
    gw.post("/v1/threads", json!({"id": "t1"})).await;
    upstream.push(text(["Hello."]));
    let sse = gw.chat("t1", "hi").await;
    assert_eq!(sse.text(), "Hello.");

    assert_eq!(gw.metric("promptgate_mcp_sessions").await, 1.0);
    let bytes = gw.metric("promptgate_mcp_session_bytes").await;
    assert!(bytes > 100_000.0, "a session and its seven tools: {bytes}");
}

#[tokio::test]
async fn what_the_toolset_leaves_out_is_logged_once_not_per_tool_and_send() {
    let (logs, _guard) = Logs::capture();
    let (gw, upstream) = gateway(Backend::Sqlite, "").await;
    let big = McpTestServer::start(ServerOptions {
        page_size: 100,
        ..ServerOptions::default()
    })
    .await;
    let schema = Arc::new(json!({"type": "object"}).as_object().cloned().unwrap());
    big.state.extra_tools.lock().unwrap().extend(
        (0..200).map(|i| rmcp::model::Tool::new(format!("extra_{i}"), "one of many", schema.clone())),
    );
    gw.post("/v1/mcp-servers", json!({"name": "Big", "url": big.url()}))
        .await;
    let unused = McpTestServer::start(ServerOptions::default()).await;
    gw.post(
        "/v1/mcp-servers",
        json!({"name": "Past the cap", "url": unused.url()}),
    )
    .await;
    gw.post("/v1/threads", json!({"id": "t1"})).await;

    let mcp_warnings = || -> Vec<String> {
        logs.at_least(tracing::Level::WARN)
            .into_iter()
            .filter(|line| line.text.contains("MCP"))
            .map(|line| line.text)
            .collect()
    };
    let listed = || unused.state.list_calls.load(std::sync::atomic::Ordering::SeqCst);
    let mut after_second = (Vec::new(), 0);
    for n in 0..4 {
        upstream.push(text(["Fine."]));
        let sse = gw.chat("t1", &format!("send {n}")).await;
        assert_eq!(sse.text(), "Fine.");
        let offered = common::offered_tools(&upstream.last_request().unwrap());
        assert_eq!(offered.len(), 128, "the toolset is full");
        if n == 1 {
            after_second = (mcp_warnings(), listed());
        }
    }
    // The first send cannot know how many tools Big lists, so it connects both servers; from the
    // second on the server past the cap is left alone, and the log says so once.
    let (warnings, listed_then) = after_second;
    assert!(!warnings.is_empty() && warnings.len() <= 2, "{warnings:#?}");
    let last = warnings.last().unwrap();
    assert!(
        last.contains("tools (a request offers at most 128 tools): `extra_"),
        "{last}"
    );
    assert!(
        last.contains("1 server not connected (the toolset is full without them): \"Past the cap\""),
        "{last}"
    );
    assert_eq!(
        mcp_warnings(),
        warnings,
        "sends that leave out the same say nothing more"
    );
    assert_eq!(
        listed(),
        listed_then,
        "the server past the cap is not asked again"
    );
}
