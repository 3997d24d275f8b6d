//! A streamed answer read event by event: the server-sent events of a timed body fed to the wire
//! format's parser, the first event held to the first-byte deadline, and the connection handed
//! back to the pool once the parser has seen the answer's end.

mod decoder;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, Stream, StreamExt};
use tokio::time::{Instant, Sleep};

pub(crate) use decoder::SseEvent;
use decoder::{NotUtf8, SseDecoder};

use crate::transport::{BodyError, timed_body, timeout};
use crate::{EventStream, LlmError, StreamEvent, TimeoutPhase, Timeouts};

/// How long the rest of a body is read after the answer's end, so its connection can be reused.
const DRAIN_AFTER_END: Duration = Duration::from_secs(2);

/// One wire format's reading of the events.
pub(crate) trait EventParser: Send + Unpin + 'static {
    /// Reads one event onto `out`; an `Err` ends the stream with it (and what it wrote onto `out`
    /// is dropped).
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
    /// The answer has ended; nothing after this event matters.
    fn is_done(&self) -> bool;
    /// The body ended (or the answer did): the closing events, or the error that the answer is
    /// incomplete.
    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError>;
}

/// The events of a successful streamed response.
pub(crate) fn event_stream<P: EventParser>(
    response: crate::endpoint::Response,
    first_byte_deadline: Instant,
    timeouts: Timeouts,
    parser: P,
) -> EventStream {
    let body = timed_body(response, first_byte_deadline, timeouts.first_byte, timeouts.idle);
    let reader = Reader {
        body: Some(Box::pin(body)),
        decoder: SseDecoder::default(),
        first_event_deadline: Some((first_byte_deadline, timeouts.first_byte)),
        first_event_alarm: None,
        parser,
        ready: VecDeque::new(),
        parsed: Vec::new(),
        closed: false,
    };
    Box::pin(reader)
}

type TimedBody = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// Drives the parser from the SSE events. Dropping it drops the response body, which closes the
/// connection: that is how a cancelled turn stops the upstream request.
///
/// A stream of its own rather than an async function behind `stream::unfold`: unfold moves the
/// whole reader into a fresh future and back out for every event, a copy per token a model
/// streams, and a wait bounded by a deadline built a timer per call.
struct Reader<P> {
    body: Option<TimedBody>,
    decoder: SseDecoder,
    /// Until the first event arrives, the wait is bounded by the first-byte deadline.
    first_event_deadline: Option<(Instant, Duration)>,
    /// The timer of that deadline, made when the first wait for it starts.
    first_event_alarm: Option<Pin<Box<Sleep>>>,
    parser: P,
    ready: VecDeque<StreamEvent>,
    /// What the parser made of one event, kept from one event to the next: one allocation per
    /// stream instead of one per token.
    parsed: Vec<StreamEvent>,
    closed: bool,
}

impl<P: EventParser> Stream for Reader<P> {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}

impl<P: EventParser> Reader<P> {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<StreamEvent, LlmError>>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if self.closed {
                return Poll::Ready(None);
            }
            if self.parser.is_done() {
                self.release_connection();
                return Poll::Ready(self.end());
            }
            if let Some(event) = self.decoder.next_event() {
                self.first_event_deadline = None;
                self.first_event_alarm = None;
                match self.parser.push(&event, &mut self.parsed) {
                    Ok(()) => self.ready.extend(self.parsed.drain(..)),
                    Err(e) => {
                        self.parsed.clear();
                        self.closed = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                continue;
            }
            let Some(body) = self.body.as_mut() else {
                return Poll::Ready(self.end());
            };
            // The body first, then the deadline (as `tokio::time::timeout_at` would).
            let next = match body.as_mut().poll_next(cx) {
                Poll::Ready(next) => next,
                Poll::Pending => {
                    if let Some((deadline, limit)) = self.first_event_deadline {
                        let alarm = self
                            .first_event_alarm
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                        if alarm.as_mut().poll(cx).is_ready() {
                            self.closed = true;
                            return Poll::Ready(Some(Err(timeout(TimeoutPhase::FirstByte, limit))));
                        }
                    }
                    return Poll::Pending;
                }
            };
            let decoded = match next {
                None => {
                    self.body = None;
                    self.decoder.finish()
                }
                Some(Err(e)) => {
                    self.closed = true;
                    return Poll::Ready(Some(Err(e.into())));
                }
                Some(Ok(bytes)) => self.decoder.push(&bytes),
            };
            if let Err(NotUtf8) = decoded {
                self.closed = true;
                return Poll::Ready(Some(Err(LlmError::Protocol(
                    "the stream is not valid UTF-8".to_owned(),
                ))));
            }
        }
    }

    /// After the answer's end only the end of the body is left. Reading it hands the connection
    /// back to the pool instead of closing it. What has already arrived is read now, so the next
    /// request can reuse the connection; anything still on its way is read in the background, so
    /// the caller is never held up.
    fn release_connection(&mut self) {
        let Some(mut body) = self.body.take() else {
            return;
        };
        loop {
            match body.next().now_or_never() {
                Some(Some(_)) => continue,
                Some(None) => return,
                None => break,
            }
        }
        tokio::spawn(async move {
            let drain = async { while body.next().await.is_some() {} };
            let _ = tokio::time::timeout(DRAIN_AFTER_END, drain).await;
        });
    }

    fn end(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        self.closed = true;
        match self.parser.finish() {
            Ok(events) => {
                self.ready.extend(events);
                self.ready.pop_front().map(Ok)
            }
            Err(e) => Some(Err(e)),
        }
    }
}
