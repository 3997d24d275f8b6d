//! The accept loop: HTTP/1.1 connections with a bounded number open at once, closed when a request
//! head trickles in too slowly, when they sit idle between requests or before their first one, and
//! drained on shutdown. At the cap, the connection idle longest makes room for a new one (`room`).
//!
//! The clocks run only while no request is in progress on the connection, so a long answer (an SSE
//! stream, a slow tool) is never cut by them; the turn's own limits bound those.
//!
//! A keep-alive connection idle for [`ConnectionLimits::park_after`] is parked: hyper's connection
//! is ended without closing the socket, which gives back its buffers, and a new one takes the socket
//! (with any bytes the old one had read) when the client sends again. Browsers and proxies hold idle
//! connections open by the hundred; each costs the socket and a small task instead of ~20 KiB.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use clock::{Busy, Clock, Limit};
use room::OpenConnections;

use crate::app::App;
use crate::config::ServerConfig;
use crate::memory::Activity;
use crate::write_batch::WriteBatch;

/// How many tasks a busy worker runs before it looks at its sockets and timers again (Tokio's
/// default is 61). Past saturation a new request is not even seen until then, and then waits
/// behind the work already queued: on one core with 61, refusals took 1.2–1.8 ms at the median
/// and their p99 passed 5 ms in most steps at twice and three times capacity; with 8, 0.9–1.2 ms
/// and under 5 ms in all but one step of twelve (docs/benchmarks.md). An idle worker looks at once
/// whatever this says, so below saturation it changes nothing measurable.
pub const EVENT_INTERVAL: u32 = 8;

mod clock;
mod protocol_error;
mod room;

/// Long enough that a client sending requests in quick succession keeps its connection's buffers,
/// short enough that hundreds of idle keep-alive connections cost little.
const PARK_IDLE_CONNECTIONS_AFTER: Duration = Duration::from_secs(5);

/// At the cap with every connection busy, how often the accept loop looks again for one that has
/// become idle (a connection does not announce the end of each request to it).
const LOOK_FOR_ROOM_EVERY: Duration = Duration::from_millis(50);

/// Bounds on the connections one server holds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// From the first byte of a request head to its last.
    pub header_read_timeout: Duration,
    /// With no request in progress, after a request.
    pub idle_timeout: Duration,
    /// From the connection's opening, while it has sent no byte of a request.
    pub first_request_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// With no request in progress for this long, a connection gives back what hyper holds for it
    /// (its read and write buffers, ~16 KiB) and keeps only the socket until the next request.
    pub park_after: Duration,
}

impl ConnectionLimits {
    pub fn from_config(server: &ServerConfig) -> Self {
        Self {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            idle_timeout: Duration::from_secs(server.idle_timeout_secs),
            first_request_timeout: Duration::from_secs(server.first_request_timeout_secs),
            max_connections: server.max_connections.max(1),
            park_after: PARK_IDLE_CONNECTIONS_AFTER,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets idle connections
/// close and returns once the requests in progress have finished.
pub async fn serve_connections(
    listener: TcpListener,
    app: impl App,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let open = Arc::new(OpenConnections::default());
    let mut next_id = 0u64;
    // Tells every connection to finish the request in progress and close.
    let closing = tokio_util::sync::CancellationToken::new();
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
        // At the cap, the one connection accepted waits for room while the next clients wait in
        // the kernel's accept queue, costing us no descriptor.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                let room = make_room(&slots, &open);
                tokio::select! {
                    () = &mut shutdown => break,
                    slot = room => slot,
                }
            }
        };
        // Streams are many small writes; with Nagle's algorithm on, each waits for the previous ACK.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY on a connection");
        }
        let clock = Arc::new(Clock::new());
        next_id += 1;
        let registered = open.add(next_id, Arc::clone(&clock));
        let handler = Handler {
            app: app.clone(),
            clock: Arc::clone(&clock),
            activity: Arc::clone(&activity),
        };
        let connection = OpenConnection {
            http: http.clone(),
            handler,
            clock,
            limits,
            closing: closing.clone(),
            activity: Arc::clone(&activity),
        };
        connections.spawn(async move {
            connection.serve(tcp).await;
            drop(registered);
            drop(slot);
        });
    }
    quiet_for_good.cancel();
    drop(listener);
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// A slot for a connection accepted at the cap: the connection idle longest is asked to close, and
/// its slot is taken once it has. While every connection has a request in progress, looks again
/// every [`LOOK_FOR_ROOM_EVERY`] for one that has finished.
async fn make_room(slots: &Arc<Semaphore>, open: &OpenConnections) -> OwnedSemaphorePermit {
    let mut victim: Option<Arc<Clock>> = None;
    loop {
        // One eviction at a time: a second one only when the first was refused (its connection
        // started a request before it saw the request to close).
        if !victim.as_ref().is_some_and(|clock| clock.eviction_pending()) {
            victim = open.evict_one();
        }
        tokio::select! {
            slot = Arc::clone(slots).acquire_owned() => match slot {
                Ok(slot) => return slot,
                // The semaphore is never closed; wait for shutdown instead of spinning.
                Err(_) => std::future::pending::<()>().await,
            },
            () = tokio::time::sleep(LOOK_FOR_ROOM_EVERY) => {}
        }
    }
}

