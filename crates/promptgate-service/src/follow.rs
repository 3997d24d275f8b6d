//! Following a running turn from any instance. The owner serves its followers from memory (the
//! turn's feed); a reader on another instance asks the owner (a `Follow` signal) to write the turn's
//! frames to the store in short batches, and reads them from there: woken by the owner's `Frames`
//! signal, and polling as well in case a signal is lost.
//!
//! The request reaches the owner even when its signal is lost (its listener reconnecting after a
//! Postgres outage): it is also a mark on the turn's claim, which the owner reads every half second
//! while it cannot hear signals (and at every heartbeat otherwise), and which the release of the
//! claim returns, so a turn that ends before its owner looked still has its whole stream written.
//! Batches that fail to be stored are tried again until the store takes them, within a bound; a
//! reader waits that long for frames after the turn's end before it says the stream is lost.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use promptgate_store::{FrameBatch, Store, TurnSignal};
use tokio::sync::broadcast;
use tokio::time::Instant;

use tokio_util::task::TaskTracker;

use super::Service;
use super::claims::Instance;
use super::feed::{self, Follow, FollowStream};
use super::live::LiveTurns;
use crate::encoding::StreamEncoding;
use promptgate_turn::ui::UiStreamVersion;

/// The owner gathers frames this long into one stored batch.
const MIRROR_BATCH: Duration = Duration::from_millis(40);
/// A follower elsewhere reads the store at least this often.
const POLL: Duration = Duration::from_millis(250);
/// A follower that has heard nothing this long checks that the turn still runs.
const OWNER_QUIET: Duration = Duration::from_secs(5);
/// How long the owner keeps trying to store a batch the store refuses.
const MIRROR_RETRY_FOR: Duration = Duration::from_secs(60);
/// How long a follower of an ended turn waits for more frames before it says the stream is lost: the
/// owner writes the whole stream when it releases a followed turn, and may be trying a batch again.
const FRAMES_AFTER_END: Duration = Duration::from_secs(10);

/// Sent to a follower on another instance when the turn is gone without the end of its stream.
pub const LOST_TURN_TEXT: &str =
    "The turn ended before its stream could be followed here; reload the conversation to see its answer.";

impl Service {
    /// The stream of the thread's running turn from its `start` chunk, for another reader (a
    /// reload that resumes it) of `version`, whichever instance runs it.
    pub async fn follow(&self, user_id: &str, thread_id: &str, version: UiStreamVersion) -> Follow {
        match self.follow_kept(user_id, thread_id).await {
            Follow::Stream(stream) => Follow::Stream(stream.for_version(self.encoding, version)),
            other => other,
        }
    }

    /// The running turn's frames as they are kept, for the newest version.
    async fn follow_kept(&self, user_id: &str, thread_id: &str) -> Follow {
        let keep_alive = self.config.limits.keep_alive.max(Duration::from_secs(1));
        if let Some((turn_id, feed)) = self.live.feed(user_id, thread_id) {
            return feed::follow(feed, turn_id, keep_alive, self.encoding);
        }
        // Subscribed before asking, so the owner's first batch cannot be announced unheard.
        let signals = self.store.turn_signals();
        let running = match self.store.request_turn_follow(user_id, thread_id).await {
            // A claim of this instance that `live` does not know is a turn ending right now.
            Ok(Some(running)) if running.instance_id != self.instance.id => running,
            Ok(_) => return Follow::Idle,
            Err(err) => {
                tracing::warn!(thread = thread_id, error = %err, "cannot ask the store for the thread's running turn");
                return Follow::Idle;
            }
        };
        let reader = Remote {
            store: self.store.clone(),
            user_id: user_id.to_owned(),
            thread_id: thread_id.to_owned(),
            turn_id: running.turn_id.clone(),
            signals,
            after: 0,
            finished: false,
            heard_at: Instant::now(),
            sent_at: Instant::now(),
            ended: false,
            keep_alive,
            encoding: self.encoding,
        };
        let frames = futures::stream::unfold(reader, |mut reader| async move {
            let bytes = reader.next_bytes().await?;
            Some((bytes, reader))
        })
        .boxed();
        Follow::Stream(FollowStream::new(running.turn_id, frames))
    }

    /// Starts writing a running turn's frames to the store for followers on other instances,
    /// once per turn.
    pub(crate) fn mirror(&self, turn_id: &str) {
        self.mirrors().mirror(turn_id);
    }

    /// What writing a turn's frames for followers elsewhere needs, for the turn's answer writer.
    pub(crate) fn mirrors(&self) -> Mirrors {
        Mirrors {
            store: self.store.clone(),
            live: self.live.clone(),
            instance: Arc::clone(&self.instance),
            tasks: self.tasks.clone(),
            encoding: self.encoding,
        }
    }
}

/// Writes the frames of this instance's turns to the store for readers on other instances.
#[derive(Clone)]
pub(crate) struct Mirrors {
    store: Store,
    live: LiveTurns,
    instance: Arc<Instance>,
    tasks: TaskTracker,
    encoding: StreamEncoding,
}

