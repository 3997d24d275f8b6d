//! The chat completions API's response side: the completion a client of `POST /v1/chat/completions`
//! receives for a turn, streamed or whole. (The request side, the client's messages → the turn's
//! history, is the turn crate's `facade_history`.)
//!
//! The server's tools run inside the turn, so the client never sees their calls: it gets the
//! assistant's text (each step's text separated by a blank line), reasoning as
//! `reasoning_content`, exactly one finish reason and, when asked, the usage chunk. Calls of the
//! client's own tools reach it as `tool_calls`, with the finish reason `tool_calls`.
//!
//! Only a turn that ended by itself gets a finish reason and `[DONE]`. A turn cut before its end (the
//! shutdown grace ran out, or its events stopped without an end) gets what OpenAI sends for a
//! failure after streaming began: a `data: {"error": ...}` event, which the official client raises
//! as an `APIError`, and no `[DONE]`; a whole response gets an error status instead of a completion.

use std::borrow::Cow;

use promptgate_service::events::{ClientToolCall, TurnError, TurnEvent, UiChunk, UiFinishReason};
use promptgate_service::facade::write_json_str;
use serde::Serialize;
use serde_json::{Value, json};

/// What the completion says, independent of streaming or not; borrowed from the event it
/// translates, as a stream makes one per token.
#[derive(Debug, Clone, PartialEq)]
enum Delta<'a> {
    Role,
    Content(Cow<'a, str>),
    Reasoning(&'a str),
    /// The `n`-th call of a client tool.
    ToolCall(usize, &'a ClientToolCall),
    Finish(&'static str),
    /// The turn's error text, and what its metadata said about the failure.
    Error(&'a str, FailureNote),
    /// The turn stopped before its end.
    Cut,
}

/// What a client is told about an answer cut before its end.
pub const CUT_TEXT: &str =
    "the answer was cut short before it was complete (the server stopped the turn); send the request again";

/// Turns events into completion deltas; shared by the streaming and the whole-response views.
#[derive(Debug, Default)]
struct Translator {
    any_text: bool,
    step_has_text: bool,
    /// The turn's usage from the latest step metadata, in OpenAI's shape.
    usage: Option<OpenAiUsage>,
    /// Client tool calls so far.
    tool_calls: usize,
    /// What the turn's metadata said about its failure before its error.
    failure_note: FailureNote,
    /// A finish, an error or a cut was seen: nothing more is translated.
    done: bool,
    /// The turn ended by itself (a finish reason was sent).
    finished: bool,
}

impl Translator {
    fn translate<'a>(&mut self, event: &'a TurnEvent) -> Option<Delta<'a>> {
        if self.done {
            return None;
        }
        let chunk = match event {
            TurnEvent::Chunk(chunk) => chunk,
            TurnEvent::ClientToolCall(call) => {
                self.tool_calls += 1;
                return Some(Delta::ToolCall(self.tool_calls - 1, call));
            }
            TurnEvent::KeepAlive => return None,
        };
        match chunk {
            UiChunk::Start { .. } => Some(Delta::Role),
            UiChunk::StartStep => {
                self.step_has_text = false;
                None
            }
            UiChunk::TextDelta { delta, .. } => {
                let content = if self.any_text && !self.step_has_text {
                    Cow::Owned(format!("\n\n{delta}"))
                } else {
                    Cow::Borrowed(delta.as_str())
                };
                self.any_text = true;
                self.step_has_text = true;
                Some(Delta::Content(content))
            }
            UiChunk::ReasoningDelta { delta, .. } => Some(Delta::Reasoning(delta)),
            UiChunk::MessageMetadata { message_metadata } => {
                if let Some(usage) = message_metadata.get("usage") {
                    self.usage = Some(OpenAiUsage::from_metadata(usage));
                }
                self.failure_note.read(message_metadata);
                None
            }
            UiChunk::Finish { finish_reason, .. } => {
                self.done = true;
                self.finished = true;
                let reason = if self.tool_calls > 0 {
                    "tool_calls"
                } else {
                    openai_finish_reason(*finish_reason)
                };
                Some(Delta::Finish(reason))
            }
            UiChunk::Abort { .. } => {
                self.done = true;
                Some(Delta::Cut)
            }
            UiChunk::Error { error_text } => {
                self.done = true;
                Some(Delta::Error(error_text, self.failure_note.clone()))
            }
            _ => None,
        }
    }
}

/// What a turn's metadata said about its failure before the error itself: its `errorCode` and the
/// wait the provider asked for (`retryAfterSecs`). Every facade reads a failure through it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct FailureNote {
    pub(crate) code: Option<String>,
    retry_after: Option<u64>,
}

impl FailureNote {
    /// Takes what a turn's `metadata` says about its failure, if anything.
    pub(crate) fn read(&mut self, metadata: &Value) {
        if let Some(code) = metadata.get("errorCode").and_then(Value::as_str) {
            self.code = Some(code.to_owned());
        }
        if let Some(secs) = metadata.get("retryAfterSecs").and_then(Value::as_u64) {
            self.retry_after = Some(secs);
        }
    }

    /// The failure of a turn whose stream ended with `message`.
    pub(crate) fn failure(&self, message: &str) -> TurnError {
        use promptgate_service::events::{
            CONTEXT_TOO_LONG, PROVIDER_OVERLOADED, PROVIDER_RATE_LIMITED, REQUEST_REFUSED,
        };
        let message = message.to_owned();
        let retry_after = self.retry_after;
        match self.code.as_deref() {
            Some(CONTEXT_TOO_LONG) => TurnError::ContextTooLong(message),
            Some(REQUEST_REFUSED) => TurnError::RequestRefused(message),
            Some(PROVIDER_RATE_LIMITED) => TurnError::ProviderRateLimited { message, retry_after },
            Some(PROVIDER_OVERLOADED) => TurnError::ProviderOverloaded { message, retry_after },
            _ => TurnError::Failed(message),
        }
    }
}

/// OpenAI has no spelling for "the step cap ended the tool loop"; the answer was cut short by a
/// limit, which is what `length` tells a client. (A turn that handed calls to the client says
/// `tool_calls` instead, decided by the translator, which saw them.)
fn openai_finish_reason(reason: Option<UiFinishReason>) -> &'static str {
    match reason {
        Some(UiFinishReason::Length | UiFinishReason::ToolCalls) => "length",
        Some(UiFinishReason::ContentFilter) => "content_filter",
        _ => "stop",
    }
}

