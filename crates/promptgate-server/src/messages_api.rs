//! The Anthropic Messages API's response side: the message a client of `POST /v1/messages` receives
//! for a turn, as the events Anthropic streams or as one message. (The request side, the client's
//! messages and tools → the turn's, is the turn crate's `facade::messages`.)
//!
//! The server's tools run inside the turn and never show: the client gets the assistant's text (a
//! text block per model step), its reasoning as thinking blocks, the calls of its own tools as
//! `tool_use` blocks (with `stop_reason: "tool_use"`), `ping`s while the server's tools run, and the
//! usage with Anthropic's cache fields. Thinking blocks carry a signature, as the SDKs expect; it is
//! the gateway's own, and a thinking block sent back is dropped (the provider keeps what it needs).

use promptgate_service::events::{ClientToolCall, TurnError, TurnEvent, UiChunk, UiFinishReason};
use promptgate_service::facade::write_json_str;
use serde::Serialize;
use serde_json::{Value, json};

use crate::completions_api::FailureNote;
use crate::error::ErrorCode;

/// What the message is, whether streamed or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageIdentity {
    /// `msg_…`
    pub id: String,
    /// The model as the client named it.
    pub model: String,
}

/// Usage in Anthropic's names: `input_tokens` excludes what was read from or written to the cache.
/// In alphabetical order, as it was written when the events were JSON trees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MessagesUsage {
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    input_tokens: u64,
    output_tokens: u64,
}

impl MessagesUsage {
    /// From the engine's usage metadata (AI SDK names, where input counts the cache too).
    fn from_metadata(usage: &Value) -> Self {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let read = count("cachedInputTokens");
        let written = count("cacheWriteInputTokens");
        Self {
            input_tokens: count("inputTokens").saturating_sub(read + written),
            output_tokens: count("outputTokens"),
            cache_creation_input_tokens: written,
            cache_read_input_tokens: read,
        }
    }
}

/// A content block as it opens.
#[derive(Debug, Clone, PartialEq)]
enum Opened<'a> {
    Text,
    Thinking,
    ToolUse(&'a ClientToolCall),
}

/// What the message says, independent of streaming or not; borrowed from the event it translates.
#[derive(Debug, Clone, PartialEq)]
enum Step<'a> {
    Start,
    Open(usize, Opened<'a>),
    Text(usize, &'a str),
    Thinking(usize, &'a str),
    Signature(usize),
    InputJson(usize, &'a str),
    Close(usize),
    Ping,
    End(&'static str, MessagesUsage),
    /// The turn's error text, and the failure it stands for.
    Error(&'a str, TurnError),
}

/// Which block is open, and where the next one goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
}

/// Turns events into message steps; shared by the streaming and the whole views.
#[derive(Debug)]
struct Translator {
    open: Open,
    /// The index of the open block, or of the next one when none is open.
    index: usize,
    tool_calls: usize,
    usage: MessagesUsage,
    /// What the turn's metadata said about its failure before its error.
    failure_note: FailureNote,
    done: bool,
}

impl Default for Translator {
    fn default() -> Self {
        Self {
            open: Open::None,
            index: 0,
            tool_calls: 0,
            usage: MessagesUsage::default(),
            failure_note: FailureNote::default(),
            done: false,
        }
    }
}

impl Translator {
    fn translate<'a>(&mut self, event: &'a TurnEvent, emit: &mut impl FnMut(Step<'a>)) {
        if self.done {
            return;
        }
        let chunk = match event {
            TurnEvent::KeepAlive => return emit(Step::Ping),
            TurnEvent::ClientToolCall(call) => {
                self.close(emit);
                emit(Step::Open(self.index, Opened::ToolUse(call)));
                emit(Step::InputJson(self.index, &call.arguments));
                emit(Step::Close(self.index));
                self.index += 1;
                self.tool_calls += 1;
                return;
            }
            TurnEvent::Chunk(chunk) => chunk,
        };
        match chunk {
            UiChunk::Start { .. } => emit(Step::Start),
            UiChunk::TextDelta { delta, .. } => {
                self.open_as(Open::Text, emit);
                emit(Step::Text(self.index, delta));
            }
            UiChunk::ReasoningDelta { delta, .. } => {
                self.open_as(Open::Thinking, emit);
                emit(Step::Thinking(self.index, delta));
            }
            UiChunk::TextEnd { .. } | UiChunk::ReasoningEnd { .. } => self.close(emit),
            UiChunk::MessageMetadata { message_metadata } => {
                if let Some(usage) = message_metadata.get("usage") {
                    self.usage = MessagesUsage::from_metadata(usage);
                }
                self.failure_note.read(message_metadata);
            }
            UiChunk::Finish { finish_reason, .. } => {
                let reason = match finish_reason {
                    _ if self.tool_calls > 0 => "tool_use",
                    // The step cap, like a length limit, cut the answer short.
                    Some(UiFinishReason::Length | UiFinishReason::ToolCalls) => "max_tokens",
                    Some(UiFinishReason::ContentFilter) => "refusal",
                    _ => "end_turn",
                };
                self.end(reason, emit);
            }
            UiChunk::Abort { .. } => self.end("end_turn", emit),
            UiChunk::Error { error_text } => {
                self.done = true;
                emit(Step::Error(error_text, self.failure(error_text)));
            }
            _ => {}
        }
    }

    /// Opens a block of `kind` unless one is open already (text and thinking arrive in parts that
    /// only their first delta opens, so an empty part makes no block).
    fn open_as<'a>(&mut self, kind: Open, emit: &mut impl FnMut(Step<'a>)) {
        if self.open == kind {
            return;
        }
        self.close(emit);
        let opened = if kind == Open::Thinking {
            Opened::Thinking
        } else {
            Opened::Text
        };
        emit(Step::Open(self.index, opened));
        self.open = kind;
    }

    fn close<'a>(&mut self, emit: &mut impl FnMut(Step<'a>)) {
        match self.open {
            Open::None => return,
            Open::Thinking => emit(Step::Signature(self.index)),
            Open::Text => {}
        }
        emit(Step::Close(self.index));
        self.open = Open::None;
        self.index += 1;
    }

    /// How the turn failed, its stream having ended with `message`.
    fn failure(&self, message: &str) -> TurnError {
        self.failure_note.failure(message)
    }

    fn end<'a>(&mut self, reason: &'static str, emit: &mut impl FnMut(Step<'a>)) {
        self.close(emit);
        self.done = true;
        emit(Step::End(reason, self.usage));
    }
}

