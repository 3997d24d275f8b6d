//! Golden transcripts: upstream streams kept as SSE files under `fixtures/` (OpenAI chat-completions
//! and Anthropic Messages, in the providers' own wire formats) are replayed byte for byte by the
//! scripted upstream, and the events the client parses out of them are pinned as snapshots. A parser
//! change shows up as a snapshot diff to review.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Outcome, ask, client, run, upstream, with_think_tags};
use promptgate_llm::scripted::{Script, ScriptedUpstream};
use promptgate_llm::{Anthropic, AnthropicConfig, ThinkingMode};

fn transcript(path: &str) -> Script {
    let path = format!("{}/tests/llm/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    Script::new().raw(std::fs::read_to_string(&path).unwrap())
}

/// One event a line, then how the stream ended.
fn render(outcome: &Outcome) -> String {
    let mut lines: Vec<String> = outcome.events.iter().map(|e| format!("{e:?}")).collect();
    lines.push(match &outcome.error {
        Some(error) => format!("error: {error}"),
        None => "end of stream".to_owned(),
    });
    lines.join("\n")
}

fn anthropic(upstream: &ScriptedUpstream) -> Anthropic {
    let mut config = AnthropicConfig::new("claude", upstream.base_url());
    config.provider.api_key = Some("sk-ant-test-secret".into());
    config.thinking = ThinkingMode::Adaptive;
    Anthropic::new(config).unwrap()
}

#[tokio::test]
async fn openai_text_with_cached_usage() {
    let upstream = upstream().await;
    upstream.push(transcript("openai/text_with_usage.sse"));
    let outcome = run(&client(&upstream), ask("When is high tide?")).await;
    insta::assert_snapshot!("openai_text_with_usage", render(&outcome));
}

#[tokio::test]
async fn openai_reasoning_then_parallel_tool_calls() {
    let upstream = upstream().await;
    upstream.push(transcript("openai/reasoning_and_tool_calls.sse"));
    let outcome = run(&client(&upstream), ask("Tides in Brest and Cherbourg?")).await;
    insta::assert_snapshot!("openai_reasoning_and_tool_calls", render(&outcome));
}

#[tokio::test]
async fn openai_think_tags_split_across_chunks() {
    let upstream = upstream().await;
    upstream.push(transcript("openai/think_tags.sse"));
    let outcome = run(&with_think_tags(&upstream), ask("When is high tide?")).await;
    insta::assert_snapshot!("openai_think_tags", render(&outcome));
}

#[tokio::test]
async fn anthropic_text_with_cache_read() {
    let upstream = upstream().await;
    upstream.push(transcript("anthropic/text_cache_read.sse"));
    let outcome = run(&anthropic(&upstream), ask("When is high tide?")).await;
    insta::assert_snapshot!("anthropic_text_cache_read", render(&outcome));
}

#[tokio::test]
async fn anthropic_thinking_then_tool_use() {
    let upstream = upstream().await;
    upstream.push(transcript("anthropic/tool_use_with_thinking.sse"));
    let outcome = run(&anthropic(&upstream), ask("Tides in Brest?")).await;
    insta::assert_snapshot!("anthropic_tool_use_with_thinking", render(&outcome));
}

#[tokio::test]
async fn anthropic_overloaded_mid_stream() {
    let upstream = upstream().await;
    upstream.push(transcript("anthropic/overloaded_mid_stream.sse"));
    let outcome = run(&anthropic(&upstream), ask("When is high tide?")).await;
    insta::assert_snapshot!("anthropic_overloaded_mid_stream", render(&outcome));
}
