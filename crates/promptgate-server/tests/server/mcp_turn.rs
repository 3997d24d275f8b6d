//! The user's MCP servers in a send: the preview, a turn that calls an MCP tool, failing and
//! returning servers, and the probe endpoint. The MCP servers are real rmcp servers on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, ToolsServer, one_string_argument, preview_tools, tool_message};
use promptgate_llm::scripted::{text, tool_calls};
use promptgate_mcp::testing::{McpTestServer, dead_url};
use reqwest::StatusCode;
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const TOOLS: &[&str] = &["echo", "search", "content", "fail", "big"];
/// Characters of the `big` tool's answer: over the model-facing cap of 100 000.
const BIG_CHARS: usize = 150_000;

/// A real MCP server with [`TOOLS`]: `search` annotated read-only, `echo` echoing its `message`,
/// `fail` failing and `big` answering [`BIG_CHARS`] characters; a minute's `ttlMs`, so sends reuse
/// the list as they do with most servers.
async fn tool_box() -> McpTestServer {
    let tools = TOOLS
        .iter()
        .map(|name| {
            let tool = Tool::new(*name, format!("The {name} tool"), one_string_argument("message"));
            if *name == "search" {
                tool.with_title("Search the files")
                    .with_annotations(ToolAnnotations::new().read_only(true).open_world(false))
            } else {
                tool
            }
        })
        .collect();
    ToolsServer::new("toolbox", "0.9.0", tools, |request, _| {
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(format!("echo: {message}"))]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("the disk is full")]),
            "big" => CallToolResult::success(vec![ContentBlock::text("b".repeat(BIG_CHARS))]),
            other => CallToolResult::success(vec![ContentBlock::text(format!("{other} ran"))]),
        }
    })
    .with_instructions("Tools for the gateway's tests.")
    .with_ttl_ms(60_000)
    .start()
    .await
}

/// Accepts connections and never answers on them.
async fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}/mcp")
}

/// Web tools on (so `fetch_content` is a built-in name) and MCP timings short enough for tests; no
/// background liveness check within a test, so a stopped server is found out by the call to it.
const TEST_TOML: &str = "[web]\nsearch = { kind = \"searxng\", base_url = \"http://127.0.0.1:9\" }\n\n\
    [mcp]\ndiscovery_timeout_ms = 800\nprobe_timeout_ms = 800\nliveness_interval_ms = 600000\n\
    reconnect_initial_backoff_ms = 50\nreconnect_max_backoff_ms = 200\n";

async fn register(gw: &Gateway, name: &str, url: &str) -> String {
    let body = gw.register_mcp_server(name, url).await;
    body["id"].as_str().unwrap().to_owned()
}

