//! Whether a server is there is found out in the background or by the call that fails, never by a
//! send: a send takes the cached tools at once. A server that goes down is logged once, retried
//! ever more rarely and quietly, and logged once more when it is back.

#![allow(clippy::panic)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpError};
use serde_json::json;

const BUDGET: Duration = Duration::from_secs(3);

/// Timings short enough for a test: checks every 30 ms, retries from 20 ms up to 200 ms.
fn quick() -> HubSettings {
    HubSettings {
        liveness_interval: Duration::from_millis(30),
        reconnect_initial_backoff: Duration::from_millis(20),
        reconnect_max_backoff: Duration::from_millis(200),
        ..HubSettings::default()
    }
}

fn is_ready(outcome: &DiscoveryOutcome) -> bool {
    matches!(outcome, DiscoveryOutcome::Ready { .. })
}

#[tokio::test]
async fn a_send_takes_the_cached_tools_without_waiting_on_a_liveness_check() {
    let server = start_with_ttl(60_000, legacy()).await;
    let hub = hub_with(quick());
    let servers = [config("s1", "Slow to ping", &server.url())];
    assert!(is_ready(&hub.discover(&servers, BUDGET).await[0]));

    // Well past the liveness interval, with a server that takes two seconds to answer a ping.
    server.state.ping_delay_ms.store(2_000, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let budget = Duration::from_millis(300);
    for _ in 0..3 {
        let outcome = &hub.discover(&servers, budget).await[0];
        assert_eq!(
            tool_names(outcome).len(),
            BASE_TOOLS.len(),
            "a send never waits on a ping"
        );
    }
    let pinged = eventually(100, Duration::from_millis(20), || async {
        server.state.pings.load(Ordering::SeqCst) > 0
    })
    .await;
    assert!(pinged, "the server in use is checked in the background");
    assert_eq!(
        server.state.pings.load(Ordering::SeqCst),
        1,
        "one check at a time per server, not one per send"
    );
}

// A test body shared by both eras.
#[allow(clippy::unwrap_used)]
async fn down_and_back(options: ServerOptions) {
    // The list stays cached for a minute; only a check can notice the stop.
    let mut server = start_with_ttl(60_000, options).await;
    let hub = hub_with(quick());
    let servers = [config("s1", "Flaky", &server.url())];
    assert_eq!(
        tool_names(&hub.discover(&servers, BUDGET).await[0]).len(),
        BASE_TOOLS.len()
    );
    let listed = server.state.list_calls.load(Ordering::SeqCst);
    assert!(is_ready(&hub.discover(&servers, BUDGET).await[0]));
    assert_eq!(
        server.state.list_calls.load(Ordering::SeqCst),
        listed,
        "a live server's cached list is reused"
    );

    server.stop().await;
    let left_out = eventually(100, Duration::from_millis(30), || async {
        match &hub.discover(&servers, BUDGET).await[0] {
            DiscoveryOutcome::Failed { error, .. } => error.is_connection_failure(),
            _ => false,
        }
    })
    .await;
    assert!(left_out, "the stopped server is noticed and left out of sends");

    server.restart().await;
    let listed_before = server.state.list_calls.load(Ordering::SeqCst);
    let reconnected = eventually(100, Duration::from_millis(50), || async {
        server.state.list_calls.load(Ordering::SeqCst) > listed_before
    })
    .await;
    assert!(reconnected, "the hub reconnects on its own, before any send asks");
    let back = eventually(100, Duration::from_millis(50), || async {
        is_ready(&hub.discover(&servers, BUDGET).await[0])
    })
    .await;
    assert!(
        back,
        "once the reconnect completes, sends get the server's tools again"
    );
    let echo = hub
        .call_tool(&servers[0], "echo", json!({"message": "back"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(echo.model_text, "echo: back");
}

#[tokio::test]
async fn a_stopped_server_is_noticed_in_the_background_and_comes_back() {
    down_and_back(ServerOptions::default()).await;
}

#[tokio::test]
async fn a_stopped_legacy_server_is_noticed_in_the_background_and_comes_back() {
    down_and_back(legacy()).await;
}

#[tokio::test]
#[allow(clippy::unwrap_used)]
async fn a_failing_call_takes_its_server_out_of_the_next_send() {
    let mut server = start_with_ttl(60_000, legacy()).await;
    // No background check within the test: only the call can tell.
    let hub = hub_with(HubSettings {
        liveness_interval: Duration::from_secs(3600),
        ..HubSettings::default()
    });
    let servers = [config("s1", "Gone", &server.url())];
    assert!(is_ready(&hub.discover(&servers, BUDGET).await[0]));
    server.stop().await;
    let error = hub
        .call_tool(&servers[0], "echo", json!({}), BUDGET)
        .await
        .unwrap_err();
    assert!(error.is_connection_failure(), "{error:?}");
    assert!(
        matches!(
            &hub.discover(&servers, BUDGET).await[0],
            DiscoveryOutcome::Failed { .. }
        ),
        "the next send leaves the server out at once"
    );
}

#[tokio::test]
async fn a_server_that_stays_down_is_logged_once_and_retried_quietly() {
    let (logs, _guard) = Logs::capture();
    let server = start_with_ttl(60_000, legacy()).await;
    let hub = hub_with(HubSettings {
        reconnect_initial_backoff: Duration::from_millis(10),
        reconnect_max_backoff: Duration::from_millis(40),
        ..quick()
    });
    let servers = [config("s1", "Flaky", &server.url())];
    assert!(is_ready(&hub.discover(&servers, BUDGET).await[0]));

    server.state.down.store(true, Ordering::SeqCst);
    // Sends keep coming while it is down; the background keeps trying.
    let mut failed_sends = 0;
    for _ in 0..200 {
        if !is_ready(&hub.discover(&servers, BUDGET).await[0]) {
            failed_sends += 1;
        }
        if failed_sends >= 10 && server.state.refused_while_down.load(Ordering::SeqCst) >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(failed_sends >= 10, "the down server was left out of sends");
    assert!(
        server.state.refused_while_down.load(Ordering::SeqCst) >= 10,
        "it was retried meanwhile"
    );

    server.state.down.store(false, Ordering::SeqCst);
    let back = eventually(100, Duration::from_millis(30), || async {
        is_ready(&hub.discover(&servers, BUDGET).await[0])
    })
    .await;
    assert!(back);

    let ours: Vec<LogLine> = logs
        .at_least(tracing::Level::WARN)
        .into_iter()
        .filter(|line| line.target.starts_with("promptgate_mcp"))
        .collect();
    let texts: Vec<&str> = ours.iter().map(|line| line.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert!(
        texts[0].contains("is down") && texts[0].contains("Flaky"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].contains("is back") && texts[1].contains("Flaky"),
        "{}",
        texts[1]
    );
}

#[tokio::test]
async fn a_shut_down_hub_stops_reconnecting_in_the_background() {
    let server = start_with_ttl(60_000, ServerOptions::default()).await;
    let hub = hub_with(quick());
    let servers = [config("s1", "Going", &server.url())];
    assert!(is_ready(&hub.discover(&servers, BUDGET).await[0]));
    server.state.down.store(true, Ordering::SeqCst);
    let error = hub.call_tool(&servers[0], "echo", json!({}), BUDGET).await;
    assert!(matches!(error, Err(McpError::HttpStatus(503))), "{error:?}");

    // The reconnects now running in the background end with the shutdown...
    hub.shutdown(Duration::from_secs(5)).await;
    let tried = server.state.refused_while_down.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...so the server hears nothing more from the hub.
    assert_eq!(server.state.refused_while_down.load(Ordering::SeqCst), tried);
}
