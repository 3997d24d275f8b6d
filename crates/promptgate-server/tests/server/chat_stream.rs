//! `POST /v1/chat` and friends against a scripted OpenAI-compatible upstream on loopback.
//! Each test names the scripts it queues and the number of upstream calls it expects.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{
    Backend, Gateway, error_code, hung_turn, message_retry, read_rest, resume, scripted_config,
    single_user_gateway, slow_answer_under_way, use_chat_body, use_chat_retry, words,
};
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn a_use_chat_turn_streams_text_and_is_stored(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    upstream.push(text(["Hel", "lo ", "Ada"]));
    gw.put("/v1/settings", json!({"preferred_name": "Ada"})).await;

    let sse = gw.chat("chat-1", "Say hello").await;
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
    let answer = common::stored_text(&stored[1]);
    assert_eq!(answer, "Hello Ada");
    let (_, thread) = gw.get("/v1/threads/chat-1").await;
    assert_eq!(
        thread["title"], "Say hello",
        "a new thread is titled from its first message"
    );

    // The next send carries the stored history; the client's copy is not trusted.
    upstream.push(text(["Again"]));
    let sse = gw.chat("chat-1", "Once more").await;
    assert_eq!(sse.text(), "Again");
    let messages = upstream.last_request().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "Hello Ada");
}

common::on_both_backends!(a_use_chat_turn_streams_text_and_is_stored);

#[tokio::test]
async fn an_unknown_tool_becomes_a_tool_error_the_model_sees() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(tool_calls(&[("call_1", "no_such_tool", &["{\"x\":", "1}"])]));
    upstream.push(text(["Sorry."]));
    let sse = gw.chat("t", "use a tool").await;
    assert_eq!(upstream.calls(), 2);
    let available = sse.of_type("tool-input-available");
    assert_eq!(available.len(), 1);
    assert_eq!(available[0]["toolName"], "no_such_tool");
    let error = sse.of_type("tool-output-error");
    assert_eq!(error.len(), 1, "every tool input is answered: {:?}", sse.types());
    assert_eq!(error[0]["toolCallId"], "call_1");
    let second = &upstream.requests()[1];
    assert!(common::tool_message(second, "call_1").contains("no_such_tool"));
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
    let partial = common::stored_text(&stored[1]);
    assert!(partial.starts_with("w0 w1 w2"), "{partial}");
    assert!(!partial.contains("w199"), "the answer was cut short");
    let (_, again) = gw.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(again["stopped"], false, "nothing runs any more");
}

/// A send to `thread` that is to be refused: its status and error code.
async fn refused_send(gw: &Gateway, thread: &str) -> (StatusCode, String) {
    let (status, body) = gw
        .post("/v1/chat", use_chat_body(thread, "two", "scripted"))
        .await;
    (status, error_code(&body).to_owned())
}

#[tokio::test]
async fn a_second_send_while_a_turn_runs_is_refused_with_409() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let first = hung_turn(&gw, &upstream, "busy").await;
    assert_eq!(
        refused_send(&gw, "busy").await,
        (StatusCode::CONFLICT, "turn_in_progress".to_owned())
    );
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
    let first = hung_turn(&gw, &upstream, "long").await;
    assert_eq!(
        refused_send(&gw, "other").await,
        (StatusCode::SERVICE_UNAVAILABLE, "overloaded".to_owned())
    );
    let (status, body) = gw.complete("three").await;
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
        let sse = gw.chat("other", "four").await;
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
    let sse = gw.chat("e", "hi").await;
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
        .thread_message("th", json!({"message": "How are you?", "model": "scripted"}))
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
    let partial = common::stored_text(&stored[1]);
    assert!(partial.starts_with("p0 p1"), "{partial}");
    assert!(!partial.contains("p199"));
    // The thread is free again for the next send.
    upstream.push(text(["Back."]));
    let sse = gw.chat("gone", "again").await;
    assert_eq!(sse.text(), "Back.");
}

