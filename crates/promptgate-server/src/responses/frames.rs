//! The stream's framing: each event is `event: <type>` and `data: <JSON>` whose object repeats the
//! type and carries the next `sequence_number`. No `[DONE]` follows the last event; the official
//! clients stop at the terminal event and accept the end of the body after it.

use serde::Serialize;
use serde_json::Value;

/// The SSE bytes of a response's stream, as they are written.
#[derive(Debug, Default)]
pub struct Frames {
    next: u64,
    bytes: Vec<u8>,
}

/// The one event sent per token, written from borrowed fields rather than built as a JSON tree.
#[derive(Serialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item_id: &'a str,
    output_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_index: Option<usize>,
    delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<[(); 0]>,
    sequence_number: u64,
}

/// Which part of its item a delta extends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaOf {
    /// `response.output_text.delta`: the message's text part.
    Text,
    /// `response.reasoning_summary_text.delta`: the reasoning item's summary.
    Summary,
    /// `response.function_call_arguments.delta`.
    Arguments,
}

impl Frames {
    /// An event with these fields (an object); its type and sequence number are added here.
    pub fn event(&mut self, kind: &'static str, mut fields: Value) {
        if let Some(object) = fields.as_object_mut() {
            object.insert("type".into(), kind.into());
            object.insert("sequence_number".into(), self.next.into());
        }
        self.next += 1;
        self.push(kind, &fields);
    }

    /// A text, summary or arguments delta of the item at `output_index`.
    pub fn delta(&mut self, of: DeltaOf, item_id: &str, output_index: usize, delta: &str) {
        let (kind, content_index, summary_index, logprobs) = match of {
            DeltaOf::Text => ("response.output_text.delta", Some(0), None, Some([])),
            DeltaOf::Summary => ("response.reasoning_summary_text.delta", None, Some(0), None),
            DeltaOf::Arguments => ("response.function_call_arguments.delta", None, None, None),
        };
        let event = DeltaEvent {
            kind,
            item_id,
            output_index,
            content_index,
            summary_index,
            delta,
            logprobs,
            sequence_number: self.next,
        };
        self.next += 1;
        // A delta's frame is about 200 bytes besides its text.
        self.bytes.reserve(256 + delta.len());
        self.push(kind, &event);
    }

    /// The heartbeat while nothing else is sent (a long tool call): an SSE comment.
    pub fn keep_alive(&mut self) {
        self.bytes
            .extend_from_slice(crate::sse::KEEP_ALIVE_FRAME.as_bytes());
    }

    /// The bytes written since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }

    fn push(&mut self, kind: &str, data: &impl Serialize) {
        self.bytes.extend_from_slice(b"event: ");
        self.bytes.extend_from_slice(kind.as_bytes());
        self.bytes.push(b'\n');
        crate::sse::push_data_frame(&mut self.bytes, data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_named_typed_and_numbered_in_order() {
        let mut frames = Frames::default();
        frames.event("response.created", json!({"response": {"id": "resp_1"}}));
        frames.delta(DeltaOf::Text, "msg_1", 0, "Hel");
        frames.delta(DeltaOf::Summary, "rs_1", 1, "so");
        frames.delta(DeltaOf::Arguments, "fc_1", 2, "{\"");
        let text = String::from_utf8(frames.take()).unwrap();
        let events: Vec<(&str, Value)> = text
            .split_terminator("\n\n")
            .map(|frame| {
                let (event, data) = frame.split_once('\n').unwrap();
                let data = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                (event.strip_prefix("event: ").unwrap(), data)
            })
            .collect();
        assert_eq!(
            events,
            [
                (
                    "response.created",
                    json!({"type": "response.created", "response": {"id": "resp_1"}, "sequence_number": 0})
                ),
                (
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                           "content_index": 0, "delta": "Hel", "logprobs": [], "sequence_number": 1})
                ),
                (
                    "response.reasoning_summary_text.delta",
                    json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 1,
                           "summary_index": 0, "delta": "so", "sequence_number": 2})
                ),
                (
                    "response.function_call_arguments.delta",
                    json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
                           "delta": "{\"", "sequence_number": 3})
                ),
            ]
        );
        assert!(frames.take().is_empty(), "taken bytes are not written twice");
    }
}
