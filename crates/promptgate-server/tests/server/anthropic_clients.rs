//! Anthropic's own clients against a live promptgate over an OpenAI-compatible upstream: the official
//! `@anthropic-ai/sdk` (messages.stream, a tool-use round trip, countTokens) and Claude Code
//! (`claude -p` with `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`), which completes a task with one
//! of its own tools. Both are pinned in tests/js and need `npm ci` there; without them the tests fail
//! under CI and are skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;

use promptgate_llm::scripted::{text, tool_calls};
use serde_json::json;

use crate::common::{self, Backend, Gateway};
use crate::js_clients::{js_dir_with, run_node};

/// Claude Code's launcher, as `npm ci` installs it in tests/js.
const CLAUDE: &str = "node_modules/.bin/claude";

#[tokio::test]
async fn the_anthropic_sdk_streams_runs_a_tool_round_trip_counts_tokens_and_lists_models() {
    let Some(dir) = js_dir_with(&["node_modules/@anthropic-ai/sdk"]) else {
        return;
    };
    let (gw, upstream, token) = common::tokens_gateway(Backend::Sqlite).await;
    upstream.push(text(["Hello ", "from ", "the gateway."]));
    upstream.push(tool_calls(&[(
        "call_w",
        "get_weather",
        &["{\"city\":", "\"Oslo\"}"],
    )]));
    upstream.push(text(["Clear skies ", "in Oslo."]));
    let base = format!("http://{}", gw.addr);
    let (ok, result) = run_node(dir, &["anthropic-check.mjs", &base, "scripted", &token]).await;
    assert!(ok, "the Anthropic SDK failed: {result}");

    let streamed = &result["streamed"];
    let texts = common::strs(&streamed["texts"]);
    assert!(texts.len() > 1, "the answer arrives in pieces: {texts:?}");
    assert_eq!(texts.concat(), "Hello from the gateway.");
    let content = streamed["message"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{streamed}");
    assert_eq!(
        (content[0]["type"].as_str(), content[0]["text"].as_str()),
        (Some("text"), Some("Hello from the gateway."))
    );
    assert_eq!(streamed["message"]["stop_reason"], "end_turn");

    let call = &result["call"];
    assert_eq!(call["stop_reason"], "tool_use");
    let use_block = common::where_eq(&call["content"], "type", "tool_use")[0];
    assert_eq!(use_block["input"], json!({"city": "Oslo"}));
    assert_eq!(result["answer"]["content"][0]["text"], "Clear skies in Oslo.");
    let sent = upstream.requests()[2]["messages"].as_array().unwrap().clone();
    let last = sent.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), last["tool_call_id"].as_str()),
        (Some("tool"), Some("call_w"))
    );

    assert!(result["count"]["input_tokens"].as_u64().unwrap() > 0, "{result}");
    assert_eq!(upstream.calls(), 3, "counting tokens asks nothing upstream");
    let models = result["models"].as_array().unwrap();
    assert!(
        models
            .iter()
            .any(|m| m["id"] == "scripted" && m["type"] == "model" && m["created_at"].is_string()),
        "the SDK lists the gateway's models: {result}"
    );
    assert_eq!(result["model"]["id"], "scripted");
    assert_eq!(result["model"]["type"], "model");
}

#[tokio::test]
async fn claude_code_completes_a_task_with_its_own_tool_through_the_gateway() {
    let Some(dir) = js_dir_with(&[CLAUDE]) else { return };
    let claude = dir.join(CLAUDE);
    let (gw, upstream, token) = common::tokens_gateway(Backend::Sqlite).await;
    let home = std::env::temp_dir().join(format!("promptgate-claude-{}", std::process::id()));
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let target = work.join("hello.txt");
    // The model writes the file with Claude Code's own Write tool, then says it is done.
    let write =
        json!({"file_path": target.to_string_lossy(), "content": "hi from the gateway\n"}).to_string();
    upstream.push(tool_calls(&[("call_write", "Write", &[write.as_str()])]));
    upstream.push(text(["Wrote hello.txt."]));

    let claude_code = claude_print(&claude, &gw, &token, &work, "Write hello.txt saying hi");
    let out = common::output_of(claude_code, "claude").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude failed: {stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "Wrote hello.txt.", "stderr: {stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi from the gateway\n");

    // Claude Code's first request offered its own tools; the second carried the Write's result.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let offered = common::offered_tools(&requests[0]);
    assert!(
        ["Bash", "Read", "Write", "Edit"]
            .iter()
            .all(|t| offered.iter().any(|o| o == t)),
        "{offered:?}"
    );
    let result = common::tool_message(&requests[1], "call_write");
    assert!(result.contains("hello.txt"), "{result}");
    let _ = std::fs::remove_dir_all(home_of(&target));
}

/// `claude -p PROMPT` in `work` against the gateway with `token`, accepting its edits, every model
/// it uses named by its environment as docs/api.md's recipe says.
fn claude_print(
    claude: &std::path::Path,
    gw: &Gateway,
    token: &str,
    work: &std::path::Path,
    prompt: &str,
) -> Command {
    let home = work.parent().unwrap();
    let mut claude_code = Command::new("timeout");
    claude_code
        .arg("180")
        .arg(claude)
        .args(["-p", prompt, "--permission-mode", "acceptEdits"])
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", gw.addr))
        .env("ANTHROPIC_API_KEY", token)
        .env("ANTHROPIC_MODEL", "scripted")
        // Side requests (titles, summaries) go to the offline demo model, not to the script.
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "demo")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "demo")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    claude_code
}

/// A provider rate limiting the first request: the stream is answered `429` with the provider's
/// wait before any event, and Claude Code asks again after it and prints the answer.
#[tokio::test]
async fn claude_code_asks_again_after_a_busy_provider_and_prints_the_answer() {
    let Some(dir) = js_dir_with(&[CLAUDE]) else { return };
    let (gw, upstream, token) = common::tokens_gateway(Backend::Sqlite).await;
    let home = std::env::temp_dir().join(format!("promptgate-claude-busy-{}", std::process::id()));
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    upstream.push(crate::common::rate_limited("1"));
    upstream.replay_by_default(text(["Asked again, answered."]));

    let out = common::output_of(
        claude_print(&dir.join(CLAUDE), &gw, &token, &work, "Say hello"),
        "claude",
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude failed: {stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "Asked again, answered.", "stderr: {stderr}");
    assert_eq!(upstream.calls(), 2, "asked once more after the wait");
    let _ = std::fs::remove_dir_all(&home);
}

fn home_of(target: &std::path::Path) -> PathBuf {
    target.parent().and_then(|work| work.parent()).unwrap().to_owned()
}
