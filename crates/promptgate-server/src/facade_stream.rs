//! A facade's streamed answer as a response body: the turn's events, each written as SSE frames by
//! the facade's [`FrameEncoder`] (most engine events make none), the frames of the events that are
//! ready together in one body chunk, then what closes the stream. The chat completions, Responses
//! and Messages streams all go through it, so what a frame costs besides its own JSON is paid the
//! same way by the three.
//!
//! The frames are written into one buffer the stream keeps and copied out at their size, so a
//! stream allocates one chunk per event instead of growing a fresh vector for each (a Responses
//! event that carries the whole response is over a kilobyte).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::Stream;
use promptgate_service::SendHandle;
use promptgate_service::events::TurnEvent;

/// Room the buffer starts with: a Responses stream's first frames carry the response twice.
const FIRST_ROOM: usize = 2048;
/// Ready events gathered into one chunk up to this size.
const GATHERED_ROOM: usize = 16 << 10;
/// A buffer grown past this by one large frame (a client tool's arguments) is not kept.
const KEPT_ROOM: usize = 64 << 10;

/// What a facade writes for a turn's events.
pub(crate) trait FrameEncoder {
    /// What a turn answered this way is observed as ([`crate::observe::TurnWatch`]'s kind).
    const TURN_KIND: &'static str;

    /// The end of the stream; it may wait (a Responses stream keeps its response first).
    type Close: Future<Output = Vec<u8>> + Unpin;

    /// Writes the frames `event` makes onto `out`. True when the answer ended with it: no later
    /// event is read, and the stream closes.
    fn push(&mut self, event: &TurnEvent, out: &mut Vec<u8>) -> bool;

    /// Appends what closes the stream to `out` (frames not yet sent) and hands it back.
    fn close(self, out: Vec<u8>) -> Self::Close;
}

/// A facade's answer: the whole object, or the turn's events written by the facade's encoder `E`.
pub(crate) enum FacadeAnswer<E> {
    /// The object's JSON bytes.
    Whole(Vec<u8>),
    /// Boxed: the handle is large and a whole answer need not carry its size.
    Stream(Box<(SendHandle, E)>),
}

impl<E> IntoResponse for FacadeAnswer<E>
where
    E: FrameEncoder<Close: Send> + Unpin + Send + 'static,
{
    fn into_response(self) -> Response {
        match self {
            Self::Whole(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Self::Stream(stream) => {
                let (handle, encoder) = *stream;
                let watch = crate::observe::TurnWatch::start(E::TURN_KIND, &handle.turn_id, &handle.model_id);
                let events = crate::observe::watch_turn(watch, handle.events);
                let frames = EncodedFrames::new(events, encoder);
                crate::routes::chat::event_stream(Body::from_stream(frames))
            }
        }
    }
}

/// The body stream of a facade's streamed answer.
pub(crate) struct EncodedFrames<S, E: FrameEncoder> {
    events: Pin<Box<S>>,
    /// Until the answer ended.
    encoder: Option<E>,
    /// Once it ended, until the close is written.
    closing: Option<E::Close>,
    buffer: Vec<u8>,
}

impl<S, E: FrameEncoder> EncodedFrames<S, E> {
    pub(crate) fn new(events: S, encoder: E) -> Self {
        Self {
            events: Box::pin(events),
            encoder: Some(encoder),
            closing: None,
            buffer: Vec::with_capacity(FIRST_ROOM),
        }
    }

    /// The frames written so far as one chunk; the buffer stays for the next.
    fn chunk(&mut self) -> Bytes {
        let chunk = Bytes::copy_from_slice(&self.buffer);
        self.buffer.clear();
        if self.buffer.capacity() > KEPT_ROOM {
            self.buffer = Vec::with_capacity(FIRST_ROOM);
        }
        chunk
    }
}

impl<S, E> Stream for EncodedFrames<S, E>
where
    S: Stream<Item = TurnEvent>,
    E: FrameEncoder + Unpin,
{
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(encoder) = this.encoder.as_mut() {
                // Events that are ready together go out as one chunk (one frame and one write
                // instead of one each); nothing waits for them, the chunk leaves once none is ready.
                let event = match this.events.as_mut().poll_next(cx) {
                    Poll::Pending if !this.buffer.is_empty() => return Poll::Ready(Some(Ok(this.chunk()))),
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(event) => event,
                };
                let ended = match event {
                    Some(event) => encoder.push(&event, &mut this.buffer),
                    // The turn stopped sending: whatever it said is all there is.
                    None => true,
                };
                if ended {
                    let written = std::mem::take(&mut this.buffer);
                    this.closing = this.encoder.take().map(|encoder| encoder.close(written));
                } else if this.buffer.len() >= GATHERED_ROOM {
                    return Poll::Ready(Some(Ok(this.chunk())));
                }
                continue;
            }
            let Some(closing) = this.closing.as_mut() else {
                return Poll::Ready(None);
            };
            this.buffer = ready!(Pin::new(closing).poll(cx));
            this.closing = None;
            if !this.buffer.is_empty() {
                return Poll::Ready(Some(Ok(this.chunk())));
            }
        }
    }
}

