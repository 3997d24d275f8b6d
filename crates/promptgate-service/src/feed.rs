//! The running turn's stream, kept so that more than one reader can follow it: a reload resumes it
//! (`GET /v1/chat/{id}/stream`), and with `on_disconnect = "continue"` a dropped client leaves the
//! turn running.
//!
//! The reader that started the turn pulls the engine's events itself and appends each chunk's
//! frame (in the transport's [`StreamEncoding`]) to the feed, so the one per-chunk cost is encoding
//! once (which it pays anyway), a short lock and a wake-up. Followers read the feed from its first
//! frame (`start`) and then wait for the next one. Keep-alives are not kept: each follower writes
//! its own while quiet.
//!
//! The feed holds at most [`MAX_FEED_BYTES`] of frames. Past that its oldest frames are dropped: a
//! reader that then attaches cannot get the stream from `start` and is refused (`Follow::TooLong`),
//! and a follower that fell that far behind gets an `error` chunk and the end of the stream. The
//! answer itself is not affected: it is checkpointed in the store as it grows.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use promptgate_turn::engine::TurnStream;
use promptgate_turn::ui::{TurnEvent, UiStreamVersion};

use crate::encoding::StreamEncoding;

/// The most frame bytes a running turn keeps for its readers (an answer of about a million words,
/// or a few large tool results).
pub const MAX_FEED_BYTES: usize = 4 << 20;

/// Sent to a follower that fell so far behind that the frames it still needed were dropped.
pub const FELL_BEHIND_TEXT: &str =
    "This stream fell too far behind the answer to continue; reload the conversation to see it.";

/// What a dropped client does to its turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnDisconnect {
    /// The turn stops and its partial answer is stored as `stopped`.
    #[default]
    Stop,
    /// The turn runs to its end and is stored; a reload resumes its stream.
    Continue,
}

#[derive(Default)]
struct FeedState {
    frames: VecDeque<Bytes>,
    /// The position (counted from the turn's first frame) of `frames[0]`.
    first: usize,
    bytes: usize,
    ended: bool,
}

/// One running turn's frames and the wake-up for its followers.
#[derive(Default)]
pub(crate) struct TurnFeed {
    state: Mutex<FeedState>,
    changed: Notify,
}

/// What a follower finds at its position.
enum Read {
    Frames(Bytes, usize),
    Behind,
    Wait,
    End,
}

impl TurnFeed {
    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, frame: Bytes) {
        {
            let mut state = self.lock();
            state.bytes += frame.len();
            state.frames.push_back(frame);
            while state.bytes > MAX_FEED_BYTES && state.frames.len() > 1 {
                if let Some(old) = state.frames.pop_front() {
                    state.bytes -= old.len();
                    state.first += 1;
                }
            }
        }
        self.changed.notify_waiters();
    }

    fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_waiters();
    }

    /// Everything from `position` on, in one buffer, and the position after it.
    fn read(&self, position: usize) -> Read {
        let state = self.lock();
        if position < state.first {
            return Read::Behind;
        }
        let skip = position - state.first;
        if skip < state.frames.len() {
            let mut out = BytesMut::new();
            for frame in state.frames.iter().skip(skip) {
                out.extend_from_slice(frame);
            }
            return Read::Frames(out.freeze(), state.first + state.frames.len());
        }
        if state.ended { Read::End } else { Read::Wait }
    }
}

/// The writing side of a feed; dropping it ends the feed, so followers never wait on a turn that
/// failed before it started.
pub(crate) struct FeedWriter(pub(crate) Arc<TurnFeed>);

impl Drop for FeedWriter {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Whether a thread's running turn can be followed.
pub enum Follow {
    /// No turn runs in the thread.
    Idle,
    /// The turn's stream from its `start` chunk, then live, ending with the done frame.
    Stream(FollowStream),
    /// The turn's stream is longer than the feed keeps; its beginning is gone.
    TooLong,
}

/// A follower of a running turn: its frames, keep-alives while quiet, then the done frame.
pub struct FollowStream {
    pub turn_id: String,
    frames: futures::stream::BoxStream<'static, Bytes>,
}

impl FollowStream {
    pub(crate) fn new(turn_id: String, frames: futures::stream::BoxStream<'static, Bytes>) -> Self {
        Self { turn_id, frames }
    }

    /// The same frames as a reader of `version` receives them.
    pub(crate) fn for_version(self, encoding: StreamEncoding, version: UiStreamVersion) -> Self {
        let frames = self
            .frames
            .map(move |frames| encoding.restyle(frames, version))
            .boxed();
        Self { frames, ..self }
    }
}

impl Stream for FollowStream {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.frames.poll_next_unpin(cx)
    }
}

