//! `POST /v1/chat` and friends against a scripted OpenAI-compatible upstream on loopback.
//! Each test names the scripts it queues and the number of upstream calls it expects.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Backend, Gateway, error_code, scripted_config, single_user_gateway, use_chat_body};
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Starts a send in the background and waits until the upstream stub has its request, so the turn
/// is running.
async fn send_until_upstream_called(
    gw: &Gateway,
    upstream: &ScriptedUpstream,
    thread: &str,
    text: &str,
) -> tokio::task::JoinHandle<reqwest::Result<String>> {
    let calls_before = upstream.calls();
    let request = gw
        .http
        .post(gw.url("/v1/chat"))
        .json(&use_chat_body(thread, text, "scripted"));
    let running = tokio::spawn(async move { request.send().await?.text().await });
    for _ in 0..200 {
        if upstream.calls() > calls_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running
}

/// Sends to `thread` while the upstream stub streams 200 words (`<prefix>0 `, `<prefix>1 `, …) 20 ms
/// apart, and reads the answer until `deltas` text deltas have arrived: a turn mid-answer. Returns
/// the rest of the body and what was read.
async fn slow_answer_under_way(
    gw: &Gateway,
    upstream: &ScriptedUpstream,
    thread: &str,
    prefix: &str,
    deltas: usize,
) -> (
    futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    String,
) {
    use futures::StreamExt;
    let pieces: Vec<String> = (0..200).map(|i| format!("{prefix}{i} ")).collect();
    upstream.push(text(pieces).with_delay_between(Duration::from_millis(20)));
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .json(&use_chat_body(thread, "talk", "scripted"))
        .send()
        .await
        .unwrap();
    let mut body = res
        .bytes_stream()
        .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
        .boxed();
    let mut seen = String::new();
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.matches("text-delta").count() >= deltas {
            break;
        }
    }
    (body, seen)
}

async fn text_turn(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    upstream.push(text(["Hel", "lo ", "Ada"]));
    gw.put("/v1/settings", json!({"preferred_name": "Ada"})).await;

    let sse = gw
        .stream("/v1/chat", use_chat_body("chat-1", "Say hello", "scripted"))
        .await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.headers["content-type"], "text/event-stream");
    assert_eq!(sse.headers["x-vercel-ai-ui-message-stream"], "v1");
    assert!(sse.done, "the stream ends with [DONE]");
    assert_eq!(sse.types().first(), Some(&"start"));
    let start = sse.of_type("start")[0];
    assert_eq!(start["messageMetadata"]["modelId"], "scripted");
    assert!(
        start["messageMetadata"]["turnId"]
            .as_str()
            .unwrap()
            .starts_with("turn_")
    );
    assert_eq!(sse.text(), "Hello Ada");
    assert_eq!(sse.of_type("finish")[0]["finishReason"], "stop");
    assert_eq!(upstream.calls(), 1);

    // What the model was sent: our system prompt with the user's name, then the user's message.
    let request = upstream.last_request().unwrap();
    assert_eq!(request["model"], "upstream-model");
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("User name: Ada") && system.contains("Current date/time"),
        "{system}"
    );
    assert_eq!(messages.last().unwrap()["content"], "Say hello");

    // Both messages are stored, the answer with its metadata.
    let stored = gw.stored_messages("chat-1", 2).await;
    assert_eq!(stored[0]["role"], "user");
    assert_eq!(stored[1]["role"], "assistant");
    assert_eq!(stored[1]["status"], "complete");
    assert_eq!(stored[1]["metadata"]["modelId"], "scripted");
    assert_eq!(stored[1]["id"], start["messageId"]);
    let answer: String = stored[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(answer, "Hello Ada");
    let (_, thread) = gw.get("/v1/threads/chat-1").await;
    assert_eq!(
        thread["title"], "Say hello",
        "a new thread is titled from its first message"
    );

    // The next send carries the stored history; the client's copy is not trusted.
    upstream.push(text(["Again"]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("chat-1", "Once more", "scripted"))
        .await;
    assert_eq!(sse.text(), "Again");
    let messages = upstream.last_request().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "Hello Ada");
}

#[tokio::test]
async fn a_use_chat_turn_streams_text_and_is_stored_sqlite() {
    text_turn(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_use_chat_turn_streams_text_and_is_stored_postgres() {
    text_turn(Backend::Postgres).await;
}

#[tokio::test]
async fn an_unknown_tool_becomes_a_tool_error_the_model_sees() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[("call_1", "no_such_tool", &["{\"x\":", "1}"])]));
    upstream.push(text(["Sorry."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("t", "use a tool", "scripted"))
        .await;
    assert_eq!(upstream.calls(), 2);
    let available = sse.of_type("tool-input-available");
    assert_eq!(available.len(), 1);
    assert_eq!(available[0]["toolName"], "no_such_tool");
    let error = sse.of_type("tool-output-error");
    assert_eq!(error.len(), 1, "every tool input is answered: {:?}", sse.types());
    assert_eq!(error[0]["toolCallId"], "call_1");
    let second = &upstream.requests()[1];
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_message["tool_call_id"], "call_1");
    assert!(tool_message["content"].as_str().unwrap().contains("no_such_tool"));
    assert_eq!(sse.text(), "Sorry.");
}