/// Usage in OpenAI's names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
struct OpenAiUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_tokens_details: Option<CachedTokens>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens_details: Option<ReasoningTokens>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct ReasoningTokens {
    reasoning_tokens: u64,
}

impl OpenAiUsage {
    /// From the engine's usage metadata (AI SDK names).
    fn from_metadata(usage: &Value) -> Self {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        Self {
            prompt_tokens: count("inputTokens").unwrap_or(0),
            completion_tokens: count("outputTokens").unwrap_or(0),
            total_tokens: count("totalTokens").unwrap_or(0),
            prompt_tokens_details: count("cachedInputTokens")
                .map(|cached_tokens| CachedTokens { cached_tokens }),
            completion_tokens_details: count("reasoningTokens")
                .map(|reasoning_tokens| ReasoningTokens { reasoning_tokens }),
        }
    }
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

/// One `chat.completion.chunk`. Serialised straight from these borrowed fields: a stream sends
/// one per text delta, and building each as a JSON tree first cost a dozen allocations.
#[derive(Serialize)]
struct ChunkFrame<'a> {
    id: &'a str,
    object: &'static str,
    created: i64,
    model: &'a str,
    choices: &'a [StreamChoice<'a>],
    /// Present (`null` but on the last chunk) only when the client asked for usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<&'a OpenAiUsage>>,
}

#[derive(Serialize)]
struct StreamChoice<'a> {
    index: u32,
    delta: DeltaFields<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct DeltaFields<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[StreamToolCall<'a>; 1]>,
}

