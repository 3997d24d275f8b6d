//! The Responses API driven by the clients people point at it: the official `openai` client for
//! JavaScript (tests/js) and Python, and the OpenAI Agents SDK (tests/py). Each runs against a live
//! gateway whose model answers from a scripted upstream on loopback; the test queues the upstream's
//! answers and checks what the client made of the gateway's responses. Without the installed
//! clients the tests fail under CI and are skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;

use promptgate_llm::scripted::{Script, ScriptedUpstream, text, tool_calls};
use serde_json::{Value, json};

use crate::common::{Backend, Gateway, single_user_gateway};
use crate::js_clients::{js_dir, run_for_json, run_node};

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
    let (ok, result) = run_node(dir, &["responses-check.mjs", &gw.url("/v1"), "scripted"]).await;
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
    let events = crate::common::strs(&streamed["events"]);
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

/// tests/py's Python when its venv has `module`, with the folder the scripts are in.
pub fn python_with(module: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/py"));
    let python = dir.join(".venv/bin/python");
    let has_it = python.is_file()
        && Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|out| out.status.success());
    if has_it {
        return Some((python, dir));
    }
    crate::common::skip_without(
        &format!("tests/py/.venv has no {module} package: run tests/py/install.sh"),
        "skipping a Python client check; run tests/py/install.sh to include it",
    )
}

/// Runs a script of tests/py against the gateway at `base_url`; its success and the JSON it printed.
pub async fn run_python(python: PathBuf, dir: PathBuf, script: &str, base_url: String) -> (bool, Value) {
    let args = vec![script.to_owned(), base_url, "scripted".to_owned()];
    run_for_json(python, dir, args).await
}

#[tokio::test]
async fn the_openai_python_client_creates_streams_chains_and_round_trips_a_function_tool() {
    let Some((python, dir)) = python_with("openai") else {
        return;
    };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    queue_js_check(&upstream);
    let (ok, result) = run_python(python, dir, "responses_check.py", gw.url("/v1")).await;
    assert!(ok, "the Python client rejected the Responses API: {result}");
    assert_eq!(result["created"]["text"], "Hello there.");
    assert_eq!(result["created"]["total_tokens"], 12);
    assert_eq!(result["streamed"]["text"], "Once upon a time.");
    let events = result["streamed"]["events"].as_array().unwrap();
    assert_eq!(events.first().unwrap(), "response.created");
    assert_eq!(events.last().unwrap(), "response.completed");
    assert_eq!(result["chained"]["previous"], result["streamed"]["id"]);
    assert_eq!(result["asked"]["types"], json!(["function_call"]));
    assert_eq!(
        result["asked"]["call"],
        json!({"name": "get_weather", "arguments": {"city": "Oslo"}})
    );
    assert_eq!(result["answered"]["text"], "4 degrees in Oslo.");
    assert_eq!(
        crate::common::tool_message(&upstream.requests()[4], "call_w"),
        "{\"celsius\": 4}"
    );
}

#[tokio::test]
async fn an_openai_agents_sdk_agent_runs_its_function_tool_through_the_gateway() {
    let Some((python, dir)) = python_with("agents") else {
        return;
    };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    for city in ["Oslo", "Bergen"] {
        let arguments = format!("{{\"city\":\"{city}\"}}");
        upstream.push(tool_calls(&[("call_w", "get_weather", &[arguments.as_str()])]));
        upstream.push(text([format!("4 degrees in {city}.")]));
    }
    let (ok, result) = run_python(python, dir, "agents_check.py", gw.url("/v1")).await;
    assert!(ok, "the Agents SDK rejected the Responses API: {result}");
    assert_eq!(result["whole"]["output"], "4 degrees in Oslo.");
    assert_eq!(result["streamed"]["output"], "4 degrees in Bergen.");
    assert_eq!(
        result["calls"],
        json!(["Oslo", "Bergen"]),
        "the SDK ran its tool once per run"
    );
    for run in ["whole", "streamed"] {
        assert_eq!(
            result[run]["items"],
            json!(["tool_call_item", "tool_call_output_item", "message_output_item"]),
            "{run}"
        );
    }
    // The agent's instructions follow the gateway's prompt; its tool's result reached the model.
    let requests = upstream.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.ends_with("Answer with the weather tool."), "{system}");
    let result_text = crate::common::tool_message(&requests[1], "call_w");
    assert!(result_text.contains("\"celsius\": 4"), "{result_text}");
}

