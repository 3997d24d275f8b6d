//! Golden request bodies: what each provider client sends upstream for the same turn, pinned as
//! readable snapshots. A change to a body (a field renamed, a breakpoint moved, a part reordered)
//! shows up as a snapshot diff to review before any provider sees it.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use crate::common;

use common::{client, run, upstream};
use promptgate_llm::scripted::anthropic::{self as anthropic_script, Answer};
use promptgate_llm::scripted::{Script, ScriptedUpstream, text};
use promptgate_llm::{
    Anthropic, AnthropicConfig, CacheHints, ChatMessage, ChatRequest, ContentPart, ImageUrl, ThinkingMode,
    ToolCall, ToolChoice, ToolDefinition, UserContent,
};
use serde_json::{Value, json};

const STABLE: &str = "You answer tide questions.";

fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        parameters: Arc::new(json!({
            "type": "object",
            "properties": {"place": {"type": "string"}},
            "required": ["place"]
        })),
    }
}

/// A first send: the system prompt (its stable half first) and `question`, nothing else set.
fn first_send(question: UserContent) -> ChatRequest {
    ChatRequest {
        model: "upstream-model".into(),
        messages: vec![
            ChatMessage::System {
                content: format!("{STABLE}\n\nToday is Monday, 06:00."),
            },
            ChatMessage::User { content: question },
        ],
        cache: CacheHints {
            stable_system_len: Some(STABLE.len()),
            conversation_prefix_end: None,
        },
        ..ChatRequest::default()
    }
}

fn plain_question() -> ChatRequest {
    first_send(UserContent::Text("When is high tide?".into()))
}

/// A turn's second step: a question with an image, the model's tool call and its result, then a
/// follow-up; two tools, reasoning, a temperature, a provider option and cache hints.
fn second_step() -> ChatRequest {
    let mut request = first_send(UserContent::Parts(vec![
        ContentPart::Text {
            text: "Where was this taken, and when is high tide there?".into(),
        },
        ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: "data:image/png;base64,iVBORw0KGgo=".into(),
            },
        },
    ]));
    request.messages.extend([
        ChatMessage::Assistant {
            content: Some("That is Brest; let me look the tide up.".into()),
            tool_calls: vec![ToolCall::new("call_1", "lookup", r#"{"place": "Brest"}"#)],
        },
        ChatMessage::Tool {
            tool_call_id: "call_1".into(),
            content: "High tide 06:40, low tide 12:55".into(),
        },
        ChatMessage::User {
            content: UserContent::Text("And tomorrow?".into()),
        },
    ]);
    request.tools = vec![
        tool("lookup", "Looks up tide times."),
        tool("forecast", "The weather at a place."),
    ];
    request.tool_choice = Some(ToolChoice::Auto);
    request.temperature = Some(0.3);
    request.parallel_tool_calls = Some(false);
    request.reasoning_effort = Some("high".into());
    request.extra = json!({"top_p": 0.9}).as_object().cloned().unwrap();
    request.cache.conversation_prefix_end = Some(3);
    request
}

fn anthropic(upstream: &ScriptedUpstream, thinking: ThinkingMode) -> Anthropic {
    let mut config = AnthropicConfig::new("claude", upstream.base_url());
    config.provider.api_key = Some("sk-ant-test-secret".into());
    config.thinking = thinking;
    Anthropic::new(config).unwrap()
}

/// The body the upstream received for the one request `model` sends.
async fn sent_body(
    upstream: &ScriptedUpstream,
    answer: Script,
    model: &dyn promptgate_llm::ChatModel,
    request: ChatRequest,
) -> Value {
    upstream.push(answer);
    let outcome = run(model, request).await;
    assert_eq!(outcome.error, None);
    upstream.last_request().unwrap()
}

/// The body an OpenAI-compatible upstream receives for `request`.
async fn openai_body(request: ChatRequest) -> Value {
    let upstream = upstream().await;
    sent_body(&upstream, text(["Noted."]), &client(&upstream), request).await
}

/// The body Anthropic's Messages API receives for `request`, with `thinking` for its reasoning.
async fn anthropic_body(thinking: ThinkingMode, request: ChatRequest) -> Value {
    let upstream = upstream().await;
    let model = anthropic(&upstream, thinking);
    sent_body(&upstream, anthropic_script::text(["Noted."]), &model, request).await
}

#[tokio::test]
async fn openai_compatible_with_tools_reasoning_an_image_and_a_tool_result() {
    insta::assert_yaml_snapshot!("openai_second_step", openai_body(second_step()).await);
}

#[tokio::test]
async fn openai_compatible_plain_question() {
    insta::assert_yaml_snapshot!("openai_plain_question", openai_body(plain_question()).await);
}

#[tokio::test]
async fn anthropic_with_adaptive_thinking() {
    // A plain question, and a second step with tools, an image and cache breakpoints.
    for (name, request) in [
        ("anthropic_plain_question", plain_question()),
        ("anthropic_second_step_adaptive", second_step()),
    ] {
        let body = anthropic_body(ThinkingMode::Adaptive, request).await;
        insta::assert_yaml_snapshot!(name, body);
    }
}

#[tokio::test]
async fn anthropic_with_a_thinking_budget() {
    let mut request = plain_question();
    request.reasoning_effort = Some("low".into());
    let body = anthropic_body(ThinkingMode::Budget, request).await;
    insta::assert_yaml_snapshot!("anthropic_thinking_budget", body);
}

#[tokio::test]
async fn anthropic_sends_a_tool_steps_thinking_back_with_its_result() {
    let upstream = upstream().await;
    let model = anthropic(&upstream, ThinkingMode::Adaptive);
    let mut request = plain_question();
    request.tools = vec![tool("lookup", "Looks up tide times.")];
    request.reasoning_effort = Some("medium".into());
    let answer = Answer::new()
        .thinking("They want the tide; lookup has it.", "c2lnbmF0dXJl")
        .tool_use("toolu_1", "lookup", &[r#"{"place": "#, r#""Brest"}"#])
        .stop_reason("tool_use")
        .script();
    upstream.push(answer);
    let first = run(&model, request.clone()).await;
    assert_eq!(first.error, None);

    request.messages.push(ChatMessage::Assistant {
        content: None,
        tool_calls: first.tool_calls(),
    });
    request.messages.push(ChatMessage::Tool {
        tool_call_id: "toolu_1".into(),
        content: "High tide 06:40".into(),
    });
    request.cache.conversation_prefix_end = Some(1);
    let body = sent_body(&upstream, anthropic_script::text(["At 06:40."]), &model, request).await;
    insta::assert_yaml_snapshot!("anthropic_tool_result_with_thinking", body);
}
