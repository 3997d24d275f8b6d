//! What bounds the hub: sessions kept at once (least recently used closed first, reopened on use)
//! with their memory counted, servers a send connects to (no more than its toolset has room for),
//! and probes per user.

#![allow(clippy::panic, clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpError, McpServerConfig};

const BUDGET: Duration = Duration::from_secs(3);

fn of_user(user: &str, server: &McpTestServer) -> McpServerConfig {
    McpServerConfig {
        user_id: user.into(),
        ..config("s1", "Shared", &server.url())
    }
}

fn sessions_opened(server: &McpTestServer) -> usize {
    server.state.peers.lock().unwrap().len()
}

#[tokio::test]
async fn sessions_past_the_cap_close_the_least_recently_used_and_reopen_on_use() {
    let server = McpTestServer::start(legacy()).await;
    let hub = hub_with(HubSettings {
        max_sessions: 2,
        ..HubSettings::default()
    });
    let (alice, bob, carol) = (
        of_user("alice", &server),
        of_user("bob", &server),
        of_user("carol", &server),
    );
    for user in [&alice, &bob] {
        assert_eq!(
            tool_names(&hub.discover(std::slice::from_ref(user), BUDGET).await[0]).len(),
            7
        );
    }
    let usage = hub.usage();
    assert_eq!((usage.entries, usage.sessions), (2, 2));
    let two_sessions = usage.bytes;
    assert!(two_sessions > 0, "{usage:?}");

    // Alice is used again, so Bob is the least recently used when Carol comes.
    hub.discover(std::slice::from_ref(&alice), BUDGET).await;
    hub.discover(std::slice::from_ref(&carol), BUDGET).await;
    let usage = hub.usage();
    assert_eq!((usage.entries, usage.sessions), (2, 2), "the cap holds");
    assert_eq!(usage.bytes, two_sessions, "each session is counted the same");
    assert_eq!(sessions_opened(&server), 3);

    // Bob's session was closed; his next send opens a new one without noticing anything.
    assert_eq!(
        tool_names(&hub.discover(std::slice::from_ref(&bob), BUDGET).await[0]).len(),
        7
    );
    assert_eq!(sessions_opened(&server), 4, "an evicted session is opened again");
    assert_eq!(hub.usage().sessions, 2);

    for user in ["alice", "bob", "carol"] {
        hub.forget(user, "s1");
    }
    assert_eq!(hub.usage().sessions, 0);
    assert_eq!(
        hub.usage().bytes,
        0,
        "closed sessions give their memory back to the count"
    );
}

#[tokio::test]
async fn a_bigger_tool_list_is_counted_as_more_memory() {
    let small = McpTestServer::start(legacy()).await;
    let big = McpTestServer::start(legacy()).await;
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        big.state.add_tool(name).await;
    }
    let hub = hub();
    hub.discover(&[config("small", "Small", &small.url())], BUDGET)
        .await;
    let one = hub.usage().bytes;
    hub.discover(&[config("big", "Big", &big.url())], BUDGET).await;
    let both = hub.usage().bytes;
    assert!(both - one > one, "the second list is longer: {one} then {both}");
}

/// Servers `0..n` of the same user, each on its own in-process server with the seven base tools.
async fn servers(n: usize) -> (Vec<McpTestServer>, Vec<McpServerConfig>) {
    let mut running = Vec::new();
    let mut configs = Vec::new();
    for i in 0..n {
        let server = start_with_ttl(60_000, legacy()).await;
        configs.push(config(&format!("s{i}"), &format!("Server {i}"), &server.url()));
        running.push(server);
    }
    (running, configs)
}

fn kinds(outcomes: &[DiscoveryOutcome]) -> Vec<&'static str> {
    outcomes
        .iter()
        .map(|o| match o {
            DiscoveryOutcome::Ready { .. } => "ready",
            DiscoveryOutcome::Failed { .. } => "failed",
            DiscoveryOutcome::Unused { .. } => "unused",
        })
        .collect()
}

fn contacted(server: &McpTestServer) -> usize {
    server.state.list_calls.load(Ordering::SeqCst)
        + server.state.pings.load(Ordering::SeqCst)
        + sessions_opened(server)
}