async fn preview(gw: &Gateway, thread: &str) -> Value {
    let (status, body) = gw
        .get(&format!("/v1/threads/{thread}/prompt?model=scripted"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The chunk among `events` (all of one type) that belongs to the tool call `call_id`.
fn event_for<'a>(events: &[&'a Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["toolCallId"] == call_id)
        .unwrap_or_else(|| panic!("no event for {call_id}"))
}

async fn mcp_tools_are_offered_called_and_recorded(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway_with(backend, TEST_TOML).await;
    let first = tool_box().await;
    let second = tool_box().await;
    register(&gw, "Fetch", &first.url()).await;
    register(&gw, "Fetch", &second.url()).await;
    gw.post("/v1/threads", json!({"id": "t1"})).await;

    // Both servers are merged under distinct prefixes; the built-in `fetch_content` keeps its name.
    let shown = preview(&gw, "t1").await;
    let names = preview_tools(&shown);
    for expected in [
        "fetch_echo",
        "fetch_search",
        "fetch_big",
        "fetch_2_echo",
        "fetch_2_content",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} missing: {names:?}"
        );
    }
    let fetch_content: Vec<&Value> = common::where_eq(&shown["tools"], "name", "fetch_content");
    assert_eq!(fetch_content.len(), 1, "{names:?}");
    assert!(
        fetch_content[0].get("mcp").is_none_or(Value::is_null),
        "the built-in wins the name: {}",
        fetch_content[0]
    );
    // The preview shows each MCP tool's origin, title and the server's behaviour hints.
    let search = common::where_eq(&shown["tools"], "name", "fetch_search")[0];
    assert_eq!(
        search["mcp"],
        json!({"name": "Fetch", "url": first.url(), "toolName": "search", "title": "Search the files",
               "annotations": {"readOnlyHint": true, "openWorldHint": false}})
    );
    let stable = shown["stable"].as_str().unwrap();
    assert!(stable.contains("## Connected MCP Servers"), "{stable}");
    assert!(stable.contains("- fetch (4 tools)"), "{stable}");
    assert!(stable.contains("- fetch_2 (5 tools)"), "{stable}");

    // The model calls an MCP tool; the UI sees it as a dynamic tool with its origin.
    upstream.push(tool_calls(&[("c1", "fetch_echo", &["{\"message\":", "\"hi\"}"])]));
    upstream.push(text(["It said hi."]));
    let sse = gw.chat("t1", "echo hi").await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "It said hi.");
    let input = event_for(&sse.of_type("tool-input-available"), "c1");
    assert_eq!(input["toolName"], "fetch_echo");
    assert_eq!(input["dynamic"], true);
    assert_eq!(input["input"], json!({"message": "hi"}));
    let output = sse.tool_output("c1");
    assert_eq!(output["dynamic"], true);
    assert_eq!(output["output"]["content"][0]["text"], "echo: hi");
    let origin = json!({"name": "Fetch", "url": first.url(), "toolName": "echo"});
    let metadata: Vec<&Value> = sse
        .of_type("message-metadata")
        .into_iter()
        .filter(|e| e["messageMetadata"].get("mcpTools").is_some())
        .collect();
    assert_eq!(metadata.len(), 1, "{:?}", sse.types());
    assert_eq!(metadata[0]["messageMetadata"]["mcpTools"]["fetch_echo"], origin);
    assert_eq!(tool_message(&upstream.last_request().unwrap(), "c1"), "echo: hi");
    let stored = gw.stored_messages("t1", 2).await;
    assert_eq!(stored[1]["metadata"]["mcpTools"]["fetch_echo"], origin);
    assert!(
        stored[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "dynamic-tool" && p["toolName"] == "fetch_echo"),
        "{}",
        stored[1]["parts"]
    );

    // A result the server flags as an error is a tool error; a huge one is cut for the model.
    upstream.push(tool_calls(&[
        ("c2", "fetch_fail", &["{}"]),
        ("c3", "fetch_2_big", &["{}"]),
    ]));
    upstream.push(text(["Noted."]));
    let sse = gw.chat("t1", "fail and go big").await;
    assert_eq!(sse.text(), "Noted.");
    let failed = event_for(&sse.of_type("tool-output-error"), "c2");
    assert_eq!(failed["dynamic"], true);
    assert!(
        failed["errorText"].as_str().unwrap().contains("the disk is full"),
        "{failed}"
    );
    assert!(
        sse.of_type("tool-output-available")
            .iter()
            .all(|e| e["toolCallId"] != "c2")
    );
    let big = sse.tool_output("c3");
    assert_eq!(big["dynamic"], true);
    let request = upstream.last_request().unwrap();
    let cut = tool_message(&request, "c3");
    assert!(cut.chars().count() < BIG_CHARS, "{}", cut.len());
    assert!(
        cut.contains("[Tool result truncated"),
        "{}",
        &cut[cut.len() - 120..]
    );
    assert!(tool_message(&request, "c2").contains("the disk is full"));
}

common::on_both_backends!(mcp_tools_are_offered_called_and_recorded);

