//! Turns the `data:` payloads of an OpenAI-compatible stream into [`StreamEvent`]s, tolerating the
//! ways real servers deviate from OpenAI's own stream (protocols §2.5). Pure: no I/O, no clock.

mod scan;
mod think;
mod tool_calls;

#[cfg(test)]
mod tests;

use serde::Deserialize;
use serde_json::Value;

use crate::provider_error;
use crate::{FinishReason, LlmError, StreamEvent, Usage};
use think::ThinkSplitter;
use tool_calls::{ToolCallSlots, WireToolCall};

const NO_CHUNKS: &str = "the response held no chat-completion chunks; check that the base URL \
     points at an OpenAI-compatible API (with /v1 when the provider needs it)";

/// How one model's text is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParserOptions {
    /// Move `<think>…</think>` spans of the content into reasoning.
    pub think_tags: bool,
    /// The model starts inside reasoning, before any `<think>` (only with `think_tags`).
    pub start_with_reasoning: bool,
}

/// Stream-state machine for one upstream response. Feed every SSE data payload to [`push`], and
/// call [`finish`] once when the stream ends (after `[DONE]` or when the connection closes).
///
/// `Finished` is only ever produced by [`finish`], after the latest usage, because providers send
/// usage in a chunk after the one that carries the finish reason. Usage goes out as its chunk
/// arrives; a server that reports it more than once reports totals, so the latest stands.
///
/// [`push`]: ChunkParser::push
/// [`finish`]: ChunkParser::finish
#[derive(Debug)]
pub struct ChunkParser {
    think: Option<ThinkSplitter>,
    tool_calls: ToolCallSlots,
    finish_reason: Option<FinishReason>,
    /// Whether any chunk arrived at all, to tell a wrong endpoint from a broken stream.
    saw_chunk: bool,
    done: bool,
    ended: bool,
}

impl ChunkParser {
    pub fn new(options: ParserOptions) -> Self {
        Self {
            think: options
                .think_tags
                .then(|| ThinkSplitter::new(options.start_with_reasoning)),
            tool_calls: ToolCallSlots::default(),
            finish_reason: None,
            saw_chunk: false,
            done: false,
            ended: false,
        }
    }

    /// True once `[DONE]` arrived; the caller can stop reading and call [`ChunkParser::finish`].
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads one SSE data payload. Anything after `[DONE]` is ignored.
    pub fn push(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        self.push_onto(data, &mut out)?;
        Ok(out)
    }

    /// [`ChunkParser::push`] onto the caller's list, which a stream keeps from one chunk to the
    /// next. After an `Err`, what it wrote onto `out` is not part of the stream.
    pub fn push_onto(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = data.trim();
        if self.done || self.ended || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // The common shapes are read by hand (see `scan`); serde reads the rest and words errors.
        let chunk: WireChunk = match scan::read_chunk(data) {
            Some(chunk) => chunk,
            None => serde_json::from_str(data).map_err(|e| {
                LlmError::Protocol(format!(
                    "a chunk is not valid JSON ({e}): {}",
                    provider_error::preview(data)
                ))
            })?,
        };
        self.push_wire(chunk, out)
    }

    /// Reads a whole answer, one `chat.completion` body, as a stream that sent it as its only
    /// chunk and then `[DONE]`: each choice's `message` is read as its delta. Returns every event
    /// of the answer, ending with `Finished`.
    pub fn push_completion(&mut self, body: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
        let completion: WireCompletion = serde_json::from_slice(body)
            .map_err(|e| LlmError::Protocol(format!("the JSON answer is not valid JSON: {e}")))?;
        let is_error = completion.error.as_ref().is_some_and(|e| !e.is_null());
        if !is_error && completion.choices.as_ref().is_none_or(Vec::is_empty) {
            // Neither a completion nor an error: reading it as an empty answer would hide the fault.
            return Err(LlmError::Protocol(
                "the answer was a JSON body that is not a chat completion".to_owned(),
            ));
        }
        let chunk = WireChunk {
            choices: completion.choices.map(|choices| {
                choices
                    .into_iter()
                    .map(|choice| WireChoice {
                        index: choice.index,
                        delta: choice.message,
                        finish_reason: choice.finish_reason,
                    })
                    .collect()
            }),
            usage: completion.usage,
            error: completion.error,
        };
        let mut out = Vec::new();
        self.push_wire(chunk, &mut out)?;
        self.done = true;
        out.extend(self.finish()?);
        Ok(out)
    }

    fn push_wire(&mut self, chunk: WireChunk, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        self.saw_chunk = true;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let wrapped = serde_json::json!({ "error": error });
            return Err(in_stream_error(&wrapped));
        }
        for choice in chunk.choices.unwrap_or_default() {
            // Only the first choice is ours; `n > 1` is never requested.
            if choice.index.is_some_and(|i| i != 0) {
                continue;
            }
            if let Some(delta) = choice.delta {
                self.push_delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.as_ref().and_then(Value::as_str)
                && !reason.is_empty()
            {
                self.finish_reason = Some(FinishReason::from_openai(reason));
            }
        }
        // Passed on as it arrives (after the chunk's own content), not kept for the end: a stream
        // cut or stopped after its report still used what the report says, and the usage ledger
        // counts it.
        if let Some(usage) = chunk.usage.as_ref().and_then(WireUsage::to_usage) {
            out.push(StreamEvent::Usage(usage));
        }
        Ok(())
    }

