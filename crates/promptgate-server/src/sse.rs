//! The SSE framing of the streams this server sends: the UI message stream, which it hands to the
//! service as the turn's [`StreamEncoding`] (runtime's settings), and the OpenAI facade's
//! completion stream, which ends and keeps alive the same way.
//!
//! The service keeps these bytes for followers, also in the store's `turn_frames` for a reader on
//! another instance, so changing a frame here changes what a resume reads from a turn written by a
//! server that still ran the old code: keep them stable.

use bytes::{Bytes, BytesMut};
use promptgate_service::deployment::StreamEncoding;
use promptgate_service::events::{UiChunk, UiStreamVersion};
use serde::Serialize;

/// The frame that ends a stream.
pub const SSE_DONE: &str = "data: [DONE]\n\n";

/// The heartbeat comment written while nothing else is (a long tool call), so proxies keep the
/// connection open.
pub const KEEP_ALIVE_FRAME: &str = ": keep-alive\n\n";

/// The UI message stream (`x-vercel-ai-ui-message-stream: v1`) as SSE.
pub const UI_MESSAGE_STREAM: StreamEncoding = StreamEncoding {
    chunk: chunk_frame,
    keep_alive: KEEP_ALIVE_FRAME,
    done: SSE_DONE,
    for_version: frames_for_version,
};

/// The chunk types [`UiChunk::for_version`] may change; a frame of any other type is passed on
/// without being read.
const VERSIONED_TYPES: [&str; 4] = ["tool-input-start", "tool-input-available", "finish", "abort"];

/// Writes `value` onto `out` as one SSE event: `data: <json>\n\n`. Both streams frame their JSON
/// objects with it.
pub fn push_data_frame(out: &mut Vec<u8>, value: &impl Serialize) {
    out.extend_from_slice(b"data: ");
    // Serialising into a vector fails only for maps with non-string keys, which no frame has.
    let _ = serde_json::to_writer(&mut *out, value);
    out.extend_from_slice(b"\n\n");
}

/// The chunk as one SSE frame: `data: <json>\n\n`.
pub fn chunk_frame(chunk: &UiChunk) -> String {
    let mut out = Vec::with_capacity(128);
    push_data_frame(&mut out, chunk);
    // serde_json writes UTF-8; stay total rather than panic.
    String::from_utf8(out)
        .unwrap_or_else(|_| "data: {\"type\":\"error\",\"errorText\":\"An error occurred.\"}\n\n".to_owned())
}

/// Kept frames for a reader of `version`: each `data:` frame of a type the version may change is
/// read and written again as [`UiChunk::for_version`] says; everything else is copied. Our frames
/// are one line each (JSON escapes newlines), so a frame ends at the first blank line.
pub fn frames_for_version(frames: Bytes, version: UiStreamVersion) -> Bytes {
    let mut out = BytesMut::with_capacity(frames.len());
    let mut rest = &frames[..];
    while !rest.is_empty() {
        let end = memchr::memmem::find(rest, b"\n\n").map_or(rest.len(), |at| at + 2);
        let (frame, after) = rest.split_at(end);
        match restyled(frame, version) {
            Some(again) => out.extend_from_slice(again.as_bytes()),
            None => out.extend_from_slice(frame),
        }
        rest = after;
    }
    out.freeze()
}

fn restyled(frame: &[u8], version: UiStreamVersion) -> Option<String> {
    let json = frame.strip_prefix(b"data: ")?.strip_suffix(b"\n\n")?;
    let versioned = VERSIONED_TYPES.iter().any(|kind| {
        json.strip_prefix(b"{\"type\":\"")
            .and_then(|tail| tail.strip_prefix(kind.as_bytes()))
            .is_some_and(|tail| tail.starts_with(b"\""))
    });
    if !versioned {
        return None;
    }
    let chunk: UiChunk = serde_json::from_slice(json).ok()?;
    chunk.for_version(version).map(|chunk| chunk_frame(&chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_frame_as_data_lines_and_heartbeats_as_comments() {
        assert_eq!(
            chunk_frame(&UiChunk::StartStep),
            "data: {\"type\":\"start-step\"}\n\n"
        );
        assert_eq!(UI_MESSAGE_STREAM.keep_alive, ": keep-alive\n\n");
        assert_eq!(UI_MESSAGE_STREAM.done, "data: [DONE]\n\n");
    }

    #[test]
    fn kept_frames_lose_for_an_older_reader_only_what_it_refuses() {
        let titled = UiChunk::ToolInputAvailable {
            tool_call_id: "c".into(),
            tool_name: "search".into(),
            input: serde_json::json!({"q": "rust"}),
            dynamic: None,
            title: Some("Searching for \"rust\"...".into()),
        };
        let text = UiChunk::TextDelta {
            id: "t".into(),
            delta: "a \"title\":\n\nhere".into(),
        };
        let kept = [
            chunk_frame(&text),
            KEEP_ALIVE_FRAME.to_owned(),
            chunk_frame(&titled),
            SSE_DONE.to_owned(),
        ]
        .concat();
        let v5 = frames_for_version(Bytes::from(kept.clone()), UiStreamVersion::V5);
        let expected_tool = UiChunk::ToolInputAvailable {
            tool_call_id: "c".into(),
            tool_name: "search".into(),
            input: serde_json::json!({"q": "rust"}),
            dynamic: None,
            title: None,
        };
        let expected = [
            chunk_frame(&text),
            KEEP_ALIVE_FRAME.to_owned(),
            chunk_frame(&expected_tool),
            SSE_DONE.to_owned(),
        ]
        .concat();
        assert_eq!(String::from_utf8_lossy(&v5), expected);
        let v6 = frames_for_version(Bytes::from(kept.clone()), UiStreamVersion::V6);
        assert_eq!(String::from_utf8_lossy(&v6), kept);
    }
}
