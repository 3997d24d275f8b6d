//! Golden transcripts: upstream streams kept as SSE files under `fixtures/` (OpenAI chat-completions
//! and Anthropic Messages, in the providers' own wire formats) are replayed byte for byte by the
//! scripted upstream, and the events the client parses out of them are pinned as snapshots. A parser
//! change shows up as a snapshot diff to review.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Outcome, ask, client, run, upstream, with_think_tags};
use promptgate_llm::scripted::{Script, ScriptedUpstream};
use promptgate_llm::{Anthropic, AnthropicConfig, ChatModel, ThinkingMode};

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

/// Builds the client that speaks a transcript's wire format.
type Connect = fn(&ScriptedUpstream) -> Box<dyn ChatModel>;

/// Each transcript replayed to its client, with the events parsed pinned under the snapshot's name.
#[tokio::test]
async fn transcripts_parse_as_pinned() {
    let openai: Connect = |upstream| Box::new(client(upstream));
    let openai_think_tags: Connect = |upstream| Box::new(with_think_tags(upstream));
    let claude: Connect = |upstream| Box::new(anthropic(upstream));
    let transcripts = [
        (
            "openai_text_with_usage",
            "openai/text_with_usage.sse",
            openai,
            "When is high tide?",
        ),
        (
            "openai_reasoning_and_tool_calls",
            "openai/reasoning_and_tool_calls.sse",
            openai,
            "Tides in Brest and Cherbourg?",
        ),
        (
            "openai_think_tags",
            "openai/think_tags.sse",
            openai_think_tags,
            "When is high tide?",
        ),
        (
            "anthropic_text_cache_read",
            "anthropic/text_cache_read.sse",
            claude,
            "When is high tide?",
        ),
        (
            "anthropic_tool_use_with_thinking",
            "anthropic/tool_use_with_thinking.sse",
            claude,
            "Tides in Brest?",
        ),
        (
            "anthropic_overloaded_mid_stream",
            "anthropic/overloaded_mid_stream.sse",
            claude,
            "When is high tide?",
        ),
    ];
    for (snapshot, fixture, connect, question) in transcripts {
        let upstream = upstream().await;
        upstream.push(transcript(fixture));
        let outcome = run(connect(&upstream).as_ref(), ask(question)).await;
        insta::assert_snapshot!(snapshot, render(&outcome));
    }
}