/// The signature a thinking block carries: the gateway's own, opaque to the client.
fn signature(identity: &MessageIdentity, index: usize) -> String {
    format!("promptgate.{}.{index}", identity.id)
}

/// Streaming view: Anthropic's events, each `event: <type>` then `data: <json>`.
#[derive(Debug)]
pub struct MessageEvents {
    identity: MessageIdentity,
    translator: Translator,
}

/// A `content_block_delta` event, serialised from borrowed fields: a stream sends one per token.
#[derive(Serialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    delta: BlockDelta<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum BlockDelta<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

impl MessageEvents {
    pub fn new(identity: MessageIdentity) -> Self {
        Self {
            identity,
            translator: Translator::default(),
        }
    }

    /// The SSE events for one turn event, written onto `out` (nothing for most).
    pub fn push_sse(&mut self, event: &TurnEvent, out: &mut Vec<u8>) {
        let identity = &self.identity;
        self.translator
            .translate(event, &mut |step| write_step(identity, step, out));
    }
}

/// The events of one step, each serialised straight from its fields (in alphabetical order, as they
/// were written when they were JSON trees).
fn write_step(identity: &MessageIdentity, step: Step<'_>, out: &mut Vec<u8>) {
    match step {
        Step::Start => {
            let message = MessageStart {
                content: [],
                id: &identity.id,
                model: &identity.model,
                role: "assistant",
                stop_reason: None,
                stop_sequence: None,
                kind: "message",
                usage: MessagesUsage::default(),
            };
            let data = StartEvent {
                message,
                kind: "message_start",
            };
            sse_event(out, "message_start", &data);
            out.extend_from_slice(PING_FRAME);
        }
        Step::Open(index, opened) => {
            let content_block = match opened {
                Opened::Text => StartBlock::Text {
                    text: "",
                    kind: "text",
                },
                Opened::Thinking => StartBlock::Thinking {
                    signature: "",
                    thinking: "",
                    kind: "thinking",
                },
                Opened::ToolUse(call) => StartBlock::ToolUse {
                    id: &call.id,
                    input: NoInput {},
                    name: &call.name,
                    kind: "tool_use",
                },
            };
            let data = BlockStart {
                content_block,
                index,
                kind: "content_block_start",
            };
            sse_event(out, "content_block_start", &data);
        }
        Step::Text(index, text) => delta_event(out, index, BlockDelta::Text { text }),
        Step::Thinking(index, thinking) => delta_event(out, index, BlockDelta::Thinking { thinking }),
        Step::Signature(index) => {
            let signature = signature(identity, index);
            delta_event(
                out,
                index,
                BlockDelta::Signature {
                    signature: &signature,
                },
            );
        }
        Step::InputJson(index, partial_json) => {
            delta_event(out, index, BlockDelta::InputJson { partial_json })
        }
        Step::Close(index) => {
            let data = BlockStop {
                index,
                kind: "content_block_stop",
            };
            sse_event(out, "content_block_stop", &data);
        }
        Step::Ping => out.extend_from_slice(PING_FRAME),
        Step::End(stop_reason, usage) => {
            let data = MessageDelta {
                delta: StopFields {
                    stop_reason,
                    stop_sequence: None,
                },
                kind: "message_delta",
                usage,
            };
            sse_event(out, "message_delta", &data);
            out.extend_from_slice(MESSAGE_STOP_FRAME);
        }
        Step::Error(message, failure) => {
            // As the same failure read whole is answered: a conversation too long for the
            // model is the client's invalid request, as with Anthropic's "prompt is too long".
            let code = ErrorCode::of_turn(&failure);
            sse_event(out, "error", &error_body(code, message));
        }
    }
}

