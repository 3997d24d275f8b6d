//! What a model call and a tool call said, on their trace spans, for operators who turn it on
//! (`[telemetry] capture_content`): the GenAI conventions' `gen_ai.system_instructions`,
//! `gen_ai.input.messages` and `gen_ai.output.messages` on a `chat` span, and
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on an `execute_tool` span.
//!
//! Whether it is on is asked of the subscriber, through a callsite on [`CONTENT_TARGET`] that only
//! the trace exporter's filter lets through, and only when the operator asked for content: the turn
//! needs no setting of its own, and with content off it pays one cached check per call and builds
//! nothing.

use opentelemetry::KeyValue;
use promptgate_llm::{ChatMessage, ContentPart, FinishReason, UserContent};
use serde_json::{Value, json};
use tracing::Span;

use super::spans::TraceSpan;
use super::step::StreamedCall;

/// The target whose callsites say whether content is recorded; never used for an event or a span.
pub const CONTENT_TARGET: &str = "promptgate::otel::content";

/// Whether the installed subscriber records message content on the spans.
pub(super) fn capturing() -> bool {
    tracing::enabled!(target: CONTENT_TARGET, tracing::Level::INFO)
}

/// The request of a model call, on its span: the system prompt apart, as the conventions ask.
pub(super) fn record_request(span: &TraceSpan, messages: &[ChatMessage]) {
    let mut system = Vec::new();
    let mut input = Vec::new();
    for message in messages {
        match message {
            ChatMessage::System { content } => system.push(text_part(content)),
            other => input.push(input_message(other)),
        }
    }
    span.set(|| KeyValue::new("gen_ai.system_instructions", Value::Array(system).to_string()));
    span.set(|| KeyValue::new("gen_ai.input.messages", Value::Array(input).to_string()));
}

/// What the model answered in one call, on its span.
pub(super) fn record_response(
    span: &TraceSpan,
    text: &str,
    calls: &[StreamedCall],
    finish: Option<&FinishReason>,
) {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(text_part(text));
    }
    parts.extend(
        calls
            .iter()
            .map(|call| tool_call_part(&call.id, &call.name, &call.arguments)),
    );
    let finish_reason = finish.map_or("", super::spans::finish_reason);
    let output = json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]);
    span.set(|| KeyValue::new("gen_ai.output.messages", output.to_string()));
}

/// A tool call's arguments as the model wrote them, on its span.
pub(super) fn record_tool_arguments(span: &Span, arguments: &str) {
    span.record("gen_ai.tool.call.arguments", arguments);
}

/// What a tool call gave the model, on its span.
pub(super) fn record_tool_result(span: &Span, result: &str) {
    span.record("gen_ai.tool.call.result", result);
}

fn input_message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::System { content } => json!({"role": "system", "parts": [text_part(content)]}),
        ChatMessage::User { content } => {
            let parts: Vec<Value> = match content {
                UserContent::Text(text) => vec![text_part(text)],
                UserContent::Parts(parts) => parts.iter().map(user_part).collect(),
            };
            json!({"role": "user", "parts": parts})
        }
        ChatMessage::Assistant { content, tool_calls } => {
            let mut parts = Vec::new();
            if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                parts.push(text_part(text));
            }
            parts.extend(
                tool_calls
                    .iter()
                    .map(|call| tool_call_part(&call.id, &call.function.name, &call.function.arguments)),
            );
            json!({"role": "assistant", "parts": parts})
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": tool_call_id, "response": content}],
        }),
    }
}

fn user_part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => text_part(text),
        // An image's bytes would swamp the span and tell a reader of the trace nothing.
        ContentPart::ImageUrl { .. } => json!({"type": "blob", "modality": "image"}),
    }
}

fn text_part(text: &str) -> Value {
    json!({"type": "text", "content": text})
}

/// A tool call as the conventions write it: the arguments as JSON where they parse, else as text.
fn tool_call_part(id: &str, name: &str, arguments: &str) -> Value {
    let arguments = serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| Value::from(arguments));
    json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
}
