//! The hub against a real rmcp server on loopback, in both protocol eras.

#![allow(clippy::panic)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpError, ToolHints};
use serde_json::json;

const BUDGET: Duration = Duration::from_secs(3);

#[tokio::test]
async fn discovery_follows_every_page_in_both_eras() {
    for options in [ServerOptions::default(), legacy()] {
        let server = McpTestServer::start(options).await;
        let hub = hub();
        let outcomes = hub.discover(&[config("s1", "Test", &server.url())], BUDGET).await;
        assert_eq!(outcomes.len(), 1);
        assert_eq!(tool_names(&outcomes[0]), BASE_TOOLS);
        assert!(
            server.state.list_calls.load(Ordering::SeqCst) >= 3,
            "seven tools in pages of three"
        );
        let DiscoveryOutcome::Ready { tools, .. } = &outcomes[0] else {
            unreachable!()
        };
        assert_eq!(tools[0].title.as_deref(), Some("Echo back"));
        assert_eq!(tools[0].description.as_deref(), Some("the echo tool"));
        assert_eq!(tools[0].input_schema["properties"]["message"]["type"], "string");
        assert_eq!(
            tools[0].hints,
            Some(ToolHints {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            }),
            "the annotations' hints are kept as the server gave them"
        );
        assert_eq!(tools[2].hints, None, "a tool without annotations has no hints");
    }
}

#[tokio::test]
async fn probe_reports_the_era_each_server_speaks() {
    let modern = McpTestServer::start(ServerOptions::default()).await;
    let old = McpTestServer::start(legacy()).await;
    let hub = hub();

    let report = hub
        .probe(&config("m", "Modern", &modern.url()), BUDGET)
        .await
        .unwrap();
    assert_eq!(report.protocol_version, "2026-07-28");
    assert_eq!(report.server_name.as_deref(), Some("promptgate-test-server"));
    assert_eq!(report.server_version.as_deref(), Some("1.2.3"));
    assert_eq!(report.tools.len(), BASE_TOOLS.len());

    let report = hub
        .probe(&config("l", "Legacy", &old.url()), BUDGET)
        .await
        .unwrap();
    assert_eq!(report.protocol_version, "2025-11-25");
    assert_eq!(report.instructions.as_deref(), Some("Use echo to test."));
    assert_eq!(report.tools.len(), BASE_TOOLS.len());
}

#[tokio::test]
async fn a_cached_list_is_reused_until_its_ttl() {
    let server = McpTestServer::start(legacy()).await;
    let hub = hub();
    let servers = [config("s1", "Test", &server.url())];
    hub.discover(&servers, BUDGET).await;
    let calls_after_first = server.state.list_calls.load(Ordering::SeqCst);
    for _ in 0..5 {
        assert_eq!(
            tool_names(&hub.discover(&servers, BUDGET).await[0]).len(),
            BASE_TOOLS.len()
        );
    }
    assert_eq!(
        server.state.list_calls.load(Ordering::SeqCst),
        calls_after_first,
        "no new tools/list"
    );
    assert_eq!(server.state.peers.lock().unwrap().len(), 1, "one session, reused");
}

#[tokio::test]
async fn a_server_ttl_of_zero_is_honoured() {
    let server = start_with_ttl(0, ServerOptions::default()).await;
    let hub = hub_with(HubSettings {
        tool_list_ttl: Duration::from_secs(3600),
        ..HubSettings::default()
    });
    let servers = [config("s1", "Test", &server.url())];
    hub.discover(&servers, BUDGET).await;
    let first = server.state.list_calls.load(Ordering::SeqCst);
    hub.discover(&servers, BUDGET).await;
    assert!(
        server.state.list_calls.load(Ordering::SeqCst) > first,
        "a stale list is fetched again"
    );
}