const PING_FRAME: &[u8] = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
const MESSAGE_STOP_FRAME: &[u8] = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

#[derive(Serialize)]
struct StartEvent<'a> {
    message: MessageStart<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The message as `message_start` announces it: nothing in it yet.
#[derive(Serialize)]
struct MessageStart<'a> {
    content: [(); 0],
    id: &'a str,
    model: &'a str,
    role: &'static str,
    stop_reason: Option<()>,
    stop_sequence: Option<()>,
    #[serde(rename = "type")]
    kind: &'static str,
    usage: MessagesUsage,
}

#[derive(Serialize)]
struct BlockStart<'a> {
    content_block: StartBlock<'a>,
    index: usize,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// A content block as it opens, empty.
#[derive(Serialize)]
#[serde(untagged)]
enum StartBlock<'a> {
    Text {
        text: &'static str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Thinking {
        signature: &'static str,
        thinking: &'static str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolUse {
        id: &'a str,
        input: NoInput,
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// `{}`: a `tool_use` block's input arrives as its `input_json_delta`.
#[derive(Serialize)]
struct NoInput {}

#[derive(Serialize)]
struct BlockStop {
    index: usize,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct MessageDelta {
    delta: StopFields,
    #[serde(rename = "type")]
    kind: &'static str,
    usage: MessagesUsage,
}

#[derive(Serialize)]
struct StopFields {
    stop_reason: &'static str,
    stop_sequence: Option<()>,
}

/// The events as a streamed body's frames; the stream just ends after `message_stop`.
impl crate::facade_stream::FrameEncoder for MessageEvents {
    type Close = std::future::Ready<Vec<u8>>;

    fn push(&mut self, event: &TurnEvent, out: &mut Vec<u8>) -> bool {
        self.push_sse(event, out);
        false
    }

    fn close(self, out: Vec<u8>) -> Self::Close {
        std::future::ready(out)
    }
}

/// `{"type": "error", "error": {"type", "message"}}`: Anthropic's error for `code` of the error
/// table, in a stream or a body.
pub fn error_body(code: ErrorCode, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type(code), "message": message}})
}

/// Anthropic's `error.type` for a code of the error table, by the status the table gives it.
fn error_type(code: ErrorCode) -> &'static str {
    match code.status().as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 => "overloaded_error",
        504 => "timeout_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

fn delta_event(out: &mut Vec<u8>, index: usize, delta: BlockDelta<'_>) {
    // The event of every text token, written as the serialised one reads: serialising the tagged
    // delta cost more than the rest of the token's way through the stream.
    if let BlockDelta::Text { text } = delta {
        out.reserve(128 + text.len());
        out.extend_from_slice(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":",
        );
        out.extend_from_slice(index.to_string().as_bytes());
        out.extend_from_slice(b",\"delta\":{\"type\":\"text_delta\",\"text\":");
        write_json_str(out, text);
        out.extend_from_slice(b"}}\n\n");
        return;
    }
    let data = DeltaEvent {
        kind: "content_block_delta",
        index,
        delta,
    };
    sse_event(out, "content_block_delta", &data);
}