/// A client tool call, whole in one delta.
#[derive(Serialize)]
struct StreamToolCall<'a> {
    index: usize,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionFields<'a>,
}

#[derive(Serialize)]
struct FunctionFields<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> StreamToolCall<'a> {
    fn new(index: usize, call: &'a ClientToolCall) -> Self {
        Self {
            index,
            id: &call.id,
            kind: "function",
            function: FunctionFields {
                name: &call.name,
                arguments: &call.arguments,
            },
        }
    }
}

/// Streaming view: `chat.completion.chunk` objects, each sent as one `data:` event.
#[derive(Debug)]
pub struct CompletionChunks {
    identity: CompletionIdentity,
    include_usage: bool,
    translator: Translator,
    /// A text delta's frame but its text, before and after it: everything else in it is the same
    /// for the whole stream, and serialising it for every delta was most of the stream's own work
    /// per chunk. The bytes are those of [`ChunkFrame`] with only `content` in its delta.
    content_frame: (Vec<u8>, Vec<u8>),
}

impl CompletionChunks {
    /// `include_usage` is the request's `stream_options.include_usage`.
    pub fn new(identity: CompletionIdentity, include_usage: bool) -> Self {
        let mut before = b"data: {\"id\":".to_vec();
        write_json_str(&mut before, &identity.id);
        before.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        before.extend_from_slice(identity.created.to_string().as_bytes());
        before.extend_from_slice(b",\"model\":");
        write_json_str(&mut before, &identity.model);
        before.extend_from_slice(b",\"choices\":[{\"index\":0,\"delta\":{\"content\":");
        let mut after = b"},\"logprobs\":null,\"finish_reason\":null}]".to_vec();
        if include_usage {
            after.extend_from_slice(b",\"usage\":null");
        }
        after.extend_from_slice(b"}\n\n");
        Self {
            identity,
            include_usage,
            translator: Translator::default(),
            content_frame: (before, after),
        }
    }

    /// The objects to send for one event (none for most).
    pub fn push(&mut self, event: &TurnEvent) -> Vec<Value> {
        let mut out = Vec::new();
        self.each(event, |frame| match frame {
            Ok(chunk) => out.push(serde_json::to_value(chunk).unwrap_or(Value::Null)),
            Err(error) => out.push(error),
        });
        out
    }

    /// Like [`push`](Self::push), written as SSE `data:` events onto `out`.
    pub fn push_sse(&mut self, event: &TurnEvent, out: &mut Vec<u8>) {
        let Some(delta) = self.translator.translate(event) else {
            return;
        };
        if let Delta::Content(text) = &delta {
            let (before, after) = &self.content_frame;
            out.reserve(before.len() + text.len() + after.len() + 2);
            out.extend_from_slice(before);
            write_json_str(out, text);
            out.extend_from_slice(after);
            return;
        }
        self.each_delta(delta, |frame| {
            // A chunk's frame is about 200 bytes besides its text: room made once spares the
            // vector five doublings per streamed chunk.
            out.reserve(256);
            match frame {
                Ok(chunk) => crate::sse::push_data_frame(out, chunk),
                Err(error) => crate::sse::push_data_frame(out, &error),
            }
        });
    }

