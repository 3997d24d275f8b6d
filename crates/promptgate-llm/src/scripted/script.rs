//! Scripts for the scripted upstream, and builders for the chunks real providers send.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

/// One thing the scripted upstream does while answering a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `data: <json>` as one SSE event.
    Chunk(Value),
    /// Bytes written verbatim, for malformed or unusual framing.
    Raw(Bytes),
    /// A pause; before the first body step it also delays the response headers.
    Delay(Duration),
    /// An SSE comment line, as providers send to keep a connection alive.
    Comment,
    /// `data: [DONE]`.
    Done,
    /// Aborts the connection mid-body.
    Cut,
    /// Answers with this status and body instead of a stream (only as a leading step).
    Status(u16, String),
    /// Sends nothing more, ever; the client has to give up.
    Hang,
    /// Adds a response header (only as a leading step), e.g. `retry-after` on a refusal.
    Header(String, String),
    /// Plays these steps over and over, never ending the body: an upstream that streams forever.
    Repeat(Vec<Step>),
}

/// The steps that answer one request. A script that runs out of steps ends the body cleanly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    pub steps: Vec<Step>,
}

impl From<Vec<Step>> for Script {
    fn from(steps: Vec<Step>) -> Self {
        Self { steps }
    }
}

impl Script {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    pub fn chunk(self, chunk: Value) -> Self {
        self.step(Step::Chunk(chunk))
    }

    pub fn raw(self, bytes: impl Into<Bytes>) -> Self {
        self.step(Step::Raw(bytes.into()))
    }

    pub fn delay(self, delay: Duration) -> Self {
        self.step(Step::Delay(delay))
    }

    pub fn comment(self) -> Self {
        self.step(Step::Comment)
    }

    pub fn done(self) -> Self {
        self.step(Step::Done)
    }

    pub fn cut(self) -> Self {
        self.step(Step::Cut)
    }

    pub fn hang(self) -> Self {
        self.step(Step::Hang)
    }

    /// A refusal: `status` with an OpenAI-shaped error body carrying `message`.
    pub fn status(status: u16, message: &str) -> Self {
        let body = json!({ "error": { "message": message, "type": "invalid_request_error", "code": null } });
        Self::new().step(Step::Status(status, body.to_string()))
    }

    /// The same script with a pause before every step.
    pub fn with_delay_between(self, delay: Duration) -> Self {
        let steps = self
            .steps
            .into_iter()
            .flat_map(|s| [Step::Delay(delay), s])
            .collect();
        Self { steps }
    }
}

/// A streamed text answer in the given pieces: role chunk, content, `stop`, a usage chunk, `[DONE]`.
pub fn text<I, S>(pieces: I) -> Script
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut script = Script::new().chunk(role_chunk());
    let mut words = 0;
    for piece in pieces {
        words += piece.as_ref().split_whitespace().count() as u64;
        script = script.chunk(content_chunk(piece.as_ref()));
    }
    script
        .chunk(finish_chunk("stop"))
        .chunk(usage_chunk(10, words))
        .done()
}

/// Streamed tool calls, one after the other: each call is `(id, name, argument fragments)`.
pub fn tool_calls(calls: &[(&str, &str, &[&str])]) -> Script {
    let mut script = Script::new().chunk(role_chunk());
    for (index, (id, name, fragments)) in calls.iter().enumerate() {
        let index = index as u64;
        script = script.chunk(tool_call_chunk(Some(index), Some(id), Some(name), ""));
        for fragment in fragments.iter() {
            script = script.chunk(tool_call_chunk(Some(index), None, None, fragment));
        }
    }
    script
        .chunk(finish_chunk("tool_calls"))
        .chunk(usage_chunk(10, 5))
        .done()
}

/// A `chat.completion.chunk` with one choice.
pub fn choice_chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_764_662_400,
        "model": "scripted",
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason }],
    })
}

pub fn role_chunk() -> Value {
    choice_chunk(json!({ "role": "assistant", "content": "" }), None)
}

pub fn content_chunk(text: &str) -> Value {
    choice_chunk(json!({ "content": text }), None)
}

pub fn reasoning_chunk(text: &str) -> Value {
    choice_chunk(json!({ "reasoning_content": text }), None)
}

pub fn finish_chunk(reason: &str) -> Value {
    choice_chunk(json!({}), Some(reason))
}

/// One tool-call fragment; `None` leaves the field out, as some providers do.
pub fn tool_call_chunk(index: Option<u64>, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call = json!({ "function": { "arguments": arguments } });
    if let Some(index) = index {
        call["index"] = json!(index);
    }
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    choice_chunk(json!({ "tool_calls": [call] }), None)
}

/// The usage report OpenAI sends last, with `choices: []`.
pub fn usage_chunk(prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_764_662_400,
        "model": "scripted",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}