#[tokio::test]
async fn list_changed_refreshes_the_cached_list_in_both_eras() {
    for options in [ServerOptions::default(), legacy()] {
        let stateless = !options.legacy_only;
        let server = McpTestServer::start(options).await;
        let hub = hub_with(HubSettings {
            tool_list_ttl: Duration::from_secs(3600),
            ..HubSettings::default()
        });
        let servers = [config("s1", "Test", &server.url())];
        assert!(!tool_names(&hub.discover(&servers, BUDGET).await[0]).contains(&"late".to_owned()));
        if stateless {
            // The announcement can only reach a client whose subscription is open.
            let subscribed = eventually(100, Duration::from_millis(50), || async {
                !server.state.subscriptions.lock().unwrap().is_empty()
            })
            .await;
            assert!(subscribed, "a stateless-era session subscribes to tool changes");
        }

        server.state.add_tool("late").await;

        let appeared = eventually(100, Duration::from_millis(50), || async {
            tool_names(&hub.discover(&servers, BUDGET).await[0]).contains(&"late".to_owned())
        })
        .await;
        assert!(
            appeared,
            "the new tool shows up without waiting for the TTL (stateless: {stateless})"
        );
    }
}

#[tokio::test]
async fn tool_results_are_converted_for_model_and_ui() {
    for options in [ServerOptions::default(), legacy()] {
        let server = McpTestServer::start(options).await;
        let hub = hub();
        let cfg = config("s1", "Test", &server.url());

        let echo = hub
            .call_tool(&cfg, "echo", json!({"message": "hi"}), BUDGET)
            .await
            .unwrap();
        assert_eq!(echo.model_text, "echo: hi");
        assert!(!echo.is_error);
        assert_eq!(echo.ui_output["content"][0]["text"], "echo: hi");

        let failed = hub.call_tool(&cfg, "fail", json!({}), BUDGET).await.unwrap();
        assert!(failed.is_error);
        assert_eq!(failed.model_text, "the disk is full");

        let media = hub.call_tool(&cfg, "media", json!({}), BUDGET).await.unwrap();
        assert_eq!(
            media.model_text,
            "{\"pages\":3}\nThe report has three pages.\n[image: image/png, 8 bytes]\n\
             [resource link: report.pdf <https://example.com/report.pdf> (application/pdf)]"
        );
        assert_eq!(media.ui_output["structuredContent"]["pages"], 3);
        assert_eq!(media.ui_output["content"][2]["mimeType"], "image/png");

        let big = hub.call_tool(&cfg, "big", json!({}), BUDGET).await.unwrap();
        assert!(big.model_text.starts_with(&"x".repeat(100_000)));
        assert!(
            big.model_text.contains("150000 of 250000 characters were cut"),
            "{}",
            &big.model_text[100_000..]
        );
    }
}

