//! The model provider's HTTP/1.1 connections, each driven by the task that reads its response.
//!
//! A general-purpose client runs every connection in a task of its own and passes each piece of a
//! body to the reader through a channel: a streamed token wakes two tasks, often on two runtime
//! workers, and putting workers to sleep and waking them cost more than the token's own work. Here
//! the reader polls the connection itself ([`driver`]), so a piece that arrives wakes one task,
//! the one that reads it. Connections are kept for the next request once their body was read to
//! the end; one whose response is dropped part-way is closed, which is how the provider learns
//! that a turn was cancelled.
//!
//! HTTP/1.1 only, over TCP or TLS (ALPN offers nothing else); redirects are the caller's to refuse.

mod driver;
mod route;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::poll_fn;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

pub(crate) use driver::DrivenBody;
use driver::{Driver, Sender};
pub(crate) use route::{ResponseBody, Route};

/// What a connection runs over.
pub(crate) type Io = Either<TcpStream, TlsStream<TcpStream>>;

/// Connections kept for reuse at most; more would only hold sockets a provider closes anyway.
const MAX_IDLE: usize = 256;
/// How long a connection is kept unused. Providers close idle connections too, most after a minute
/// or more; one they closed first is noticed when it is taken, before the request goes out.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    #[error("connecting timed out")]
    ConnectTimeout,
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("{}", crate::endpoint::describe(.0))]
    Http(#[from] hyper::Error),
    /// Through a proxy, which reqwest speaks.
    #[error("{0}")]
    Proxied(String),
}

impl SendError {
    fn from_reqwest(error: reqwest::Error) -> Self {
        if error.is_connect() && error.is_timeout() {
            Self::ConnectTimeout
        } else {
            Self::Proxied(crate::endpoint::describe(&error.without_url()))
        }
    }
}

/// The destination's TLS side: what is offered and the name the certificate must carry.
struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

/// One destination's connections (a scheme, host and port).
pub(crate) struct Http1Client {
    host: String,
    port: u16,
    tls: Option<Tls>,
    connect_timeout: Duration,
    idle: Mutex<Vec<Idle>>,
}

struct Idle {
    sender: Sender,
    driver: Driver,
    since: Instant,
}

impl Http1Client {
    /// A client for `url`'s scheme, host and port. `tls` is needed for `https`; ALPN is set to
    /// HTTP/1.1 whatever it offered.
    pub fn new(
        url: &url::Url,
        tls: Option<rustls::ClientConfig>,
        connect_timeout: Duration,
    ) -> Result<Self, String> {
        let (host, ip) = match url.host() {
            Some(url::Host::Domain(name)) => (name.to_owned(), None),
            Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
            None => return Err("the URL names no host".to_owned()),
        };
        let port = url.port_or_known_default().ok_or("the URL names no port")?;
        let tls = match (url.scheme(), tls) {
            ("http", _) => None,
            ("https", Some(mut config)) => {
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                let name = match ip {
                    Some(ip) => ServerName::IpAddress(ip.into()),
                    None => ServerName::try_from(host.clone()).map_err(|e| format!("{host}: {e}"))?,
                };
                Some(Tls {
                    connector: TlsConnector::from(Arc::new(config)),
                    name,
                })
            }
            ("https", None) => return Err("no TLS root certificates to reach an https URL".to_owned()),
            (other, _) => return Err(format!("unsupported scheme `{other}`")),
        };
        Ok(Self {
            host,
            port,
            tls,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Sends `request` on a kept connection or a new one and waits for the response head. The
    /// body then drives the connection as it is read.
    pub async fn send(
        self: &Arc<Self>,
        mut request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<DrivenBody>, SendError> {
        loop {
            let (mut sender, mut driver, fresh) = match self.take_idle() {
                Some(idle) => (idle.sender, idle.driver, false),
                None => {
                    let (sender, driver) = self.connect().await?;
                    (sender, driver, true)
                }
            };
            if let Err(error) = poll_fn(|cx| driver.poll_with(cx, |cx| sender.poll_ready(cx))).await {
                // A kept connection the provider closed meanwhile: try the next.
                if fresh {
                    return Err(error.into());
                }
                continue;
            }
            let mut pending = std::pin::pin!(sender.try_send_request(request));
            match poll_fn(|cx| driver.poll_with(cx, |cx| pending.as_mut().poll(cx))).await {
                Ok(response) => {
                    let client = Arc::clone(self);
                    return Ok(response.map(|incoming| DrivenBody::new(incoming, sender, driver, client)));
                }
                Err(mut error) => match error.take_message() {
                    // Not written to a kept connection that had just closed: safe to send again.
                    Some(unsent) if !fresh => request = unsent,
                    _ => return Err(error.into_error().into()),
                },
            }
        }
    }

    async fn connect(&self) -> Result<(Sender, Driver), SendError> {
        let connecting = async {
            let stream = self.open_tcp().await?;
            let io = match &self.tls {
                None => Either::Left(stream),
                Some(tls) => Either::Right(
                    tls.connector
                        .connect(tls.name.clone(), stream)
                        .await
                        .map_err(|e| SendError::Connect(format!("TLS: {e}")))?,
                ),
            };
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
            Ok((sender, Driver::new(conn)))
        };
        tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| SendError::ConnectTimeout)?
    }

    /// A connection to one of the host's addresses ([`connect_first`]).
    async fn open_tcp(&self) -> Result<TcpStream, SendError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| SendError::Connect(format!("{}: {e}", self.host)))?
            .collect();
        if addrs.is_empty() {
            return Err(SendError::Connect(format!("{}: no address", self.host)));
        }
        let stream = connect_first(addrs).await?;
        // Each request is written whole at once; Nagle would only hold it.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// The most recently used connection still within its idle time.
    fn take_idle(&self) -> Option<Idle> {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        while let Some(connection) = idle.pop() {
            if now.duration_since(connection.since) < IDLE_TIMEOUT {
                return Some(connection);
            }
        }
        None
    }

    /// Keeps a connection whose response was read to the end, for the next request.
    fn give_back(&self, sender: Sender, driver: Driver) {
        if !driver.is_open() || sender.is_closed() {
            return;
        }
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        idle.retain(|connection| now.duration_since(connection.since) < IDLE_TIMEOUT);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                sender,
                driver,
                since: now,
            });
        }
    }

    /// The value of the `Host` header for this destination.
    pub fn authority(url: &url::Url) -> String {
        let host = url.host_str().unwrap_or_default();
        match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }
}

