//! `POST /v1/responses`, the OpenAI Responses API, against a scripted upstream on loopback: the event
//! sequence of a stream, the whole object, server tools as the API's own items, kept responses and
//! `previous_response_id`, and the refusals. Each test names the scripts it queues.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{
    Backend, Gateway, error_code, init, named_events, scripted_config_with, single_user_gateway,
};
use promptgate_llm::scripted::{
    Script, ScriptedUpstream, Step, content_chunk, finish_chunk, reasoning_chunk, role_chunk, text,
    tool_calls,
};
use promptgate_mcp::testing::{McpTestServer, ServerOptions};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// One event of a response's stream: its `event:` name and its data.
struct Event {
    name: String,
    data: Value,
}

/// Posts a streamed request and reads every event to the end of the body.
async fn stream(gw: &Gateway, body: Value) -> Vec<Event> {
    let mut body = body;
    body["stream"] = json!(true);
    let res = gw
        .response(Method::POST, "/v1/responses", Some(&body), None)
        .await;
    named_events(res)
        .await
        .into_iter()
        .map(|(name, data)| Event { name, data })
        .collect()
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

/// The response object of the stream's terminal event.
fn last_response(events: &[Event]) -> &Value {
    &events.last().unwrap().data["response"]
}

fn output_types(response: &Value) -> Vec<&str> {
    crate::common::strings_at(&response["output"], "type")
}

/// The messages the model was sent in the upstream request `at`, as `role: text` lines (tool calls
/// as `assistant calls name(arguments)`), the system prompt left out.
fn conversation(upstream: &ScriptedUpstream, at: usize) -> Vec<String> {
    let request = &upstream.requests()[at];
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match (m["role"].as_str().unwrap(), m.get("tool_calls")) {
            ("assistant", Some(Value::Array(calls))) => {
                let call = &calls[0]["function"];
                format!(
                    "assistant calls {}({})",
                    call["name"].as_str().unwrap(),
                    call["arguments"].as_str().unwrap()
                )
            }
            (role, _) => format!("{role}: {}", text_of(&m["content"])),
        })
        .collect()
}

/// A message's content as text: a string, or its text parts joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.as_str().unwrap_or_default().to_owned(),
    }
}

fn system_prompt(upstream: &ScriptedUpstream, at: usize) -> String {
    upstream.requests()[at]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_streamed_response_has_the_events_the_clients_expect_and_is_kept() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(reasoning_chunk("Greet "))
            .chunk(reasoning_chunk("back."))
            .chunk(content_chunk("Hello"))
            .chunk(content_chunk(" there."))
            .chunk(finish_chunk("stop"))
            .chunk(json!({"choices": [], "usage": {
                "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 12}}}))
            .done(),
    );
    let events = stream(
        &gw,
        json!({"model": "scripted", "input": "Hi", "metadata": {"ticket": "T-1"}}),
    )
    .await;
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (number, event) in events.iter().enumerate() {
        assert_eq!(
            event.data["type"],
            event.name.as_str(),
            "each event repeats its type"
        );
        assert_eq!(event.data["sequence_number"], number, "numbered in order from 0");
    }
    let created = &events[0].data["response"];
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("resp_"), "{id}");
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["output"], json!([]));
    let done = last_response(&events);
    assert_eq!(done["id"], id, "one id from the first event to the last");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["model"], "scripted");
    assert_eq!(done["metadata"], json!({"ticket": "T-1"}));
    assert_eq!(output_types(done), ["reasoning", "message"]);
    assert_eq!(done["output"][0]["summary"][0]["text"], "Greet back.");
    assert_eq!(done["output"][1]["content"][0]["text"], "Hello there.");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 64},
               "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 160})
    );
    // The deltas point at the item they extend.
    let message_id = done["output"][1]["id"].as_str().unwrap();
    assert!(
        events
            .iter()
            .filter(|e| e.name == "response.output_text.delta")
            .all(|e| e.data["item_id"] == message_id && e.data["output_index"] == 1)
    );

    // Kept before the stream said it completed: the same object, read back.
    let (status, kept) = gw.get(&format!("/v1/responses/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&kept, done);
    let (status, err) = gw.get(&format!("/v1/responses/{id}?stream=true")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a replay is refused, not answered as JSON: {err}"
    );
}

#[tokio::test]
async fn a_whole_response_is_one_object_and_a_failed_one_an_error() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["All ", "good."]));
    let (status, body) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "check", "store": false}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["store"], false);
    assert_eq!(output_types(&body), ["message"]);
    assert_eq!(body["output"][0]["content"][0]["text"], "All good.");
    assert_eq!(body["usage"]["total_tokens"], 12);
    assert!(body["completed_at"].as_i64().unwrap() >= body["created_at"].as_i64().unwrap());

    // A response not kept cannot be read or continued.
    let id = body["id"].as_str().unwrap();
    let (status, err) = gw.get(&format!("/v1/responses/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    let (status, err) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "more", "previous_response_id": id}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{err}");
    assert!(
        err["error"]["message"].as_str().unwrap().contains("response"),
        "{err}"
    );

    // The provider fails before the answer begins: an error, for a stream as for a whole response.
    for streamed in [false, true] {
        upstream.push(Script::status(500, "upstream broke"));
        let again = json!({"model": "scripted", "input": "again", "stream": streamed});
        let (status, err) = gw.post("/v1/responses", again).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "streamed {streamed}: {err}");
        assert_eq!(error_code(&err), "upstream_error");
        assert!(
            !err.to_string().contains("upstream broke"),
            "provider details stay in the log: {err}"
        );
    }
    // Once the stream has begun, a failure is its last event: `response.failed`.
    upstream.push(Script::from(vec![
        Step::Chunk(role_chunk()),
        Step::Chunk(content_chunk("Half ")),
        Step::Delay(std::time::Duration::from_millis(100)),
        Step::Cut,
    ]));
    let events = stream(&gw, json!({"model": "scripted", "input": "again"})).await;
    assert_eq!(events[0].name, "response.created");
    assert_eq!(events.last().unwrap().name, "response.failed");
    let failed = last_response(&events);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "server_error", "{failed}");
}