#[tokio::test]
async fn servers_past_the_toolsets_room_are_never_connected() {
    let (running, configs) = servers(6).await;
    let hub = hub();
    // Room for 20 tools: three servers of seven fill it.
    for _ in 0..3 {
        let outcomes = hub.discover_within(&configs, 20, BUDGET).await;
        assert_eq!(
            kinds(&outcomes),
            ["ready", "ready", "ready", "unused", "unused", "unused"]
        );
    }
    for server in &running[3..] {
        assert_eq!(
            contacted(server),
            0,
            "a server past the room is not even connected"
        );
    }
    assert_eq!(hub.usage().sessions, 3);
}

#[tokio::test]
async fn a_server_found_to_fill_the_room_leaves_the_later_ones_closed() {
    let (running, configs) = servers(3).await;
    for i in 0..30 {
        running[0]
            .state
            .add_tool(Box::leak(format!("more_{i}").into_boxed_str()))
            .await;
    }
    let hub = hub();
    // The first send cannot know the first server lists 37 tools, so it connects a wave.
    let first = hub.discover_within(&configs, 20, BUDGET).await;
    assert_eq!(kinds(&first), ["ready", "ready", "ready"]);
    let after_first: Vec<usize> = running[1..].iter().map(contacted).collect();
    // From then on it knows: the others are closed and left alone.
    for _ in 0..3 {
        let later = hub.discover_within(&configs, 20, BUDGET).await;
        assert_eq!(kinds(&later), ["ready", "unused", "unused"]);
    }
    assert_eq!(
        hub.usage().sessions,
        1,
        "the unused servers' sessions were closed"
    );
    let now: Vec<usize> = running[1..].iter().map(contacted).collect();
    assert_eq!(now, after_first, "nothing more reached them after the first send");
}

#[tokio::test]
async fn a_failing_server_makes_room_for_the_next_one() {
    let (running, mut configs) = servers(2).await;
    configs.insert(0, config("dead", "Dead", &dead_url().await));
    let hub = hub();
    let outcomes = hub.discover_within(&configs, 7, BUDGET).await;
    assert_eq!(kinds(&outcomes), ["failed", "ready", "unused"]);
    assert_eq!(contacted(&running[1]), 0);
}

#[tokio::test]
async fn a_send_uses_at_most_the_servers_a_user_may_have() {
    let (running, configs) = servers(3).await;
    let hub = hub_with(HubSettings {
        max_servers_per_user: 2,
        ..HubSettings::default()
    });
    let outcomes = hub.discover(&configs, BUDGET).await;
    assert_eq!(kinds(&outcomes), ["ready", "ready", "unused"]);
    assert_eq!(contacted(&running[2]), 0);
}

fn too_many(result: Result<promptgate_mcp::ProbeReport, McpError>) -> Duration {
    match result {
        Err(McpError::TooManyProbes { retry_after }) => retry_after,
        other => panic!("expected the probe to be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn a_user_cannot_keep_the_server_probing() {
    let good = McpTestServer::start(ServerOptions::default()).await;
    let silent = silent_server().await;
    let hub = hub_with(HubSettings {
        probes_in_flight: 1,
        probes_per_minute: 3,
        ..HubSettings::default()
    });
    let hanging = config("hung", "Hung", &silent);

    // One probe of Alice's hangs on a silent server; her second is refused until it ends.
    let running = hub.probe(&hanging, Duration::from_millis(800));
    let refused = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let alice = hub.probe(&config("ok", "Fine", &good.url()), BUDGET).await;
        let bob = hub.probe(&of_user("bob", &good), BUDGET).await;
        (alice, bob)
    };
    let (hung, (alice, bob)) = tokio::join!(running, refused);
    assert_eq!(hung.unwrap_err(), McpError::Timeout(Duration::from_millis(800)));
    too_many(alice);
    assert!(bob.is_ok(), "another user's probe is not held up: {bob:?}");

    // Three a minute: the hanging one, then two more, then a wait.
    for _ in 0..2 {
        hub.probe(&config("ok", "Fine", &good.url()), BUDGET)
            .await
            .unwrap();
    }
    let wait = too_many(hub.probe(&config("ok", "Fine", &good.url()), BUDGET).await);
    assert!(wait > Duration::from_secs(1), "{wait:?}");
    let listed = good.state.list_calls.load(Ordering::SeqCst);
    too_many(hub.probe(&config("ok", "Fine", &good.url()), BUDGET).await);
    assert_eq!(
        good.state.list_calls.load(Ordering::SeqCst),
        listed,
        "a refused probe connects nowhere"
    );
}