#[tokio::test]
async fn render_html_stores_an_artifact_served_under_a_sandboxing_csp() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let args = json!({"title": "Clock", "html": "<!DOCTYPE html><html><body><h1>Tick</h1><script>document.title='x'</script></body></html>"})
        .to_string();
    upstream.push(tool_calls(&[("call_r", "render_html", &[args.as_str()])]));
    upstream.push(text(["Here it is."]));
    let sse = gw.chat("art", "draw a clock").await;
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
    // The artifact's row written once, and the answer's saves timed under their own operation.
    assert_eq!(
        gw.metric(r#"promptgate_store_query_duration_seconds_count{op="artifacts.create_artifact"}"#)
            .await,
        1.0
    );
    assert!(
        gw.metric(r#"promptgate_store_query_duration_seconds_count{op="messages.update_message"}"#)
            .await
            >= 1.0
    );
    // The thread's claim (one running turn per thread) is a database call like any other.
    assert_eq!(
        gw.metric(r#"promptgate_store_query_duration_seconds_count{op="turn_claims.claim_turn"}"#)
            .await,
        1.0
    );
    let input = sse.of_type("tool-input-available")[0];
    assert_eq!(input["title"], "Rendering artifact...");
    assert!(input.get("dynamic").is_none(), "built-in tools are static");
    let output = sse.of_type("tool-output-available")[0];
    assert_eq!(output["output"]["ok"], true);
    let url = output["output"]["url"].as_str().unwrap();

    let res = gw.response(Method::GET, url, None, None).await;
    assert_eq!(res.status(), StatusCode::OK);
    let csp = common::html_page_policy(&res);
    assert!(
        csp.contains("default-src 'none'") && csp.contains("sandbox allow-scripts"),
        "{csp}"
    );
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert!(res.text().await.unwrap().contains("<h1>Tick</h1>"));
    assert_eq!(gw.get("/v1/artifacts/not-there").await.0, StatusCode::NOT_FOUND);

    // The model got the tool's result as the tool message.
    let results = common::tool_results(&upstream.requests()[1]);
    assert!(results[0].contains("artifact_id"), "{results:?}");
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
    common::one_call(
        &upstream,
        "call_t",
        "addTasks",
        "{\"tasks\":[\"buy milk\",\"call mum\"]}",
        "Added.",
    );
    let sse = gw.chat("tk", "remind me").await;
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

/// A gateway whose dropped clients leave their turns running.
async fn continuing_gateway(backend: Backend) -> (Gateway, ScriptedUpstream) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = common::scripted_config_with(
        AuthMode::SingleUser,
        &upstream.base_url(),
        "[turn]\non_disconnect = \"continue\"\n",
    );
    let gw = Gateway::start(backend, config).await;
    (gw, upstream)
}

#[tokio::test]
async fn resuming_a_thread_without_a_running_turn_is_204() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let res = gw
        .response(Method::GET, "/v1/chat/never/stream", None, None)
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(res.text().await.unwrap().is_empty());
    // Nor once its turn is over.
    upstream.push(text(["Done."]));
    let sse = gw.chat("over", "hi").await;
    assert_eq!(sse.text(), "Done.");
    let res = gw.response(Method::GET, "/v1/chat/over/stream", None, None).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_second_reader_gets_the_whole_stream_from_start_and_the_same_text() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let (body, seen) = slow_answer_under_way(&gw, &upstream, "two", "r", 3).await;
    let (follower, third, owner) =
        tokio::join!(resume(&gw, "two"), resume(&gw, "two"), read_rest(body, seen));
    assert_eq!(third.events, follower.events, "any number of readers may follow");
    assert_eq!(follower.status, StatusCode::OK);
    assert_eq!(follower.headers["content-type"], "text/event-stream");
    assert_eq!(follower.headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(follower.types().first(), Some(&"start"), "{:?}", follower.types());
    assert!(follower.done && owner.done);
    assert_eq!(owner.text(), words("r"));
    assert_eq!(follower.text(), owner.text());
    assert_eq!(follower.events, owner.events, "both readers see the same chunks");
    assert_eq!(follower.headers["x-promptgate-turn-id"], owner.turn_id());
    let stored = gw.stored_messages("two", 2).await;
    assert_eq!(stored[1]["status"], "complete");
}

async fn with_continue_a_dropped_client_leaves_the_turn_running_and_a_resume_gets_it(backend: Backend) {
    let (gw, upstream) = continuing_gateway(backend).await;
    common::drop_then_resume(&gw, &gw, &upstream, "cont").await;
}

common::on_both_backends!(with_continue_a_dropped_client_leaves_the_turn_running_and_a_resume_gets_it);

#[tokio::test]
async fn with_stop_a_dropped_client_stops_the_turn_and_its_followers_see_the_end() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let (body, _) = slow_answer_under_way(&gw, &upstream, "halt", "h", 2).await;
    let res = gw.response(Method::GET, "/v1/chat/halt/stream", None, None).await;
    assert_eq!(res.status(), StatusCode::OK);
    drop(body);
    let follower = common::parse_sse(StatusCode::OK, Default::default(), &res.text().await.unwrap());
    assert_eq!(follower.types().first(), Some(&"start"));
    assert!(follower.types().contains(&"abort"), "{:?}", follower.types());
    assert!(follower.done);
    assert!(!follower.text().contains("h199"), "the turn was cut short");
    let stored = gw.stored_messages("halt", 2).await;
    assert_eq!(stored[1]["status"], "stopped");
}

#[tokio::test]
async fn an_unknown_retry_of_is_a_404_on_both_routes_in_both_spellings() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    for field in ["retryOf", "retry_of"] {
        let (status, err) = gw
            .post("/v1/chat", use_chat_retry("rt", "hi", field, "turn_0000"))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{field}: {err}");
        assert_eq!(error_code(&err), "unknown_turn");
    }
    let (status, _) = gw.get("/v1/threads/rt").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a refused retry creates no thread");

    upstream.push(text(["First."]));
    let first = gw.chat("rt", "hi").await;
    let turn = first.turn_id();
    for field in ["retryOf", "retry_of"] {
        let (status, err) = gw
            .post(
                "/v1/threads/rt/messages",
                message_retry("again", field, "turn_0000"),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{field}: {err}");
        assert_eq!(error_code(&err), "unknown_turn");
    }
    assert_eq!(
        gw.stored_messages("rt", 2).await.as_array().unwrap().len(),
        2,
        "nothing of a refused retry is stored"
    );
    // A known turn is retried, whichever spelling names it.
    upstream.push(text(["Second."]));
    let sse = gw
        .thread_message("rt", message_retry("again", "retryOf", &turn))
        .await;
    assert_eq!(sse.text(), "Second.");
    upstream.push(text(["Third."]));
    let sse = gw
        .stream("/v1/chat", use_chat_retry("rt", "more", "retry_of", &turn))
        .await;
    assert_eq!(sse.text(), "Third.");
    // A turn of another thread is not this thread's to retry.
    let (status, _) = gw
        .post(
            "/v1/threads/rt-other/messages",
            json!({"message": "x", "retry_of": turn}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_retry_on_the_thread_route_answers_the_stored_prompt_without_storing_it_again() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Low tide at six."]));
    let first = gw.chat("rq", "When is low tide?").await;
    let turn = first.turn_id();

    upstream.push(text(["Low tide is at 6:10."]));
    let retry = gw
        .thread_message("rq", message_retry("When is low tide?", "retry_of", &turn))
        .await;
    assert_eq!(retry.text(), "Low tide is at 6:10.");
    // The model sees the question once, as the last message, not the replaced answer after it.
    let sent = upstream.last_request().unwrap();
    let user_turns: Vec<&Value> = common::where_eq(&sent["messages"], "role", "user");
    assert_eq!(user_turns.len(), 1, "{sent}");
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["role"],
        "user"
    );

    // Stored: the question once; the retry's answer replaced the first one.
    let (_, everything) = gw.get("/v1/threads/rq/messages?replaced=true").await;
    let roles: Vec<&str> = common::strings_at(&everything, "role");
    assert_eq!(roles, ["user", "assistant", "assistant"]);
    let now = gw.stored_messages("rq", 2).await;
    assert_eq!(now.as_array().unwrap().len(), 2);
    assert_eq!(common::stored_text(&now[1]), "Low tide is at 6:10.");
}

#[tokio::test]
async fn voice_mode_and_ask_answers_from_the_body_reach_the_model_as_notes() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Sure."]));
    let mut body = use_chat_body("notes", "Plan my day", "scripted");
    body["voiceMode"] = json!(true);
    body["askResponses"] = json!([
        {"prompt": "Which beach?", "chosen": ["North", "South"]},
        {"prompt": "Anything to avoid?", "answer": "crowds"},
        {"prompt": "Bring a dog?", "chosen": []},
    ]);
    let sse = gw.stream("/v1/chat", body).await;
    assert_eq!(sse.text(), "Sure.");
    let sent = upstream.last_request().unwrap();
    let system = sent["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
        + &sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system")
            .map(|m| m["content"].to_string())
            .collect::<String>();
    assert!(system.contains("voice mode"), "{system}");
    assert!(system.contains("## User responses"), "{system}");
    assert!(
        system.contains("- \"Which beach?\" \u{2014} chose \"North\", \"South\""),
        "{system}"
    );
    assert!(system.contains("answered \"crowds\""), "{system}");
    assert!(
        system.contains("- \"Bring a dog?\" \u{2014} (no response)"),
        "{system}"
    );

    // Without the fields the next send carries neither note.
    upstream.push(text(["Done."]));
    gw.thread_message("notes", json!({"message": "Thanks", "model": "scripted"}))
        .await;
    let sent = upstream.last_request().unwrap().to_string();
    assert!(!sent.contains("voice mode") && !sent.contains("User responses"));

    // An entry with both kinds of answer (or neither) is refused before anything is stored.
    let (status, err) = gw
        .post(
            "/v1/threads/notes/messages",
            json!({"message": "x", "ask_responses": [{"prompt": "Q", "chosen": ["a"], "answer": "b"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(error_code(&err), "invalid_body");
    assert!(common::error_message(&err).contains("either chosen"), "{err}");
    assert_eq!(gw.stored_messages("notes", 4).await.as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn another_user_cannot_follow_a_running_turn() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        Backend::Sqlite,
        scripted_config(AuthMode::Tokens, &upstream.base_url()),
    )
    .await;
    let token = |name: &'static str| {
        let store = gw.store.clone();
        async move {
            let user = store.create_user(name).await.unwrap();
            store.issue_token(&user.id).await.unwrap()
        }
    };
    let (bob, alice) = (token("bob").await, token("alice").await);
    upstream.push(promptgate_llm::scripted::Script::new().hang());
    let request = gw
        .http
        .post(gw.url("/v1/chat"))
        .bearer_auth(&bob)
        .json(&use_chat_body("bobs", "secret plans", "scripted"));
    let sending = tokio::spawn(async move { request.send().await?.text().await });
    for _ in 0..200 {
        if upstream.calls() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let as_alice = gw
        .response(Method::GET, "/v1/chat/bobs/stream", None, Some(&alice))
        .await;
    assert_eq!(as_alice.status(), StatusCode::NO_CONTENT);
    let as_bob = gw
        .response(Method::GET, "/v1/chat/bobs/stream", None, Some(&bob))
        .await;
    assert_eq!(as_bob.status(), StatusCode::OK, "the owner can follow it");
    let (status, _) = gw.post_as("/v1/chat/bobs/stop", json!({}), &bob).await;
    assert_eq!(status, StatusCode::OK);
    let followed = common::parse_sse(StatusCode::OK, Default::default(), &as_bob.text().await.unwrap());
    assert_eq!(followed.types().first(), Some(&"start"));
    assert!(followed.done);
    let _ = sending.await;
}