#[tokio::test]
async fn a_prompt_too_long_or_refused_is_a_400_streamed_or_not_and_never_asked_again() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let refusal = |message: &str, code: Value| {
        json!({"error": {"message": message, "type": "invalid_request_error", "code": code}}).to_string()
    };
    let too_long = refusal(
        "This model's maximum context length is 8192 tokens.",
        json!("context_length_exceeded"),
    );
    let too_many = refusal("max_output_tokens is too large", Value::Null);
    let cases = [(too_long, "context_too_long"), (too_many, "request_refused")];
    for (answer, code) in cases {
        for streamed in [true, false] {
            upstream.push(Script::status(400, &answer));
            let request =
                json!({"model": "scripted", "input": "a story", "store": false, "stream": streamed});
            let (status, err) = gw.post("/v1/responses", request).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "streamed {streamed}: {err}");
            assert_eq!(error_code(&err), code, "streamed {streamed}");
        }
    }
    assert_eq!(upstream.calls(), 4, "a refusal is not asked again");
}

#[tokio::test]
async fn a_rate_limited_provider_is_a_429_with_the_wait_it_asked_for_streamed_or_not() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let limited = || {
        Script::new()
            .step(Step::Header("retry-after".into(), "7".into()))
            .step(Step::Status(
                429,
                json!({"error": {"message": "slow down"}}).to_string(),
            ))
    };
    for streamed in [true, false] {
        let request = json!({"model": "scripted", "input": "a story", "store": false, "stream": streamed});
        upstream.push(limited());
        let res = gw
            .response(Method::POST, "/v1/responses", Some(&request), None)
            .await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "streamed {streamed}");
        assert_eq!(res.headers()["retry-after"], "7");
        let err: Value = res.json().await.unwrap();
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("try again in 7s"),
            "{err}"
        );
        assert_eq!(error_code(&err), "provider_rate_limited");
    }
}

/// Web tools on (the search backend is a port nothing listens on, so searches fail) and MCP
/// timings short enough for tests.
const TOOLS_TOML: &str = "[web]\nsearch = { kind = \"searxng\", base_url = \"http://127.0.0.1:9\" }\n\n\
    [mcp]\ndiscovery_timeout_ms = 800\nprobe_timeout_ms = 800\nliveness_interval_ms = 0\n";

