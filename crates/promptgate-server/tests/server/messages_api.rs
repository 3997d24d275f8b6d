//! `POST /v1/messages` and `/v1/messages/count_tokens`, the Anthropic Messages API, against a scripted
//! OpenAI-compatible upstream: Anthropic's events and message shape, client tools as `tool_use`
//! blocks, thinking, usage, auth by `x-api-key`, and errors in Anthropic's shape. The official
//! clients (the SDK, Claude Code) drive it in `anthropic_clients`.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use promptgate_llm::scripted::{Script, ScriptedUpstream, reasoning_chunk, role_chunk, text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{self, Backend, Gateway, scripted_config, single_user_gateway, tokens_gateway};

/// A streamed Messages response: each event's name and data, in order.
struct Events(Vec<(String, Value)>);

impl Events {
    fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The content blocks the stream opened, in order.
    fn blocks_started(&self) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|(name, _)| name == "content_block_start")
            .map(|(_, data)| &data["content_block"])
            .collect()
    }

    fn text(&self) -> String {
        self.0
            .iter()
            .filter_map(|(_, data)| data["delta"]["text"].as_str())
            .collect()
    }
}

async fn post(gw: &Gateway, path: &str, body: Value) -> reqwest::Response {
    gw.http
        .post(gw.url(path))
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "fine-grained-tool-streaming-2025-05-14,an-unknown-beta",
        )
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn events(res: reqwest::Response) -> Events {
    let events = common::named_events(res).await;
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str(), "{data}");
    }
    Events(events)
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

#[tokio::test]
async fn a_streamed_answer_is_anthropics_event_sequence() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Hello ", "there."]));
    let body = json!({"model": "scripted", "max_tokens": 64, "stream": true,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Hi"}]});
    let events = events(post(&gw, "/v1/messages?beta=true", body).await).await;
    let names = events.names();
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    assert_eq!(events.text(), "Hello there.");
    let start = &events.0[0].1["message"];
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "scripted");
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    let end = &events.0[names.len() - 2].1;
    assert_eq!(end["delta"]["stop_reason"], "end_turn");
    assert_eq!(end["usage"]["output_tokens"], 2);
    assert_eq!(end["usage"]["cache_read_input_tokens"], 0);
    let system = upstream.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.ends_with("Be brief."),
        "the client's system follows the gateway's: {system}"
    );
}

#[tokio::test]
async fn a_tool_use_round_trip_over_an_openai_compatible_upstream() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(promptgate_llm::scripted::content_chunk("Let me look."))
            .chunk(promptgate_llm::scripted::tool_call_chunk(
                Some(0),
                Some("call_w"),
                Some("get_weather"),
                "{\"city\":\"Oslo\"}",
            ))
            .chunk(promptgate_llm::scripted::finish_chunk("tool_calls"))
            .chunk(promptgate_llm::scripted::usage_chunk(40, 9))
            .done(),
    );
    upstream.push(text(["Clear skies."]));
    let question = json!({"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]});
    let res = post(
        &gw,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": 64, "tools": [weather_tool()], "messages": [question]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().contains_key("request-id"));
    let first: Value = res.json().await.unwrap();
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(
        first["content"],
        json!([{"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "call_w", "name": "get_weather", "input": {"city": "Oslo"}}])
    );
    assert_eq!(first["usage"]["input_tokens"], 40);
    assert_eq!(first["usage"]["output_tokens"], 9);

    let res = post(
        &gw,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": 64, "tools": [weather_tool()], "messages": [
            question,
            {"role": "assistant", "content": first["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_w", "content": "clear"}]}
        ]}),
    )
    .await;
    let second: Value = res.json().await.unwrap();
    assert_eq!(
        second["content"],
        json!([{"type": "text", "text": "Clear skies."}])
    );
    assert_eq!(second["stop_reason"], "end_turn");
    let sent = upstream.requests()[1]["messages"].as_array().unwrap().clone();
    assert_eq!(sent[sent.len() - 2]["tool_calls"][0]["id"], "call_w");
    assert_eq!(
        sent[sent.len() - 1],
        json!({"role": "tool", "tool_call_id": "call_w", "content": "clear"})
    );
}

#[tokio::test]
async fn reasoning_reaches_the_client_as_a_signed_thinking_block() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(reasoning_chunk("Plan first."))
            .chunk(promptgate_llm::scripted::content_chunk("Done."))
            .chunk(promptgate_llm::scripted::finish_chunk("stop"))
            .done(),
    );
    let body = json!({"model": "scripted", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "Think."}]});
    let events = events(post(&gw, "/v1/messages", body).await).await;
    let blocks = events.blocks_started();
    assert_eq!(
        blocks[0],
        &json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    assert_eq!(blocks[1]["type"], "text");
    let deltas: Vec<&str> = events
        .0
        .iter()
        .filter_map(|(_, data)| data["delta"]["type"].as_str())
        .collect();
    assert_eq!(deltas, ["thinking_delta", "signature_delta", "text_delta"]);
}

