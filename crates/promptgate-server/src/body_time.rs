//! Time limits on a request body: a body that sends nothing for the stall limit, or that has not
//! arrived whole by the deadline, ends with a [`BodyTimedOut`] error, which the extractors answer with
//! 408. The stall limit alone lets a client keep a request open for as long as it likes by sending a
//! byte now and then; the streaming routes have no overall request timeout to stop that, so every
//! body also has a deadline counted from its request's head.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use tokio::time::{Instant, Sleep};

/// Which time limit a request body broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyTimedOut {
    #[error("the request body sent nothing for too long")]
    Stalled,
    #[error("the request body did not arrive whole in time")]
    PastDeadline,
}

/// The stall limit and the deadline of every request body.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimes {
    pub stall: Duration,
    pub whole: Duration,
}

impl BodyTimes {
    /// `request` with its body under these limits. A request without a body is left as it is.
    pub fn apply(self, request: Request) -> Request {
        if request.body().is_end_stream() {
            return request;
        }
        let deadline = Instant::now() + self.whole;
        request.map(|inner| {
            Body::new(TimedBody {
                inner,
                stall: self.stall,
                deadline,
                sleep: None,
            })
        })
    }
}

struct TimedBody {
    inner: Body,
    stall: Duration,
    deadline: Instant,
    /// Armed while the body is waiting for its next frame.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            self.sleep = None;
            return Poll::Ready(frame);
        }
        let wake_at = (Instant::now() + self.stall).min(self.deadline);
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(wake_at)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let broke = if Instant::now() >= self.deadline {
            BodyTimedOut::PastDeadline
        } else {
            BodyTimedOut::Stalled
        };
        Poll::Ready(Some(Err(axum::Error::new(broke))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