#[tokio::test]
async fn stop_mid_answer_saves_the_partial_answer_as_stopped() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let (mut body, mut seen) = slow_answer_under_way(&gw, &upstream, "s", "w", 3).await;
    use futures::StreamExt;
    let (status, stopped) = gw.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stopped["stopped"], true);
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let sse = common::parse_sse(StatusCode::OK, Default::default(), &seen);
    assert!(sse.types().contains(&"abort"), "{:?}", sse.types());
    assert!(sse.done);

    let stored = gw.stored_messages("s", 2).await;
    assert_eq!(stored[1]["status"], "stopped");
    let partial: String = stored[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(partial.starts_with("w0 w1 w2"), "{partial}");
    assert!(!partial.contains("w199"), "the answer was cut short");
    let (_, again) = gw.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(again["stopped"], false, "nothing runs any more");
}

#[tokio::test]
async fn a_second_send_while_a_turn_runs_is_refused_with_409() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(promptgate_llm::scripted::Script::new().hang());
    let first = send_until_upstream_called(&gw, &upstream, "busy", "one").await;
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .json(&use_chat_body("busy", "two", "scripted"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let body: Value = res.json().await.unwrap();
    assert_eq!(error_code(&body), "turn_in_progress");
    gw.post("/v1/chat/busy/stop", json!({})).await;
    let _ = first.await;
    let stored = gw.stored_messages("busy", 2).await;
    assert_eq!(
        stored.as_array().unwrap().len(),
        2,
        "the refused message was not stored"
    );
}

#[tokio::test]
async fn past_the_limit_of_turns_in_flight_a_send_gets_503_and_nothing_is_stored() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = scripted_config(AuthMode::SingleUser, &upstream.base_url());
    config.turn.max_in_flight = 1;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    // Upstream stub: two calls expected, the hung turn and the send after it ends; the refused
    // sends never reach it.
    upstream.push(promptgate_llm::scripted::Script::new().hang());
    let first = send_until_upstream_called(&gw, &upstream, "long", "one").await;
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .json(&use_chat_body("other", "two", "scripted"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.unwrap();
    assert_eq!(error_code(&body), "overloaded");
    let (status, body) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [{"role": "user", "content": "three"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(error_code(&body), "overloaded");
    let (status, _) = gw.get("/v1/threads/other/messages").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a refused first send creates no thread"
    );
    assert_eq!(upstream.calls(), 1);

    // Once the running turn ends, its place is free again.
    gw.post("/v1/chat/long/stop", json!({})).await;
    let _ = first.await;
    upstream.push(text(["back"]));
    let mut answered = None;
    for _ in 0..100 {
        let sse = gw
            .stream("/v1/chat", use_chat_body("other", "four", "scripted"))
            .await;
        if sse.status == StatusCode::OK {
            answered = Some(sse);
            break;
        }
        // The stopped turn releases its place when its task ends, a moment after the stop.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sse = answered.expect("a send after the turn ended is admitted");
    assert_eq!(sse.text(), "back");
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test]
async fn an_upstream_failure_is_an_error_chunk_and_a_stored_error() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(promptgate_llm::scripted::Script::status(
        401,
        "invalid api key sk-secret",
    ));
    let sse = gw.stream("/v1/chat", use_chat_body("e", "hi", "scripted")).await;
    assert_eq!(sse.status, StatusCode::OK);
    let errors = sse.of_type("error");
    assert_eq!(errors.len(), 1, "{:?}", sse.types());
    assert!(!errors[0]["errorText"].as_str().unwrap().contains("sk-secret"));
    let stored = gw.stored_messages("e", 2).await;
    assert_eq!(stored[1]["status"], "error");
    assert_eq!(stored[0]["parts"][0]["text"], "hi", "the user's message is kept");
    assert!(
        gw.metric(r#"promptgate_upstream_errors_total{provider="scripted",kind="status_4xx"}"#)
            .await
            >= 1.0,
        "the refusal is counted by provider and kind"
    );
    assert_eq!(
        gw.metric(r#"promptgate_turns_total{kind="chat",outcome="error"}"#)
            .await,
        1.0
    );
}

#[tokio::test]
async fn bad_sends_are_json_errors_before_any_stream() {
    let (gw, _upstream) = single_user_gateway(Backend::Sqlite).await;
    let (status, err) = gw.post("/v1/chat", use_chat_body("x", "hi", "no-model")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(err["error"]["message"].as_str().unwrap().contains("no-model"));
    let (status, _) = gw.post("/v1/chat", json!({"id": "x", "messages": []})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = gw.post("/v1/chat", json!({"id": "bad id", "messages": []})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = gw
        .post("/v1/chat", json!({"id": "x", "messages": [{"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "?"}]}]}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = gw
        .post("/v1/threads/nope/messages", json!({"message": "hi"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = gw
        .post(
            "/v1/chat",
            json!({"id": "x", "messages": [{"role": "user", "parts": [{"type": "text", "text": "  "}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    // Regenerating in a thread that does not exist yet has nothing to answer, and starts no thread.
    let regenerate = json!({
        "id": "never-started",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        "trigger": "regenerate-message",
    });
    let (status, err) = gw.post("/v1/chat", regenerate).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    let (status, _) = gw.get("/v1/threads/never-started").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn thread_messages_endpoint_answers_with_the_same_stream() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    gw.post("/v1/threads", json!({"id": "th"})).await;
    upstream.push(text(["Fine."]));
    let sse = gw
        .stream(
            "/v1/threads/th/messages",
            json!({"message": "How are you?", "model": "scripted"}),
        )
        .await;
    assert_eq!(sse.text(), "Fine.");
    let stored = gw.stored_messages("th", 2).await;
    assert_eq!(stored[0]["parts"][0]["text"], "How are you?");
}

#[tokio::test]
async fn a_client_disconnect_stops_the_turn_and_keeps_the_partial_answer() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let (body, _) = slow_answer_under_way(&gw, &upstream, "gone", "p", 2).await;
    drop(body);
    let stored = gw.stored_messages("gone", 2).await;
    assert_eq!(stored[1]["status"], "stopped");
    let partial: String = stored[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(partial.starts_with("p0 p1"), "{partial}");
    assert!(!partial.contains("p199"));
    // The thread is free again for the next send.
    upstream.push(text(["Back."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("gone", "again", "scripted"))
        .await;
    assert_eq!(sse.text(), "Back.");
}

#[tokio::test]
async fn render_html_stores_an_artifact_served_under_a_sandboxing_csp() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let args = json!({"title": "Clock", "html": "<!DOCTYPE html><html><body><h1>Tick</h1><script>document.title='x'</script></body></html>"})
        .to_string();
    upstream.push(tool_calls(&[("call_r", "render_html", &[args.as_str()])]));
    upstream.push(text(["Here it is."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("art", "draw a clock", "scripted"))
        .await;
    assert_eq!(upstream.calls(), 2);
    // Both upstream answers timed to their first event; the tool call counted and timed.
    assert_eq!(
        gw.metric(r#"promptgate_upstream_time_to_first_token_seconds_count{provider="scripted"}"#)
            .await,
        2.0
    );
    assert_eq!(
        gw.metric(r#"promptgate_tool_call_duration_seconds_count{tool="render_html",outcome="ok"}"#)
            .await,
        1.0
    );
    let input = sse.of_type("tool-input-available")[0];
    assert_eq!(input["title"], "Rendering artifact...");
    assert!(input.get("dynamic").is_none(), "built-in tools are static");
    let output = sse.of_type("tool-output-available")[0];
    assert_eq!(output["output"]["ok"], true);
    let url = output["output"]["url"].as_str().unwrap();

    let res = gw.http.get(gw.url(url)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/html; charset=utf-8");
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("sandbox allow-scripts"),
        "{csp}"
    );
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert!(res.text().await.unwrap().contains("<h1>Tick</h1>"));
    assert_eq!(gw.get("/v1/artifacts/not-there").await.0, StatusCode::NOT_FOUND);

    // The model got the tool's result as the tool message.
    let second = &upstream.requests()[1];
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(tool_message["content"].as_str().unwrap().contains("artifact_id"));
}

#[tokio::test]
async fn tasks_tools_are_offered_only_behind_the_experimental_flag() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    gw.post("/v1/threads", json!({"id": "tk"})).await;
    let (_, preview) = gw.get("/v1/threads/tk/prompt?model=scripted").await;
    assert!(
        !preview["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "addTasks")
    );
    gw.put("/v1/settings", json!({"experimental_tasks": true})).await;
    upstream.push(tool_calls(&[(
        "call_t",
        "addTasks",
        &["{\"tasks\":[\"buy milk\",\"call mum\"]}"],
    )]));
    upstream.push(text(["Added."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("tk", "remind me", "scripted"))
        .await;
    let output = sse.of_type("tool-output-available");
    assert_eq!(output.len(), 1, "{:?}", sse.types());
    let rows = output[0]["output"].to_string();
    assert!(rows.contains("buy milk") && rows.contains("call mum"), "{rows}");
    let offered: Vec<String> = upstream.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        offered.contains(&"addTasks".to_owned()) && offered.contains(&"getTasks".to_owned()),
        "{offered:?}"
    );
}
