//! The SSE framing of the streams this server sends: the UI message stream, which it hands to the
//! service as the turn's [`StreamEncoding`] (runtime's settings), and the OpenAI facade's
//! completion stream, which ends and keeps alive the same way.
//!
//! The service keeps these bytes for followers, also in the store's `turn_frames` for a reader on
//! another instance, so changing a frame here changes what a resume reads from a turn written by a
//! server that still ran the old code: keep them stable.

use promptgate_service::events::UiChunk;
use promptgate_service::settings::StreamEncoding;
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
};

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
}