    /// The stream ended. Returns the trailing events, ending with `Finished`, or the error that
    /// the stream stopped before the model finished.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.ended = true;
        let mut out = Vec::new();
        if let Some(think) = self.think.as_mut() {
            think.flush(&mut out);
        }
        self.tool_calls.warn_about_unnamed();
        let reason = match self.finish_reason.take() {
            Some(reason) => reason,
            // `[DONE]` is the server saying the answer is complete, even without a reason.
            None if self.done => FinishReason::Stop,
            None if self.saw_chunk => {
                return Err(LlmError::Protocol(
                    "stream ended before the model finished".to_owned(),
                ));
            }
            None => return Err(LlmError::Protocol(NO_CHUNKS.to_owned())),
        };
        // Some servers report `stop` on a step that made tool calls; the calls are what counts.
        let reason = match reason {
            FinishReason::Stop if self.tool_calls.any_started() => FinishReason::ToolCalls,
            other => other,
        };
        out.push(StreamEvent::Finished(reason));
        Ok(out)
    }

    fn push_delta(&mut self, delta: WireDelta, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let reasoning = delta
            .reasoning_content
            .or(delta.reasoning)
            .filter(|r| !r.is_empty());
        if let Some(reasoning) = reasoning {
            out.push(StreamEvent::ReasoningDelta(reasoning));
        }
        match delta.content {
            Some(Value::String(text)) => self.push_text(text, out),
            Some(Value::Array(parts)) => {
                for part in parts {
                    self.push_content_part(&part, out);
                }
            }
            _ => {}
        }
        if let Some(fragments) = delta.tool_calls {
            self.tool_calls.push(fragments, out)?;
        }
        Ok(())
    }

    fn push_text(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        match self.think.as_mut() {
            Some(think) => think.push(&text, out),
            None => out.push(StreamEvent::TextDelta(text)),
        }
    }

    /// Content as a list of typed parts (some servers send reasoning this way).
    fn push_content_part(&mut self, part: &Value, out: &mut Vec<StreamEvent>) {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
        let text = ["text", "thinking", "reasoning"]
            .into_iter()
            .find_map(|key| part.get(key).and_then(Value::as_str))
            .unwrap_or_default();
        if text.is_empty() {
            return;
        }
        match kind {
            "thinking" | "reasoning" => out.push(StreamEvent::ReasoningDelta(text.to_owned())),
            _ => self.push_text(text.to_owned(), out),
        }
    }
}

/// The error a provider reported inside the stream (`{"error": …}` data or an `error` event).
pub(crate) fn in_stream_error(value: &Value) -> LlmError {
    provider_error::from_payload(provider_error::status_from_json(value).unwrap_or(502), value)
}

#[derive(Debug, Default, Deserialize, PartialEq)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

/// A whole answer: a chunk whose choices carry a `message` where a chunk's carry a `delta`.
#[derive(Debug, Default, Deserialize, PartialEq)]
struct WireCompletion {
    #[serde(default)]
    choices: Option<Vec<WholeChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
struct WholeChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    message: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
struct WireDelta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

/// Counts are read as any JSON number, since some servers send `12.0`.
#[derive(Debug, Default, Deserialize, PartialEq)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<Value>,
    #[serde(default)]
    completion_tokens: Option<Value>,
    #[serde(default)]
    total_tokens: Option<Value>,
    #[serde(default)]
    prompt_tokens_details: Option<Value>,
    #[serde(default)]
    completion_tokens_details: Option<Value>,
}

impl WireUsage {
    fn to_usage(&self) -> Option<Usage> {
        let prompt = count(self.prompt_tokens.as_ref());
        let completion = count(self.completion_tokens.as_ref());
        let total = count(self.total_tokens.as_ref());
        if prompt.is_none() && completion.is_none() && total.is_none() {
            return None;
        }
        let prompt_tokens = prompt.unwrap_or(0);
        let completion_tokens = completion.unwrap_or(0);
        Some(Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: total.unwrap_or(prompt_tokens.saturating_add(completion_tokens)),
            reasoning_tokens: detail(self.completion_tokens_details.as_ref(), "reasoning_tokens"),
            cached_tokens: detail(self.prompt_tokens_details.as_ref(), "cached_tokens"),
            cache_write_tokens: None,
        })
    }
}

fn count(value: Option<&Value>) -> Option<u64> {
    let value = value?;
    value
        .as_u64()
        .or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn detail(details: Option<&Value>, key: &str) -> Option<u64> {
    count(details?.get(key))
}
