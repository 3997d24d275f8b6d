//! The completion an OpenAI client receives for a turn.
//!
//! Tools run inside the turn, so the client must never see a `tool_calls` delta or finish: it gets
//! the assistant's text (each step's text separated by a blank line), reasoning as
//! `reasoning_content`, exactly one finish reason and, when asked, the usage chunk.

use serde_json::{Map, Value, json};

use crate::TurnError;
use crate::ui::{TurnEvent, UiChunk, UiFinishReason};

/// What the completion says, independent of streaming or not.
#[derive(Debug, Clone, PartialEq)]
enum Delta {
    Role,
    Content(String),
    Reasoning(String),
    Finish(&'static str),
    Error(String),
}

/// Turns events into completion deltas; shared by the streaming and the whole-response views.
#[derive(Debug, Default)]
struct Translator {
    any_text: bool,
    step_has_text: bool,
    /// The turn's usage from the latest step metadata, in OpenAI's shape.
    usage: Option<Value>,
    done: bool,
}

impl Translator {
    fn translate(&mut self, event: &TurnEvent) -> Option<Delta> {
        let TurnEvent::Chunk(chunk) = event else {
            return None;
        };
        if self.done {
            return None;
        }
        match chunk {
            UiChunk::Start { .. } => Some(Delta::Role),
            UiChunk::StartStep => {
                self.step_has_text = false;
                None
            }
            UiChunk::TextDelta { delta, .. } => {
                let mut content = String::with_capacity(delta.len() + 2);
                if self.any_text && !self.step_has_text {
                    content.push_str("\n\n");
                }
                content.push_str(delta);
                self.any_text = true;
                self.step_has_text = true;
                Some(Delta::Content(content))
            }
            UiChunk::ReasoningDelta { delta, .. } => Some(Delta::Reasoning(delta.clone())),
            UiChunk::MessageMetadata { message_metadata } => {
                if let Some(usage) = message_metadata.get("usage") {
                    self.usage = Some(openai_usage(usage));
                }
                None
            }
            UiChunk::Finish { finish_reason, .. } => {
                self.done = true;
                Some(Delta::Finish(openai_finish_reason(*finish_reason)))
            }
            UiChunk::Abort { .. } => {
                self.done = true;
                Some(Delta::Finish("stop"))
            }
            UiChunk::Error { error_text } => {
                self.done = true;
                Some(Delta::Error(error_text.clone()))
            }
            _ => None,
        }
    }
}

/// OpenAI has no spelling for "the step cap ended the tool loop"; the answer was cut short by a
/// limit, which is what `length` tells a client.
fn openai_finish_reason(reason: Option<UiFinishReason>) -> &'static str {
    match reason {
        Some(UiFinishReason::Length | UiFinishReason::ToolCalls) => "length",
        Some(UiFinishReason::ContentFilter) => "content_filter",
        _ => "stop",
    }
}

/// The engine's usage metadata (AI SDK names) back in OpenAI's names.
fn openai_usage(usage: &Value) -> Value {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    let mut out = json!({
        "prompt_tokens": count("inputTokens").unwrap_or(0),
        "completion_tokens": count("outputTokens").unwrap_or(0),
        "total_tokens": count("totalTokens").unwrap_or(0),
    });
    if let Some(object) = out.as_object_mut() {
        if let Some(cached) = count("cachedInputTokens") {
            object.insert("prompt_tokens_details".into(), json!({"cached_tokens": cached}));
        }
        if let Some(reasoning) = count("reasoningTokens") {
            object.insert(
                "completion_tokens_details".into(),
                json!({"reasoning_tokens": reasoning}),
            );
        }
    }
    out
}

/// The identity every chunk of one completion repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionIdentity {
    /// `chatcmpl-…`
    pub id: String,
    /// Unix seconds.
    pub created: i64,
    /// The model as the client named it.
    pub model: String,
}

/// Streaming view: `chat.completion.chunk` objects, each sent as one `data:` event.
#[derive(Debug)]
pub struct CompletionChunks {
    identity: CompletionIdentity,
    include_usage: bool,
    translator: Translator,
}

impl CompletionChunks {
    /// `include_usage` is the request's `stream_options.include_usage`.
    pub fn new(identity: CompletionIdentity, include_usage: bool) -> Self {
        Self {
            identity,
            include_usage,
            translator: Translator::default(),
        }
    }