/// One SSE event with its name: Anthropic's clients skip events without an `event:` line.
fn sse_event(out: &mut Vec<u8>, name: &str, data: &impl Serialize) {
    out.reserve(64);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.push(b'\n');
    crate::sse::push_data_frame(out, data);
}

/// One content block of a whole message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text { text: String },
    Thinking { thinking: String, signature: String },
    ToolUse { id: String, name: String, input: Value },
}

/// Non-streaming view: the events folded into one message.
#[derive(Debug)]
pub struct WholeMessage {
    identity: MessageIdentity,
    translator: Translator,
    content: Vec<Block>,
    stop_reason: Option<&'static str>,
    usage: MessagesUsage,
    error: Option<TurnError>,
}

impl WholeMessage {
    pub fn new(identity: MessageIdentity) -> Self {
        Self {
            identity,
            translator: Translator::default(),
            content: Vec::new(),
            stop_reason: None,
            usage: MessagesUsage::default(),
            error: None,
        }
    }

    pub fn push(&mut self, event: &TurnEvent) {
        let Self {
            identity,
            translator,
            content,
            stop_reason,
            usage,
            error,
        } = self;
        translator.translate(event, &mut |step| match step {
            Step::Open(_, Opened::Text) => content.push(Block::Text { text: String::new() }),
            Step::Open(index, Opened::Thinking) => content.push(Block::Thinking {
                thinking: String::new(),
                signature: signature(identity, index),
            }),
            Step::Open(_, Opened::ToolUse(call)) => content.push(Block::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({})),
            }),
            Step::Text(_, piece) | Step::Thinking(_, piece) => {
                if let Some(Block::Text { text } | Block::Thinking { thinking: text, .. }) =
                    content.last_mut()
                {
                    text.push_str(piece);
                }
            }
            Step::End(reason, end_usage) => {
                *stop_reason = Some(reason);
                *usage = end_usage;
            }
            Step::Error(_, failure) => *error = Some(failure),
            Step::Start | Step::Signature(_) | Step::InputJson(..) | Step::Close(_) | Step::Ping => {}
        });
    }

    /// The message as JSON bytes, or the turn's error (a text safe to show) when it failed.
    pub fn finish_json(self) -> Result<Vec<u8>, TurnError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let body = json!({
            "id": self.identity.id, "type": "message", "role": "assistant", "model": self.identity.model,
            "content": self.content, "stop_reason": self.stop_reason.unwrap_or("end_turn"),
            "stop_sequence": null, "usage": self.usage,
        });
        Ok(serde_json::to_vec(&body).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facade_stream::test_turns::{chunk, reasoning_then_preamble, unreachable_provider};
    use promptgate_service::events::{CONTEXT_TOO_LONG, UiFinishReason};

    #[test]
    fn a_text_deltas_event_is_the_bytes_serde_writes() {
        let text = "a \"q\"\n\\ é \u{1} and a longer run of plain words";
        let mut ours = Vec::new();
        delta_event(&mut ours, 12, BlockDelta::Text { text });
        let mut expected = Vec::new();
        let data = DeltaEvent {
            kind: "content_block_delta",
            index: 12,
            delta: BlockDelta::Text { text },
        };
        sse_event(&mut expected, "content_block_delta", &data);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }

    fn identity() -> MessageIdentity {
        MessageIdentity {
            id: "msg_1".into(),
            model: "m".into(),
        }
    }

    /// Reasoning, a server tool step with preamble text (unseen), an answer, a client call.
    fn turn() -> Vec<TurnEvent> {
        let mut turn = reasoning_then_preamble(None);
        turn.extend([
            chunk(UiChunk::ToolInputAvailable {
                tool_call_id: "s".into(),
                tool_name: "search".into(),
                input: json!({}),
                dynamic: None,
                title: None,
            }),
            TurnEvent::KeepAlive,
            chunk(UiChunk::ToolOutputAvailable {
                tool_call_id: "s".into(),
                output: json!(1),
                dynamic: None,
            }),
            chunk(UiChunk::FinishStep),
            chunk(UiChunk::StartStep),
            chunk(UiChunk::TextStart { id: "t2".into() }),
            chunk(UiChunk::TextDelta {
                id: "t2".into(),
                delta: "Reading".into(),
            }),
            chunk(UiChunk::TextDelta {
                id: "t2".into(),
                delta: " it.".into(),
            }),
            chunk(UiChunk::TextEnd {
                id: "t2".into(),
                citations: None,
            }),
            chunk(UiChunk::MessageMetadata {
                message_metadata: json!({"usage": {"inputTokens": 30, "outputTokens": 7, "totalTokens": 37,
                    "cachedInputTokens": 20, "cacheWriteInputTokens": 4}}),
            }),
            chunk(UiChunk::FinishStep),
            TurnEvent::ClientToolCall(ClientToolCall {
                id: "toolu_1".into(),
                name: "Read".into(),
                arguments: r#"{"path":"a.rs"}"#.into(),
            }),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::ToolCalls),
                message_metadata: None,
            }),
        ]);
        turn
    }

    /// Every `(event name, data)` of the stream.
    fn stream(events: &[TurnEvent]) -> Vec<(String, Value)> {
        let mut encoder = MessageEvents::new(identity());
        let mut out = Vec::new();
        for event in events {
            encoder.push_sse(event, &mut out);
        }
        String::from_utf8(out)
            .unwrap()
            .split_terminator("\n\n")
            .map(|frame| {
                let (name, data) = frame.split_once('\n').unwrap();
                let name = name.strip_prefix("event: ").unwrap().to_owned();
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(data["type"], name.as_str(), "the data repeats the event's name");
                (name, data)
            })
            .collect()
    }

    #[test]
    fn the_stream_is_anthropics_event_sequence_without_the_servers_tools() {
        let events = stream(&turn());
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        // Each step the client sees writes a block of two deltas, then one of one: the thinking and
        // its signature, then the text, in the first; the text, then the client's call, in the second.
        let step = [
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
        ];
        let expected = [
            ["message_start", "ping"].as_slice(),
            &step,
            &["ping"],
            &step,
            &["message_delta", "message_stop"],
        ]
        .concat();
        assert_eq!(names, expected);
        assert_eq!(events[0].1["message"]["content"], json!([]));
        assert_eq!(events[2].1["content_block"]["type"], "thinking");
        assert_eq!(events[4].1["delta"]["type"], "signature_delta");
        let indexes: Vec<u64> = events
            .iter()
            .filter(|(name, _)| name == "content_block_start")
            .map(|(_, data)| data["index"].as_u64().unwrap())
            .collect();
        assert_eq!(indexes, [0, 1, 2, 3], "each block appends");
        assert_eq!(
            events[14].1["content_block"],
            json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}})
        );
        assert_eq!(
            events[15].1["delta"],
            json!({"type": "input_json_delta", "partial_json": "{\"path\":\"a.rs\"}"})
        );
        assert_eq!(
            events[17].1,
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"input_tokens": 6, "output_tokens": 7, "cache_creation_input_tokens": 4,
                             "cache_read_input_tokens": 20}})
        );
    }

    #[test]
    fn the_whole_message_folds_the_same_events() {
        let mut whole = WholeMessage::new(identity());
        for event in turn() {
            whole.push(&event);
        }
        let body: Value = serde_json::from_slice(&whole.finish_json().unwrap()).unwrap();
        assert_eq!(
            body["content"],
            json!([
                {"type": "thinking", "thinking": "plan", "signature": "promptgate.msg_1.0"},
                {"type": "text", "text": "Checking."},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.rs"}}
            ])
        );
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(body["usage"]["cache_read_input_tokens"], 20);
        assert_eq!(
            (body["id"].as_str(), body["type"].as_str()),
            (Some("msg_1"), Some("message"))
        );
    }

    #[test]
    fn an_error_ends_the_stream_with_an_error_event() {
        let events = stream(&unreachable_provider());
        let last = events.last().unwrap();
        assert_eq!(last.0, "error");
        assert_eq!(
            last.1["error"],
            json!({"type": "api_error", "message": "The model provider could not be reached."})
        );
    }

    #[test]
    fn a_conversation_too_long_for_the_model_is_the_clients_invalid_request() {
        let failed = [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::MessageMetadata {
                message_metadata: json!({"errorCode": CONTEXT_TOO_LONG}),
            }),
            chunk(UiChunk::Error {
                error_text: "The conversation does not fit.".into(),
            }),
        ];
        let events = stream(&failed);
        assert_eq!(events.last().unwrap().1["error"]["type"], "invalid_request_error");
        let mut whole = WholeMessage::new(identity());
        for event in &failed {
            whole.push(event);
        }
        assert!(matches!(whole.finish_json(), Err(TurnError::ContextTooLong(_))));
    }
}
