//! Reads the events of a streamed Anthropic Messages answer into [`StreamEvent`]s. Pure: no I/O,
//! no clock. Thinking blocks are also kept whole (text and signature), because a tool loop with
//! thinking on must send them back unchanged with the tool results.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::provider_error;
use crate::{FinishReason, LlmError, StreamEvent, Usage};

const NO_EVENTS: &str = "the response held no Messages API events; check that the base URL points at \
     an Anthropic-compatible API (with /v1)";

/// One content block of the answer being streamed, by the index the provider gave it.
#[derive(Debug)]
enum Block {
    Text,
    Tool {
        index: usize,
        streamed_input: bool,
        /// The `input` of `content_block_start`, sent only when no delta follows.
        initial_input: Option<String>,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    Other,
}

/// What the provider reported about tokens; later reports replace earlier ones field by field.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

impl Counts {
    fn update(&mut self, usage: &Value) {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        self.input = count("input_tokens").or(self.input);
        self.output = count("output_tokens").or(self.output);
        self.cache_read = count("cache_read_input_tokens").or(self.cache_read);
        self.cache_write = count("cache_creation_input_tokens").or(self.cache_write);
    }

    /// The engine's usage counts every prompt token, cached or not, as OpenAI's `prompt_tokens`
    /// does; Anthropic's `input_tokens` leaves the cached ones out.
    fn to_usage(self) -> Option<Usage> {
        if self.input.is_none() && self.output.is_none() {
            return None;
        }
        let read = self.cache_read.unwrap_or(0);
        let written = self.cache_write.unwrap_or(0);
        let prompt_tokens = self.input.unwrap_or(0) + read + written;
        let completion_tokens = self.output.unwrap_or(0);
        Some(Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            reasoning_tokens: None,
            cached_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
        })
    }
}

/// The thinking of one answer that made tool calls, to be sent back with their results.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptThinking {
    /// The id of the answer's first tool call: the key the next request finds it by.
    pub first_tool_id: String,
    /// `thinking` and `redacted_thinking` blocks in wire form, in answer order.
    pub blocks: Vec<Value>,
}

/// State machine for one streamed answer. Feed every event to [`MessageEvents::push`] and call
/// [`MessageEvents::finish`] once when the stream ends.
#[derive(Debug, Default)]
pub(crate) struct MessageEvents {
    blocks: HashMap<u64, Block>,
    tools: usize,
    first_tool_id: Option<String>,
    thinking: Vec<Value>,
    counts: Counts,
    stop_reason: Option<FinishReason>,
    started: bool,
    done: bool,
    ended: bool,
}