async fn tools_gateway(backend: Backend) -> (Gateway, ScriptedUpstream, McpTestServer) {
    let (gw, upstream) = crate::common::single_user_gateway_with(backend, TOOLS_TOML).await;
    let mcp = McpTestServer::start(ServerOptions::default()).await;
    gw.register_mcp_server("Box", &mcp.url()).await;
    (gw, upstream, mcp)
}

#[tokio::test]
async fn server_tools_show_as_mcp_and_web_search_items_and_the_rest_stays_unseen() {
    let (gw, upstream, _mcp) = tools_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[
        ("c1", "box_echo", &["{\"message\":", "\"hi\"}"]),
        ("c2", "search", &["{\"query\":\"rust\",\"max_results\":3}"]),
        ("c3", "addTasks", &["{\"items\":[\"x\"]}"]),
    ]));
    upstream.push(text(["Done."]));
    let events = stream(&gw, json!({"model": "scripted", "input": "go"})).await;
    let done = last_response(&events);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(output_types(done), ["mcp_call", "web_search_call", "message"]);
    let mcp = &done["output"][0];
    assert_eq!(mcp["server_label"], "Box");
    assert_eq!(mcp["name"], "echo", "the tool's own name on its server");
    assert_eq!(
        serde_json::from_str::<Value>(mcp["arguments"].as_str().unwrap()).unwrap(),
        json!({"message": "hi"})
    );
    assert_eq!(mcp["output"], "echo: hi");
    assert_eq!(mcp["status"], "completed");
    let search = &done["output"][1];
    assert_eq!(search["action"], json!({"type": "search", "query": "rust"}));
    assert_eq!(search["status"], "failed", "the backend is unreachable");
    for kind in [
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
    ] {
        assert!(
            names(&events).contains(&kind),
            "{kind} missing: {:?}",
            names(&events)
        );
    }
    assert!(
        !done.to_string().contains("addTasks"),
        "a built-in tool without an item type runs unseen: {done}"
    );
    assert_eq!(upstream.calls(), 2, "every tool ran on the server");
}

