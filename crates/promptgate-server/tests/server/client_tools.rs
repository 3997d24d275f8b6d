//! Client tools on `POST /v1/chat/completions`: the client's function tools are offered beside the
//! server's, a call to one ends the completion with `tool_calls`, and the client's next request
//! continues the model's history, hidden server steps included, on any instance.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{self, Backend, Gateway, error_code, scripted_config, single_user_gateway, sse_frames};

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }})
}

fn question() -> Value {
    json!({"role": "user", "content": "Weather in Oslo?"})
}

/// The names of the tools the upstream was offered in its `n`-th request.
fn offered(upstream: &ScriptedUpstream, n: usize) -> Vec<String> {
    upstream.requests()[n]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The client's second request: the question, the model's call from the `first` answer, and the
/// client's `result` for the call `call_id`; the answer, which must be 200.
async fn send_result(gw: &Gateway, first: &Value, call_id: &str, result: &str) -> Value {
    let (status, second) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "tools": [weather_tool()], "messages": [
                question(),
                first["choices"][0]["message"],
                {"role": "tool", "tool_call_id": call_id, "content": result}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    second
}

#[tokio::test]
async fn a_function_tool_round_trip_ends_with_tool_calls_and_continues_with_the_result() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[(
        "call_w",
        "get_weather",
        &["{\"city\":", "\"Oslo\"}"],
    )]));
    upstream.push(text(["It is ", "sunny."]));

    let (status, first) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [question()], "tools": [weather_tool()]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let choice = &first["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([{"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}])
    );
    let tools = offered(&upstream, 0);
    assert!(tools.contains(&"get_weather".to_owned()), "{tools:?}");
    assert!(tools.len() > 1, "the server's tools are offered too: {tools:?}");
    assert_eq!(upstream.calls(), 1, "the gateway does not run the client's tool");

    let second = send_result(&gw, &first, "call_w", "{\"sky\":\"clear\"}").await;
    assert_eq!(second["choices"][0]["message"]["content"], "It is sunny.");
    assert_eq!(second["choices"][0]["finish_reason"], "stop");
    let messages = upstream.requests()[1]["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_w");
    assert_eq!(last["content"], "{\"sky\":\"clear\"}");
}

#[tokio::test]
async fn the_stream_carries_the_call_as_a_tool_calls_delta() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[("call_w", "get_weather", &["{\"city\":\"Oslo\"}"])]));
    let res = gw.response(Method::POST, "/v1/chat/completions", Some(&json!({"model": "scripted", "stream": true, "messages": [question()], "tools": [weather_tool()]})), None).await;
    let body = res.text().await.unwrap();
    let frames = sse_frames(&body);
    assert!(frames.done);
    let chunks: Vec<Value> = frames
        .data
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert_eq!(
        calls,
        [
            &json!([{"index": 0, "id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}])
        ]
    );
    let reasons: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(reasons, ["tool_calls"]);
}

#[tokio::test]
async fn hidden_server_steps_are_put_back_when_the_result_reaches_another_instance() {
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = || scripted_config(AuthMode::SingleUser, &upstream.base_url());
    let first_instance = Gateway::start(Backend::Postgres, config()).await;
    let second_instance = first_instance.another_instance(config()).await;
    // A server-side step the client never sees (a call the server answers itself), then the
    // client's tool.
    upstream.push(tool_calls(&[("call_s", "no_such_tool", &["{}"])]));
    common::one_call(
        &upstream,
        "call_c",
        "get_weather",
        "{\"city\":\"Oslo\"}",
        "Clear skies.",
    );

    let body = json!({"model": "scripted", "messages": [question()], "tools": [weather_tool()]});
    let (status, first) = first_instance.post("/v1/chat/completions", body).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let call = &first["choices"][0]["message"]["tool_calls"][0];
    let given = call["id"].as_str().unwrap();
    assert_ne!(given, "call_c", "the client gets an id of the gateway's");

    let second = send_result(&second_instance, &first, given, "clear").await;
    assert_eq!(second["choices"][0]["message"]["content"], "Clear skies.");
    // Past the system prompt, the model reads what it saw before, its own call, then the result.
    common::assert_continued(&upstream, (1, 2), "call_c", "clear");
}

#[tokio::test]
async fn a_client_tool_named_like_a_server_tool_is_refused() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["ok"]));
    let (status, _) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [question()]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let servers = offered(&upstream, 0);
    let taken = servers.first().expect("the gateway offers tools of its own");

    let clashing = json!({"type": "function", "function": {"name": taken, "parameters": {"type": "object"}}});
    let (status, body) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [question()], "tools": [weather_tool(), clashing]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "tool_name_conflict");
    assert!(common::error_message(&body).contains(taken.as_str()), "{body}");
    assert_eq!(upstream.calls(), 1, "nothing was sent upstream");
}

#[tokio::test]
async fn malformed_tools_and_choices_are_refused_before_anything_runs() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let cases = [
        (
            json!([{"type": "function", "function": {"name": "has space"}}]),
            Value::Null,
        ),
        (json!([{"type": "web_search"}]), Value::Null),
        (
            json!([weather_tool()]),
            json!({"type": "function", "function": {"name": "other"}}),
        ),
        (json!([weather_tool()]), json!("sometimes")),
    ];
    for (tools, choice) in cases {
        let (status, body) = gw
            .post(
                "/v1/chat/completions",
                json!({"model": "scripted", "messages": [question()], "tools": tools, "tool_choice": choice}),
            )
            .await;
        assert!(status.is_client_error(), "{status} {body}");
        error_code(&body);
    }
    assert_eq!(upstream.calls(), 0);
}
