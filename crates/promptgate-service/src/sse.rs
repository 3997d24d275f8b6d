//! The UI message stream's wire framing. It lives with the service rather than the engine because
//! framed SSE text is also what the service keeps for readers that follow or resume a turn (in
//! memory and, across instances, in the store), so one module decides what those bytes look like.

use promptgate_turn::TurnEvent;

/// The frame that ends a UI message stream.
pub const SSE_DONE: &str = "data: [DONE]\n\n";

/// The heartbeat comment written while nothing else is (a long tool call), so proxies keep the
/// connection open.
pub const KEEP_ALIVE_FRAME: &str = ": keep-alive\n\n";

/// The event as one SSE frame: `data: <json>\n\n`, or the keep-alive comment.
pub fn sse_frame(event: &TurnEvent) -> String {
    match event {
        TurnEvent::Chunk(chunk) => {
            // Serialising these types cannot fail: every key is a string and no map is
            // user-defined, but stay total rather than panic.
            let json = serde_json::to_string(chunk)
                .unwrap_or_else(|_| r#"{"type":"error","errorText":"An error occurred."}"#.to_owned());
            format!("data: {json}\n\n")
        }
        TurnEvent::KeepAlive => KEEP_ALIVE_FRAME.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_turn::UiChunk;

    #[test]
    fn events_frame_as_data_lines_and_heartbeats_as_comments() {
        let frame = sse_frame(&TurnEvent::Chunk(UiChunk::StartStep));
        assert_eq!(frame, "data: {\"type\":\"start-step\"}\n\n");
        assert_eq!(sse_frame(&TurnEvent::KeepAlive), ": keep-alive\n\n");
    }
}