/// What one accepted connection's task needs.
struct OpenConnection<A> {
    http: hyper::server::conn::http1::Builder,
    handler: Handler<A>,
    clock: Arc<Clock>,
    limits: ConnectionLimits,
    closing: tokio_util::sync::CancellationToken,
    activity: Arc<Activity>,
}

/// How a spell of serving ended.
enum Served {
    /// Idle long enough to give hyper's buffers back; the socket waits for the next request.
    Parked(Watched),
    Closed,
}

impl<A: App> OpenConnection<A> {
    async fn serve(self, tcp: TcpStream) {
        let mut socket = Watched {
            inner: tcp,
            clock: Arc::clone(&self.clock),
            batch: WriteBatch::default(),
            unread: Bytes::new(),
            ours: Bytes::new(),
        };
        loop {
            // Boxed: hyper's connection state lives only while serving, not in the task of a parked
            // connection.
            match Box::pin(self.serve_until_parked(socket)).await {
                Served::Parked(parked) => socket = parked,
                Served::Closed => break,
            }
            self.activity.connection_released();
            if socket.unread.is_empty() && !self.wait_for_next_request(&socket).await {
                break;
            }
        }
        self.activity.connection_released();
    }

    /// Serves requests until the connection ends, a limit closes it, or it has been idle for
    /// `park_after`.
    async fn serve_until_parked(&self, socket: Watched) -> Served {
        let mut conn = self
            .http
            .serve_connection(TokioIo::new(socket), self.handler.clone());
        let mut ending: Option<Ending> = None;
        let mut may_park = self.limits.park_after < self.limits.idle_timeout;
        loop {
            tokio::select! {
                result = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended with an error");
                        return Served::Closed;
                    }
                    break;
                }
                () = self.closing.cancelled(), if ending.is_none() => {
                    Pin::new(&mut conn).graceful_shutdown();
                    ending = Some(Ending::Close);
                }
                limit = self.clock.broken(&self.limits, may_park), if ending.is_none() => {
                    match limit {
                        Limit::Park if self.clock.unsent.load(Ordering::Acquire) => {
                            // The client has not taken all of its last answer; hyper still holds it.
                            may_park = false;
                        }
                        Limit::Park => {
                            Pin::new(&mut conn).graceful_shutdown();
                            ending = Some(Ending::Park);
                        }
                        Limit::Idle | Limit::HeadTooSlow | Limit::Evicted => return Served::Closed,
                    }
                }
            }
        }
        let parts = conn.into_parts();
        let mut socket = parts.io.into_inner();
        if matches!(ending, Some(Ending::Park)) {
            // A copy: hyper's leftover is a view of its whole read buffer, which it would keep alive.
            socket.unread = Bytes::copy_from_slice(&parts.read_buf);
            return Served::Parked(socket);
        }
        // The client asked to close, or the server is shutting down: end the stream cleanly.
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut socket.inner).await;
        Served::Closed
    }

    /// Whether a parked connection has something to read again (a request, or the client closing,
    /// which the next spell of serving sees) before a limit or shutdown ends it.
    async fn wait_for_next_request(&self, socket: &Watched) -> bool {
        tokio::select! {
            ready = socket.inner.readable() => ready.is_ok(),
            () = self.closing.cancelled() => false,
            _ = self.clock.broken(&self.limits, false) => false,
        }
    }
}

#[derive(Clone, Copy)]
enum Ending {
    Park,
    Close,
}