#[tokio::test]
async fn previous_response_id_continues_the_conversation_the_model_saw() {
    let (gw, upstream, _mcp) = tools_gateway(Backend::Postgres).await;
    crate::common::one_call(&upstream, "c1", "box_echo", "{\"message\":\"hi\"}", "It said hi.");
    let (status, first) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "echo hi", "instructions": "Answer in English."}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert!(system_prompt(&upstream, 0).ends_with("\n\nAnswer in English."));

    upstream.push(text(["You asked me to echo."]));
    let (status, second) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "previous_response_id": first["id"], "instructions": "Be brief.",
                   "input": [{"role": "user", "content": [{"type": "input_text", "text": "What did I ask?"}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["previous_response_id"], first["id"]);
    // The model sees the whole first exchange, its MCP call and result included.
    assert_eq!(
        conversation(&upstream, 2),
        [
            "user: echo hi",
            "assistant calls box_echo({\"message\":\"hi\"})",
            "tool: echo: hi",
            "assistant: It said hi.",
            "user: What did I ask?",
        ]
    );
    // Instructions are the request's own.
    let system = system_prompt(&upstream, 2);
    assert!(
        system.ends_with("\n\nBe brief.") && !system.contains("Answer in English."),
        "{system}"
    );

    // Deleting the first leaves the second's chain whole.
    let (status, deleted) = gw
        .delete(&format!("/v1/responses/{}", first["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        deleted,
        json!({"id": first["id"], "object": "response", "deleted": true})
    );
    upstream.push(text(["Still here."]));
    let (status, third) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "previous_response_id": second["id"], "input": "And?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{third}");
    assert_eq!(conversation(&upstream, 3).len(), 7);
}

async fn token_for(gw: &Gateway, name: &str) -> String {
    let user = gw.store.create_user(name).await.unwrap();
    gw.store.issue_token(&user.id).await.unwrap()
}

async fn items_page(gw: &Gateway, path: &str, token: &str, query: &str) -> Value {
    let (status, body) = gw.get_as(&format!("{path}/input_items{query}"), token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn item_texts(page: &Value) -> Vec<&str> {
    crate::common::strings_at(&page["data"], "content")
}

#[tokio::test]
async fn kept_responses_belong_to_their_user_and_page_their_input_items() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = scripted_config_with(AuthMode::Tokens, &upstream.base_url(), "");
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let (alice, bob) = (token_for(&gw, "alice").await, token_for(&gw, "bob").await);
    upstream.push(text(["Fine."]));
    let input: Vec<Value> = (0..5)
        .map(|i| json!({"type": "message", "role": "user", "content": format!("part {i}")}))
        .collect();
    let (status, kept) = gw
        .post_as(
            "/v1/responses",
            json!({"model": "scripted", "input": input}),
            &alice,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let id = kept["id"].as_str().unwrap();
    let path = format!("/v1/responses/{id}");

    for method in [Method::GET, Method::DELETE] {
        let (status, err) = gw.call(method, &path, None, Some(&bob)).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "Bob cannot see or delete Alice's response"
        );
        assert_eq!(error_code(&err), "not_found");
    }

    let newest = items_page(&gw, &path, &alice, "?limit=2").await;
    assert_eq!(
        item_texts(&newest),
        ["part 4", "part 3"],
        "newest first by default"
    );
    assert_eq!(newest["has_more"], true);
    assert_eq!(newest["object"], "list");
    let after = newest["last_id"].as_str().unwrap();
    let next = items_page(&gw, &path, &alice, &format!("?limit=2&after={after}")).await;
    assert_eq!(item_texts(&next), ["part 2", "part 1"]);
    let oldest = items_page(&gw, &path, &alice, "?order=asc&limit=100").await;
    assert_eq!(
        item_texts(&oldest),
        ["part 0", "part 1", "part 2", "part 3", "part 4"]
    );
    assert_eq!(oldest["has_more"], false);
    let (status, err) = gw.get_as(&format!("{path}/input_items?limit=0"), &alice).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");

    let (status, _) = gw.call(Method::DELETE, &path, None, Some(&alice)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = gw.call(Method::GET, &path, None, Some(&alice)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_output_cap_and_sampling_reach_the_provider_and_a_cut_answer_is_incomplete() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Once upon"))
            .chunk(finish_chunk("length"))
            .done(),
    );
    let events = stream(
        &gw,
        json!({"model": "scripted", "input": "A story", "max_output_tokens": 50, "temperature": 0.3, "top_p": 0.5,
               "include": ["reasoning.encrypted_content"], "reasoning": null, "prompt_cache_key": "k"}),
    )
    .await;
    let sent = upstream.last_request().unwrap();
    assert_eq!(sent["max_completion_tokens"], 50);
    assert_eq!(sent["temperature"], 0.3);
    assert_eq!(sent["top_p"], 0.5);
    for left_alone in [
        "include",
        "reasoning",
        "prompt_cache_key",
        "max_output_tokens",
        "metadata",
        "store",
    ] {
        assert!(
            sent.get(left_alone).is_none(),
            "{left_alone} reached the provider: {sent}"
        );
    }
    assert_eq!(events.last().unwrap().name, "response.incomplete");
    let cut = last_response(&events);
    assert_eq!(cut["status"], "incomplete");
    assert_eq!(cut["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert_eq!(cut["output"][0]["content"][0]["text"], "Once upon");
    assert_eq!(cut["max_output_tokens"], 50);
}

#[tokio::test]
async fn requests_the_gateway_cannot_honour_are_refused_before_any_model_call() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let cases = [
        (json!({"input": 7}), StatusCode::UNPROCESSABLE_ENTITY, "input"),
        (
            json!({"input": [{"type": "item_reference", "id": "x"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "item_reference",
        ),
        (
            json!({"input": "x", "tools": [{"type": "file_search", "vector_store_ids": []}]}),
            StatusCode::BAD_REQUEST,
            "file_search",
        ),
        (
            json!({"input": [{"role": "user", "content": "x"},
                             {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "has no function_call_output",
        ),
        (
            json!({"input": "x", "previous_response_id": "resp_nothing"}),
            StatusCode::NOT_FOUND,
            "resp_nothing",
        ),
        (
            json!({"input": "x", "background": true}),
            StatusCode::BAD_REQUEST,
            "background",
        ),
        (
            json!({"input": "x", "model": "nope"}),
            StatusCode::NOT_FOUND,
            "nope",
        ),
    ];
    for (mut body, status, mentions) in cases {
        if body.get("model").is_none() {
            body["model"] = json!("scripted");
        }
        let (got, err) = gw.post("/v1/responses", body.clone()).await;
        assert_eq!(got, status, "{body} → {err}");
        error_code(&err);
        assert!(
            err.to_string().contains(mentions),
            "{err} should mention {mentions}"
        );
    }
    assert_eq!(upstream.calls(), 0);
}

fn weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

/// The client's function call item in a response's output.
fn function_call(response: &Value) -> &Value {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function_call in {response}"))
}

#[tokio::test]
async fn a_function_call_ends_the_response_and_its_output_continues_it_by_id() {
    let (gw, upstream, _mcp) = tools_gateway(Backend::Sqlite).await;
    // The model asks the server's MCP tool first, then calls the client's tool beside a search.
    upstream.push(tool_calls(&[("up_1", "box_echo", &["{\"message\":\"oslo\"}"])]));
    upstream.push(tool_calls(&[
        ("up_2", "get_weather", &["{\"city\":", "\"Oslo\"}"]),
        ("up_3", "search", &["{\"query\":\"oslo\"}"]),
    ]));
    let events = stream(
        &gw,
        json!({"model": "scripted", "input": "Weather in Oslo?", "tools": [weather_tool()]}),
    )
    .await;
    let first = last_response(&events);
    assert_eq!(events.last().unwrap().name, "response.completed");
    assert_eq!(first["status"], "completed", "a hand-off is a complete response");
    assert_eq!(
        output_types(first),
        ["mcp_call", "web_search_call", "function_call"]
    );
    let call = function_call(first);
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["status"], "completed");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Oslo"})
    );
    assert_eq!(
        first["tools"],
        json!([weather_tool()]),
        "the response repeats the client's tools"
    );
    for kind in [
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    ] {
        assert!(
            names(&events).contains(&kind),
            "{kind} missing: {:?}",
            names(&events)
        );
    }
    let offered = crate::common::offered_tools(&upstream.requests()[0]);
    assert!(
        offered.contains(&"get_weather".to_owned()) && offered.contains(&"box_echo".to_owned()),
        "{offered:?}"
    );

    // The output comes back under the id the client was given; the model reads its own history.
    upstream.push(text(["4 degrees in Oslo."]));
    let (status, second) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "previous_response_id": first["id"], "tools": [weather_tool()],
                   "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "{\"c\":4}"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "4 degrees in Oslo.");
    let seen = conversation(&upstream, 2);
    assert_eq!(
        seen[..4],
        [
            "user: Weather in Oslo?",
            "assistant calls box_echo({\"message\":\"oslo\"})",
            "tool: echo: oslo",
            "assistant calls get_weather({\"city\":\"Oslo\"})",
        ],
        "{seen:?}"
    );
    assert_eq!(seen.len(), 6, "both calls of the last step answered: {seen:?}");
    let request = &upstream.requests()[2];
    assert_eq!(
        crate::common::tool_message(request, "up_2"),
        "{\"c\":4}",
        "answers the model's own call id"
    );
    assert!(
        !crate::common::tool_message(request, "up_3").is_empty(),
        "the search's result stays"
    );

    // Without an id, the client sends the items back itself: the server's steps are put back.
    upstream.push(text(["Still 4 degrees."]));
    let mut items = vec![json!({"role": "user", "content": "Weather in Oslo?"})];
    items.extend(first["output"].as_array().unwrap().iter().cloned());
    items.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "{\"c\":4}"}));
    let (status, third) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "store": false, "tools": [weather_tool()], "input": items}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{third}");
    assert_eq!(conversation(&upstream, 3), conversation(&upstream, 2));
}

#[tokio::test]
async fn tool_choice_steers_the_first_step_and_none_offers_no_client_tool() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[("c1", "get_weather", &["{\"city\":\"Rome\"}"])]));
    let (status, body) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "Rome?", "tools": [weather_tool()], "parallel_tool_calls": false,
                   "tool_choice": {"type": "function", "name": "get_weather"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(function_call(&body)["name"], "get_weather");
    let sent = upstream.last_request().unwrap();
    assert_eq!(
        crate::common::offered_tools(&sent),
        ["get_weather"],
        "only the named tool on the first step"
    );
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(body["parallel_tool_calls"], false);

    upstream.push(text(["Sunny."]));
    let (status, body) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "Rome?", "tools": [weather_tool()], "tool_choice": "none"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let offered = crate::common::offered_tools(&upstream.last_request().unwrap());
    assert!(!offered.contains(&"get_weather".to_owned()), "{offered:?}");
    assert_eq!(body["tool_choice"], "none");
}

#[tokio::test]
async fn a_response_the_store_does_not_take_ends_failed_and_is_never_reported_complete() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    // The store loses its table of responses: nothing can be kept from now on.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&gw.database_url).await.unwrap();
    sqlx::query("DROP TABLE responses").execute(&pool).await.unwrap();

    upstream.push(text(["Seen ", "but ", "not ", "kept."]));
    let events = stream(&gw, json!({"model": "scripted", "input": "Hi"})).await;
    assert!(names(&events).contains(&"response.output_text.delta"));
    assert!(
        !names(&events).contains(&"response.completed"),
        "{:?}",
        names(&events)
    );
    assert_eq!(events.last().unwrap().name, "response.failed");
    let failed = last_response(&events);
    assert!(
        crate::common::error_message(failed).contains("could not be stored"),
        "{failed}"
    );

    upstream.push(text(["Not ", "kept."]));
    let (status, err) = gw
        .post("/v1/responses", json!({"model": "scripted", "input": "Hi"}))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{err}");
    assert_eq!(error_code(&err), "not_stored");

    // A response not asked to be kept is not touched by it.
    upstream.push(text(["Fine."]));
    let (status, body) = gw
        .post(
            "/v1/responses",
            json!({"model": "scripted", "input": "Hi", "store": false}),
        )
        .await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::OK, &json!("completed")),
        "{body}"
    );
}

#[tokio::test]
async fn over_a_native_anthropic_provider_thinking_is_reasoning_and_tool_use_a_function_call() {
    use promptgate_llm::scripted::anthropic::{Answer, PromptCounts};
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let text = format!(
        "{}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nbase_url = \"{}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\nthinking = \"budget\"\n\n\
         [[models]]\nid = \"claude\"\nname = \"Claude\"\nprovider = \"claude\"\n\
         upstream_model = \"claude-sonnet-4-5\"\nreasoning = \"low\"\n",
        promptgate_server::config::EMBEDDED_DEFAULT,
        upstream.base_url()
    );
    let mut config = promptgate_server::config::Config::parse(&text).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let counts = |input, cache_read, cache_write| PromptCounts {
        input,
        cache_read,
        cache_write,
    };
    upstream.push(
        Answer::new()
            .counts(counts(300, 0, 2100))
            .thinking("The weather tool knows.", "sig-1")
            .tool_use("toolu_w", "get_weather", &["{\"city\":", "\"Oslo\"}"])
            .script(),
    );
    let events = stream(
        &gw,
        json!({"model": "claude", "input": "Weather in Oslo?", "tools": [weather_tool()], "max_output_tokens": 8000}),
    )
    .await;
    let first = last_response(&events);
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(output_types(first), ["reasoning", "function_call"]);
    assert_eq!(
        first["output"][0]["summary"][0]["text"],
        "The weather tool knows."
    );
    assert_eq!(function_call(first)["name"], "get_weather");
    let sent = upstream.last_request().unwrap();
    assert_eq!(sent["max_tokens"], 8000, "the cap in Anthropic's own field");
    assert!(
        sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "get_weather"),
        "{sent}"
    );

    upstream.push(
        Answer::new()
            .counts(counts(40, 2100, 0))
            .text(["4 degrees ", "in Oslo."])
            .script(),
    );
    let (status, second) = gw
        .post(
            "/v1/responses",
            json!({"model": "claude", "previous_response_id": first["id"], "tools": [weather_tool()],
                   "input": [{"type": "function_call_output", "call_id": function_call(first)["call_id"], "output": "4"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "4 degrees in Oslo.");
    assert_eq!(second["usage"]["input_tokens_details"]["cached_tokens"], 2100);
    let sent = upstream.last_request().unwrap();
    let result = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|block| block["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result: {sent}"));
    assert_eq!(result["tool_use_id"], "toolu_w", "the model's own id");
}
