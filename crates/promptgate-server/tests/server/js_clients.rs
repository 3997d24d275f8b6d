//! Real outside clients against a live promptgate: the AI SDK's own transport and stream reader
//! (what `useChat` runs), and the official `openai` client on the facade. They live in tests/js and
//! need `npm ci` there (`.ci/run` does it). Without node_modules the tests fail under CI and are
//! skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Backend, Gateway};
use promptgate_llm::scripted::{Script, Step};
use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use serde_json::{Value, json};

pub fn js_dir() -> Option<PathBuf> {
    js_dir_with(&["node_modules/ai", "node_modules/openai"])
}

/// tests/js when `needed` (paths in it) are installed; under CI their absence fails the test,
/// elsewhere it skips with a note.
pub fn js_dir_with(needed: &[&str]) -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/js"));
    if needed.iter().all(|path| dir.join(path).exists()) {
        return Some(dir);
    }
    common::skip_without(
        &format!("tests/js lacks {needed:?}: run `npm ci` in tests/js"),
        &format!("skipping a JavaScript client check; run `npm ci` in tests/js to include {needed:?}"),
    )
}

/// What the AI SDK's `useChat` sends for the user's `words` in `chat`, asking for `model`; the
/// checks in tests/js take it whole.
pub fn chat_request(chat: &str, model: &str, words: &str) -> Value {
    json!({
        "chatId": chat,
        "messages": [{"id": format!("{chat}-u"), "role": "user", "parts": [{"type": "text", "text": words}]}],
        "body": {"model": model},
    })
}

/// Runs `node` with `args` in `dir` (see [`run_for_json`]). The arguments are copied, so the future
/// owns everything and a test may spawn it.
pub fn run_node(dir: PathBuf, args: &[&str]) -> impl Future<Output = (bool, Value)> + 'static {
    let args = args.iter().map(|arg| (*arg).to_owned()).collect();
    run_for_json(PathBuf::from("node"), dir, args)
}

/// Runs an outside client's check, `program` with `args` in `dir`, and reads the JSON it prints:
/// whether it succeeded, and that JSON.
pub async fn run_for_json(program: PathBuf, dir: PathBuf, args: Vec<String>) -> (bool, Value) {
    let name = program.display().to_string();
    let mut client = Command::new(program);
    client.current_dir(&dir).args(&args);
    let out = common::output_of(client, &name).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{name} printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), value)
}

/// The embedded default (demo model, no web search): the demo model calls `render_html`.
async fn demo_gateway() -> Gateway {
    let mut config = Config::parse(EMBEDDED_DEFAULT).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    Gateway::start(Backend::Sqlite, config).await
}

/// The chunk types a checker script saw, in order.
fn chunk_types(result: &Value) -> Vec<&str> {
    common::strs(&result["chunks"])
}

