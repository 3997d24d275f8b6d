//! Folding UI chunks into the assistant `UIMessage` the AI SDK client would rebuild from them.
//!
//! The result is what gets stored as the assistant message, so a reloaded thread shows exactly what
//! the live stream showed. The builder is as strict as the client: a chunk that the client would
//! reject (a delta for a part that was never started, an output for an unknown tool call) is an
//! error here too, which lets the engine's tests prove the stream is valid.

use serde_json::{Map, Value, json};

use crate::TurnError;
use crate::ui::{UiChunk, UiFinishReason};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartState {
    Streaming,
    Done,
}

impl PartState {
    fn as_str(self) -> &'static str {
        match self {
            Self::Streaming => "streaming",
            Self::Done => "done",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolState {
    InputStreaming,
    InputAvailable,
    OutputAvailable,
    OutputError,
    ApprovalRequested,
    OutputDenied,
}

impl ToolState {
    fn as_str(self) -> &'static str {
        match self {
            Self::InputStreaming => "input-streaming",
            Self::InputAvailable => "input-available",
            Self::OutputAvailable => "output-available",
            Self::OutputError => "output-error",
            Self::ApprovalRequested => "approval-requested",
            Self::OutputDenied => "output-denied",
        }
    }
}

#[derive(Debug, Clone)]
struct ToolPart {
    tool_call_id: String,
    tool_name: String,
    dynamic: bool,
    title: Option<String>,
    state: ToolState,
    /// The argument text streamed so far; shown as `input` (when it parses) until the final input.
    input_text: String,
    input: Option<Value>,
    output: Option<Value>,
    error_text: Option<String>,
    /// The approval the call waits for or got, as the client keeps it (`{id, approved?, reason?}`).
    approval: Option<Value>,
}

/// A text or reasoning part. The client keys open parts by their chunk id; it keeps the id on
/// reasoning parts only.
#[derive(Debug, Clone)]
struct TextPart {
    reasoning: bool,
    id: String,
    text: String,
    state: PartState,
}

#[derive(Debug, Clone)]
enum Part {
    StepStart,
    Text(TextPart),
    Tool(ToolPart),
    SourceUrl {
        source_id: String,
        url: String,
        title: Option<String>,
    },
    /// A data part (`data-*`), whole; a later one with the same type and id replaces it.
    Data(Value),
    /// A part of an earlier stream of the same message (one continued after an approval), kept
    /// as it was stored.
    Kept(Value),
}

impl Part {
    fn to_json(&self) -> Value {
        match self {
            Self::Kept(part) | Self::Data(part) => part.clone(),
            Self::StepStart => json!({"type": "step-start"}),
            Self::Text(TextPart {
                reasoning: false,
                text,
                state,
                ..
            }) => {
                json!({"type": "text", "text": text, "state": state.as_str()})
            }
            Self::Text(TextPart {
                reasoning: true,
                id,
                text,
                state,
            }) => {
                json!({"type": "reasoning", "id": id, "text": text, "state": state.as_str()})
            }
            Self::Tool(tool) => tool.to_json(),
            Self::SourceUrl {
                source_id,
                url,
                title,
            } => {
                let mut part = json!({"type": "source-url", "sourceId": source_id, "url": url});
                if let (Some(title), Some(obj)) = (title, part.as_object_mut()) {
                    obj.insert("title".into(), Value::String(title.clone()));
                }
                part
            }
        }
    }
}

impl ToolPart {
    fn to_json(&self) -> Value {
        let mut part = Map::new();
        if self.dynamic {
            part.insert("type".into(), "dynamic-tool".into());
            part.insert("toolName".into(), self.tool_name.clone().into());
        } else {
            part.insert("type".into(), format!("tool-{}", self.tool_name).into());
        }
        part.insert("toolCallId".into(), self.tool_call_id.clone().into());
        part.insert("state".into(), self.state.as_str().into());
        if let Some(title) = &self.title {
            part.insert("title".into(), title.clone().into());
        }
        let streamed_input = || serde_json::from_str::<Value>(&self.input_text).ok();
        if let Some(input) = self.input.clone().or_else(streamed_input) {
            part.insert("input".into(), input);
        }
        if let Some(output) = &self.output {
            part.insert("output".into(), output.clone());
        }
        if let Some(error_text) = &self.error_text {
            part.insert("errorText".into(), error_text.clone().into());
        }
        if let Some(approval) = &self.approval {
            part.insert("approval".into(), approval.clone());
        }
        Value::Object(part)
    }
}

impl ToolPart {
    /// A stored tool part waiting for an approval, read back so its call can be finished.
    fn from_stored(part: &Value) -> Option<Self> {
        let state = part.get("state").and_then(Value::as_str)?;
        if state != "approval-requested" && state != "approval-responded" {
            return None;
        }
        let kind = part.get("type").and_then(Value::as_str)?;
        let (tool_name, dynamic) = match kind {
            "dynamic-tool" => (part.get("toolName").and_then(Value::as_str)?, true),
            _ => (kind.strip_prefix("tool-")?, false),
        };
        Some(Self {
            tool_call_id: part.get("toolCallId").and_then(Value::as_str)?.to_owned(),
            tool_name: tool_name.to_owned(),
            dynamic,
            title: part.get("title").and_then(Value::as_str).map(str::to_owned),
            state: ToolState::ApprovalRequested,
            input_text: String::new(),
            input: part.get("input").cloned(),
            output: None,
            error_text: None,
            approval: part.get("approval").cloned(),
        })
    }
}

/// Builds the assistant message from the chunks of its stream.
#[derive(Debug, Clone, Default)]
pub struct UiMessageBuilder {
    id: Option<String>,
    metadata: Option<Value>,
    parts: Vec<Part>,
    finish_reason: Option<UiFinishReason>,
}

impl UiMessageBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one chunk the way the AI SDK client does.
    pub fn apply(&mut self, chunk: &UiChunk) -> Result<(), TurnError> {
        match chunk {
            UiChunk::Start {
                message_id,
                message_metadata,
            } => {
                if let Some(id) = message_id {
                    self.id = Some(id.clone());
                }
                if let Some(metadata) = message_metadata {
                    self.merge_metadata(metadata);
                }
            }
            UiChunk::StartStep => self.parts.push(Part::StepStart),
            UiChunk::FinishStep => {}
            UiChunk::TextStart { id } => self.open(id, false),
            UiChunk::TextDelta { id, delta } => self.streaming(id, false)?.text.push_str(delta),
            UiChunk::TextEnd { id, .. } => self.streaming(id, false)?.state = PartState::Done,
            UiChunk::ReasoningStart { id } => self.open(id, true),
            UiChunk::ReasoningDelta { id, delta } => self.streaming(id, true)?.text.push_str(delta),
            UiChunk::ReasoningEnd { id } => self.streaming(id, true)?.state = PartState::Done,
            UiChunk::ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic,
                title,
            } => {
                self.parts.push(Part::Tool(ToolPart {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    dynamic: dynamic.unwrap_or(false),
                    title: title.clone(),
                    state: ToolState::InputStreaming,
                    input_text: String::new(),
                    input: None,
                    output: None,
                    error_text: None,
                    approval: None,
                }));
            }
            UiChunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => {
                // Parsed only when the part is rendered: re-parsing on every fragment would cost
                // quadratic time on long arguments.
                self.tool_mut(tool_call_id)?.input_text.push_str(input_text_delta);
            }
            UiChunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
                dynamic,
                title,
            } => match self.tool_mut(tool_call_id) {
                Ok(part) => {
                    part.state = ToolState::InputAvailable;
                    part.input = Some(input.clone());
                    if title.is_some() {
                        part.title = title.clone();
                    }
                }
                Err(_) => self.parts.push(Part::Tool(ToolPart {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    dynamic: dynamic.unwrap_or(false),
                    title: title.clone(),
                    state: ToolState::InputAvailable,
                    input_text: String::new(),
                    input: Some(input.clone()),
                    output: None,
                    error_text: None,
                    approval: None,
                })),
            },
            UiChunk::ToolOutputAvailable {
                tool_call_id, output, ..
            } => {
                self.tool_in(tool_call_id, ToolState::OutputAvailable)?.output = Some(output.clone());
            }
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
                ..
            } => {
                self.tool_in(tool_call_id, ToolState::OutputError)?.error_text = Some(error_text.clone());
            }
            UiChunk::ToolApprovalRequest {
                approval_id,
                tool_call_id,
            } => {
                self.tool_in(tool_call_id, ToolState::ApprovalRequested)?.approval =
                    Some(json!({"id": approval_id}));
            }
            UiChunk::ToolOutputDenied { tool_call_id } => {
                self.tool_in(tool_call_id, ToolState::OutputDenied)?;
            }
            UiChunk::SourceUrl {
                source_id,
                url,
                title,
            } => self.parts.push(Part::SourceUrl {
                source_id: source_id.clone(),
                url: url.clone(),
                title: title.clone(),
            }),
            UiChunk::DataElicitation { id, data } => {
                self.put_data(json!({"type": "data-elicitation", "id": id, "data": data}));
            }
            UiChunk::DataAuthorization { id, data } => {
                self.put_data(json!({"type": "data-authorization", "id": id, "data": data}));
            }
            UiChunk::MessageMetadata { message_metadata } => self.merge_metadata(message_metadata),
            UiChunk::Finish {
                finish_reason,
                message_metadata,
            } => {
                self.finish_reason = *finish_reason;
                if let Some(metadata) = message_metadata {
                    self.merge_metadata(metadata);
                }
            }
            UiChunk::Abort { .. } | UiChunk::Error { .. } => {}
        }
        Ok(())
    }

    /// A builder that continues a stored message: its parts and metadata come first, and the
    /// tool parts among them take the outputs of calls that waited for an approval.
    pub fn continuing(parts: &[Value], metadata: &Value) -> Self {
        let parts = parts
            .iter()
            .map(|part| match ToolPart::from_stored(part) {
                Some(tool) => Part::Tool(tool),
                None => Part::Kept(part.clone()),
            })
            .collect();
        Self {
            id: None,
            metadata: metadata.is_object().then(|| metadata.clone()),
            parts,
            finish_reason: None,
        }
    }

    /// Adds a data part, or replaces the one of the same type and id (the AI SDK's reconciliation).
    fn put_data(&mut self, part: Value) {
        let same = |kept: &Part| match kept {
            Part::Data(old) => old["type"] == part["type"] && old["id"] == part["id"],
            _ => false,
        };
        match self.parts.iter_mut().find(|kept| same(kept)) {
            Some(kept) => *kept = Part::Data(part),
            None => self.parts.push(Part::Data(part)),
        }
    }

    /// Writes the user's answer onto a call that waited for it, as the client's
    /// `addToolApprovalResponse` does.
    pub fn respond_to_approval(&mut self, tool_call_id: &str, approved: bool, reason: Option<&str>) {
        if let Ok(part) = self.tool_mut(tool_call_id)
            && let Some(Value::Object(approval)) = &mut part.approval
        {
            approval.insert("approved".into(), approved.into());
            if let Some(reason) = reason {
                approval.insert("reason".into(), reason.into());
            }
        }
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The message's parts as the client stores them.
    pub fn parts(&self) -> Vec<Value> {
        self.parts.iter().map(Part::to_json).collect()
    }

    /// The deep-merged metadata, or `Value::Null` when none was sent.
    pub fn metadata(&self) -> Value {
        self.metadata.clone().unwrap_or(Value::Null)
    }

    pub fn finish_reason(&self) -> Option<UiFinishReason> {
        self.finish_reason
    }

    /// The whole `UIMessage`: `{id, role, metadata?, parts}`.
    pub fn to_message(&self) -> Value {
        let mut message = Map::new();
        message.insert("id".into(), self.id.clone().unwrap_or_default().into());
        message.insert("role".into(), "assistant".into());
        if let Some(metadata) = &self.metadata {
            message.insert("metadata".into(), metadata.clone());
        }
        message.insert("parts".into(), Value::Array(self.parts()));
        Value::Object(message)
    }

    fn merge_metadata(&mut self, update: &Value) {
        match &mut self.metadata {
            Some(existing) => deep_merge(existing, update),
            None => self.metadata = Some(update.clone()),
        }
    }

    fn open(&mut self, id: &str, reasoning: bool) {
        let part = TextPart {
            reasoning,
            id: id.to_owned(),
            text: String::new(),
            state: PartState::Streaming,
        };
        self.parts.push(Part::Text(part));
    }

    /// The open text (or reasoning) part with this id, as the client looks it up.
    fn streaming(&mut self, id: &str, reasoning: bool) -> Result<&mut TextPart, TurnError> {
        self.parts
            .iter_mut()
            .rev()
            .find_map(|part| match part {
                Part::Text(text)
                    if text.reasoning == reasoning && text.id == id && text.state == PartState::Streaming =>
                {
                    Some(text)
                }
                _ => None,
            })
            .ok_or_else(|| TurnError::InvalidChunk(format!("part `{id}` is not open")))
    }

    /// The tool part of `tool_call_id`, moved on to `state`.
    fn tool_in(&mut self, tool_call_id: &str, state: ToolState) -> Result<&mut ToolPart, TurnError> {
        let part = self.tool_mut(tool_call_id)?;
        part.state = state;
        Ok(part)
    }

    fn tool_mut(&mut self, tool_call_id: &str) -> Result<&mut ToolPart, TurnError> {
        self.parts
            .iter_mut()
            .rev()
            .find_map(|part| match part {
                Part::Tool(tool) if tool.tool_call_id == tool_call_id => Some(tool),
                _ => None,
            })
            .ok_or_else(|| TurnError::InvalidChunk(format!("no tool call `{tool_call_id}` in this message")))
    }
}

