//! The response body as a byte stream with the first-byte and idle deadlines applied, and bounded
//! in size. The idle deadline counts bytes, not events, so keep-alive comments hold a slow stream
//! open once it has started.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::time::Instant;

use crate::connection::ResponseBody;
use crate::endpoint::Response;
use crate::{LlmError, TimeoutPhase};

/// One SSE line longer than this is not a chat chunk.
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// A whole response larger than this is a runaway stream.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug)]
pub(crate) enum BodyError {
    Timeout(TimeoutPhase, Duration),
    TooLarge(&'static str),
    /// The connection failed; its description with the causes.
    Transport(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout(phase, _) => write!(f, "timed out ({phase})"),
            Self::TooLarge(what) => write!(f, "{what} is too large"),
            Self::Transport(e) => write!(f, "{e}"),
        }
    }
}

impl From<BodyError> for LlmError {
    fn from(error: BodyError) -> Self {
        match error {
            BodyError::Timeout(phase, limit) => timeout(phase, limit),
            BodyError::TooLarge(what) => LlmError::Protocol(format!("{what} is too large")),
            BodyError::Transport(e) => LlmError::Protocol(format!("the connection failed mid-stream: {e}")),
        }
    }
}

pub(crate) fn timeout(phase: TimeoutPhase, limit: Duration) -> LlmError {
    LlmError::Timeout {
        phase,
        seconds: limit.as_secs_f64().ceil() as u64,
    }
}

/// A stream of its own rather than an async block behind `stream::unfold`, which moved the whole
/// state into a fresh future and back out for every piece of the body (a copy per token).
struct Timed {
    body: ResponseBody,
    first_byte_deadline: Instant,
    first_byte_limit: Duration,
    idle: Duration,
    /// Rings no later than the deadline of the current wait. A wait that ends in time does not
    /// move it (that would register a timer per streamed token); when it rings early it is
    /// re-armed for the wait in progress.
    alarm: Pin<Box<tokio::time::Sleep>>,
    /// When the wait in progress times out; set when the wait starts, cleared when it ends.
    limit_at: Option<Instant>,
    seen_bytes: bool,
    total: usize,
    line: usize,
    ended: bool,
}

/// `first_byte_deadline` is shared with the wait for the response headers.
pub(crate) fn timed_body(
    response: Response,
    first_byte_deadline: Instant,
    first_byte_limit: Duration,
    idle: Duration,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send {
    Timed {
        body: response.into_body(),
        first_byte_deadline,
        first_byte_limit,
        idle,
        alarm: Box::pin(tokio::time::sleep_until(first_byte_deadline)),
        limit_at: None,
        seen_bytes: false,
        total: 0,
        line: 0,
        ended: false,
    }
}

impl Stream for Timed {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let s = self.get_mut();
        if s.ended {
            return Poll::Ready(None);
        }
        let limit_at = match s.limit_at {
            Some(limit_at) => limit_at,
            None => {
                // Silence counts from when the next piece is asked for, as a reader that was busy
                // elsewhere must not find the upstream timed out.
                let limit_at = if s.seen_bytes {
                    Instant::now() + s.idle
                } else {
                    s.first_byte_deadline
                };
                if s.alarm.deadline() > limit_at {
                    s.alarm.as_mut().reset(limit_at);
                }
                s.limit_at = Some(limit_at);
                limit_at
            }
        };
        // The body first, then the alarm; an alarm that rang early is re-armed for this wait.
        let next = loop {
            if let Poll::Ready(next) = Pin::new(&mut s.body).poll_next(cx) {
                break Ok(next);
            }
            if s.alarm.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if limit_at <= Instant::now() {
                break Err(());
            }
            s.alarm.as_mut().reset(limit_at);
        };
        s.limit_at = None;
        let item = match next {
            Err(()) => {
                s.ended = true;
                let (phase, limit) = if s.seen_bytes {
                    (TimeoutPhase::Idle, s.idle)
                } else {
                    (TimeoutPhase::FirstByte, s.first_byte_limit)
                };
                Err(BodyError::Timeout(phase, limit))
            }
            // A last event without its closing blank line is still an event.
            Ok(None) => {
                s.ended = true;
                Ok(Bytes::from_static(b"\n\n"))
            }
            Ok(Some(Err(e))) => {
                s.ended = true;
                Err(BodyError::Transport(e))
            }
            Ok(Some(Ok(bytes))) => {
                s.seen_bytes |= !bytes.is_empty();
                match s.account(&bytes) {
                    Ok(()) => Ok(bytes),
                    Err(e) => {
                        s.ended = true;
                        Err(e)
                    }
                }
            }
        };
        Poll::Ready(Some(item))
    }
}

impl Timed {
    fn account(&mut self, bytes: &[u8]) -> Result<(), BodyError> {
        self.total += bytes.len();
        self.line = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(at) => bytes.len() - at - 1,
            None => self.line + bytes.len(),
        };
        if self.total > MAX_BODY_BYTES {
            return Err(BodyError::TooLarge("the response"));
        }
        if self.line > MAX_LINE_BYTES {
            return Err(BodyError::TooLarge("one event of the response"));
        }
        Ok(())
    }
}
