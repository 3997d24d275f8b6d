//! A connection polled by the task that waits on it, and the response body that polls it.
//!
//! The connection's future and what waits on it (the response head, the body, the sender's
//! readiness) hand each other wake-ups through hyper's channels. Polled with the task's own waker,
//! every such hand-off would wake the task while it runs, and the runtime treats that as a yield:
//! the task goes to the back of the queue and an idle worker is woken to steal it. They are polled
//! instead with a waker of our own that only notes the hand-off while the task is inside this poll,
//! so the poll loops over both until neither moves; a wake-up from outside (the socket turned
//! readable, on whichever thread saw it) still reaches the task.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use futures::Stream;
use futures::task::AtomicWaker;
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;

use super::{Http1Client, Io};

/// How many rounds one poll makes before it hands the task back to the runtime: a connection
/// that keeps waking itself (its read budget spent) must not keep the worker.
const MAX_ROUNDS: usize = 32;

pub(super) type Conn = Connection<TokioIo<Io>, Full<Bytes>>;
pub(super) type Sender = SendRequest<Full<Bytes>>;

/// The wake-ups of a connection and what waits on it.
#[derive(Default)]
struct Wakes {
    /// The task is inside [`Driver::poll_with`]: a wake-up is noted, not passed on.
    polling: AtomicBool,
    /// A wake-up came since the current round started.
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

/// One HTTP/1.1 connection's state machine, polled by whoever waits on it.
pub(super) struct Driver {
    /// `None` once the connection has ended (closed, or failed).
    conn: Option<Pin<Box<Conn>>>,
    wakes: Arc<Wakes>,
    waker: Waker,
}

impl Driver {
    pub fn new(conn: Conn) -> Self {
        let wakes = Arc::new(Wakes::default());
        Self {
            conn: Some(Box::pin(conn)),
            waker: Waker::from(Arc::clone(&wakes)),
            wakes,
        }
    }

    /// Whether the connection may still carry a request.
    pub fn is_open(&self) -> bool {
        self.conn.is_some()
    }

    /// Polls `waiting` (the response head, the body, the sender's readiness) and the connection
    /// in turn until `waiting` is ready or neither can move.
    pub fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut waiting: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.wakes.task.register(cx.waker());
        self.wakes.polling.store(true, Ordering::SeqCst);
        let mut inner = Context::from_waker(&self.waker);
        for _ in 0..MAX_ROUNDS {
            self.wakes.woken.store(false, Ordering::SeqCst);
            if let Poll::Ready(value) = waiting(&mut inner) {
                self.wakes.polling.store(false, Ordering::SeqCst);
                return Poll::Ready(value);
            }
            if let Some(conn) = self.conn.as_mut()
                && let Poll::Ready(ended) = conn.as_mut().poll(&mut inner)
            {
                if let Err(error) = ended {
                    tracing::debug!(%error, "the model provider's connection failed");
                }
                // Dropping it drops its end of every channel, so what waits on it sees the end.
                self.conn = None;
                continue;
            }
            if self.wakes.woken.load(Ordering::SeqCst) {
                continue;
            }
            self.wakes.polling.store(false, Ordering::SeqCst);
            // A wake-up from another thread between the last check and now was only noted.
            if !self.wakes.woken.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
            self.wakes.polling.store(true, Ordering::SeqCst);
        }
        self.wakes.polling.store(false, Ordering::SeqCst);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A response body that drives its connection while it is read, and gives the connection back to
/// its client's pool once it has been read to the end.
pub(crate) struct DrivenBody {
    incoming: Incoming,
    /// `None` once the body ended and the connection went back to the pool.
    connection: Option<(Sender, Driver)>,
    client: Arc<Http1Client>,
}

impl DrivenBody {
    pub(super) fn new(incoming: Incoming, sender: Sender, driver: Driver, client: Arc<Http1Client>) -> Self {
        Self {
            incoming,
            connection: Some((sender, driver)),
            client,
        }
    }
}

impl Stream for DrivenBody {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let incoming = &mut this.incoming;
            let frame = match this.connection.as_mut() {
                Some((_, driver)) => driver.poll_with(cx, |cx| Pin::new(&mut *incoming).poll_frame(cx)),
                None => Pin::new(incoming).poll_frame(cx),
            };
            match std::task::ready!(frame) {
                None => {
                    if let Some((sender, driver)) = this.connection.take() {
                        this.client.give_back(sender, driver);
                    }
                    return Poll::Ready(None);
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                // Trailers carry nothing a chat stream reads.
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => return Poll::Ready(Some(Ok(data))),
                    Err(_) => continue,
                },
            }
        }
    }
}