impl MessageEvents {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `message_stop` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads one SSE event; `name` is its `event:` field, used when the data has no `type`.
    pub fn push(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if self.done || self.ended || data.is_empty() {
            return Ok(Vec::new());
        }
        let event: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Protocol(format!(
                "an event is not valid JSON ({e}): {}",
                provider_error::preview(data)
            ))
        })?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or(name);
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(usage) = event.pointer("/message/usage") {
                    self.counts.update(usage);
                }
            }
            "content_block_start" => self.start_block(&event, &mut out),
            "content_block_delta" => self.delta(&event, &mut out),
            "content_block_stop" => self.stop_block(&event, &mut out),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(finish_reason(reason));
                }
                if let Some(usage) = event.get("usage") {
                    self.counts.update(usage);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(error_event(&event)),
            // `ping` keeps the connection alive; unknown events are new features we can skip.
            _ => {}
        }
        Ok(out)
    }

    fn start_block(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let block = &event["content_block"];
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let state = match block.get("type").and_then(Value::as_str).unwrap_or_default() {
            "text" => {
                let start = text("text");
                if !start.is_empty() {
                    out.push(StreamEvent::TextDelta(start));
                }
                Block::Text
            }
            "tool_use" => {
                let tool_index = self.tools;
                self.tools += 1;
                let id = text("id");
                if self.first_tool_id.is_none() {
                    self.first_tool_id = Some(id.clone());
                }
                out.push(StreamEvent::ToolCallStarted {
                    index: tool_index,
                    id,
                    name: text("name"),
                });
                let initial_input = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|o| !o.is_empty()))
                    .map(Value::to_string);
                Block::Tool {
                    index: tool_index,
                    streamed_input: false,
                    initial_input,
                }
            }
            "thinking" => {
                let start = text("thinking");
                if !start.is_empty() {
                    out.push(StreamEvent::ReasoningDelta(start.clone()));
                }
                Block::Thinking {
                    text: start,
                    signature: text("signature"),
                }
            }
            "redacted_thinking" => Block::Redacted { data: text("data") },
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn delta(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let delta = &event["delta"];
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let Some(block) = self.blocks.get_mut(&index) else {
            // A delta without its start: text is still worth showing.
            if delta.get("type").and_then(Value::as_str) == Some("text_delta") && !field("text").is_empty() {
                out.push(StreamEvent::TextDelta(field("text").to_owned()));
            }
            return;
        };
        match (
            delta.get("type").and_then(Value::as_str).unwrap_or_default(),
            block,
        ) {
            ("text_delta", Block::Text) if !field("text").is_empty() => {
                out.push(StreamEvent::TextDelta(field("text").to_owned()));
            }
            (
                "input_json_delta",
                Block::Tool {
                    index,
                    streamed_input,
                    ..
                },
            ) => {
                *streamed_input = true;
                let fragment = field("partial_json");
                if !fragment.is_empty() {
                    out.push(StreamEvent::ToolCallArgumentsDelta {
                        index: *index,
                        fragment: fragment.to_owned(),
                    });
                }
            }
            ("thinking_delta", Block::Thinking { text, .. }) => {
                let piece = field("thinking");
                if !piece.is_empty() {
                    text.push_str(piece);
                    out.push(StreamEvent::ReasoningDelta(piece.to_owned()));
                }
            }
            ("signature_delta", Block::Thinking { signature, .. }) => signature.push_str(field("signature")),
            _ => {}
        }
    }

    fn stop_block(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match self.blocks.remove(&index) {
            Some(Block::Tool {
                index,
                streamed_input: false,
                initial_input: Some(input),
            }) => out.push(StreamEvent::ToolCallArgumentsDelta {
                index,
                fragment: input,
            }),
            Some(Block::Thinking { text, signature }) => self.thinking.push(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature,
            })),
            Some(Block::Redacted { data }) => self.thinking.push(json!({
                "type": "redacted_thinking",
                "data": data,
            })),
            _ => {}
        }
    }

    /// The stream ended. Returns the usage and `Finished`, or the error that the answer is
    /// incomplete.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.ended = true;
        if !self.done {
            let message = if self.started {
                "stream ended before the model finished"
            } else {
                NO_EVENTS
            };
            return Err(LlmError::Protocol(message.to_owned()));
        }
        let reason = match self.stop_reason.take() {
            Some(FinishReason::Stop) | None if self.tools > 0 => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Stop,
        };
        let mut out = Vec::with_capacity(2);
        if let Some(usage) = self.counts.to_usage() {
            out.push(StreamEvent::Usage(usage));
        }
        out.push(StreamEvent::Finished(reason));
        Ok(out)
    }

    /// The thinking to send back with this answer's tool results; `None` when the answer made
    /// no tool call or did not think.
    pub fn take_thinking(&mut self) -> Option<KeptThinking> {
        if self.thinking.is_empty() {
            return None;
        }
        let first_tool_id = self.first_tool_id.clone()?;
        Some(KeptThinking {
            first_tool_id,
            blocks: std::mem::take(&mut self.thinking),
        })
    }
}

pub(crate) fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The HTTP status Anthropic uses for each error type, for errors that arrive inside a stream.
fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// `{"type":"error","error":{"type","message"}}`, in a stream or as an error response's body.
pub(crate) fn error_event(event: &Value) -> LlmError {
    let error_type = event
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    provider_error::from_payload(status_of(error_type), event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(parser: &mut MessageEvents, events: &[Value]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for event in events {
            out.extend(parser.push("", &event.to_string()).unwrap());
        }
        out
    }

    #[test]
    fn a_tool_call_given_whole_at_its_start_still_carries_its_arguments() {
        let mut parser = MessageEvents::new();
        let events = feed(
            &mut parser,
            &[
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {
                    "type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "tides"}}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
                json!({"type": "message_stop"}),
            ],
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStarted {
                    index: 0,
                    id: "toolu_1".into(),
                    name: "lookup".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    fragment: r#"{"q":"tides"}"#.into()
                },
            ]
        );
        let end = parser.finish().unwrap();
        assert_eq!(end.last(), Some(&StreamEvent::Finished(FinishReason::ToolCalls)));
    }

    #[test]
    fn a_stream_cut_before_message_stop_is_an_error_not_an_answer() {
        let mut parser = MessageEvents::new();
        feed(
            &mut parser,
            &[
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}}),
            ],
        );
        assert!(
            matches!(parser.finish(), Err(LlmError::Protocol(m)) if m.contains("before the model finished"))
        );
        assert!(
            matches!(MessageEvents::new().finish(), Err(LlmError::Protocol(m)) if m.contains("Anthropic"))
        );
    }

    #[test]
    fn in_stream_errors_keep_anthropics_status_for_their_type() {
        let mut parser = MessageEvents::new();
        let err = parser
            .push(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert_eq!(
            err,
            LlmError::Status {
                status: 529,
                message: "Overloaded".into()
            }
        );
    }

    #[test]
    fn stop_reasons_map_to_the_engines_finish_reasons() {
        assert_eq!(finish_reason("end_turn"), FinishReason::Stop);
        assert_eq!(finish_reason("max_tokens"), FinishReason::Length);
        assert_eq!(finish_reason("tool_use"), FinishReason::ToolCalls);
        assert_eq!(finish_reason("refusal"), FinishReason::ContentFilter);
        assert_eq!(
            finish_reason("pause_turn"),
            FinishReason::Other("pause_turn".into())
        );
    }
}
