//! Some servers and proxies ignore `stream: true` and answer with one JSON completion. The answer
//! is still good: it is read as if it were a single chunk followed by `[DONE]`.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

use crate::parser::ChunkParser;
use crate::transport::BodyError;
use crate::{LlmError, StreamEvent};

pub(super) async fn read(
    body: impl Stream<Item = Result<Bytes, BodyError>>,
    mut parser: ChunkParser,
) -> Result<Vec<StreamEvent>, LlmError> {
    let mut bytes = Vec::new();
    let mut body = std::pin::pin!(body);
    while let Some(piece) = body.next().await {
        bytes.extend_from_slice(&piece?);
    }
    let completion: Value = serde_json::from_slice(&bytes)
        .map_err(|e| LlmError::Protocol(format!("the JSON answer is not valid JSON: {e}")))?;
    let is_error = completion.get("error").is_some_and(|e| !e.is_null());
    let has_choices = completion
        .get("choices")
        .and_then(Value::as_array)
        .is_some_and(|choices| !choices.is_empty());
    if !is_error && !has_choices {
        // Neither a completion nor an error: reading it as an empty answer would hide the fault.
        return Err(LlmError::Protocol(
            "a stream was asked for and the answer was a JSON body that is not a chat completion".to_owned(),
        ));
    }
    let mut events = parser.push(&as_chunk(completion).to_string())?;
    parser.push("[DONE]")?;
    events.extend(parser.finish()?);
    Ok(events)
}

/// A `chat.completion` recast as a `chat.completion.chunk`: each choice's message becomes its delta.
fn as_chunk(completion: Value) -> Value {
    if completion.get("error").is_some_and(|e| !e.is_null()) {
        return completion;
    }
    let choices: Vec<Value> = completion
        .get("choices")
        .and_then(Value::as_array)
        .map(|choices| {
            choices
                .iter()
                .map(|c| json!({ "index": c["index"], "delta": c["message"], "finish_reason": c["finish_reason"] }))
                .collect()
        })
        .unwrap_or_default();
    json!({ "choices": choices, "usage": completion["usage"] })
}
