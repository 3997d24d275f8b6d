//! The Responses API driven by the clients people point at it: the official `openai` client for
//! JavaScript (tests/js). Each runs against a live gateway whose model answers from a scripted
//! upstream on loopback; the test queues the upstream's answers and checks what the client made of
//! the gateway's responses.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use serde_json::{Value, json};

use crate::common::{Backend, single_user_gateway};
use crate::js_clients::{js_dir, run_node};

/// The answers `responses-check.mjs` asks for, in its order.
fn queue_js_check(upstream: &ScriptedUpstream) {
    upstream.push(text(["Hello ", "there."]));
    upstream.push(text(["Once ", "upon ", "a ", "time."]));
    upstream.push(text(["They ", "lived ", "on."]));
    upstream.push(tool_calls(&[(
        "call_w",
        "get_weather",
        &["{\"city\":", "\"Oslo\"}"],
    )]));
    upstream.push(text(["4 degrees in Oslo."]));
}

#[tokio::test]
async fn the_openai_js_client_creates_streams_chains_and_round_trips_a_function_tool() {
    let Some(dir) = js_dir() else { return };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    queue_js_check(&upstream);
    let (ok, result) = run_node(
        dir,
        vec!["responses-check.mjs".into(), gw.url("/v1"), "scripted".into()],
    )
    .await;
    assert!(ok, "the openai client rejected the Responses API: {result}");

    let created = &result["created"];
    assert_eq!(created["status"], "completed");
    assert_eq!(
        created["text"], "Hello there.",
        "output_text, which the client builds"
    );
    assert_eq!(created["metadata"], json!({"run": "js"}));
    assert_eq!(created["usage"]["total_tokens"], 12);

    let streamed = &result["streamed"];
    assert_eq!(streamed["text"], "Once upon a time.");
    assert_eq!(streamed["deltas"], "Once upon a time.");
    let events: Vec<&str> = streamed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(events.first(), Some(&"response.created"), "{events:?}");
    assert_eq!(events.last(), Some(&"response.completed"), "{events:?}");

    // The chain: the model saw the story before the follow-up.
    assert_eq!(result["chained"]["previous"], streamed["id"]);
    let chained_request = &upstream.requests()[2];
    let said: Vec<&Value> = chained_request["messages"].as_array().unwrap().iter().collect();
    assert!(
        said.iter()
            .any(|m| m["role"] == "assistant" && m["content"] == "Once upon a time."),
        "{chained_request}"
    );

    // The function tool: its call ends a response, its output continues it.
    let asked = &result["asked"];
    assert_eq!(asked["types"], json!(["function_call"]));
    assert_eq!(asked["call"]["name"], "get_weather");
    assert_eq!(asked["call"]["arguments"], json!({"city": "Oslo"}));
    assert_eq!(result["answered"]["text"], "4 degrees in Oslo.");
    assert_eq!(
        crate::common::tool_message(&upstream.requests()[4], "call_w"),
        "{\"celsius\":4}"
    );

    // Kept: read back as created, its input paged item by item, then deleted.
    for key in ["id", "status", "text", "types", "usage"] {
        assert_eq!(result["retrieved"][key], created[key], "{key}");
    }
    assert_eq!(result["items"], json!(["function_call_output"]));
    assert_eq!(result["gone"], 404);
    assert_eq!(upstream.calls(), 5);
}