    /// The objects to send for one event (none for most).
    pub fn push(&mut self, event: &TurnEvent) -> Vec<Value> {
        let Some(delta) = self.translator.translate(event) else {
            return Vec::new();
        };
        match delta {
            Delta::Role => vec![self.chunk(json!({"role": "assistant", "content": ""}), None)],
            Delta::Content(text) => vec![self.chunk(json!({"content": text}), None)],
            Delta::Reasoning(text) => vec![self.chunk(json!({"reasoning_content": text}), None)],
            Delta::Finish(reason) => {
                let mut out = vec![self.chunk(json!({}), Some(reason))];
                if self.include_usage {
                    let usage = self
                        .translator
                        .usage
                        .clone()
                        .unwrap_or_else(|| openai_usage(&Value::Null));
                    out.push(self.envelope(Value::Array(Vec::new()), usage));
                }
                out
            }
            Delta::Error(message) => {
                vec![json!({"error": {"message": message, "type": "upstream_error", "code": null}})]
            }
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let choice = json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason});
        self.envelope(Value::Array(vec![choice]), Value::Null)
    }

    fn envelope(&self, choices: Value, usage: Value) -> Value {
        let mut object = Map::new();
        object.insert("id".into(), self.identity.id.clone().into());
        object.insert("object".into(), "chat.completion.chunk".into());
        object.insert("created".into(), self.identity.created.into());
        object.insert("model".into(), self.identity.model.clone().into());
        object.insert("choices".into(), choices);
        if self.include_usage {
            object.insert("usage".into(), usage);
        }
        Value::Object(object)
    }
}

/// Non-streaming view: the events folded into one `chat.completion` object.
#[derive(Debug)]
pub struct CompletionResponse {
    identity: CompletionIdentity,
    translator: Translator,
    content: String,
    reasoning: String,
    finish_reason: Option<&'static str>,
    error: Option<String>,
}

impl CompletionResponse {
    pub fn new(identity: CompletionIdentity) -> Self {
        Self {
            identity,
            translator: Translator::default(),
            content: String::new(),
            reasoning: String::new(),
            finish_reason: None,
            error: None,
        }
    }

    pub fn push(&mut self, event: &TurnEvent) {
        match self.translator.translate(event) {
            Some(Delta::Content(text)) => self.content.push_str(&text),
            Some(Delta::Reasoning(text)) => self.reasoning.push_str(&text),
            Some(Delta::Finish(reason)) => self.finish_reason = Some(reason),
            Some(Delta::Error(message)) => self.error = Some(message),
            Some(Delta::Role) | None => {}
        }
    }

