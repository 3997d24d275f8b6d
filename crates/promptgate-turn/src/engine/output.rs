//! The turn's side of the event channel: every chunk is folded into the stored message and sent,
//! and every wait watches for Stop and keeps the connection alive.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::plan::AnswerRecorder;
use crate::message::UiMessageBuilder;
use crate::ui::{TurnEvent, UiChunk};

const MIN_KEEP_ALIVE: Duration = Duration::from_secs(1);

pub(super) struct Output {
    events: mpsc::Sender<TurnEvent>,
    /// `None` when the turn's answer is not kept.
    message: Option<UiMessageBuilder>,
    last_sent: Instant,
    keep_alive: Duration,
    stop: CancellationToken,
    /// The turn's wall clock runs out here: every wait ends, as with a stop.
    deadline: Instant,
    checkpoints: Option<Checkpoints>,
    /// What a wait watches, kept from one wait to the next (made by the first): the engine waits
    /// once per upstream event, and registering a fresh timer and stop listener each time cost
    /// more than the event itself.
    watch: Option<Watch>,
}

struct Watch {
    stopped: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Rings at or before the next heartbeat or checkpoint. It is moved earlier when needed but
    /// never later: one that rings early is re-armed, which happens about once per heartbeat
    /// interval instead of once per event.
    alarm: Pin<Box<Sleep>>,
}

/// When the growing answer was last handed to the recorder.
struct Checkpoints {
    recorder: Arc<dyn AnswerRecorder>,
    every: Duration,
    last: Instant,
    /// Text arrived since the last checkpoint.
    dirty: bool,
}

impl Checkpoints {
    /// When the text that arrived since the last checkpoint is due to be recorded.
    fn due(&self) -> Option<Instant> {
        self.dirty.then(|| self.last + self.every)
    }
}

impl Output {
    pub(super) fn new(
        events: mpsc::Sender<TurnEvent>,
        keep_alive: Duration,
        stop: CancellationToken,
        deadline: Instant,
        record_message: bool,
        recorder: Option<(Arc<dyn AnswerRecorder>, Duration)>,
    ) -> Self {
        // A zero interval would send heartbeats back to back.
        let keep_alive = keep_alive.max(MIN_KEEP_ALIVE);
        let now = Instant::now();
        Self {
            events,
            message: record_message.then(UiMessageBuilder::new),
            last_sent: now,
            keep_alive,
            stop,
            deadline,
            checkpoints: recorder.map(|(recorder, every)| Checkpoints {
                recorder,
                every,
                last: now,
                dirty: false,
            }),
            watch: None,
        }
    }

    /// Continues a stored message: what was recorded of it comes first.
    pub(super) fn continue_message(&mut self, parts: &[serde_json::Value], metadata: &serde_json::Value) {
        if self.message.is_some() {
            self.message = Some(UiMessageBuilder::continuing(parts, metadata));
        }
    }

    /// Writes the user's answer onto the recorded part of a call that waited for approval.
    pub(super) fn record_approval(&mut self, tool_call_id: &str, approved: bool, reason: Option<&str>) {
        if let Some(message) = &mut self.message {
            message.respond_to_approval(tool_call_id, approved, reason);
        }
    }

    /// The turn must end: it was stopped or its wall clock ran out.
    pub(super) fn stopped(&self) -> bool {
        self.stop.is_cancelled() || self.timed_out()
    }

    /// The wall clock ran out and nobody stopped the turn before.
    pub(super) fn timed_out(&self) -> bool {
        !self.stop.is_cancelled() && Instant::now() >= self.deadline
    }