/// How long one connection attempt runs alone before the next address is tried beside it (RFC 8305's
/// connection attempt delay).
const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// `addrs` with the two families taken in turn, starting with the first address's, each family in
/// the resolver's order.
fn interleaved(addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let first_is_v6 = addrs.first().is_some_and(SocketAddr::is_ipv6);
    let count = addrs.len();
    let (mut preferred, mut other): (VecDeque<SocketAddr>, VecDeque<SocketAddr>) =
        addrs.into_iter().partition(|a| a.is_ipv6() == first_is_v6);
    let mut order = Vec::with_capacity(count);
    while !(preferred.is_empty() && other.is_empty()) {
        order.extend(preferred.pop_front());
        order.extend(other.pop_front());
    }
    order
}

/// Connects to the first of `addrs` that answers, the families taken in turn. An address that
/// drops connection attempts (an IPv6 route that goes nowhere is the usual one) holds the next
/// one back by [`ATTEMPT_DELAY`], not by the whole connect timeout; an address that refuses at once
/// hands over at once.
async fn connect_first(addrs: Vec<SocketAddr>) -> Result<TcpStream, SendError> {
    let mut order = interleaved(addrs).into_iter();
    let attempt = |addr: SocketAddr| async move { (addr, TcpStream::connect(addr).await) };
    let mut attempts = futures::stream::FuturesUnordered::new();
    let mut failure = None;
    loop {
        if attempts.is_empty() {
            match order.next() {
                Some(addr) => attempts.push(attempt(addr)),
                None => {
                    return Err(failure.unwrap_or_else(|| SendError::Connect("no address".to_owned())));
                }
            }
        }
        tokio::select! {
            Some((addr, result)) = futures::StreamExt::next(&mut attempts) => match result {
                Ok(stream) => return Ok(stream),
                Err(e) => {
                    failure = Some(SendError::Connect(format!("{addr}: {e}")));
                    if let Some(addr) = order.next() {
                        attempts.push(attempt(addr));
                    }
                }
            },
            () = tokio::time::sleep(ATTEMPT_DELAY), if order.len() > 0 => {
                if let Some(addr) = order.next() {
                    attempts.push(attempt(addr));
                }
            }
        }
    }
}
