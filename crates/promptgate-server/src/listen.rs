//! The accept loop: HTTP/1.1 connections with a bounded number open at once, closed when a request
//! head trickles in too slowly or when they sit idle between requests, and drained on shutdown.
//!
//! Both clocks run only while no request is in progress on the connection, so a long answer (an SSE
//! stream, a slow tool) is never cut by them; the turn's own limits bound those.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::config::ServerConfig;
use crate::memory::Activity;
use crate::write_batch::WriteBatch;

/// Bounds on the connections one server holds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// From the first byte of a request head to its last.
    pub header_read_timeout: Duration,
    /// With no request in progress.
    pub idle_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl ConnectionLimits {
    pub fn from_config(server: &ServerConfig) -> Self {
        Self {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            idle_timeout: Duration::from_secs(server.idle_timeout_secs),
            max_connections: server.max_connections.max(1),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets idle connections
/// close and returns once the requests in progress have finished.
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    // Each connection's task, so the return below waits for the last one to have ended.
    let connections = tokio_util::task::TaskTracker::new();
    let http = hyper::server::conn::http1::Builder::new();
    let activity = Arc::new(Activity::default());
    let quiet_for_good = tokio_util::sync::CancellationToken::new();
    connections.spawn(crate::memory::release_after_bursts(
        Arc::clone(&activity),
        quiet_for_good.clone(),
    ));
    tokio::pin!(shutdown);
    loop {
        // Past the cap, clients wait in the kernel's accept queue rather than costing us a descriptor.
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (tcp, _peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or a connection reset before it was accepted: retrying at
                    // once would spin, and none of these end the server.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Streams are many small writes; with Nagle's algorithm on, each waits for the previous ACK.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY on a connection");
        }
        let clock = Arc::new(Clock::new());
        let io = TokioIo::new(Watched {
            inner: tcp,
            clock: Arc::clone(&clock),
            batch: WriteBatch::default(),
        });
        let service = {
            let clock = Arc::clone(&clock);
            let app = app.clone();
            let activity = Arc::clone(&activity);
            hyper::service::service_fn(move |req: Request<Incoming>| {
                let busy = Busy::start(Arc::clone(&clock), Arc::clone(&activity));
                let app = app.clone();
                async move {
                    let Ok(res) = app.oneshot(req.map(Body::new)).await;
                    Ok::<Response, Infallible>(res.map(|body| hold_until_body_ends(body, busy)))
                }
            })
        };
        let conn = graceful.watch(http.serve_connection(io, service));
        let activity = Arc::clone(&activity);
        connections.spawn(async move {
            tokio::select! {
                result = conn => if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                },
                () = clock.expired(limits) => {},
            }
            drop(slot);
            activity.connection_ended();
        });
    }
    quiet_for_good.cancel();
    drop(listener);
    graceful.shutdown().await;
    connections.close();
    connections.wait().await;
    Ok(())
}

/// What the watchdog of one connection needs to know, in milliseconds since the connection opened.
struct Clock {
    opened: Instant,
    /// Requests whose response has not been fully written.
    busy: AtomicUsize,
    /// When the connection last became idle.
    idle_since: AtomicU64,
    /// Whether bytes of a new request head have arrived while idle, and when the first did.
    head_started: AtomicBool,
    head_started_at: AtomicU64,
    /// Wakes the watchdog when a head starts, the one change that can bring its deadline forward
    /// (starting or ending a request only ever moves it later, which it notices when it wakes).
    changed: Notify,
}

impl Clock {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicBool::new(false),
            head_started_at: AtomicU64::new(0),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.opened + Duration::from_millis(ms)
    }

    fn bytes_read(&self) {
        if self.busy.load(Ordering::Acquire) == 0 && !self.head_started.load(Ordering::Acquire) {
            self.head_started_at.store(self.now(), Ordering::Release);
            self.head_started.store(true, Ordering::Release);
            self.changed.notify_one();
        }
    }

    /// Resolves when the connection has broken one of the limits; pending while a request runs.
    async fn expired(&self, limits: ConnectionLimits) {
        loop {
            let deadline = if self.busy.load(Ordering::Acquire) > 0 {
                // Nothing expires while a request runs; look again later.
                Instant::now() + limits.idle_timeout
            } else if self.head_started.load(Ordering::Acquire) {
                self.at(self.head_started_at.load(Ordering::Acquire)) + limits.header_read_timeout
            } else {
                self.at(self.idle_since.load(Ordering::Acquire)) + limits.idle_timeout
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {},
                () = self.changed.notified() => continue,
            }
            if self.busy.load(Ordering::Acquire) > 0 {
                continue;
            }
            let now = Instant::now();
            let overdue = if self.head_started.load(Ordering::Acquire) {
                now >= self.at(self.head_started_at.load(Ordering::Acquire)) + limits.header_read_timeout
            } else {
                now >= self.at(self.idle_since.load(Ordering::Acquire)) + limits.idle_timeout
            };
            if overdue {
                return;
            }
        }
    }
}

/// Marks a request in progress from the moment its head was parsed until its response body is done,
/// on its connection and across the server.
struct Busy(Arc<Clock>, Arc<Activity>);

impl Busy {
    fn start(clock: Arc<Clock>, activity: Arc<Activity>) -> Self {
        clock.busy.fetch_add(1, Ordering::AcqRel);
        clock.head_started.store(false, Ordering::Release);
        activity.request_started();
        Self(clock, activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let clock = &self.0;
        clock.idle_since.store(clock.now(), Ordering::Release);
        clock.busy.fetch_sub(1, Ordering::AcqRel);
        self.1.request_ended();
    }
}

/// The socket, reporting reads to the connection's clock and batching a response's later writes.
struct Watched {
    inner: TcpStream,
    clock: Arc<Clock>,
    batch: WriteBatch,
}

impl Watched {
    /// `write` unless the batching says to wait a scheduler turn; hyper keeps the bytes meanwhile and
    /// offers them again, with whatever the body produced in between.
    fn write_batched(
        &mut self,
        cx: &mut Context<'_>,
        offered: usize,
        write: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<std::io::Result<usize>>,
    ) -> Poll<std::io::Result<usize>> {
        if self.batch.should_wait(offered) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let result = write(Pin::new(&mut self.inner), cx);
        match result {
            Poll::Ready(Ok(written)) if written >= offered => {}
            Poll::Ready(Err(_)) => {}
            _ => self.batch.next_at_once(),
        }
        result
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.clock.bytes_read();
            this.batch.request_read();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.get_mut()
            .write_batched(cx, buf.len(), |io, cx| io.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let offered = bufs.iter().map(|buf| buf.len()).sum();
        self.get_mut()
            .write_batched(cx, offered, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// `body` unchanged, with `guard` dropped only when the body is finished or abandoned: what a
/// response holds (a turn slot, a busy mark) lasts as long as the client is still being answered.
pub fn hold_until_body_ends<G: Send + Unpin + 'static>(body: Body, guard: G) -> Body {
    Body::new(Guarded {
        inner: body,
        _guard: guard,
    })
}

struct Guarded<G> {
    inner: Body,
    _guard: G,
}

impl<G: Unpin> HttpBody for Guarded<G> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