/// The Codex CLI of tests/codex (`npm ci` there; `.ci/run` does it).
fn codex() -> Option<PathBuf> {
    let bin = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/codex/node_modules/.bin/codex"
    ));
    if bin.is_file() {
        return Some(bin);
    }
    crate::common::skip_without(
        "tests/codex/node_modules is missing: run `npm ci` in tests/codex",
        "skipping the Codex CLI check; run `npm ci` in tests/codex to include it",
    )
}

/// What the file in Codex's working folder says.
const WORKSPACE_NOTE: &str = "greetings from the workspace";

/// Runs `codex exec` on `question` against `gw` with a custom provider on the Responses wire API,
/// in a fresh home and a working folder holding the note; `retries` are its stream retries.
async fn codex_exec(codex: PathBuf, gw: &Gateway, question: &str, retries: u8) -> std::process::Output {
    let root =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("codex-{}-{retries}", std::process::id()));
    let (home, work) = (root.join("home"), root.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("note.txt"), WORKSPACE_NOTE).unwrap();
    let config = format!(
        "model = \"scripted\"\nmodel_provider = \"promptgate\"\n\n[model_providers.promptgate]\n\
         name = \"promptgate\"\nbase_url = \"{}\"\nenv_key = \"PROMPTGATE_KEY\"\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = {retries}\n",
        gw.url("/v1")
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let args = ["exec", "--skip-git-repo-check", question];
    let mut exec = Command::new(codex);
    exec.args(args)
        .current_dir(&work)
        .env("CODEX_HOME", &home)
        .env("HOME", &home)
        .env("PROMPTGATE_KEY", "any-key-in-single-user-mode")
        .stdin(std::process::Stdio::null());
    let out = crate::common::output_of(exec, "codex").await;
    let _ = std::fs::remove_dir_all(&root);
    out
}

#[tokio::test]
async fn the_codex_cli_runs_a_task_with_its_own_tool_through_a_custom_provider() {
    let Some(codex) = codex() else { return };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    // Codex's shell tool reads the file, then the model answers from what it read.
    crate::common::one_call(
        &upstream,
        "call_c",
        "exec_command",
        "{\"cmd\":\"cat note.txt\"}",
        "The note says: greetings.",
    );

    let out = codex_exec(codex, &gw, "What does note.txt say?", 0).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "codex failed: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("The note says: greetings."),
        "{stdout}\nstderr: {stderr}"
    );

    // Codex ran its own tool on its side and sent the result back as a function_call_output.
    assert_eq!(upstream.calls(), 2, "stderr: {stderr}");
    let requests = upstream.requests();
    assert!(
        crate::common::offered_tools(&requests[0]).contains(&"exec_command".to_owned()),
        "Codex's function tools reach the model"
    );
    let result = crate::common::tool_message(&requests[1], "call_c");
    assert!(result.contains(WORKSPACE_NOTE), "{result}");
}

#[tokio::test]
async fn the_codex_cli_stops_on_a_prompt_too_long_instead_of_asking_again() {
    let Some(codex) = codex() else { return };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    let too_long = json!({"error": {"message": "This model's maximum context length is 8192 tokens.",
        "type": "invalid_request_error", "code": "context_length_exceeded"}});
    for _ in 0..3 {
        upstream.push(Script::status(400, &too_long.to_string()));
    }
    // Asked again, the model would answer: a retry shows as this text.
    upstream.replay_by_default(text(["Asked again."]));

    let out = codex_exec(codex, &gw, "Summarise everything.", 2).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("Asked again."), "{stdout}\nstderr: {stderr}");
    assert_eq!(
        upstream.calls(),
        1,
        "Codex reads context_length_exceeded as final: {stdout}\nstderr: {stderr}"
    );
}

/// A provider rate limiting the first request: the stream is answered `429` with the provider's
/// wait before any event, and Codex asks again after it and finishes its task.
#[tokio::test]
async fn the_codex_cli_asks_again_after_a_busy_provider_and_finishes_its_task() {
    let Some(codex) = codex() else { return };
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(crate::common::rate_limited("1"));
    upstream.replay_by_default(text(["Asked again, answered."]));

    let out = codex_exec(codex, &gw, "Say hello.", 2).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("Asked again, answered."),
        "{stdout}\nstderr: {stderr}"
    );
    assert_eq!(upstream.calls(), 2, "{stdout}\nstderr: {stderr}");
}
