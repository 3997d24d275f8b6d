//! The stream's framing: each event is `event: <type>` and `data: <JSON>` whose object repeats the
//! type and carries the next `sequence_number`. No `[DONE]` follows the last event; the official
//! clients stop at the terminal event and accept the end of the body after it.
//!
//! Every event is serialised straight from borrowed fields ([`EventFields`]); none is built as a
//! JSON tree first.

use promptgate_service::facade::write_json_str;
use serde::Serialize;

use super::object::{Item, Part, ResponseObject};

/// The SSE bytes of a response's stream, as they are written.
#[derive(Debug, Default)]
pub struct Frames {
    next: u64,
    bytes: Vec<u8>,
}

/// The fields of an event other than a delta, each present only when set. In alphabetical order,
/// as the events were written when they were JSON trees.
#[derive(Serialize, Default)]
pub struct EventFields<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<&'a Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<[(); 0]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<Part<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<&'a ResponseObject<'a>>,
    /// Set by [`Frames::event`], as is the type.
    pub sequence_number: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

impl<'a> EventFields<'a> {
    /// The fields of an event about the item at `output_index`.
    pub fn of_item(item_id: &'a str, output_index: usize) -> Self {
        Self {
            item_id: Some(item_id),
            output_index: Some(output_index),
            ..Self::default()
        }
    }
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
    /// Set by [`Frames::event`], as is the type.
    pub sequence_number: u64,
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
    /// An event with these fields; its type and sequence number are set here.
    pub fn event(&mut self, kind: &'static str, mut fields: EventFields<'_>) {
        fields.kind = kind;
        fields.sequence_number = self.next;
        self.next += 1;
        self.bytes.reserve(256);
        self.push(kind, &fields);
    }

    /// A text, summary or arguments delta of the item at `output_index`.
    pub fn delta(&mut self, of: DeltaOf, item_id: &str, output_index: usize, delta: &str) {
        let (kind, content_index, summary_index, logprobs) = match of {
            DeltaOf::Text => ("response.output_text.delta", Some(0), None, Some([])),
            DeltaOf::Summary => ("response.reasoning_summary_text.delta", None, Some(0), None),
            DeltaOf::Arguments => ("response.function_call_arguments.delta", None, None, None),
        };
        // A delta's frame is about 200 bytes besides its text.
        self.bytes.reserve(256 + delta.len());
        if of == DeltaOf::Text {
            // The event of every text token, written as the serialised one reads: serialising it
            // field by field was most of the stream's own work per token.
            let out = &mut self.bytes;
            out.extend_from_slice(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":");
            write_json_str(out, item_id);
            out.extend_from_slice(b",\"output_index\":");
            out.extend_from_slice(output_index.to_string().as_bytes());
            out.extend_from_slice(b",\"content_index\":0,\"delta\":");
            write_json_str(out, delta);
            out.extend_from_slice(b",\"logprobs\":[],\"sequence_number\":");
            out.extend_from_slice(self.next.to_string().as_bytes());
            out.extend_from_slice(b"}\n\n");
            self.next += 1;
            return;
        }
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
        self.push(kind, &event);
    }

    /// The heartbeat while nothing else is sent (a long tool call): an SSE comment.
    pub fn keep_alive(&mut self) {
        self.bytes
            .extend_from_slice(crate::sse::KEEP_ALIVE_FRAME.as_bytes());
    }

    /// Exchanges the buffer the frames are written onto with `buffer`: a stream lends its own
    /// before a push and takes it back after, so the frames are written where they are sent from.
    pub fn swap_buffer(&mut self, buffer: &mut Vec<u8>) {
        std::mem::swap(&mut self.bytes, buffer);
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
    use serde_json::{Value, json};

    #[test]
    fn a_text_deltas_event_is_the_bytes_serde_writes() {
        let text = "a \"q\"\n\\ é \u{1} and a longer run of plain words";
        let mut frames = Frames {
            next: 41,
            ..Frames::default()
        };
        frames.delta(DeltaOf::Text, "msg_\"1", 3, text);
        let mut expected = Frames::default();
        let event = DeltaEvent {
            kind: "response.output_text.delta",
            item_id: "msg_\"1",
            output_index: 3,
            content_index: Some(0),
            summary_index: None,
            delta: text,
            logprobs: Some([]),
            sequence_number: 41,
        };
        expected.push(event.kind, &event);
        assert_eq!(frames.next, 42);
        assert_eq!(
            String::from_utf8(frames.take()).unwrap(),
            String::from_utf8(expected.take()).unwrap()
        );
    }

    #[test]
    fn events_are_named_typed_and_numbered_in_order() {
        let mut frames = Frames::default();
        frames.event("response.mcp_call.in_progress", EventFields::of_item("mcp_0", 0));
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
                    "response.mcp_call.in_progress",
                    json!({"type": "response.mcp_call.in_progress", "item_id": "mcp_0", "output_index": 0,
                           "sequence_number": 0})
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