    /// Hands each frame an event makes to `emit`: a chunk, or an error object that ends the stream.
    fn each(&mut self, event: &TurnEvent, emit: impl FnMut(Result<&ChunkFrame<'_>, Value>)) {
        if let Some(delta) = self.translator.translate(event) {
            self.each_delta(delta, emit);
        }
    }

    /// The frames of one delta, as [`each`](Self::each) hands them on.
    fn each_delta(&self, delta: Delta<'_>, mut emit: impl FnMut(Result<&ChunkFrame<'_>, Value>)) {
        let (fields, finish_reason) = match &delta {
            Delta::Role => (
                DeltaFields {
                    role: Some("assistant"),
                    content: Some(""),
                    ..DeltaFields::default()
                },
                None,
            ),
            Delta::Content(text) => (
                DeltaFields {
                    content: Some(text),
                    ..DeltaFields::default()
                },
                None,
            ),
            Delta::Reasoning(text) => (
                DeltaFields {
                    reasoning_content: Some(text),
                    ..DeltaFields::default()
                },
                None,
            ),
            Delta::ToolCall(index, call) => (
                DeltaFields {
                    tool_calls: Some([StreamToolCall::new(*index, call)]),
                    ..DeltaFields::default()
                },
                None,
            ),
            Delta::Finish(reason) => (DeltaFields::default(), Some(*reason)),
            Delta::Error(message, note) => {
                emit(Err(
                    json!({"error": {"message": message, "type": "upstream_error", "code": note.code}}),
                ));
                return;
            }
            Delta::Cut => {
                emit(Err(cut_error()));
                return;
            }
        };
        let choice = [StreamChoice {
            index: 0,
            delta: fields,
            logprobs: None,
            finish_reason,
        }];
        let usage_slot = self.include_usage.then_some(None);
        emit(Ok(&self.frame(&choice, usage_slot)));
        if finish_reason.is_some() && self.include_usage {
            let usage = self.translator.usage.unwrap_or_default();
            emit(Ok(&self.frame(&[], Some(Some(&usage)))));
        }
    }

    /// What ends the stream once the turn's events are over: `[DONE]` after a finish; after an
    /// error nothing more; and when the events stopped without any end, the cut's error event.
    pub fn close_sse(&mut self, out: &mut Vec<u8>) {
        if self.translator.finished {
            out.extend_from_slice(crate::sse::SSE_DONE.as_bytes());
        } else if !self.translator.done {
            self.translator.done = true;
            crate::sse::push_data_frame(out, &cut_error());
        }
    }

    fn frame<'a>(
        &'a self,
        choices: &'a [StreamChoice<'a>],
        usage: Option<Option<&'a OpenAiUsage>>,
    ) -> ChunkFrame<'a> {
        ChunkFrame {
            id: &self.identity.id,
            object: "chat.completion.chunk",
            created: self.identity.created,
            model: &self.identity.model,
            choices,
            usage,
        }
    }
}

/// The chunks as a streamed body's frames, with the heartbeat comment while the turn's tools run.
impl crate::facade_stream::FrameEncoder for CompletionChunks {
    type Close = std::future::Ready<Vec<u8>>;

    fn push(&mut self, event: &TurnEvent, out: &mut Vec<u8>) -> bool {
        match event {
            TurnEvent::KeepAlive => out.extend_from_slice(crate::sse::KEEP_ALIVE_FRAME.as_bytes()),
            event => self.push_sse(event, out),
        }
        false
    }

    fn close(mut self, mut out: Vec<u8>) -> Self::Close {
        self.close_sse(&mut out);
        std::future::ready(out)
    }
}

/// The error event of an answer cut before its end.
fn cut_error() -> Value {
    json!({"error": {"message": CUT_TEXT, "type": "server_error", "code": "interrupted"}})
}

/// Why a whole response is no completion.
#[derive(Debug, PartialEq)]
pub enum Unfinished {
    /// The turn failed; its text is safe to show.
    Failed(TurnError),
    /// The turn stopped before its end.
    Cut,
}

/// One `chat.completion`.
#[derive(Serialize)]
struct CompletionBody<'a> {
    id: &'a str,
    object: &'static str,
    created: i64,
    model: &'a str,
    choices: [WholeChoice<'a>; 1],
    usage: OpenAiUsage,
}

#[derive(Serialize)]
struct WholeChoice<'a> {
    index: u32,
    message: WholeMessage<'a>,
    logprobs: Option<()>,
    finish_reason: &'static str,
}

#[derive(Serialize)]
struct WholeMessage<'a> {
    role: &'static str,
    /// `null` when the message is only tool calls, as OpenAI sends it.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tool_calls: &'a [WholeToolCall],
}

/// A client tool call in a whole completion.
#[derive(Debug, Serialize)]
struct WholeToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WholeFunction,
}