pub(crate) fn follow(
    feed: Arc<TurnFeed>,
    turn_id: String,
    keep_alive: Duration,
    encoding: StreamEncoding,
) -> Follow {
    {
        let state = feed.lock();
        if state.first > 0 {
            return Follow::TooLong;
        }
        if state.ended && state.frames.is_empty() {
            return Follow::Idle;
        }
    }
    let keep_alive = keep_alive.max(Duration::from_secs(1));
    // `None` position: the stream has been closed with the done frame.
    let frames = futures::stream::unfold(Some(0usize), move |position| {
        let feed = Arc::clone(&feed);
        async move {
            let position = position?;
            loop {
                // Registered before reading, so a frame pushed in between still wakes us.
                let changed = feed.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                match feed.read(position) {
                    Read::Frames(bytes, next) => return Some((bytes, Some(next))),
                    Read::End => return Some((encoding.done_frame(), None)),
                    Read::Behind => {
                        let error = encoding.error_and_done(FELL_BEHIND_TEXT);
                        return Some((Bytes::from(error), None));
                    }
                    Read::Wait => {
                        if tokio::time::timeout(keep_alive, changed).await.is_err() {
                            return Some((encoding.keep_alive_frame(), Some(position)));
                        }
                    }
                }
            }
        }
    })
    .boxed();
    Follow::Stream(FollowStream { turn_id, frames })
}

/// What happens to a send's turn when its first reader goes away.
pub(crate) struct Detach {
    pub on_disconnect: OnDisconnect,
    /// Stops this turn (and only it).
    pub cancel: CancellationToken,
    pub tasks: TaskTracker,
    /// Set on the copy that drains a turn whose reader left: its own end is no disconnect.
    pub drained: bool,
}

/// The events of a started turn. For a send they are also kept for followers; dropping the stream
/// before the turn ended stops the turn (`on_disconnect = "stop"`) or leaves it running to its end
/// (`"continue"`); either way the rest of its events still reach the followers. For a facade
/// completion it is the engine's stream as is: dropping it stops the turn.
pub struct SendStream {
    events: Option<TurnStream>,
    /// Boxed: a facade completion carries none, and its stream stays small.
    feed: Option<Box<(FeedWriter, Detach)>>,
    /// Sees every event, also those read after the client left (metrics, the turn's summary).
    inspect: Option<Inspector>,
    encoding: StreamEncoding,
}

/// A transport's look at each event as it passes.
type Inspector = Box<dyn FnMut(&TurnEvent) + Send>;

impl SendStream {
    pub(crate) fn plain(events: TurnStream, encoding: StreamEncoding) -> Self {
        Self {
            events: Some(events),
            feed: None,
            inspect: None,
            encoding,
        }
    }

    pub(crate) fn fed(
        events: TurnStream,
        feed: FeedWriter,
        detach: Detach,
        encoding: StreamEncoding,
    ) -> Self {
        Self {
            events: Some(events),
            feed: Some(Box::new((feed, detach))),
            inspect: None,
            encoding,
        }
    }

    /// Calls `inspect` with every event of the turn, to its end, whoever reads it.
    pub fn inspect(mut self, inspect: impl FnMut(&TurnEvent) + Send + 'static) -> Self {
        self.inspect = Some(Box::new(inspect));
        self
    }

    /// The events in the service's [`StreamEncoding`] for a reader of `version`, ending with the
    /// done frame. Each chunk is encoded once for this reader and the followers, but for the few
    /// that `version` must receive otherwise.
    pub fn into_frames(self, version: UiStreamVersion) -> Frames {
        Frames {
            inner: self,
            done: false,
            version,
        }
    }

    /// The next event and, for a reader of `frame`'s version, its frame. A chunk's frame is kept
    /// for followers as the engine made it, whatever the version of this reader.
    fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
        frame: Option<UiStreamVersion>,
    ) -> Poll<Option<(TurnEvent, Option<Bytes>)>> {
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(None);
        };
        match events.poll_next_unpin(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                self.events = None;
                // Dropping the writer ends the feed.
                self.feed = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(event)) => {
                if let Some(inspect) = self.inspect.as_mut() {
                    inspect(&event);
                }
                let bytes = match (&event, self.feed.as_deref(), frame) {
                    (TurnEvent::Chunk(chunk), Some((writer, _)), version) => {
                        let kept = self.encoding.frame(chunk);
                        writer.0.push(kept.clone());
                        let own = version.and_then(|version| self.encoding.frame_for(chunk, version));
                        Some(own.unwrap_or(kept))
                    }
                    (TurnEvent::Chunk(chunk), None, Some(version)) => Some(
                        self.encoding
                            .frame_for(chunk, version)
                            .unwrap_or_else(|| self.encoding.frame(chunk)),
                    ),
                    (TurnEvent::KeepAlive, _, Some(_)) => Some(self.encoding.keep_alive_frame()),
                    _ => None,
                };
                Poll::Ready(Some((event, bytes)))
            }
        }
    }
}