/// The app behind one connection, marking each request busy until its response body ends.
#[derive(Clone)]
struct Handler<A> {
    app: A,
    clock: Arc<Clock>,
    activity: Arc<Activity>,
}

impl<A: App> hyper::service::Service<Request<Incoming>> for Handler<A> {
    type Response = Response;
    type Error = Infallible;
    // Boxed so the connection can be polled by reference and taken apart when it parks.
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let busy = Busy::start(Arc::clone(&self.clock), Arc::clone(&self.activity));
        let app = self.app.clone();
        Box::pin(async move {
            let Ok(res) = app.oneshot(req.map(Body::new)).await;
            Ok(res.map(|body| hold_until_body_ends(body, busy)))
        })
    }
}

/// The socket, reporting reads to the connection's clock and batching a response's later writes.
struct Watched {
    inner: TcpStream,
    clock: Arc<Clock>,
    batch: WriteBatch,
    /// Bytes hyper had read but not parsed when the connection parked; read again first.
    unread: Bytes,
    /// Our answer to a request hyper could not parse, still to be written in place of its own.
    ours: Bytes,
}

impl Watched {
    /// Writes what is left of [`Watched::ours`].
    fn write_ours(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while !self.ours.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.ours) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    let _ = self.ours.split_to(n);
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Takes hyper's canned answer to a request it could not parse (`first` is what it offers
    /// first) and writes ours instead; `None` for every other write.
    fn instead_of_canned(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
    ) -> Option<Poll<std::io::Result<usize>>> {
        if !self.ours.is_empty() {
            return match self.write_ours(cx) {
                Poll::Ready(Ok(())) => None,
                Poll::Ready(Err(error)) => Some(Poll::Ready(Err(error))),
                Poll::Pending => Some(Poll::Pending),
            };
        }
        if !self.clock.is_idle() {
            return None;
        }
        self.ours = protocol_error::replacement(first)?;
        // hyper is told its bytes are written; the rest of ours goes out with its flush.
        if let Poll::Ready(Err(error)) = self.write_ours(cx) {
            return Some(Poll::Ready(Err(error)));
        }
        Some(Poll::Ready(Ok(first.len())))
    }

    /// `write` unless the batching says to wait a scheduler turn; hyper keeps the bytes meanwhile and
    /// offers them again, with whatever the body produced in between.
    fn write_batched(
        &mut self,
        cx: &mut Context<'_>,
        offered: usize,
        write: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<std::io::Result<usize>>,
    ) -> Poll<std::io::Result<usize>> {
        if self.batch.should_wait(offered, std::time::Instant::now()) {
            wake_once_idle(cx);
            return Poll::Pending;
        }
        let result = write(Pin::new(&mut self.inner), cx);
        let unsent = match result {
            Poll::Ready(Ok(written)) if written >= offered => false,
            Poll::Ready(Err(_)) => false,
            _ => {
                self.batch.next_at_once();
                true
            }
        };
        self.clock.unsent.store(unsent, Ordering::Release);
        result
    }
}

/// Has the connection polled again once its worker has run the tasks that are ready and read the
/// sockets that have bytes (tokio's own yield). A plain wake would put it at the back of the run
/// queue and wake an idle worker to take it: a thread woken, and the connection moved to it, for
/// every frame a stream holds back.
fn wake_once_idle(cx: &mut Context<'_>) {
    let mut yielded = std::pin::pin!(tokio::task::yield_now());
    // Its first poll hands the waker to the scheduler and is always pending.
    let _ = yielded.as_mut().poll(cx);
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = if this.unread.is_empty() {
            Pin::new(&mut this.inner).poll_read(cx, buf)
        } else {
            // What a parked connection's hyper had read counts as arriving now, like any other bytes.
            let n = this.unread.len().min(buf.remaining());
            buf.put_slice(&this.unread.split_to(n));
            Poll::Ready(Ok(()))
        };
        if buf.filled().len() > before {
            this.clock.bytes_read();
            this.batch.request_read();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Some(written) = this.instead_of_canned(cx, buf) {
            return written;
        }
        this.write_batched(cx, buf.len(), |io, cx| io.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.write_ours(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.write_ours(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Some(written) = bufs
            .iter()
            .find(|buf| !buf.is_empty())
            .and_then(|first| this.instead_of_canned(cx, first))
        {
            return written;
        }
        let offered = bufs.iter().map(|buf| buf.len()).sum();
        this.write_batched(cx, offered, |io, cx| io.poll_write_vectored(cx, bufs))
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
