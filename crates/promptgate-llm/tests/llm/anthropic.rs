//! The Anthropic client against the scripted upstream speaking the Messages API stream format:
//! recorded streams, tool use with thinking sent back, cache usage, refusals and broken streams.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{next_errors, run, upstream};
use promptgate_llm::scripted::anthropic::{self, Answer, PromptCounts};
use promptgate_llm::scripted::{Script, ScriptedUpstream, Step};
use promptgate_llm::{
    Anthropic, AnthropicConfig, CacheHints, ChatMessage, ChatRequest, FinishReason, LlmError, StreamEvent,
    ThinkingMode, ToolDefinition, Usage, UserContent,
};
use serde_json::json;

fn fixture(name: &str) -> Script {
    let path = format!(
        "{}/tests/llm/fixtures/anthropic/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    anthropic::transcript(&std::fs::read_to_string(&path).unwrap())
}

fn client(upstream: &ScriptedUpstream, thinking: ThinkingMode) -> Anthropic {
    let mut config = AnthropicConfig::new("claude", upstream.base_url());
    config.provider.api_key = Some("sk-ant-test-secret".into());
    config.thinking = thinking;
    Anthropic::new(config).unwrap()
}

fn user(text: &str) -> ChatMessage {
    ChatMessage::User {
        content: UserContent::Text(text.into()),
    }
}

fn lookup() -> ToolDefinition {
    ToolDefinition {
        name: "lookup".into(),
        description: "Looks up tide times.".into(),
        parameters: Arc::new(json!({"type": "object", "properties": {"place": {"type": "string"}}})),
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![
            ChatMessage::System {
                content: "You answer tide questions.\n\nToday is Monday.".into(),
            },
            user(text),
        ],
        cache: CacheHints {
            stable_system_len: Some("You answer tide questions.".len()),
            conversation_prefix_end: None,
        },
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn a_recorded_answer_streams_its_text_and_reports_cache_reads() {
    let upstream = upstream().await;
    upstream.push(fixture("text_cache_read.sse"));
    let outcome = run(
        &client(&upstream, ThinkingMode::Adaptive),
        ask("When is high tide?"),
    )
    .await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text(), "High tide at the pier is at 06:40.");
    let usage = Usage {
        prompt_tokens: 21 + 2380,
        completion_tokens: 14,
        total_tokens: 21 + 2380 + 14,
        reasoning_tokens: None,
        cached_tokens: Some(2380),
        cache_write_tokens: Some(0),
    };
    assert_eq!(
        &outcome.events[outcome.events.len() - 2..],
        &[
            StreamEvent::Usage(usage),
            StreamEvent::Finished(FinishReason::Stop)
        ]
    );

    // What went over the wire: the key and version headers, the system prompt as blocks with a
    // breakpoint after its stable part, a streamed request with a length limit.
    let headers = &upstream.request_headers()[0];
    assert_eq!(headers["x-api-key"], "sk-ant-test-secret");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    let body = upstream.last_request().unwrap();
    assert_eq!(
        body["system"],
        json!([
            {"type": "text", "text": "You answer tide questions.", "cache_control": {"type": "ephemeral"}},
        ])
    );
    // What changes between sends opens the question, after everything cached.
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Today is Monday."},
            {"type": "text", "text": "When is high tide?"}]}])
    );
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["max_tokens"], json!(promptgate_llm::ANTHROPIC_MAX_TOKENS));
    assert!(
        body.get("thinking").is_none(),
        "no reasoning setting, no thinking"
    );
}

#[tokio::test]
async fn a_tool_call_with_thinking_is_read_and_its_thinking_goes_back_with_the_result() {
    let upstream = upstream().await;
    upstream.push(fixture("tool_use_with_thinking.sse"));
    upstream.push(
        Answer::new()
            .counts(PromptCounts {
                input: 40,
                cache_read: 2378,
                cache_write: 0,
            })
            .text(["06:40 at Brest."])
            .script(),
    );
    let model = client(&upstream, ThinkingMode::Budget);
    let mut request = ask("Tides in Brest?");
    request.tools = vec![lookup()];
    request.reasoning_effort = Some("medium".into());

    let first = run(&model, request.clone()).await;
    assert_eq!(first.error, None);
    assert_eq!(
        first.reasoning(),
        "The user wants tide times; the lookup tool has them."
    );
    assert_eq!(first.text(), "Let me look that up.");
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(calls[0].function.name, "lookup");
    assert_eq!(calls[0].function.arguments, r#"{"place": "Brest"}"#);
    assert_eq!(
        first.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls))
    );
    assert!(first.events.contains(&StreamEvent::Usage(Usage {
        prompt_tokens: 412 + 1966,
        completion_tokens: 89,
        total_tokens: 412 + 1966 + 89,
        reasoning_tokens: None,
        cached_tokens: Some(0),
        cache_write_tokens: Some(1966),
    })));
    let sent = upstream.last_request().unwrap();
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(
        sent["tools"],
        json!([{"name": "lookup", "description": "Looks up tide times.",
            "input_schema": {"type": "object", "properties": {"place": {"type": "string"}}}}])
    );

    // The next step of the same turn: the engine adds the call and its result.
    request.messages.push(ChatMessage::Assistant {
        content: Some(first.text()),
        tool_calls: calls,
    });
    request.messages.push(ChatMessage::Tool {
        tool_call_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
        content: "High tide 06:40".into(),
    });
    let second = run(&model, request).await;
    assert_eq!(second.error, None);
    assert_eq!(second.text(), "06:40 at Brest.");

    let sent = upstream.last_request().unwrap();
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants tide times; the lookup tool has them.",
             "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "lookup", "input": {"place": "Brest"}},
        ]})
    );
    assert_eq!(
        sent["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "content": "High tide 06:40",
            "cache_control": {"type": "ephemeral"}}]})
    );
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
}

