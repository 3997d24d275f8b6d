//! Outside MCP servers: the official `server-everything` (Node) and a Python SDK server. The test
//! script installs them with `tests/peers/install.sh` and points the tests at them through
//! `PROMPTGATE_TEST_NODE_PEERS_DIR` and `PROMPTGATE_TEST_PY_PEER_PYTHON`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use promptgate_mcp::{DiscoveredTool, DiscoveryOutcome, McpHub, McpServerConfig, ProbeReport, ToolHints};
use serde_json::json;

const BUDGET: Duration = Duration::from_secs(3);

/// The variable's value; in CI a missing peer is a failure, elsewhere a note.
pub(crate) fn peer_setting(variable: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{variable} is not set: CI must run crates/promptgate-mcp/tests/peers/install.sh");
            }
            eprintln!(
                "note: {variable} is not set, so this peer test does nothing (see tests/peers/install.sh)"
            );
            None
        }
    }
}

/// A peer process, killed when the test ends.
pub(crate) struct Peer(pub(crate) Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) async fn free_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// Starts a peer on a free port and waits until it answers as `server_name`. A port picked free
/// can be taken by another test's peer before this one binds it, and then the probe reaches that
/// one; the peer is started again on another port.
async fn start_peer(
    hub: &McpHub,
    server_name: &str,
    spawn: impl Fn(u16) -> Child,
) -> (Peer, McpServerConfig, ProbeReport) {
    for _ in 0..5 {
        let port = free_port().await;
        let peer = Peer(spawn(port));
        let cfg = config("peer", "Peer", &format!("http://127.0.0.1:{port}/mcp"));
        let report = wait_until_up(hub, &cfg).await;
        if report.server_name.as_deref() == Some(server_name) {
            return (peer, cfg, report);
        }
        eprintln!(
            "note: port {port} answered as {:?}, not {server_name}; starting the peer again",
            report.server_name
        );
    }
    panic!("{server_name} never came up on a port of its own");
}

/// Probes until the freshly started peer answers (it needs a moment to boot).
async fn wait_until_up(hub: &McpHub, cfg: &McpServerConfig) -> ProbeReport {
    for _ in 0..150 {
        if let Ok(report) = hub.probe(cfg, Duration::from_secs(1)).await {
            return report;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the peer at {} never answered", cfg.url);
}

#[tokio::test]
async fn server_everything_lists_its_tools_and_echoes() {
    let Some(dir) = peer_setting("PROMPTGATE_TEST_NODE_PEERS_DIR") else {
        return;
    };
    let entry = Path::new(&dir).join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let hub = hub();
    // It listens on every interface; the test only ever talks to it over loopback.
    let (_peer, cfg, report) = start_peer(&hub, "mcp-servers/everything", |port| {
        Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything")
    })
    .await;
    assert!(
        report.protocol_version.starts_with("2025-"),
        "{}",
        report.protocol_version
    );

    let outcomes = hub.discover(std::slice::from_ref(&cfg), BUDGET).await;
    let names = tool_names(&outcomes[0]);
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(names.len() > 5, "{names:?}");
    let echo = listed(&outcomes[0], "echo");
    assert_eq!(echo.title.as_deref(), Some("Echo Tool"));
    assert_eq!(
        echo.hints,
        Some(ToolHints {
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        })
    );

    // Structured content reaches the model once, as JSON, though the server mirrors it in text.
    let weather = hub
        .call_tool(
            &cfg,
            "get-structured-content",
            json!({"location": "Chicago"}),
            BUDGET,
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&weather.model_text).unwrap(),
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}),
        "{}",
        weather.model_text
    );
    assert_eq!(weather.ui_output["structuredContent"]["temperature"], 36);

    // Resource links become lines naming each resource, its URI and type; an image becomes a note.
    let links = hub
        .call_tool(&cfg, "get-resource-links", json!({"count": 2}), BUDGET)
        .await
        .unwrap();
    let lines: Vec<&str> = links.model_text.lines().collect();
    assert_eq!(lines.len(), 3, "{}", links.model_text);
    assert!(
        lines[1].starts_with("[resource link: Blob Resource 1 <"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("[resource link: Text Resource 2 <"),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].contains("(text/plain)] Resource 2: plaintext resource"),
        "{}",
        lines[2]
    );
    let image = hub
        .call_tool(&cfg, "get-tiny-image", json!({}), BUDGET)
        .await
        .unwrap();
    let notes: Vec<&str> = image.model_text.lines().collect();
    assert_eq!(notes[0], "Here's the image you requested:");
    assert!(notes[1].starts_with("[image: image/png, "), "{}", notes[1]);
    assert!(
        image.model_text.len() < 200,
        "no base64 for the model: {}",
        image.model_text
    );

    let result = hub
        .call_tool(&cfg, "echo", json!({"message": "hello gateway"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(result.model_text, "Echo: hello gateway");
    assert!(!result.is_error);
}

#[tokio::test]
async fn python_sdk_server_lists_and_calls_tools() {
    let Some(python) = peer_setting("PROMPTGATE_TEST_PY_PEER_PYTHON") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_peer.py");
    let hub = hub();
    let (_peer, cfg, report) = start_peer(&hub, "promptgate-py-peer", |port| {
        Command::new(&python)
            .arg(&script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python peer")
    })
    .await;
    // This SDK speaks the stateless protocol, so this test covers the modern path with an outside peer.
    assert_eq!(report.protocol_version, "2026-07-28");

    let outcomes = hub.discover(std::slice::from_ref(&cfg), BUDGET).await;
    let mut names = tool_names(&outcomes[0]);
    names.sort();
    assert_eq!(names, ["add", "echo"]);

    let echo = hub
        .call_tool(&cfg, "echo", json!({"message": "hi"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(echo.model_text, "py-echo: hi");
    let sum = hub
        .call_tool(&cfg, "add", json!({"a": 2, "b": 3}), BUDGET)
        .await
        .unwrap();
    // The SDK wraps a plain return value as `{"result": …}` beside the same value as text; the
    // model reads the value once.
    assert_eq!(sum.model_text, "5");
    assert_eq!(sum.ui_output["structuredContent"]["result"], 5);
    let echo = listed(&outcomes[0], "echo");
    assert_eq!(echo.title.as_deref(), Some("Echo"));
    assert_eq!(
        echo.hints,
        Some(ToolHints {
            read_only: Some(true),
            destructive: None,
            idempotent: Some(true),
            open_world: Some(false),
        })
    );
}

fn listed(outcome: &DiscoveryOutcome, name: &str) -> DiscoveredTool {
    let DiscoveryOutcome::Ready { tools, .. } = outcome else {
        panic!("not discovered: {outcome:?}");
    };
    tools.iter().find(|t| t.name == name).cloned().unwrap()
}