#[tokio::test]
async fn the_ai_sdk_accepts_our_stream_and_rebuilds_the_stored_message() {
    let Some(dir) = js_dir() else { return };
    let gw = demo_gateway().await;
    let request = chat_request("js-chat", "demo", "Make me a tiny page");
    let (ok, result) = run_node(
        dir,
        &["ui-stream-check.mjs", &gw.url("/v1/chat"), &request.to_string()],
    )
    .await;
    assert!(ok, "the AI SDK rejected the stream: {result}");
    assert!(result["failure"].is_null(), "{result}");
    let chunks = chunk_types(&result);
    let input = chunks
        .iter()
        .position(|c| *c == "tool-input-available")
        .expect("a tool call");
    let output = chunks
        .iter()
        .position(|c| *c == "tool-output-available")
        .expect("its result");
    assert!(input < output && chunks.last() == Some(&"finish"), "{chunks:?}");

    let message = &result["message"];
    let parts = message["parts"].as_array().unwrap();
    let tool = parts
        .iter()
        .find(|p| p["type"] == "tool-render_html")
        .expect("a render_html part");
    assert_eq!(tool["state"], "output-available");
    assert_eq!(tool["output"]["ok"], true);
    assert!(parts.iter().any(|p| p["type"] == "text" && p["state"] == "done"));
    assert_eq!(message["metadata"]["modelId"], "demo");

    // What the SDK rebuilt is what we stored.
    let stored = gw.stored_messages("js-chat", 2).await;
    assert_eq!(stored[1]["id"], message["id"]);
    let kinds = |parts: &Value| -> Vec<String> {
        parts
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["type"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(kinds(&stored[1]["parts"]), kinds(&message["parts"]));
    let text = |parts: &Value| -> String {
        parts
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect()
    };
    assert_eq!(text(&stored[1]["parts"]), text(&message["parts"]));
}

#[tokio::test]
async fn the_openai_client_consumes_the_facade_streamed_and_whole() {
    let Some(dir) = js_dir() else { return };
    let gw = demo_gateway().await;
    let (ok, result) = run_node(
        dir,
        &["openai-check.mjs", &gw.url("/v1"), "demo", "Make me a tiny page"],
    )
    .await;
    assert!(ok, "the openai client rejected the facade: {result}");
    let models = result["models"].as_array().unwrap();
    let demo = models
        .iter()
        .find(|m| m["id"] == "demo")
        .unwrap_or_else(|| panic!("models.list() did not list demo: {result}"));
    assert_eq!(demo["object"], "model");
    assert_eq!(demo["owned_by"], "system");
    assert_eq!(result["retrieved"]["id"], "demo");
    for mode in ["streamed", "plain"] {
        let completion = &result[mode];
        assert_eq!(completion["finish_reason"], "stop", "{mode}: {completion}");
        assert!(
            completion["tool_calls"].is_null(),
            "{mode}: server-side tool calls must not leak: {completion}"
        );
        assert!(
            !completion["content"].as_str().unwrap_or_default().is_empty(),
            "{mode}: {completion}"
        );
    }
    assert!(
        result["streamed"]["deltas"].as_u64().unwrap() > 1,
        "the answer arrives in pieces"
    );
}

#[tokio::test]
async fn the_ai_sdk_resumes_a_turn_after_its_connection_dropped() {
    resume_with_the_ai_sdk(Backend::Sqlite, false).await;
}

/// Behind a load balancer the reload may reach another instance than the one running the turn.
#[tokio::test]
async fn the_ai_sdk_resumes_a_turn_on_another_instance() {
    resume_with_the_ai_sdk(Backend::Postgres, true).await;
}

async fn resume_with_the_ai_sdk(backend: Backend, on_another_instance: bool) {
    let Some(dir) = js_dir() else { return };
    common::init();
    let upstream = promptgate_llm::scripted::ScriptedUpstream::start().await.unwrap();
    let config = common::scripted_config_with(
        AuthMode::SingleUser,
        &upstream.base_url(),
        "[turn]\non_disconnect = \"continue\"\n",
    );
    let gw = Gateway::start(backend, config.clone()).await;
    let resumer = if on_another_instance {
        Some(gw.another_instance(config).await)
    } else {
        None
    };
    let resume_api = resumer.as_ref().unwrap_or(&gw).url("/v1/chat");
    // Upstream stub: one call, 80 words 25 ms apart, so the turn is still running when the client
    // comes back.
    let words: Vec<String> = (0..80).map(|i| format!("w{i} ")).collect();
    let expected: String = words.concat();
    upstream
        .push(promptgate_llm::scripted::text(words).with_delay_between(std::time::Duration::from_millis(25)));
    let request = chat_request("js-resume", "scripted", "Talk for a while");
    let (ok, result) = run_node(
        dir,
        &[
            "resume-check.mjs",
            &gw.url("/v1/chat"),
            &request.to_string(),
            &resume_api,
        ],
    )
    .await;
    assert!(ok, "the AI SDK could not resume: {result}");
    assert!(
        result["idle"].is_null(),
        "no running turn: 204, which the SDK reads as null: {result}"
    );
    assert_eq!(result["seenBeforeDrop"], 2);
    let chunks = chunk_types(&result);
    assert_eq!(chunks.first(), Some(&"start"), "{chunks:?}");
    assert_eq!(chunks.last(), Some(&"finish"), "{chunks:?}");
    let message = &result["message"];
    let text = common::stored_text(message);
    assert_eq!(text, expected, "the resumed message is the whole answer");

    // The turn outlived the dropped connection and was stored whole.
    let mut stored = gw.stored_messages("js-resume", 2).await;
    for _ in 0..200 {
        if stored[1]["status"] == "complete" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        stored = gw.stored_messages("js-resume", 2).await;
    }
    assert_eq!(stored[1]["status"], "complete");
    assert_eq!(stored[1]["id"], message["id"]);
    assert_eq!(upstream.calls(), 1);
}

/// The scripts of one function-tool round trip: the model calls the client's `get_weather`, then
/// answers from its result.
pub fn weather_round_trip(upstream: &promptgate_llm::scripted::ScriptedUpstream) {
    upstream.push(promptgate_llm::scripted::tool_calls(&[(
        "call_weather",
        "get_weather",
        &["{\"city\":", "\"Oslo\"}"],
    )]));
    upstream.push(promptgate_llm::scripted::text(["Clear skies ", "in Oslo."]));
}

/// What both official `openai` clients must have seen of [`weather_round_trip`], and what the
/// upstream must have been sent back.
pub fn assert_weather_round_trip(result: &Value, upstream: &promptgate_llm::scripted::ScriptedUpstream) {
    assert_eq!(result["call"]["finish_reason"], "tool_calls", "{result}");
    let call = &result["call"]["tool_calls"][0];
    assert_eq!(call["id"], "call_weather", "{result}");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(result["answer"]["content"], "Clear skies in Oslo.");
    assert_eq!(result["answer"]["finish_reason"], "stop");
    let sent = upstream.requests()[1]["messages"].as_array().unwrap().clone();
    let last = sent.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_weather");
    let result_sent: Value = serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
    assert_eq!(result_sent, json!({"city": "Oslo", "sky": "clear"}));
}

#[tokio::test]
async fn the_openai_client_runs_a_function_tool_round_trip() {
    let Some(dir) = js_dir() else { return };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    weather_round_trip(&upstream);
    let (ok, result) = run_node(dir, &["openai-tools-check.mjs", &gw.url("/v1"), "scripted"]).await;
    assert!(ok, "the openai client failed the round trip: {result}");
    assert_weather_round_trip(&result, &upstream);
}

#[tokio::test]
async fn the_openai_client_raises_an_error_for_a_completion_the_server_cut() {
    let Some(dir) = js_dir() else { return };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    upstream.push(
        promptgate_llm::scripted::Script::new()
            .chunk(promptgate_llm::scripted::role_chunk())
            .chunk(promptgate_llm::scripted::content_chunk("Partial "))
            .hang(),
    );
    let client = tokio::spawn(run_node(
        dir,
        &[
            "openai-cut-check.mjs",
            &gw.url("/v1"),
            "scripted",
            "Tell me everything",
        ],
    ));
    while upstream.calls() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // What a shutdown does once its grace is over.
    gw.state.service.stop_all();
    let (_, result) = client.await.unwrap();
    let failed = &result["failed"];
    assert!(
        failed.is_object(),
        "the client took a cut answer for a whole one: {result}"
    );
    assert_eq!(failed["name"], "APIError", "{result}");
    assert!(
        failed["message"].as_str().unwrap().contains("cut short"),
        "{result}"
    );
    assert_eq!(failed["content"].as_str().unwrap().trim_end(), "Partial");
}

/// Clients that send `max_tokens` (or `max_completion_tokens`) on every request get their answer,
/// the cap reaching the provider in its own field; a cap that is not a positive integer is an API
/// error the client raises, and never reaches the provider.
#[tokio::test]
async fn the_openai_client_sets_an_output_cap_on_chat_completions() {
    let Some(dir) = js_dir() else { return };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    upstream.replay_by_default(promptgate_llm::scripted::text(["Hello."]));
    let (ok, result) = run_node(dir, &["openai-max-tokens-check.mjs", &gw.url("/v1"), "scripted"]).await;
    assert!(ok, "the openai client failed: {result}");
    for mode in ["whole", "streamed"] {
        assert_eq!(result[mode]["content"], "Hello.", "{mode}: {result}");
        assert_eq!(result[mode]["finish_reason"], "stop", "{mode}: {result}");
    }
    let caps: Vec<(Value, Value)> = upstream
        .requests()
        .iter()
        .map(|r| (r["max_completion_tokens"].clone(), r["max_tokens"].clone()))
        .collect();
    assert_eq!(
        caps,
        [(json!(50), Value::Null), (json!(30), Value::Null)],
        "each cap in the provider's own field, and only the accepted requests went upstream"
    );
    let refused = result["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 4);
    for refusal in refused {
        assert_eq!(refusal["status"], 422, "{refusal}");
        assert_eq!(refusal["code"], "invalid_body", "{refusal}");
        assert!(
            refusal["message"].as_str().unwrap().contains("max_tokens"),
            "{refusal}"
        );
    }
}

#[tokio::test]
async fn a_request_the_provider_refuses_is_a_400_the_official_clients_do_not_retry() {
    let Some(dir) = js_dir_with(&["node_modules/openai", "node_modules/@anthropic-ai/sdk"]) else {
        return;
    };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    let too_many = json!({"error": {"message": "max_tokens is too large: 900000. This model supports at most 16384 completion tokens.",
        "type": "invalid_request_error", "param": "max_tokens", "code": null}});
    for _ in 0..3 {
        upstream.push(Script::status(400, &too_many.to_string()));
    }
    // A retry would reach this answer and make the call succeed.
    upstream.replay_by_default(promptgate_llm::scripted::text(["Once upon a time."]));
    let base = format!("http://{}", gw.addr);
    let (ok, result) = run_node(dir, &["refused-check.mjs", &base, "scripted"]).await;
    assert!(ok, "a client failed: {result}");
    for facade in ["completions", "responses"] {
        let refusal = &result[facade];
        assert_eq!(refusal["status"], 400, "{facade}: {refusal}");
        assert_eq!(refusal["code"], "request_refused", "{facade}: {refusal}");
        let message = refusal["message"].as_str().unwrap();
        assert!(
            message.contains("will not help") && !message.contains("16384"),
            "what the provider said stays in the log: {message}"
        );
    }
    assert_eq!(result["messages"]["status"], 400, "{result}");
    assert_eq!(result["messages"]["code"], "invalid_request_error", "{result}");
    assert_eq!(upstream.calls(), 3, "each client asked once: {result}");
}

#[tokio::test]
async fn a_busy_provider_reaches_the_official_clients_as_their_own_error_with_its_wait() {
    let Some(dir) = js_dir_with(&["node_modules/openai", "node_modules/@anthropic-ai/sdk"]) else {
        return;
    };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    let busy = |status: u16, wait: &str| {
        Script::new()
            .step(Step::Header("retry-after".into(), wait.into()))
            .step(Step::Status(
                status,
                json!({"error": {"message": "slow down"}}).to_string(),
            ))
    };
    // Each client calls twice: the provider is rate limiting, then overloaded (Anthropic's 529);
    // then one stream each, rate limited.
    for (status, wait) in [(429, "7"), (503, "2"), (429, "7"), (529, "3")]
        .into_iter()
        .chain([(429, "5"); 3])
    {
        upstream.push(busy(status, wait));
    }
    let base = format!("http://{}", gw.addr);
    let (ok, result) = run_node(dir, &["busy-check.mjs", &base, "scripted", "2"]).await;
    assert!(ok, "a client failed: {result}");
    let seen = |api: &str, at: usize| {
        let call = &result[api][at];
        (
            call["status"].clone(),
            call["code"].clone(),
            call["retryAfter"].clone(),
        )
    };
    assert_eq!(
        [seen("completions", 0), seen("completions", 1)],
        [
            (json!(429), json!("provider_rate_limited"), json!("7")),
            (json!(503), json!("provider_overloaded"), json!("2")),
        ]
    );
    assert_eq!(
        [seen("messages", 0), seen("messages", 1)],
        [
            (json!(429), json!("rate_limit_error"), json!("7")),
            (json!(503), json!("overloaded_error"), json!("3")),
        ]
    );
    // A stream the provider refused before its first token has the status a client retries on.
    let streamed = |api: &str| {
        let call = &result["streamed"][api];
        (
            call["status"].clone(),
            call["code"].clone(),
            call["retryAfter"].clone(),
        )
    };
    assert_eq!(
        [
            streamed("completions"),
            streamed("responses"),
            streamed("messages")
        ],
        [
            (json!(429), json!("provider_rate_limited"), json!("5")),
            (json!(429), json!("provider_rate_limited"), json!("5")),
            (json!(429), json!("rate_limit_error"), json!("5")),
        ],
        "{result}"
    );
}