impl Mirrors {
    /// Starts writing the frames of `turn_id`, from its first, while it runs here; once per turn.
    pub(crate) fn mirror(&self, turn_id: &str) {
        let Some(feed) = self.live.feed_of_turn(turn_id) else {
            return;
        };
        {
            let mut mirrored = self
                .instance
                .mirrored
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !mirrored.insert(turn_id.to_owned()) {
                return;
            }
        }
        let store = self.store.clone();
        let instance = Arc::clone(&self.instance);
        let turn_id = turn_id.to_owned();
        let encoding = self.encoding;
        tracing::info!(turn = %turn_id, "a reader on another instance follows this turn");
        self.tasks.spawn(async move {
            // Keep-alives are each follower's own business; a long interval keeps them out.
            let follow = feed::follow(feed, turn_id.clone(), Duration::from_secs(3600), encoding);
            write_frames(&store, &turn_id, follow, encoding).await;
            instance
                .mirrored
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&turn_id);
        });
    }
}

async fn write_frames(store: &Store, turn_id: &str, follow: Follow, encoding: StreamEncoding) {
    let mut stream = match follow {
        Follow::Stream(stream) => stream,
        Follow::Idle => {
            let lost = encoding.error_and_done(LOST_TURN_TEXT);
            put(store, turn_id, 1, lost, encoding).await;
            return;
        }
        Follow::TooLong => {
            let behind = encoding.error_and_done(feed::FELL_BEHIND_TEXT);
            put(store, turn_id, 1, behind, encoding).await;
            return;
        }
    };
    let mut seq = 0;
    while let Some(first) = stream.next().await {
        let mut batch = BytesMut::from(&first[..]);
        let until = Instant::now() + MIRROR_BATCH;
        while let Ok(Some(more)) = tokio::time::timeout_at(until, stream.next()).await {
            batch.extend_from_slice(&more);
        }
        let frames = String::from_utf8_lossy(&batch).replace(encoding.keep_alive, "");
        if frames.is_empty() {
            continue;
        }
        seq += 1;
        let done = frames.ends_with(encoding.done);
        if !put(store, turn_id, seq, frames, encoding).await || done {
            return;
        }
    }
}

/// Stores one batch, trying again while the store refuses it (see [`MIRROR_RETRY_FOR`]); false
/// when it never took it.
async fn put(store: &Store, turn_id: &str, seq: i64, frames: String, encoding: StreamEncoding) -> bool {
    let done = frames.ends_with(encoding.done);
    let batch = FrameBatch { seq, frames, done };
    crate::store_retry::until_stored(
        MIRROR_RETRY_FOR,
        "storing a followed turn's frames",
        turn_id,
        || store.put_turn_frames(turn_id, &batch),
    )
    .await
    .is_ok()
}

/// A reader of a turn that runs on another instance.
struct Remote {
    store: Store,
    user_id: String,
    thread_id: String,
    turn_id: String,
    signals: broadcast::Receiver<TurnSignal>,
    after: i64,
    finished: bool,
    /// When frames last arrived (or the turn was last seen running).
    heard_at: Instant,
    /// When this reader last wrote anything, for keep-alives.
    sent_at: Instant,
    /// The turn was found ended (no longer holding its thread) before its stream's end was here.
    ended: bool,
    keep_alive: Duration,
    encoding: StreamEncoding,
}

impl Remote {
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            if self.finished {
                return None;
            }
            match self.store.turn_frames_after(&self.turn_id, self.after).await {
                Ok(batches) if !batches.is_empty() => {
                    let mut out = String::new();
                    for batch in &batches {
                        out.push_str(&batch.frames);
                        self.after = batch.seq;
                        self.finished |= batch.done;
                    }
                    self.heard_at = Instant::now();
                    self.sent_at = Instant::now();
                    return Some(Bytes::from(out));
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(turn = %self.turn_id, error = %err, "reading a followed turn's frames failed")
                }
            }
            if self.ended {
                if self.heard_at.elapsed() >= FRAMES_AFTER_END {
                    // Gone without the end of its stream: its instance died, or its frames never
                    // reached the store.
                    self.finished = true;
                    return Some(Bytes::from(self.encoding.error_and_done(LOST_TURN_TEXT)));
                }
            } else if self.heard_at.elapsed() >= OWNER_QUIET {
                match self.store.running_turn(&self.user_id, &self.thread_id).await {
                    Ok(Some(running)) if running.turn_id == self.turn_id => self.heard_at = Instant::now(),
                    // Ended: its owner writes the whole stream when it releases a followed turn.
                    Ok(_) => {
                        self.ended = true;
                        self.heard_at = Instant::now();
                    }
                    Err(err) => {
                        tracing::warn!(turn = %self.turn_id, error = %err, "cannot check the followed turn")
                    }
                }
            }
            if self.sent_at.elapsed() >= self.keep_alive {
                self.sent_at = Instant::now();
                return Some(self.encoding.keep_alive_frame());
            }
            self.wait().await;
        }
    }

    /// Until the owner announces frames of this turn, or a poll interval.
    async fn wait(&mut self) {
        let poll = tokio::time::sleep(POLL);
        let mut poll: Pin<&mut tokio::time::Sleep> = std::pin::pin!(poll);
        loop {
            tokio::select! {
                () = &mut poll => return,
                heard = self.signals.recv() => match heard {
                    Ok(TurnSignal::Frames { turn_id }) if turn_id == self.turn_id => return,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        poll.as_mut().await;
                        return;
                    }
                },
            }
        }
    }
}