#[derive(Debug, Serialize)]
struct WholeFunction {
    name: String,
    arguments: String,
}

/// Non-streaming view: the events folded into one `chat.completion` object.
#[derive(Debug)]
pub struct CompletionResponse {
    identity: CompletionIdentity,
    translator: Translator,
    content: String,
    reasoning: String,
    tool_calls: Vec<WholeToolCall>,
    finish_reason: Option<&'static str>,
    error: Option<TurnError>,
}

impl CompletionResponse {
    pub fn new(identity: CompletionIdentity) -> Self {
        Self {
            identity,
            translator: Translator::default(),
            content: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            finish_reason: None,
            error: None,
        }
    }

    pub fn push(&mut self, event: &TurnEvent) {
        match self.translator.translate(event) {
            Some(Delta::Content(text)) => self.content.push_str(&text),
            Some(Delta::Reasoning(text)) => self.reasoning.push_str(text),
            Some(Delta::ToolCall(_, call)) => self.tool_calls.push(WholeToolCall {
                id: call.id.clone(),
                kind: "function",
                function: WholeFunction {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            }),
            Some(Delta::Finish(reason)) => self.finish_reason = Some(reason),
            Some(Delta::Error(message, note)) => self.error = Some(note.failure(message)),
            Some(Delta::Cut) | Some(Delta::Role) | None => {}
        }
    }

    /// The completion, or why there is none: the turn failed or was cut before its end.
    pub fn finish(self) -> Result<Value, Unfinished> {
        self.with_body(|body| serde_json::to_value(body).unwrap_or(Value::Null))
    }

    /// Like [`finish`](Self::finish), as the JSON bytes of the response body.
    pub fn finish_json(self) -> Result<Vec<u8>, Unfinished> {
        self.with_body(|body| serde_json::to_vec(body).unwrap_or_default())
    }

    fn with_body<T>(self, encode: impl FnOnce(&CompletionBody<'_>) -> T) -> Result<T, Unfinished> {
        if let Some(error) = self.error {
            return Err(Unfinished::Failed(error));
        }
        if !self.translator.finished {
            return Err(Unfinished::Cut);
        }
        let body = CompletionBody {
            id: &self.identity.id,
            object: "chat.completion",
            created: self.identity.created,
            model: &self.identity.model,
            choices: [WholeChoice {
                index: 0,
                message: WholeMessage {
                    role: "assistant",
                    content: Some(self.content.as_str())
                        .filter(|text| !text.is_empty() || self.tool_calls.is_empty()),
                    reasoning_content: Some(self.reasoning.as_str()).filter(|r| !r.is_empty()),
                    tool_calls: &self.tool_calls,
                },
                logprobs: None,
                finish_reason: self.finish_reason.unwrap_or("stop"),
            }],
            usage: self.translator.usage.unwrap_or_default(),
        };
        Ok(encode(&body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facade_stream::test_turns::{chunk, reasoning_then_preamble, unreachable_provider};

    fn identity() -> CompletionIdentity {
        CompletionIdentity {
            id: "chatcmpl-1".into(),
            created: 1_764_662_400,
            model: "m".into(),
        }
    }

    /// A turn with reasoning, a tool step with preamble text, and a final answer.
    fn tool_turn() -> Vec<TurnEvent> {
        let mut turn = reasoning_then_preamble(Some("msg"));
        turn.extend([
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
            chunk(UiChunk::TextEnd {
                id: "t2".into(),
                citations: None,
            }),
            chunk(UiChunk::MessageMetadata {
                message_metadata: json!({"usage": {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16, "reasoningTokens": 2}}),
            }),
            chunk(UiChunk::FinishStep),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Stop),
                message_metadata: None,
            }),
        ]);
        turn
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
    fn the_sse_frames_are_the_same_objects() {
        for include_usage in [false, true] {
            let mut chunks = CompletionChunks::new(identity(), include_usage);
            let mut sse = Vec::new();
            for event in tool_turn() {
                chunks.push_sse(&event, &mut sse);
            }
            let text = String::from_utf8(sse).unwrap();
            let frames: Vec<Value> = text
                .split_terminator("\n\n")
                .map(|frame| serde_json::from_str(frame.strip_prefix("data: ").unwrap()).unwrap())
                .collect();
            assert_eq!(frames, stream(&tool_turn(), include_usage));
        }
    }

    #[test]
    fn a_text_deltas_frame_is_the_bytes_serde_writes() {
        let identity = || CompletionIdentity {
            id: "chatcmpl-\"1\"".into(),
            created: 1_764_662_400,
            model: "m\\odel é".into(),
        };
        let mut turn = tool_turn();
        let end = turn.len() - 4;
        turn.insert(
            end,
            chunk(UiChunk::TextDelta {
                id: "t2".into(),
                delta: "a \"q\"\n\\ é \u{1} and a longer run of plain words".into(),
            }),
        );
        for include_usage in [false, true] {
            let mut fast = CompletionChunks::new(identity(), include_usage);
            let mut by_serde = CompletionChunks::new(identity(), include_usage);
            let (mut ours, mut expected) = (Vec::new(), Vec::new());
            for event in &turn {
                fast.push_sse(event, &mut ours);
                by_serde.each(event, |frame| match frame {
                    Ok(chunk) => crate::sse::push_data_frame(&mut expected, chunk),
                    Err(error) => crate::sse::push_data_frame(&mut expected, &error),
                });
            }
            assert!(String::from_utf8_lossy(&ours).contains("plain words"));
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    #[test]
    fn the_whole_response_bytes_are_the_same_object() {
        let fold = || {
            let mut response = CompletionResponse::new(identity());
            for event in tool_turn() {
                response.push(&event);
            }
            response
        };
        let bytes = fold().finish_json().unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            fold().finish().unwrap()
        );
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
        let out = stream(&unreachable_provider(), true);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1],
            json!({"error": {"message": "The model provider could not be reached.", "type": "upstream_error", "code": null}})
        );
    }

    #[test]
    fn a_turn_cut_before_its_end_is_an_error_without_a_finish_or_done() {
        let start = chunk(UiChunk::Start {
            message_id: None,
            message_metadata: None,
        });
        let text = chunk(UiChunk::TextDelta {
            id: "t".into(),
            delta: "Half an ans".into(),
        });
        let abort = chunk(UiChunk::Abort {
            reason: Some("stopped".into()),
        });
        // Stopped, and events that just end: the same for the client.
        for events in [
            vec![start.clone(), text.clone(), abort.clone()],
            vec![start.clone(), text.clone()],
        ] {
            let mut chunks = CompletionChunks::new(identity(), true);
            let mut sse = Vec::new();
            for event in &events {
                chunks.push_sse(event, &mut sse);
            }
            chunks.close_sse(&mut sse);
            let sse = String::from_utf8(sse).unwrap();
            assert!(
                !sse.contains("[DONE]") && !sse.contains("finish_reason\":\"stop"),
                "{sse}"
            );
            let last: Value = serde_json::from_str(
                sse.split_terminator("\n\n")
                    .last()
                    .unwrap()
                    .strip_prefix("data: ")
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(last["error"]["code"], "interrupted", "{sse}");
            assert_eq!(sse.matches("\"error\"").count(), 1, "{sse}");

            let mut whole = CompletionResponse::new(identity());
            for event in &events {
                whole.push(event);
            }
            assert_eq!(whole.finish(), Err(Unfinished::Cut));
        }
    }

    #[test]
    fn only_a_turn_that_ended_by_itself_closes_with_done() {
        let mut chunks = CompletionChunks::new(identity(), false);
        let mut sse = Vec::new();
        for event in tool_turn() {
            chunks.push_sse(&event, &mut sse);
        }
        chunks.close_sse(&mut sse);
        assert!(String::from_utf8(sse).unwrap().ends_with("data: [DONE]\n\n"));
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
        assert_eq!(
            response.finish(),
            Err(Unfinished::Failed(TurnError::Failed("budget".into())))
        );
    }
}