#[tokio::test]
async fn a_slow_call_times_out_is_cancelled_and_leaves_the_session_usable() {
    let server = McpTestServer::start(legacy()).await;
    let hub = hub();
    let cfg = config("s1", "Test", &server.url());
    hub.discover(std::slice::from_ref(&cfg), BUDGET).await;

    let err = hub
        .call_tool(&cfg, "slow", json!({}), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(err, McpError::Timeout(Duration::from_millis(300)));
    let cancelled = eventually(100, Duration::from_millis(50), || async {
        server.state.cancelled_calls.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(cancelled, "the server learns that the call was abandoned");

    let echo = hub
        .call_tool(&cfg, "echo", json!({"message": "still here"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(echo.model_text, "echo: still here");
    assert_eq!(
        server.state.peers.lock().unwrap().len(),
        1,
        "the same session served both calls"
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_reported() {
    let server = McpTestServer::start(ServerOptions::default()).await;
    let hub = hub();
    let cfg = config("s1", "Test", &server.url());
    let err = hub.call_tool(&cfg, "nope", json!({}), BUDGET).await.unwrap_err();
    assert_eq!(err, McpError::ToolNotFound("nope".into()));
    let err = hub
        .call_tool(&cfg, "echo", json!([1, 2]), BUDGET)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::InvalidArguments(_)), "{err:?}");
}

#[tokio::test]
async fn a_tool_added_after_discovery_can_still_be_called() {
    let server = McpTestServer::start(ServerOptions::default()).await;
    let hub = hub_with(HubSettings {
        tool_list_ttl: Duration::from_secs(3600),
        ..HubSettings::default()
    });
    let cfg = config("s1", "Test", &server.url());
    hub.discover(std::slice::from_ref(&cfg), BUDGET).await;
    server.state.add_tool("fresh").await;
    let result = hub.call_tool(&cfg, "fresh", json!({}), BUDGET).await.unwrap();
    assert_eq!(result.model_text, "fresh ran");
}

#[tokio::test]
async fn a_cursor_loop_fails_discovery_instead_of_spinning() {
    let server = McpTestServer::start(ServerOptions {
        looping_cursor: true,
        ..ServerOptions::default()
    })
    .await;
    let hub = hub();
    let outcomes = hub.discover(&[config("s1", "Loop", &server.url())], BUDGET).await;
    match &outcomes[0] {
        DiscoveryOutcome::Failed {
            error: McpError::Protocol(message),
            ..
        } => {
            assert!(message.contains("cursor"), "{message}")
        }
        other => panic!("expected a protocol failure, got {other:?}"),
    }
}

#[tokio::test]
async fn changing_the_url_never_reuses_the_old_session() {
    let first = McpTestServer::start(legacy()).await;
    let second = McpTestServer::start(legacy()).await;
    second
        .state
        .extra_tools
        .lock()
        .unwrap()
        .push(rmcp::model::Tool::new(
            "only_second",
            "exists on the second server",
            std::sync::Arc::new(serde_json::Map::new()),
        ));
    let hub = hub();
    let mut cfg = config("s1", "Test", &first.url());
    assert!(
        !tool_names(&hub.discover(std::slice::from_ref(&cfg), BUDGET).await[0])
            .contains(&"only_second".into())
    );

    cfg.url = second.url();
    assert!(
        tool_names(&hub.discover(std::slice::from_ref(&cfg), BUDGET).await[0])
            .contains(&"only_second".into())
    );
    let result = hub
        .call_tool(&cfg, "only_second", json!({}), BUDGET)
        .await
        .unwrap();
    assert_eq!(result.model_text, "only_second ran");
}

#[tokio::test]
async fn idle_and_forgotten_servers_lose_their_session() {
    let server = McpTestServer::start(legacy()).await;
    let hub = hub_with(HubSettings {
        // Long enough that two sends back to back fall within it on a loaded machine.
        idle_limit: Duration::from_secs(2),
        ..HubSettings::default()
    });
    let servers = [config("s1", "Test", &server.url())];
    hub.discover(&servers, BUDGET).await;
    hub.discover(&servers, BUDGET).await;
    assert_eq!(server.state.peers.lock().unwrap().len(), 1);

    let closed = eventually(200, Duration::from_millis(25), || async {
        hub.usage().entries == 0
    })
    .await;
    assert!(closed, "an idle server's session closes without anyone asking");
    assert_eq!(hub.usage().sessions, 0);
    hub.discover(&servers, BUDGET).await;
    assert_eq!(
        server.state.peers.lock().unwrap().len(),
        2,
        "an idle server is connected afresh"
    );

    hub.forget("user-1", "s1");
    hub.discover(&servers, BUDGET).await;
    assert_eq!(
        server.state.peers.lock().unwrap().len(),
        3,
        "a forgotten server is connected afresh"
    );
}

#[tokio::test]
async fn a_server_that_ignores_discover_is_reached_through_the_handshake() {
    let server = McpTestServer::start(ServerOptions {
        hang_on_discover: true,
        ..ServerOptions::default()
    })
    .await;
    let hub = hub();
    let cfg = config("s1", "Quiet about discover", &server.url());
    let budget = Duration::from_millis(1500);

    let report = hub.probe(&cfg, budget).await.unwrap();
    assert_eq!(report.protocol_version, "2025-11-25");
    let outcomes = hub.discover(std::slice::from_ref(&cfg), budget).await;
    assert_eq!(tool_names(&outcomes[0]), BASE_TOOLS);
}