#[tokio::test]
async fn refusals_keep_their_status_and_the_wait_the_provider_asked_for() {
    let upstream = upstream().await;
    upstream.push(anthropic::refusal(529, "overloaded_error", "Overloaded"));
    let mut limited = anthropic::refusal(
        429,
        "rate_limit_error",
        "Number of requests has exceeded your rate limit",
    );
    limited
        .steps
        .insert(0, Step::Header("retry-after".into(), "30".into()));
    upstream.push(limited);
    upstream.push(anthropic::refusal(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    let model = client(&upstream, ThinkingMode::Adaptive);

    let overloaded = run(&model, ask("a")).await;
    assert_eq!(
        overloaded.error,
        Some(LlmError::Status {
            status: 529,
            message: "Overloaded".into()
        })
    );
    let limited = run(&model, ask("b")).await;
    assert_eq!(
        limited.error,
        Some(LlmError::Status {
            status: 429,
            message: "Number of requests has exceeded your rate limit (retry after 30 s)".into()
        })
    );
    let denied = run(&model, ask("c")).await;
    assert!(matches!(denied.error, Some(LlmError::Status { status: 401, .. })));
}

#[tokio::test]
async fn an_error_inside_the_stream_ends_it_with_that_error_after_the_text_so_far() {
    let upstream = upstream().await;
    upstream.push(fixture("overloaded_mid_stream.sse"));
    let outcome = run(&client(&upstream, ThinkingMode::Adaptive), ask("a")).await;
    assert_eq!(outcome.text(), "The tide");
    assert_eq!(
        outcome.error,
        Some(LlmError::Status {
            status: 529,
            message: "Overloaded".into()
        })
    );
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_not_taken_for_an_answer() {
    let upstream = upstream().await;
    // The body ends cleanly, but before `message_delta` and `message_stop`.
    upstream.push(Answer::new().text(["Half an ans"]).opening());
    upstream.push(Script::new().raw("data: {\"choices\":[]}\n\n"));
    let model = client(&upstream, ThinkingMode::Adaptive);

    let cut = run(&model, ask("a")).await;
    assert_eq!(cut.text(), "Half an ans");
    assert!(
        matches!(cut.error, Some(LlmError::Protocol(_))),
        "{:?}",
        cut.error
    );
    assert!(!cut.events.iter().any(|e| matches!(e, StreamEvent::Finished(_))));

    // An OpenAI-style stream at the Anthropic address: the message says where to look.
    let wrong = run(&model, ask("b")).await;
    assert!(
        matches!(&wrong.error, Some(LlmError::Protocol(m)) if m.contains("base URL")),
        "{:?}",
        wrong.error
    );
}

#[tokio::test]
async fn the_conversation_prefix_of_a_later_send_carries_a_breakpoint() {
    let upstream = upstream().await;
    upstream.push(anthropic::text(["Still 06:40."]));
    let mut request = ask("And tomorrow?");
    request.messages.insert(1, user("When is high tide?"));
    request.messages.insert(
        2,
        ChatMessage::Assistant {
            content: Some("06:40.".into()),
            tool_calls: Vec::new(),
        },
    );
    request.cache.conversation_prefix_end = Some(2);
    let outcome = run(&client(&upstream, ThinkingMode::Adaptive), request).await;
    assert_eq!(outcome.error, None);

    let body = upstream.last_request().unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "When is high tide?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "06:40.", "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "Today is Monday."},
                {"type": "text", "text": "And tomorrow?"}]},
        ])
    );
}

#[tokio::test]
async fn a_prompt_too_long_for_claude_is_told_apart_from_other_refusals() {
    let upstream = upstream().await;
    upstream.push(anthropic::refusal(
        400,
        "invalid_request_error",
        "prompt is too long: 215012 tokens > 200000 maximum",
    ));
    upstream.push(anthropic::refusal(
        413,
        "request_too_large",
        "Request exceeds the maximum allowed number of bytes.",
    ));
    upstream.push(anthropic::refusal(
        400,
        "invalid_request_error",
        "messages: roles must alternate",
    ));
    let model = client(&upstream, ThinkingMode::Adaptive);
    let errors = next_errors(&model, ["a", "b", "c"].map(ask)).await;
    assert_eq!(
        errors[0],
        Some(LlmError::ContextTooLong(
            "prompt is too long: 215012 tokens > 200000 maximum".into()
        ))
    );
    assert!(matches!(errors[1], Some(LlmError::ContextTooLong(_))));
    assert!(matches!(errors[2], Some(LlmError::Status { status: 400, .. })));
}
