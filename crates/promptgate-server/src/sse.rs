//! The SSE framing of the streams this server sends: the UI message stream, which it hands to the
//! service as the turn's [`StreamEncoding`] (runtime's settings), and the OpenAI facade's
//! completion stream, which ends and keeps alive the same way.
//!
//! The service keeps these bytes for followers, also in the store's `turn_frames` for a reader on
//! another instance, so changing a frame here changes what a resume reads from a turn written by a
//! server that still ran the old code: keep them stable.

use promptgate_service::events::UiChunk;
use promptgate_service::settings::StreamEncoding;

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

/// The chunk as one SSE frame: `data: <json>\n\n`.
pub fn chunk_frame(chunk: &UiChunk) -> String {
    // Serialising these types cannot fail: every key is a string and no map is user-defined, but
    // stay total rather than panic.
    let json = serde_json::to_string(chunk)
        .unwrap_or_else(|_| r#"{"type":"error","errorText":"An error occurred."}"#.to_owned());
    format!("data: {json}\n\n")
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