#[tokio::test]
async fn failing_servers_are_skipped_and_a_restarted_one_comes_back() {
    let (gw, upstream) = common::single_user_gateway_with(Backend::Sqlite, TEST_TOML).await;
    let mut files = tool_box().await;
    register(&gw, "Files", &files.url()).await;
    register(&gw, "Stuck", &silent_server().await).await;
    gw.post("/v1/threads", json!({"id": "t2"})).await;

    // The silent server is given up on after the discovery timeout; the send still answers.
    upstream.push(text(["First."]));
    let sse = gw.chat("t2", "one").await;
    assert_eq!(sse.text(), "First.");
    let tools = common::offered_tools(&upstream.last_request().unwrap());
    assert!(tools.contains(&"files_echo".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("stuck_")), "{tools:?}");
    let stable = preview(&gw, "t2").await["stable"].as_str().unwrap().to_owned();
    assert!(
        !stable.contains("- stuck"),
        "a skipped server is not announced: {stable}"
    );

    // Stopped: no send pings first, so the next one still offers the cached tools; the call to one
    // fails, the turn still answers, and the send after it leaves the server out.
    files.stop().await;
    common::one_call(
        &upstream,
        "c8",
        "files_echo",
        "{\"message\":\"anyone?\"}",
        "Second.",
    );
    let sse = gw.chat("t2", "two").await;
    assert_eq!(sse.text(), "Second.");
    let failed = event_for(&sse.of_type("tool-output-error"), "c8");
    assert!(
        failed["errorText"].as_str().unwrap().contains("unreachable"),
        "{failed}"
    );
    upstream.push(text(["Still here."]));
    let sse = gw.chat("t2", "two again").await;
    assert_eq!(sse.text(), "Still here.");
    let tools = common::offered_tools(&upstream.last_request().unwrap());
    assert!(!tools.iter().any(|t| t.starts_with("files_")), "{tools:?}");

    // Restarted on the same address: a later send offers its tools again and can call them.
    files.restart().await;
    let mut back = false;
    for _ in 0..100 {
        if preview_tools(&preview(&gw, "t2").await).contains(&"files_echo".to_owned()) {
            back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(back, "the restarted server's tools came back");
    common::one_call(&upstream, "c9", "files_echo", "{\"message\":\"again\"}", "Third.");
    let sse = gw.chat("t2", "three").await;
    assert_eq!(sse.text(), "Third.");
    let output = sse.tool_output("c9");
    assert_eq!(output["output"]["content"][0]["text"], "echo: again");
}

#[tokio::test]
async fn probe_reports_the_server_or_why_it_failed() {
    let (gw, _upstream) = common::single_user_gateway_with(Backend::Sqlite, TEST_TOML).await;
    let server = tool_box().await;
    let good = register(&gw, "Files", &server.url()).await;
    let (status, body) = gw.post(&format!("/v1/mcp-servers/{good}/probe"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ok"], true, "{body}");
    assert_eq!(body["server"]["name"], "toolbox");
    assert_eq!(body["server"]["version"], "0.9.0");
    assert_eq!(body["server"]["instructions"], "Tools for the gateway's tests.");
    assert!(!body["server"]["protocol_version"].as_str().unwrap().is_empty());
    let tools = body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS, "bare names, as the server lists them");
    assert_eq!(tools[0]["description"], "The echo tool");
    assert!(tools[0].get("annotations").is_none(), "{}", tools[0]);
    assert_eq!(tools[1]["title"], "Search the files");
    assert_eq!(
        tools[1]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(
        tools[0]["input_schema"]["properties"]["message"]["type"],
        "string"
    );

    // Nothing listens on a port we just released.
    let refused = register(&gw, "Gone", &dead_url().await).await;
    let (status, body) = gw
        .post(&format!("/v1/mcp-servers/{refused}/probe"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["error"]["kind"], "connect", "{body}");
    assert!(!body["error"]["message"].as_str().unwrap().is_empty());

    let silent = register(&gw, "Silent", &silent_server().await).await;
    let (_, body) = gw
        .post(&format!("/v1/mcp-servers/{silent}/probe"), json!({}))
        .await;
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["error"]["kind"], "timeout", "{body}");

    let (status, body) = gw.post("/v1/mcp-servers/nope/probe", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// The installed peers' directory; in CI a missing one is a failure, elsewhere a note.
fn node_peers_dir() -> Option<String> {
    common::node_peers_dir("the server-everything turn")
}

#[tokio::test]
async fn a_turn_calls_server_everything_through_the_gateway() {
    let Some(dir) = node_peers_dir() else { return };
    let entry =
        std::path::Path::new(&dir).join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let port = common::free_port();
    // It listens on every interface; the test only talks to it over loopback.
    let _peer = common::Killed(
        std::process::Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start server-everything"),
    );
    let toml = TEST_TOML
        .replace("discovery_timeout_ms = 800", "discovery_timeout_ms = 3000")
        .replace("probe_timeout_ms = 800", "probe_timeout_ms = 1000");
    let (gw, upstream) = common::single_user_gateway_with(Backend::Sqlite, &toml).await;
    let everything = register(&gw, "Everything", &format!("http://127.0.0.1:{port}/mcp")).await;
    let files = tool_box().await;
    register(&gw, "Files", &files.url()).await;

    // It needs a moment to boot; the probe says when it is up.
    let mut up = false;
    for _ in 0..150 {
        let (_, body) = gw
            .post(&format!("/v1/mcp-servers/{everything}/probe"), json!({}))
            .await;
        if body["ok"] == true {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(up, "server-everything never answered the probe");

    gw.post("/v1/threads", json!({"id": "t3"})).await;
    let shown = preview(&gw, "t3").await;
    let names = preview_tools(&shown);
    let echo = names
        .iter()
        .find(|n| n.starts_with("everything") && n.ends_with("_echo"))
        .unwrap_or_else(|| panic!("no echo tool of server-everything: {names:?}"))
        .clone();
    assert!(names.contains(&"files_echo".to_owned()), "{names:?}");
    let stable = shown["stable"].as_str().unwrap();
    assert!(stable.contains("## Connected MCP Servers"), "{stable}");
    assert!(stable.contains("- everything ("), "{stable}");
    assert!(stable.contains("- files (5 tools)"), "{stable}");

    upstream.push(tool_calls(&[(
        "e1",
        echo.as_str(),
        &["{\"message\":\"through the gateway\"}"],
    )]));
    upstream.push(text(["Echoed."]));
    let sse = gw.chat("t3", "echo please").await;
    assert_eq!(sse.text(), "Echoed.");
    let output = sse.tool_output("e1");
    assert_eq!(output["dynamic"], true);
    assert_eq!(
        output["output"]["content"][0]["text"],
        "Echo: through the gateway"
    );
    let metadata = sse
        .of_type("message-metadata")
        .into_iter()
        .find(|e| e["messageMetadata"].get("mcpTools").is_some())
        .expect("mcpTools metadata");
    assert_eq!(
        metadata["messageMetadata"]["mcpTools"][&echo]["name"],
        "Everything"
    );
    assert_eq!(metadata["messageMetadata"]["mcpTools"][&echo]["toolName"], "echo");
    assert_eq!(
        metadata["messageMetadata"]["mcpTools"][&echo]["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        "the tool's metadata carries the server's hints"
    );
    assert_eq!(
        metadata["messageMetadata"]["mcpTools"][&echo]["title"],
        "Echo Tool"
    );
    assert_eq!(
        tool_message(&upstream.last_request().unwrap(), "e1"),
        "Echo: through the gateway"
    );
}
