//! The outbound address policy as a user of the API meets it: which MCP server URLs registration
//! accepts in each auth mode, what the operator's `[mcp]` keys open, and what a probe says when it
//! cannot use a server. A listener on loopback proves that refused addresses are never connected to.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use axum::response::IntoResponse;
use common::{Backend, Gateway, ToolsServer, error_code, test_config};
use promptgate_mcp::testing::{McpTestServer, dead_url, serve_plain};
use promptgate_outbound::testing::Tripwire;
use promptgate_server::config::{AuthMode, Config};
use promptgate_store::NewMcpServer;
use reqwest::{Method, StatusCode};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};

/// An MCP server with one tool, `lookup`, that the tests only list.
async fn one_tool() -> McpTestServer {
    let lookup = Tool::new("lookup", "Looks things up", Arc::new(JsonObject::new()));
    ToolsServer::new("local-tools", "1.0.0", vec![lookup], |_, _| {
        CallToolResult::success(vec![])
    })
    .start()
    .await
}

async fn token_for(gw: &Gateway, name: &str) -> String {
    let user = gw.store.create_user(name).await.unwrap();
    gw.store.issue_token(&user.id).await.unwrap()
}

async fn register(gw: &Gateway, token: Option<&str>, url: &str) -> (StatusCode, Value) {
    gw.call(
        Method::POST,
        "/v1/mcp-servers",
        Some(json!({"name": "Tools", "url": url})),
        token,
    )
    .await
}

async fn probe(gw: &Gateway, token: Option<&str>, id: &str) -> Value {
    let (status, body) = gw
        .call(
            Method::POST,
            &format!("/v1/mcp-servers/{id}/probe"),
            Some(json!({})),
            token,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn with_probe_timeout(mut config: Config) -> Config {
    config.mcp.probe_timeout_ms = 2_000;
    config
}

#[tokio::test]
async fn tokens_mode_refuses_loopback_and_private_servers_at_registration() {
    let wire = Tripwire::start().await;
    let gw = Gateway::start(Backend::Sqlite, test_config(AuthMode::Tokens)).await;
    let token = token_for(&gw, "alice").await;
    let mut refused = wire.urls("/mcp");
    refused.extend(
        [
            "http://10.0.0.1/mcp",
            "http://192.168.0.10:8080/mcp",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://[fd12::1]/mcp",
        ]
        .map(String::from),
    );
    for url in &refused {
        let (status, body) = register(&gw, Some(&token), url).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(error_code(&body), "refused_address", "{url}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("is not allowed"), "{url}: {message}");
        assert!(
            message.contains("allow_loopback"),
            "says how to open it: {message}"
        );
    }
    // Editing a good server to point inward is refused the same way.
    let (status, created) = register(&gw, Some(&token), "http://93.184.215.14/mcp").await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let (status, body) = gw
        .call(
            Method::PUT,
            &format!("/v1/mcp-servers/{id}"),
            Some(json!({"name": "Tools", "url": format!("http://127.0.0.1:{}/mcp", wire.port)})),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(wire.hits(), 0, "a refused address was connected to");
    let (_, listed) = gw.call(Method::GET, "/v1/mcp-servers", None, Some(&token)).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["url"], "http://93.184.215.14/mcp");
}

#[tokio::test]
async fn tokens_mode_with_allow_loopback_reaches_a_local_server() {
    let server = one_tool().await;
    let mut config = with_probe_timeout(test_config(AuthMode::Tokens));
    config.mcp.allow_loopback = Some(true);
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let token = token_for(&gw, "alice").await;
    let (status, created) = register(&gw, Some(&token), &server.url()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let body = probe(&gw, Some(&token), created["id"].as_str().unwrap()).await;
    assert_eq!(body["ok"], true, "{body}");
    assert_eq!(body["server"]["name"], "local-tools");
    assert_eq!(body["tools"][0]["name"], "lookup");
    // Loopback only: private networks stay closed.
    let (status, _) = register(&gw, Some(&token), "http://10.0.0.1/mcp").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn single_user_mode_allows_loopback_by_default_but_not_private_or_metadata() {
    let server = one_tool().await;
    let gw = Gateway::start(
        Backend::Sqlite,
        with_probe_timeout(test_config(AuthMode::SingleUser)),
    )
    .await;
    let (status, created) = register(&gw, None, &server.url()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let body = probe(&gw, None, created["id"].as_str().unwrap()).await;
    assert_eq!(body["ok"], true, "{body}");
    for url in [
        "http://10.1.2.3/mcp",
        "http://169.254.169.254/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/mcp",
    ] {
        let (status, body) = register(&gw, None, url).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
    }
}

#[tokio::test]
async fn a_stored_server_whose_address_is_now_refused_is_checked_again_at_probe() {
    let wire = Tripwire::start().await;
    let mut config = with_probe_timeout(test_config(AuthMode::SingleUser));
    config.mcp.allow_loopback = Some(false);
    let gw = Gateway::start(Backend::Sqlite, config).await;
    // As if registered under an older policy: straight into the store.
    let server = gw
        .store
        .create_mcp_server(
            "local",
            &NewMcpServer {
                name: "Old".into(),
                url: format!("http://localhost:{}/mcp", wire.port),
                enabled: true,
                headers: Default::default(),
                bearer_token: None,
                oauth_client_id: None,
                oauth_client_secret: None,
            },
        )
        .await
        .unwrap();
    let body = probe(&gw, None, &server.id).await;
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["error"]["kind"], "refused_address", "{body}");
    assert_eq!(wire.hits(), 0);
}

#[tokio::test]
async fn probe_errors_name_the_category_and_never_echo_the_target() {
    const SECRET: &str = "internal-admin-page-4471";
    async fn serve(status: StatusCode, content_type: &'static str) -> String {
        serve_plain(axum::Router::new().route(
            "/mcp",
            axum::routing::any(move || async move {
                (
                    status,
                    [("content-type", content_type)],
                    format!("<p>{SECRET}</p>"),
                )
                    .into_response()
            }),
        ))
        .await
    }
    let gw = Gateway::start(
        Backend::Sqlite,
        with_probe_timeout(test_config(AuthMode::SingleUser)),
    )
    .await;
    let closed = dead_url().await;
    let hangs_up = format!("http://127.0.0.1:{}/mcp", Tripwire::start().await.port);
    let cases = [
        (serve(StatusCode::NOT_FOUND, "text/html").await, "http_status"),
        (serve(StatusCode::OK, "text/html").await, "protocol"),
        (serve(StatusCode::OK, "application/json").await, "protocol"),
        (closed, "connect"),
        (hangs_up, "connect"),
    ];
    let mut unreachable = Vec::new();
    for (url, kind) in cases {
        let (status, created) = register(&gw, None, &url).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let body = probe(&gw, None, created["id"].as_str().unwrap()).await;
        assert_eq!(body["ok"], false, "{body}");
        assert_eq!(body["error"]["kind"], kind, "{url}: {body}");
        assert!(!body.to_string().contains(SECRET), "{body}");
        if kind == "connect" {
            unreachable.push(body["error"]["message"].clone());
        }
    }
    assert_eq!(
        unreachable[0], unreachable[1],
        "a closed port and one that hangs up read the same"
    );
    let listed = gw.get("/v1/mcp-servers").await.1;
    assert!(!listed.to_string().contains(SECRET));
}