    pub(super) async fn emit(&mut self, chunk: UiChunk) {
        self.record(&chunk);
        let grows_text = matches!(chunk, UiChunk::TextDelta { .. } | UiChunk::ReasoningDelta { .. });
        self.send(TurnEvent::Chunk(chunk)).await;
        if grows_text && let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.dirty = true;
            if checkpoints.last.elapsed() >= checkpoints.every {
                self.checkpoint();
            }
        }
    }

    /// Folds a chunk into the recorded message without sending it (the end of a turn is recorded
    /// first and sent once the answer is stored).
    pub(super) fn record(&mut self, chunk: &UiChunk) {
        if let Some(message) = &mut self.message
            && let Err(err) = message.apply(chunk)
        {
            // The engine produced a chunk the client would reject: a bug, but the turn goes on.
            tracing::error!(error = %err, ?chunk, "turn emitted an invalid UI chunk");
        }
    }

    /// Sends a chunk that is already recorded, or that the stored answer leaves out.
    pub(super) async fn send_only(&mut self, chunk: UiChunk) {
        self.send(TurnEvent::Chunk(chunk)).await;
    }

    /// Sends an event that is no chunk of the message (a client tool call).
    pub(super) async fn send_event(&mut self, event: TurnEvent) {
        self.send(event).await;
    }

    /// Hands the answer so far to the recorder, when there is one.
    pub(super) fn checkpoint(&mut self) {
        let Some(checkpoints) = &mut self.checkpoints else {
            return;
        };
        checkpoints.last = Instant::now();
        checkpoints.dirty = false;
        let (parts, metadata) = match &self.message {
            Some(message) => (message.parts(), message.metadata()),
            None => return,
        };
        checkpoints.recorder.checkpoint(parts, metadata);
    }

    /// The message's parts and metadata so far; empty when it is not recorded.
    pub(super) fn message(&self) -> (Vec<serde_json::Value>, serde_json::Value) {
        match &self.message {
            Some(message) => (message.parts(), message.metadata()),
            None => (Vec::new(), serde_json::Value::Object(Default::default())),
        }
    }

    async fn send(&mut self, event: TurnEvent) {
        self.last_sent = Instant::now();
        if self.events.send(event).await.is_err() {
            // Nobody is reading any more: the client went away, which stops the turn.
            self.stop.cancel();
        }
    }

    /// Awaits `work`, sending heartbeats while the stream is quiet. `None` when the turn was
    /// stopped or ran out of time first; `work` is then dropped, which cancels it.
    pub(super) async fn wait<F: Future>(&mut self, work: F) -> Option<F::Output> {
        tokio::pin!(work);
        loop {
            let quiet_until = self.last_sent + self.keep_alive;
            // Text that stopped arriving (the model pauses, a tool starts) is still recorded on time.
            let checkpoint_due = self.checkpoints.as_ref().and_then(Checkpoints::due);
            let wake_at = checkpoint_due
                .map_or(quiet_until, |due| due.min(quiet_until))
                .min(self.deadline);
            let watch = self.watch.get_or_insert_with(|| Watch {
                stopped: Box::pin(self.stop.clone().cancelled_owned()),
                alarm: Box::pin(tokio::time::sleep_until(wake_at)),
            });
            if watch.alarm.is_elapsed() || watch.alarm.deadline() > wake_at {
                watch.alarm.as_mut().reset(wake_at);
            }
            // A stop wins over work that is ready at the same time, as a biased select with the
            // stop first would have it; but the stop's future is polled (and its waker registered
            // again) only when the work is not ready. Why: the engine waits once per upstream
            // event, and polling the stop first cost about as much as the event's own reading.
            let stop = &self.stop;
            let woke = std::future::poll_fn(|cx| {
                if stop.is_cancelled() {
                    return Poll::Ready(None);
                }
                if let Poll::Ready(value) = work.as_mut().poll(cx) {
                    return Poll::Ready(Some(Some(value)));
                }
                if watch.stopped.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                match watch.alarm.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(None)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match woke {
                None => return None,
                Some(Some(value)) => return Some(value),
                Some(None) => {}
            }
            let now = Instant::now();
            if now >= self.deadline {
                return None;
            }
            if checkpoint_due.is_some_and(|due| due <= now) {
                self.checkpoint();
            }
            if self.last_sent + self.keep_alive <= now {
                self.send(TurnEvent::KeepAlive).await;
            }
        }
    }
}