/// Merges `update` into `target` the way the client merges message metadata: objects key by key,
/// recursively; anything else (arrays included) is replaced.
pub fn deep_merge(target: &mut Value, update: &Value) {
    match (target, update) {
        (Value::Object(target), Value::Object(update)) => {
            for (key, value) in update {
                match target.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        deep_merge(existing, value)
                    }
                    _ => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, update) => *target = update.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(chunks: &[UiChunk]) -> UiMessageBuilder {
        let mut builder = UiMessageBuilder::new();
        for chunk in chunks {
            builder.apply(chunk).unwrap();
        }
        builder
    }

    fn text(id: &str, delta: &str) -> UiChunk {
        UiChunk::TextDelta {
            id: id.into(),
            delta: delta.into(),
        }
    }

    #[test]
    fn a_data_part_sent_again_with_its_id_replaces_the_first() {
        let asked = |id: &str, state: &str| UiChunk::DataElicitation {
            id: id.into(),
            data: json!({"state": state}),
        };
        let builder = build(&[
            UiChunk::StartStep,
            asked("e1", "waiting"),
            asked("e2", "waiting"),
            asked("e1", "accepted"),
        ]);
        assert_eq!(
            builder.parts(),
            vec![
                json!({"type": "step-start"}),
                json!({"type": "data-elicitation", "id": "e1", "data": {"state": "accepted"}}),
                json!({"type": "data-elicitation", "id": "e2", "data": {"state": "waiting"}}),
            ]
        );
    }

    #[test]
    fn text_and_reasoning_parts_carry_their_state() {
        let builder = build(&[
            UiChunk::Start {
                message_id: Some("m1".into()),
                message_metadata: Some(json!({"modelId": "x"})),
            },
            UiChunk::StartStep,
            UiChunk::ReasoningStart { id: "r1".into() },
            UiChunk::ReasoningDelta {
                id: "r1".into(),
                delta: "thinking".into(),
            },
            UiChunk::ReasoningEnd { id: "r1".into() },
            UiChunk::TextStart { id: "t1".into() },
            text("t1", "Hel"),
            text("t1", "lo"),
            UiChunk::TextEnd {
                id: "t1".into(),
                citations: None,
            },
            UiChunk::TextStart { id: "t2".into() },
            text("t2", "still going"),
            UiChunk::FinishStep,
        ]);
        assert_eq!(
            builder.to_message(),
            json!({
                "id": "m1",
                "role": "assistant",
                "metadata": {"modelId": "x"},
                "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "id": "r1", "text": "thinking", "state": "done"},
                    {"type": "text", "text": "Hello", "state": "done"},
                    {"type": "text", "text": "still going", "state": "streaming"},
                ]
            })
        );
    }

    #[test]
    fn static_and_dynamic_tool_parts_follow_their_states() {
        let builder = build(&[
            UiChunk::StartStep,
            UiChunk::ToolInputStart {
                tool_call_id: "a".into(),
                tool_name: "search".into(),
                dynamic: None,
                title: Some("Searching...".into()),
            },
            UiChunk::ToolInputDelta {
                tool_call_id: "a".into(),
                input_text_delta: "{\"query\":".into(),
            },
            UiChunk::ToolInputDelta {
                tool_call_id: "a".into(),
                input_text_delta: "\"rust\"}".into(),
            },
            UiChunk::ToolInputAvailable {
                tool_call_id: "a".into(),
                tool_name: "search".into(),
                input: json!({"query": "rust"}),
                dynamic: None,
                title: Some("Searching for \"rust\"...".into()),
            },
            UiChunk::ToolInputAvailable {
                tool_call_id: "b".into(),
                tool_name: "files_read".into(),
                input: json!({}),
                dynamic: Some(true),
                title: None,
            },
            UiChunk::ToolOutputAvailable {
                tool_call_id: "a".into(),
                output: json!([1, 2]),
                dynamic: None,
            },
            UiChunk::ToolOutputError {
                tool_call_id: "b".into(),
                error_text: "denied".into(),
                dynamic: Some(true),
            },
        ]);
        assert_eq!(
            builder.parts(),
            vec![
                json!({"type": "step-start"}),
                json!({"type": "tool-search", "toolCallId": "a", "state": "output-available",
                       "title": "Searching for \"rust\"...", "input": {"query": "rust"}, "output": [1, 2]}),
                json!({"type": "dynamic-tool", "toolName": "files_read", "toolCallId": "b",
                       "state": "output-error", "input": {}, "errorText": "denied"}),
            ]
        );
    }

    #[test]
    fn a_tool_left_streaming_shows_its_partial_input() {
        let builder = build(&[
            UiChunk::ToolInputStart {
                tool_call_id: "a".into(),
                tool_name: "t".into(),
                dynamic: None,
                title: None,
            },
            UiChunk::ToolInputDelta {
                tool_call_id: "a".into(),
                input_text_delta: "{}".into(),
            },
        ]);
        assert_eq!(
            builder.parts(),
            vec![json!({"type": "tool-t", "toolCallId": "a", "state": "input-streaming", "input": {}})]
        );
    }

    #[test]
    fn sources_become_parts_and_metadata_is_deep_merged() {
        let builder = build(&[
            UiChunk::Start {
                message_id: None,
                message_metadata: Some(json!({"modelId": "m", "turnId": "t"})),
            },
            UiChunk::SourceUrl {
                source_id: "1".into(),
                url: "https://a.example".into(),
                title: Some("A".into()),
            },
            UiChunk::MessageMetadata {
                message_metadata: json!({"mcpTools": {"x_echo": {"name": "X"}}}),
            },
            UiChunk::MessageMetadata {
                message_metadata: json!({"mcpTools": {"x_add": {"name": "X"}}, "sources": [1]}),
            },
            UiChunk::MessageMetadata {
                message_metadata: json!({"sources": [1, 2]}),
            },
            UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Stop),
                message_metadata: None,
            },
        ]);
        assert_eq!(
            builder.parts(),
            vec![json!({"type": "source-url", "sourceId": "1", "url": "https://a.example", "title": "A"})]
        );
        assert_eq!(
            builder.metadata(),
            json!({
                "modelId": "m", "turnId": "t",
                "mcpTools": {"x_echo": {"name": "X"}, "x_add": {"name": "X"}},
                "sources": [1, 2]
            })
        );
        assert_eq!(builder.finish_reason(), Some(UiFinishReason::Stop));
    }

    #[test]
    fn chunks_the_client_would_reject_are_errors() {
        let mut builder = UiMessageBuilder::new();
        assert!(builder.apply(&text("t1", "x")).is_err());
        assert!(builder.apply(&UiChunk::ReasoningEnd { id: "r".into() }).is_err());
        let orphan_output = UiChunk::ToolOutputAvailable {
            tool_call_id: "nope".into(),
            output: json!(1),
            dynamic: None,
        };
        assert!(builder.apply(&orphan_output).is_err());
        let orphan_delta = UiChunk::ToolInputDelta {
            tool_call_id: "nope".into(),
            input_text_delta: "{".into(),
        };
        assert!(builder.apply(&orphan_delta).is_err());
    }
}