#[tokio::test]
async fn errors_take_anthropics_shape_and_x_api_key_authenticates() {
    let (gw, upstream, token) = tokens_gateway(Backend::Sqlite).await;
    let body =
        json!({"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]});
    let send = |key: Option<&str>, body: Value| {
        let mut request = gw.http.post(gw.url("/v1/messages")).json(&body);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        async move {
            let res = request.send().await.unwrap();
            let status = res.status();
            let request_id = res.headers().get("request-id").cloned();
            (status, request_id, res.json::<Value>().await.unwrap())
        }
    };
    let (status, request_id, error) = send(None, body.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "authentication_error");
    assert!(error["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(
        error["request_id"].as_str(),
        request_id.as_ref().and_then(|id| id.to_str().ok()),
        "the body names the request as the header does"
    );
    let (status, _, error) = send(Some("wrong"), body.clone()).await;
    assert_eq!(
        (status, &error["error"]["type"]),
        (StatusCode::UNAUTHORIZED, &json!("authentication_error"))
    );

    upstream.push(text(["Hello."]));
    let (status, _, message) = send(Some(&token), body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{message}");
    assert_eq!(message["content"][0]["text"], "Hello.");

    let mut unknown = body.clone();
    unknown["model"] = json!("claude-sonnet-4-5");
    let (status, _, error) = send(Some(&token), unknown).await;
    assert_eq!(
        (status, &error["error"]["type"]),
        (StatusCode::NOT_FOUND, &json!("not_found_error"))
    );
    let (status, _, error) = send(
        Some(&token),
        json!({"model": "scripted", "messages": [{"role": "robot"}]}),
    )
    .await;
    assert_eq!(
        (status, &error["error"]["type"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_request_error"))
    );
    assert!(common::error_message(&error).contains("messages[0]"), "{error}");
}

#[tokio::test]
async fn count_tokens_counts_what_the_model_would_be_sent() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let count = |content: String| {
        let body = json!({"model": "scripted", "tools": [weather_tool()],
            "messages": [{"role": "user", "content": content}]});
        let gw = &gw;
        async move {
            let res = post(gw, "/v1/messages/count_tokens", body).await;
            assert_eq!(res.status(), StatusCode::OK);
            res.json::<Value>().await.unwrap()["input_tokens"]
                .as_u64()
                .unwrap()
        }
    };
    let short = count("Hi".to_owned()).await;
    let long = count("word ".repeat(2_000)).await;
    assert!(
        short > 100,
        "the gateway's own prompt and tools count too: {short}"
    );
    assert!(long >= short + 2_000, "{short} {long}");
    assert_eq!(upstream.calls(), 0, "counting sends nothing upstream");
}

#[tokio::test]
async fn a_client_tool_named_like_a_server_tool_is_an_invalid_request() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let tools = json!([{"name": "render_html", "input_schema": {"type": "object"}}]);
    let res = post(
        &gw,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": 64, "tools": tools, "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let error: Value = res.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(common::error_message(&error).contains("render_html"), "{error}");
    assert_eq!(upstream.calls(), 0);
}

#[tokio::test]
async fn a_streamed_tool_use_after_hidden_server_steps_continues_on_another_instance() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = || scripted_config(AuthMode::SingleUser, &upstream.base_url());
    let first_instance = Gateway::start(Backend::Postgres, config()).await;
    let second_instance = first_instance.another_instance(config()).await;
    // A step the server answers itself (the client never sees it), then a call of the client's tool.
    upstream.push(tool_calls(&[("call_s", "no_such_tool", &["{}"])]));
    upstream.push(tool_calls(&[(
        "call_c",
        "get_weather",
        &["{\"city\":", "\"Oslo\"}"],
    )]));
    upstream.push(text(["Clear skies."]));
    let question = json!({"role": "user", "content": "Weather in Oslo?"});
    let body = json!({"model": "scripted", "max_tokens": 64, "stream": true,
        "tools": [weather_tool()], "messages": [question]});
    let events = events(post(&first_instance, "/v1/messages", body).await).await;
    let starts = events.blocks_started();
    assert_eq!(starts.len(), 1, "only the client's call shows: {starts:?}");
    assert_eq!(starts[0]["type"], "tool_use");
    assert_eq!(starts[0]["name"], "get_weather");
    let id = starts[0]["id"].as_str().unwrap().to_owned();
    let input: String = events
        .0
        .iter()
        .filter_map(|(_, data)| data["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"city": "Oslo"})
    );
    let end = events.0.iter().find(|(name, _)| name == "message_delta").unwrap();
    assert_eq!(end.1["delta"]["stop_reason"], "tool_use");

    let use_block = json!({"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Oslo"}});
    let res = post(
        &second_instance,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": 64, "tools": [weather_tool()], "messages": [
            question,
            {"role": "assistant", "content": [use_block]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "clear"}]}
        ]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["content"][0]["text"], "Clear skies.");
    // Past the system prompt, the model reads what it saw before, its own call, then the result.
    common::assert_continued(&upstream, (1, 2), "call_c", "clear");
}

/// What the model was sent for a Messages request with a length cap and a tool choice (answered).
async fn sent_for(gw: &Gateway, upstream: &ScriptedUpstream, max_tokens: u32, choice: &Value) -> Value {
    upstream.push(text(["Fine."]));
    let res = post(
        gw,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": max_tokens, "tools": [weather_tool()], "tool_choice": choice,
               "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    upstream.last_request().unwrap()
}

#[tokio::test]
async fn a_required_length_is_not_forced_on_an_openai_compatible_model_and_one_call_per_step_is() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let mut choice = json!({"type": "auto", "disable_parallel_tool_use": true});
    let sent = sent_for(&gw, &upstream, 32_000, &choice).await;
    for field in ["max_tokens", "max_completion_tokens"] {
        assert!(
            sent.get(field).is_none(),
            "Claude Code's fixed number is not the model's: {sent}"
        );
    }
    assert_eq!(sent["parallel_tool_calls"], false, "{sent}");

    choice["disable_parallel_tool_use"] = json!(false);
    let sent = sent_for(&gw, &upstream, 64, &choice).await;
    assert!(sent.get("parallel_tool_calls").is_none(), "{sent}");

    let res = post(
        &gw,
        "/v1/messages",
        json!({"model": "scripted", "max_tokens": 0, "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let error: Value = res.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("max_tokens"),
        "{error}"
    );
    assert_eq!(upstream.calls(), 2, "a refused request reaches no model");
}