impl Stream for SendStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        self.poll_event(cx, None)
            .map(|event| event.map(|(event, _)| event))
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        let (Some(events), Some(feed)) = (self.events.take(), self.feed.take()) else {
            return;
        };
        let (writer, detach) = *feed;
        if detach.drained {
            // Only when the runtime goes away under the drain: the turn stops with it.
            drop((events, writer));
            return;
        }
        if detach.on_disconnect == OnDisconnect::Stop {
            detach.cancel.cancel();
        }
        // Someone keeps reading the turn's events until it ends: it stops at once when asked to,
        // and followers still get its last chunks.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            detach.cancel.cancel();
            return;
        };
        let mut rest = SendStream {
            inspect: self.inspect.take(),
            encoding: self.encoding,
            events: Some(events),
            feed: Some(Box::new((
                writer,
                Detach {
                    drained: true,
                    cancel: detach.cancel.clone(),
                    tasks: detach.tasks.clone(),
                    on_disconnect: detach.on_disconnect,
                },
            ))),
        };
        detach
            .tasks
            .spawn_on(async move { while rest.next().await.is_some() {} }, &runtime);
    }
}

/// A send's events in the service's encoding, ending with the done frame.
pub struct Frames {
    inner: SendStream,
    done: bool,
    version: UiStreamVersion,
}

impl Stream for Frames {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.done {
            return Poll::Ready(None);
        }
        loop {
            let version = self.version;
            match self.inner.poll_event(cx, Some(version)) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(Some(self.inner.encoding.done_frame()));
                }
                Poll::Ready(Some((_, Some(bytes)))) => return Poll::Ready(Some(bytes)),
                Poll::Ready(Some((_, None))) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::JSON_LINES;
    use promptgate_turn::ui::UiChunk;

    fn frame(text: &str) -> Bytes {
        JSON_LINES.frame(&UiChunk::TextDelta {
            id: "t".into(),
            delta: text.into(),
        })
    }

    fn follow(feed: Arc<TurnFeed>) -> Follow {
        super::follow(feed, "turn_1".into(), Duration::from_secs(5), JSON_LINES)
    }

    /// A reader of `feed`, which must be one that can be followed.
    fn follower(feed: &Arc<TurnFeed>) -> FollowStream {
        let Follow::Stream(stream) = follow(Arc::clone(feed)) else {
            panic!("a turn with frames can be followed");
        };
        stream
    }

    /// A turn's feed and the writer that keeps it running.
    fn running() -> (Arc<TurnFeed>, FeedWriter) {
        let feed = Arc::new(TurnFeed::default());
        let writer = FeedWriter(Arc::clone(&feed));
        (feed, writer)
    }

    async fn read_all(stream: FollowStream) -> String {
        let parts: Vec<Bytes> = stream.collect().await;
        parts.iter().map(|b| String::from_utf8_lossy(b)).collect()
    }

    #[tokio::test]
    async fn a_follower_gets_every_frame_from_the_first_then_done() {
        let (feed, writer) = running();
        writer.0.push(frame("a"));
        let reader = follower(&feed);
        let reading = TaskTracker::new().spawn(read_all(reader));
        writer.0.push(frame("b"));
        drop(writer);
        let body = reading.await.unwrap();
        assert_eq!(
            body,
            format!(
                "{}{}{}",
                String::from_utf8_lossy(&frame("a")),
                String::from_utf8_lossy(&frame("b")),
                JSON_LINES.done
            )
        );
    }

    #[tokio::test]
    async fn past_the_bound_a_new_reader_is_refused_and_a_lagging_one_told_why() {
        let (feed, writer) = running();
        writer.0.push(frame("start"));
        let lagging = follower(&feed);
        let big = "x".repeat(64 << 10);
        for _ in 0..(MAX_FEED_BYTES / big.len() + 1) {
            writer.0.push(frame(&big));
        }
        assert!(matches!(follow(Arc::clone(&feed)), Follow::TooLong));
        drop(writer);
        let body = read_all(lagging).await;
        assert!(
            body.contains(FELL_BEHIND_TEXT) && body.ends_with(JSON_LINES.done),
            "{body}"
        );
        assert!(feed.lock().bytes <= MAX_FEED_BYTES);
    }

    #[tokio::test]
    async fn a_follower_of_an_older_version_gets_the_kept_frames_without_what_it_refuses() {
        let titled = UiChunk::ToolInputStart {
            tool_call_id: "c".into(),
            tool_name: "search".into(),
            dynamic: None,
            title: Some("Searching...".into()),
        };
        let (feed, writer) = running();
        writer.0.push(frame("a"));
        writer.0.push(JSON_LINES.frame(&titled));
        drop(writer);
        let read = |version| {
            let stream = follower(&feed);
            read_all(stream.for_version(JSON_LINES, version))
        };
        let newest = read(UiStreamVersion::V7).await;
        let oldest = read(UiStreamVersion::V5).await;
        assert!(newest.contains("Searching..."), "{newest}");
        assert!(!oldest.contains("title"), "{oldest}");
        assert!(oldest.starts_with(&*String::from_utf8_lossy(&frame("a"))));
        assert!(
            oldest.contains("tool-input-start") && oldest.ends_with(JSON_LINES.done),
            "{oldest}"
        );
    }

    #[tokio::test]
    async fn a_turn_that_ended_before_its_first_chunk_is_idle() {
        let feed = Arc::new(TurnFeed::default());
        drop(FeedWriter(Arc::clone(&feed)));
        assert!(matches!(follow(feed), Follow::Idle));
    }
}