    /// The completion, or the turn's error (a text safe to show) when it failed.
    pub fn finish(self) -> Result<Value, TurnError> {
        if let Some(message) = self.error {
            return Err(TurnError::Failed(message));
        }
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.reasoning.is_empty()
            && let Some(object) = message.as_object_mut()
        {
            object.insert("reasoning_content".into(), self.reasoning.into());
        }
        Ok(json!({
            "id": self.identity.id,
            "object": "chat.completion",
            "created": self.identity.created,
            "model": self.identity.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": self.finish_reason.unwrap_or("stop"),
            }],
            "usage": self.translator.usage.unwrap_or_else(|| openai_usage(&Value::Null)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> CompletionIdentity {
        CompletionIdentity {
            id: "chatcmpl-1".into(),
            created: 1_764_662_400,
            model: "m".into(),
        }
    }

    fn chunk(chunk: UiChunk) -> TurnEvent {
        TurnEvent::Chunk(chunk)
    }

    /// A turn with reasoning, a tool step with preamble text, and a final answer.
    fn tool_turn() -> Vec<TurnEvent> {
        vec![
            chunk(UiChunk::Start {
                message_id: Some("msg".into()),
                message_metadata: None,
            }),
            chunk(UiChunk::StartStep),
            chunk(UiChunk::ReasoningStart { id: "r".into() }),
            chunk(UiChunk::ReasoningDelta {
                id: "r".into(),
                delta: "plan".into(),
            }),
            chunk(UiChunk::ReasoningEnd { id: "r".into() }),
            chunk(UiChunk::TextStart { id: "t1".into() }),
            chunk(UiChunk::TextDelta {
                id: "t1".into(),
                delta: "Checking.".into(),
            }),
            chunk(UiChunk::TextEnd { id: "t1".into() }),
            chunk(UiChunk::ToolInputStart {
                tool_call_id: "c".into(),
                tool_name: "s".into(),
                dynamic: None,
                title: None,
            }),
            chunk(UiChunk::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "s".into(),
                input: json!({}),
                dynamic: None,
                title: None,
            }),
            TurnEvent::KeepAlive,
            chunk(UiChunk::ToolOutputAvailable {
                tool_call_id: "c".into(),
                output: json!(1),
                dynamic: None,
            }),
            chunk(UiChunk::MessageMetadata {
                message_metadata: json!({"usage": {"inputTokens": 5, "outputTokens": 1, "totalTokens": 6}}),
            }),
            chunk(UiChunk::FinishStep),
            chunk(UiChunk::StartStep),
            chunk(UiChunk::TextStart { id: "t2".into() }),
            chunk(UiChunk::TextDelta {
                id: "t2".into(),
                delta: "Sunny".into(),
            }),
            chunk(UiChunk::TextDelta {
                id: "t2".into(),
                delta: " today.".into(),
            }),
            chunk(UiChunk::TextEnd { id: "t2".into() }),
            chunk(UiChunk::MessageMetadata {
                message_metadata: json!({"usage": {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16, "reasoningTokens": 2}}),
            }),
            chunk(UiChunk::FinishStep),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Stop),
                message_metadata: None,
            }),
        ]
    }

    fn stream(events: &[TurnEvent], include_usage: bool) -> Vec<Value> {
        let mut chunks = CompletionChunks::new(identity(), include_usage);
        events.iter().flat_map(|event| chunks.push(event)).collect()
    }

    #[test]
    fn the_stream_has_role_first_text_reasoning_and_one_finish_without_tool_calls() {
        let out = stream(&tool_turn(), false);
        let deltas: Vec<&Value> = out.iter().map(|chunk| &chunk["choices"][0]["delta"]).collect();
        assert_eq!(
            deltas,
            [
                &json!({"role": "assistant", "content": ""}),
                &json!({"reasoning_content": "plan"}),
                &json!({"content": "Checking."}),
                &json!({"content": "\n\nSunny"}),
                &json!({"content": " today."}),
                &json!({}),
            ]
        );
        let finishes: Vec<&Value> = out
            .iter()
            .map(|chunk| &chunk["choices"][0]["finish_reason"])
            .collect();
        assert_eq!(finishes.iter().filter(|reason| !reason.is_null()).count(), 1);
        assert_eq!(finishes.last(), Some(&&json!("stop")));
        for chunk in &out {
            assert_eq!(chunk["id"], "chatcmpl-1");
            assert_eq!(chunk["created"], 1_764_662_400);
            assert_eq!(chunk["model"], "m");
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert!(chunk.get("usage").is_none());
            assert!(chunk["choices"][0]["delta"].get("tool_calls").is_none());
        }
    }

    #[test]
    fn usage_comes_last_with_no_choices_when_asked() {
        let out = stream(&tool_turn(), true);
        let last = out.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(
            last["usage"],
            json!({"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16,
                   "completion_tokens_details": {"reasoning_tokens": 2}})
        );
        assert!(out[..out.len() - 1].iter().all(|chunk| chunk["usage"].is_null()));
    }

    #[test]
    fn the_step_cap_is_reported_as_length_not_tool_calls() {
        let events = [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::ToolCalls),
                message_metadata: None,
            }),
        ];
        let out = stream(&events, false);
        assert_eq!(out.last().unwrap()["choices"][0]["finish_reason"], "length");
        let events = [chunk(UiChunk::Finish {
            finish_reason: Some(UiFinishReason::ContentFilter),
            message_metadata: None,
        })];
        assert_eq!(
            stream(&events, false)[0]["choices"][0]["finish_reason"],
            "content_filter"
        );
    }

    #[test]
    fn an_error_becomes_an_error_event_and_nothing_follows() {
        let events = [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::Error {
                error_text: "The model provider could not be reached.".into(),
            }),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Error),
                message_metadata: None,
            }),
        ];
        let out = stream(&events, true);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1],
            json!({"error": {"message": "The model provider could not be reached.", "type": "upstream_error", "code": null}})
        );
    }

    #[test]
    fn a_stopped_turn_still_finishes_once() {
        let events = [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::Abort {
                reason: Some("stopped".into()),
            }),
        ];
        let out = stream(&events, false);
        assert_eq!(out.last().unwrap()["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn the_whole_response_folds_the_same_events() {
        let mut response = CompletionResponse::new(identity());
        for event in tool_turn() {
            response.push(&event);
        }
        assert_eq!(
            response.finish().unwrap(),
            json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1_764_662_400,
                "model": "m",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": "Checking.\n\nSunny today.", "reasoning_content": "plan"},
                    "logprobs": null,
                    "finish_reason": "stop"
                }],
                "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16,
                          "completion_tokens_details": {"reasoning_tokens": 2}}
            })
        );
    }

    #[test]
    fn a_failed_turn_is_an_error_for_the_whole_response() {
        let mut response = CompletionResponse::new(identity());
        response.push(&chunk(UiChunk::Start {
            message_id: None,
            message_metadata: None,
        }));
        response.push(&chunk(UiChunk::Error {
            error_text: "budget".into(),
        }));
        assert_eq!(response.finish(), Err(TurnError::Failed("budget".into())));
    }
}
