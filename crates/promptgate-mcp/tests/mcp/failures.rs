//! Servers that cannot be used, and what discovery, probes and calls say about them.

#![allow(clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use promptgate_mcp::{DiscoveryOutcome, McpError};
use serde_json::json;

const BUDGET: Duration = Duration::from_secs(3);

async fn discovery_error(url: &str, timeout: Duration) -> McpError {
    let hub = hub();
    let outcomes = hub.discover(&[config("s1", "Broken", url)], timeout).await;
    match outcomes.into_iter().next() {
        Some(DiscoveryOutcome::Failed { error, .. }) => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let error = discovery_error(&dead_url().await, BUDGET).await;
    assert!(matches!(error, McpError::Connect(_)), "{error:?}");
    assert!(
        error.to_string().starts_with("the MCP server is unreachable"),
        "{error}"
    );
}

#[tokio::test]
async fn a_401_is_unauthorized() {
    let url = unauthorized_server().await;
    assert_eq!(
        discovery_error(&url, BUDGET).await,
        McpError::Unauthorized { status: 401 }
    );
    let probe = hub()
        .probe(&config("s1", "Locked", &url), BUDGET)
        .await
        .unwrap_err();
    assert_eq!(probe, McpError::Unauthorized { status: 401 });
}

#[tokio::test]
async fn a_500_is_an_http_status_error() {
    assert_eq!(
        discovery_error(&failing_server().await, BUDGET).await,
        McpError::HttpStatus(500)
    );
}

#[tokio::test]
async fn a_silent_server_costs_discovery_only_its_timeout() {
    let silent = silent_server().await;
    let good = McpTestServer::start(ServerOptions::default()).await;
    let hub = hub();
    let timeout = Duration::from_millis(500);
    let outcomes = hub
        .discover(
            &[config("hung", "Hung", &silent), config("ok", "Fine", &good.url())],
            timeout,
        )
        .await;
    assert!(
        matches!(&outcomes[0], DiscoveryOutcome::Failed { error: McpError::Timeout(t), .. } if *t == timeout),
        "{:?}",
        outcomes[0]
    );
    assert!(matches!(&outcomes[1], DiscoveryOutcome::Ready { tools, .. } if tools.len() == BASE_TOOLS.len()));
    assert_eq!(
        outcomes[0].server().id,
        "hung",
        "outcomes keep the order of the servers"
    );

    let probe = hub
        .probe(&config("hung", "Hung", &silent), timeout)
        .await
        .unwrap_err();
    assert_eq!(probe, McpError::Timeout(timeout));
}

#[tokio::test]
async fn an_invalid_json_body_is_a_protocol_error() {
    let error = discovery_error(&garbage_server().await, BUDGET).await;
    assert!(matches!(error, McpError::Protocol(_)), "{error:?}");
}

#[tokio::test]
async fn a_call_to_an_unreachable_server_fails_cleanly() {
    let hub = hub();
    let error = hub
        .call_tool(
            &config("s1", "Gone", &dead_url().await),
            "echo",
            json!({}),
            BUDGET,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::Connect(_)), "{error:?}");
}

#[tokio::test]
async fn two_servers_with_the_same_name_work_independently() {
    let first = McpTestServer::start(ServerOptions::default()).await;
    let second = McpTestServer::start(ServerOptions {
        legacy_only: true,
        ..ServerOptions::default()
    })
    .await;
    let dead = dead_url().await;
    let hub = hub();
    let servers = [
        config("a", "Files", &first.url()),
        config("b", "Files", &second.url()),
        config("c", "Files", &dead),
    ];
    let outcomes = hub.discover(&servers, BUDGET).await;
    assert!(matches!(outcomes[0], DiscoveryOutcome::Ready { .. }));
    assert!(matches!(outcomes[1], DiscoveryOutcome::Ready { .. }));
    assert!(matches!(outcomes[2], DiscoveryOutcome::Failed { .. }));

    let a = hub
        .call_tool(&servers[0], "echo", json!({"message": "to a"}), BUDGET)
        .await
        .unwrap();
    let b = hub
        .call_tool(&servers[1], "echo", json!({"message": "to b"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(
        (a.model_text.as_str(), b.model_text.as_str()),
        ("echo: to a", "echo: to b")
    );
    assert_eq!(
        second.state.peers.lock().unwrap().len(),
        1,
        "b kept its own session"
    );
}

#[tokio::test]
async fn error_messages_never_contain_secrets() {
    let url = unauthorized_server().await;
    let mut cfg = config("s1", "Locked", &url);
    cfg.bearer_token = Some("bearer-secret-value".into());
    cfg.headers = BTreeMap::from([("X-Api-Key".to_owned(), "header-secret-value".to_owned())]);
    let hub = hub();
    let mut messages = vec![];
    for outcome in hub.discover(std::slice::from_ref(&cfg), BUDGET).await {
        if let DiscoveryOutcome::Failed { error, .. } = outcome {
            messages.push(format!("{error} {error:?}"));
        }
    }
    messages.push(format!("{:?}", hub.probe(&cfg, BUDGET).await));
    messages.push(format!(
        "{:?}",
        hub.call_tool(&cfg, "echo", json!({}), BUDGET).await
    ));
    cfg.url = dead_url().await;
    messages.push(format!("{:?}", hub.probe(&cfg, BUDGET).await));
    assert_eq!(messages.len(), 4);
    for message in messages {
        assert!(!message.contains("bearer-secret-value"), "{message}");
        assert!(!message.contains("header-secret-value"), "{message}");
    }
}

#[tokio::test]
async fn invalid_settings_are_reported_without_a_connection() {
    let mut cfg = config("s1", "Odd", "ftp://example.com/mcp");
    let error = hub().probe(&cfg, BUDGET).await.unwrap_err();
    assert!(matches!(error, McpError::InvalidConfig(_)), "{error:?}");
    cfg.url = "http://127.0.0.1:9/mcp".into();
    cfg.headers.insert("Accept".into(), "text/html".into());
    let error = hub().probe(&cfg, BUDGET).await.unwrap_err();
    assert!(error.to_string().contains("Accept"), "{error}");
}