/// Turns the facades' tests feed their encoders, so the three are tried on the same answers.
#[cfg(test)]
pub(crate) mod test_turns {
    use promptgate_service::events::{TurnEvent, UiChunk, UiFinishReason};

    pub(crate) fn chunk(chunk: UiChunk) -> TurnEvent {
        TurnEvent::Chunk(chunk)
    }

    /// An answer's first step up to its tool call: reasoning (`plan`), then a preamble (`Checking.`).
    pub(crate) fn reasoning_then_preamble(message_id: Option<&str>) -> Vec<TurnEvent> {
        vec![
            chunk(UiChunk::Start {
                message_id: message_id.map(str::to_owned),
                message_metadata: None,
            }),
            chunk(UiChunk::StartStep),
            chunk(UiChunk::ReasoningStart { id: "r".into() }),
            chunk(UiChunk::ReasoningDelta {
                id: "r".into(),
                delta: "plan".into(),
            }),
            chunk(UiChunk::ReasoningEnd { id: "r".into() }),
            chunk(UiChunk::TextStart { id: "t1".into() }),
            chunk(UiChunk::TextDelta {
                id: "t1".into(),
                delta: "Checking.".into(),
            }),
            chunk(UiChunk::TextEnd {
                id: "t1".into(),
                citations: None,
            }),
        ]
    }

    /// A turn whose provider could not be reached: its start, the error, the error finish.
    pub(crate) fn unreachable_provider() -> [TurnEvent; 3] {
        [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::Error {
                error_text: "The model provider could not be reached.".into(),
            }),
            chunk(UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Error),
                message_metadata: None,
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use promptgate_service::events::UiChunk;

    /// Writes each text delta as a frame, ends at `finish`, and closes with `end`.
    struct Echo;

    impl FrameEncoder for Echo {
        const TURN_KIND: &'static str = "echo";
        type Close = std::future::Ready<Vec<u8>>;

        fn push(&mut self, event: &TurnEvent, out: &mut Vec<u8>) -> bool {
            match event {
                TurnEvent::Chunk(UiChunk::TextDelta { delta, .. }) => {
                    out.extend_from_slice(delta.as_bytes());
                    false
                }
                TurnEvent::Chunk(UiChunk::Finish { .. }) => {
                    out.extend_from_slice(b"last ");
                    true
                }
                _ => false,
            }
        }

        fn close(self, mut out: Vec<u8>) -> Self::Close {
            out.extend_from_slice(b"end");
            std::future::ready(out)
        }
    }

    fn text(delta: &str) -> TurnEvent {
        TurnEvent::Chunk(UiChunk::TextDelta {
            id: "t".into(),
            delta: delta.into(),
        })
    }

    /// The chunks of a turn whose events come in `groups`: the events of a group ready together,
    /// the turn pausing before each group.
    async fn chunks(groups: Vec<Vec<TurnEvent>>) -> Vec<String> {
        let events = futures::stream::iter(groups)
            .then(|group| async move {
                tokio::task::yield_now().await;
                futures::stream::iter(group)
            })
            .flatten();
        EncodedFrames::new(events, Echo)
            .map(|chunk| String::from_utf8(chunk.unwrap().to_vec()).unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_ready_together_share_a_chunk_and_a_pause_sends_what_was_gathered() {
        let groups = vec![
            vec![text("a")],
            vec![text("b"), TurnEvent::KeepAlive, text("c")],
            vec![text("d")],
        ];
        assert_eq!(chunks(groups).await, ["a", "bc", "dend"]);
    }

    #[tokio::test]
    async fn a_gathered_chunk_goes_out_once_it_is_large() {
        let big = "x".repeat(GATHERED_ROOM / 2);
        let groups = vec![vec![text(&big), text(&big), text(&big)]];
        let sizes: Vec<usize> = chunks(groups).await.iter().map(String::len).collect();
        assert_eq!(sizes, [GATHERED_ROOM, GATHERED_ROOM / 2 + "end".len()]);
    }

    #[tokio::test]
    async fn the_event_that_ends_the_answer_goes_out_with_the_close_and_nothing_after_it() {
        let finish = TurnEvent::Chunk(UiChunk::Finish {
            finish_reason: None,
            message_metadata: None,
        });
        let groups = vec![vec![text("a")], vec![finish, text("late")]];
        assert_eq!(chunks(groups).await, ["a", "last end"]);
    }
}
