//! A facade's streamed answer as a response body: the turn's events, each written as SSE frames by
//! the facade's [`FrameEncoder`] (most engine events make none), the frames of the events that are
//! ready together in one body chunk, then what closes the stream. The chat completions, Responses
//! and Messages streams all go through it, so what a frame costs besides its own JSON is paid the
//! same way by the three.
//!
//! The frames are written into one buffer the stream keeps and copied out at their size, so a
//! stream allocates one chunk per event instead of growing a fresh vector for each (a Responses
//! event that carries the whole response is over a kilobyte).
//!
//! A stream's status waits for the provider ([`answering`]): until the turn's first event that is
//! part of its answer, for at most [`OPENING_AT_MOST`]. A turn that fails before any of its answer
//! (the provider busy, refusing the request, out of reach with no fallback left) is then answered
//! as a whole answer's failure is, with its own status (429 and `Retry-After`, 400, 502), which the
//! official clients act on (they retry a 429 or 503 after the wait, and stop on a 400); an error
//! event inside a `200` stream they only report. Once the answer has begun, a later failure can
//! only be an error event.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use promptgate_service::SendHandle;
use promptgate_service::events::{TurnEvent, UiChunk};

/// Room the buffer starts with: a Responses stream's first frames carry the response twice.
const FIRST_ROOM: usize = 2048;
/// Ready events gathered into one chunk up to this size.
const GATHERED_ROOM: usize = 16 << 10;
/// A buffer grown past this by one large frame (a client tool's arguments) is not kept.
const KEPT_ROOM: usize = 64 << 10;

/// How long a stream's status waits for the first event of its answer. A provider that refuses or
/// is busy says so within a second or two (a fallback's attempt included); a model that thinks
/// longer before its first token gets its stream, and heartbeats, as before.
const OPENING_AT_MOST: Duration = Duration::from_secs(5);

/// A facade turn's events, seen by its [`crate::observe::TurnWatch`] from the first.
pub(crate) type FacadeEvents = Pin<Box<dyn Stream<Item = TurnEvent> + Send>>;

/// The events of `handle`'s turn, observed as a turn of `kind` (`completion`, `response`,
/// `messages`). Call inside the request's span so the turn's summary carries its id.
pub(crate) fn watched(kind: &'static str, handle: SendHandle) -> FacadeEvents {
    let watch = crate::observe::TurnWatch::start(kind, &handle.turn_id, &handle.model_id);
    Box::pin(crate::observe::watch_turn(watch, handle.events))
}

/// How a facade answers a turn: as a stream, or read whole.
pub(crate) enum Answering {
    Stream(FacadeEvents),
    /// Asked for whole, or a stream whose turn failed before any of its answer.
    Whole(FacadeEvents),
}

/// How to answer a turn whose client asked for a stream (`streamed`) or not; for a stream, once its
/// first events say how the provider answered (the module's header).
pub(crate) async fn answering(events: FacadeEvents, streamed: bool) -> Answering {
    if !streamed {
        return Answering::Whole(events);
    }
    let (read, rest) = opening(events, OPENING_AT_MOST).await;
    let failed = matches!(read.last(), Some(TurnEvent::Chunk(UiChunk::Error { .. })));
    let events: FacadeEvents = Box::pin(futures::stream::iter(read).chain(rest));
    if failed {
        Answering::Whole(events)
    } else {
        Answering::Stream(events)
    }
}

/// Reads `events` up to the first that is not the turn's preamble (its start, its metadata, a step
/// that began and ended with nothing of the answer, as a failed attempt's does), or for `at_most`:
/// what was read, and the rest.
async fn opening(mut events: FacadeEvents, at_most: Duration) -> (Vec<TurnEvent>, FacadeEvents) {
    let deadline = tokio::time::Instant::now() + at_most;
    let mut read = Vec::new();
    // An event not yet given is not lost when the wait ends: the stream keeps it for its next read.
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.next()).await {
        let preamble = matches!(
            event,
            TurnEvent::Chunk(
                UiChunk::Start { .. }
                    | UiChunk::StartStep
                    | UiChunk::MessageMetadata { .. }
                    | UiChunk::FinishStep
            )
        );
        read.push(event);
        if !preamble {
            break;
        }
    }
    (read, events)
}

/// What a facade writes for a turn's events.
pub(crate) trait FrameEncoder {
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
    /// Boxed: the encoder can be large and a whole answer need not carry its size.
    Stream(Box<(FacadeEvents, E)>),
}

impl<E> IntoResponse for FacadeAnswer<E>
where
    E: FrameEncoder<Close: Send> + Unpin + Send + 'static,
{
    fn into_response(self) -> Response {
        match self {
            Self::Whole(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Self::Stream(stream) => {
                let (events, encoder) = *stream;
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

    /// A turn whose provider could not be reached: its start, a step that ended with nothing, the
    /// error, the error finish.
    pub(crate) fn unreachable_provider() -> [TurnEvent; 5] {
        [
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::StartStep),
            chunk(UiChunk::FinishStep),
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

    /// How `events` are answered, and every event the answer reads.
    async fn answered(events: Vec<TurnEvent>, streamed: bool) -> (&'static str, Vec<TurnEvent>) {
        match answering(Box::pin(futures::stream::iter(events)), streamed).await {
            Answering::Stream(events) => ("stream", events.collect().await),
            Answering::Whole(events) => ("whole", events.collect().await),
        }
    }

    #[tokio::test]
    async fn a_stream_whose_turn_fails_before_its_answer_is_read_whole_with_every_event() {
        let failed = test_turns::unreachable_provider().to_vec();
        assert_eq!(answered(failed.clone(), true).await, ("whole", failed));
    }

    #[tokio::test]
    async fn a_stream_whose_answer_began_is_streamed_from_its_first_event() {
        let mut turn = test_turns::reasoning_then_preamble(Some("m"));
        turn.push(test_turns::unreachable_provider()[3].clone());
        assert_eq!(
            answered(turn.clone(), true).await,
            ("stream", turn),
            "a failure after the answer began is an event of the stream"
        );
    }

    #[tokio::test]
    async fn a_whole_answer_is_read_whole_and_a_turn_that_ends_unsaid_is_streamed() {
        let failed = test_turns::unreachable_provider().to_vec();
        assert_eq!(answered(failed.clone(), false).await, ("whole", failed));
        let start = vec![test_turns::unreachable_provider()[0].clone()];
        assert_eq!(answered(start.clone(), true).await, ("stream", start));
    }

    #[tokio::test]
    async fn the_status_waits_no_longer_than_its_bound_and_nothing_read_is_lost() {
        let start = test_turns::unreachable_provider()[0].clone();
        let later = text("late");
        let events: FacadeEvents = Box::pin(futures::stream::iter([start.clone()]).chain(
            futures::stream::once(async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                text("late")
            }),
        ));
        let (read, rest) = opening(events, Duration::from_millis(20)).await;
        assert_eq!(read, [start]);
        assert_eq!(rest.collect::<Vec<_>>().await, [later]);
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
