//! The floor under a refusal: a server that answers every request with a fixed `503` (and
//! `/readyz` with `200`) and does nothing else, on one of three stacks ([`RefuserStack`]):
//!
//! - `epoll`: one thread, the kernel's readiness queue, one read and one write a request over
//!   keep-alive connections, no runtime and no HTTP stack beyond finding where a request ends.
//!   What it spends per request is what the kernel spends to take a request in and send an answer
//!   out on this machine.
//! - `tokio`: the same reads and writes from a task per connection on the gateway's runtime (as
//!   the gateway builds it): what the runtime adds to the kernel's part.
//! - `hyper`: the gateway's own accept loop and connection handling (hyper, axum's router) with a
//!   handler that answers the prepared refusal: what the HTTP stack adds on top.
//!
//! promptgate's refusal (the gate, its headers) comes on top of the last. Past saturation that sum
//! sets how much of a core the refusals take from the answers (docs/benchmarks.md, "Past
//! saturation").

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

/// About the size of promptgate's own refusal, headers and body.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\ncontent-length: 155\r\n\r\n\
{\"error\":{\"code\":\"overloaded\",\"message\":\"The server runs as many turns as it may; try again shortly.\",\
\"request_id\":\"00000000-0000-0000-0000-000000000000\"}}";
const READY: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nready";
/// The listener's key in the readiness queue; connections count up from 1.
const LISTENER: u64 = 0;
/// Where a connection's unread requests wait; a request larger than this closes its connection.
const BUFFER: usize = 64 * 1024;

struct Connection {
    stream: TcpStream,
    pending: Vec<u8>,
}

/// Which stack answers the refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RefuserStack {
    Epoll,
    Tokio,
    Hyper,
}

impl RefuserStack {
    /// The stack's name on the command line.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map_or_else(String::new, |value| value.get_name().to_owned())
    }
}

/// Serves on `listen` with `stack` until the process is killed.
pub async fn serve(listen: &str, stack: RefuserStack) -> anyhow::Result<()> {
    match stack {
        RefuserStack::Epoll => serve_epoll(listen),
        RefuserStack::Tokio => serve_tokio(listen).await,
        RefuserStack::Hyper => serve_hyper(listen).await,
    }
}

/// Serves on `listen` until the process is killed. Blocks its thread.
fn serve_epoll(listen: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let epoll = Epoll::new(EpollCreateFlags::empty())?;
    epoll.add(listener.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))?;
    let mut connections: HashMap<u64, Connection> = HashMap::new();
    let mut next_key = LISTENER + 1;
    let mut events = vec![EpollEvent::empty(); 256];
    let mut scratch = vec![0u8; BUFFER];
    loop {
        let ready = epoll.wait(&mut events, EpollTimeout::NONE)?;
        for event in &events[..ready] {
            let key = event.data();
            if key == LISTENER {
                while let Ok((stream, _)) = listener.accept() {
                    stream.set_nonblocking(true)?;
                    stream.set_nodelay(true)?;
                    epoll.add(stream.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, next_key))?;
                    connections.insert(
                        next_key,
                        Connection {
                            stream,
                            pending: Vec::new(),
                        },
                    );
                    next_key += 1;
                }
                continue;
            }
            let open = connections
                .get_mut(&key)
                .is_some_and(|connection| connection.answer_what_arrived(&mut scratch));
            if !open && let Some(connection) = connections.remove(&key) {
                let _ = epoll.delete(connection.stream.as_fd());
            }
        }
    }
}

impl Connection {
    /// Reads what arrived and answers every whole request in it; false once the connection is
    /// closed or broken.
    fn answer_what_arrived(&mut self, scratch: &mut [u8]) -> bool {
        let read = match self.stream.read(scratch) {
            Ok(0) => return false,
            Ok(read) => read,
            Err(err) if err.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        };
        self.pending.extend_from_slice(&scratch[..read]);
        while let Some((length, ready)) = whole_request(&self.pending) {
            let answer = if ready { READY } else { REFUSAL };
            // One short answer into an empty socket buffer: a write that would block means the
            // client stopped reading, and the connection is dropped.
            if self.stream.write_all(answer).is_err() {
                return false;
            }
            self.pending.drain(..length);
        }
        self.pending.len() < BUFFER
    }
}

/// A task per connection on the runtime the caller runs in, each answering what arrives with one
/// read and one write, as [`serve_epoll`] does on its one thread.
async fn serve_tokio(listen: &str) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind(listen).await?;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            let mut pending = Vec::new();
            let mut scratch = vec![0u8; BUFFER];
            while let Ok(read) = stream.read(&mut scratch).await
                && read > 0
                && pending.len() < BUFFER
            {
                pending.extend_from_slice(&scratch[..read]);
                while let Some((length, ready)) = whole_request(&pending) {
                    let answer = if ready { READY } else { REFUSAL };
                    if stream.write_all(answer).await.is_err() {
                        return;
                    }
                    pending.drain(..length);
                }
            }
        });
    }
}

/// The gateway's accept loop and connection handling with its default limits, and a router that
/// answers every request but `/readyz` with the refusal's status, headers and body.
async fn serve_hyper(listen: &str) -> anyhow::Result<()> {
    use axum::http::{HeaderValue, StatusCode, header};
    use promptgate_server::config::ServerConfig;
    use promptgate_server::listen::{ConnectionLimits, serve_connections};

    let text = std::str::from_utf8(REFUSAL)?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let refusal = move || async move {
        let mut response = axum::response::Response::new(axum::body::Body::from(body));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        response
    };
    let app = axum::Router::new()
        .route("/readyz", axum::routing::get(|| async { "ready" }))
        .fallback(refusal);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let limits = ConnectionLimits::from_config(&ServerConfig::default());
    serve_connections(listener, app, limits, std::future::pending()).await?;
    Ok(())
}

/// The length of the first request in `bytes` when it has arrived whole, and whether it asks for
/// readiness.
fn whole_request(bytes: &[u8]) -> Option<(usize, bool)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(head) = request.parse(bytes).ok()? else {
        return None;
    };
    let body = request
        .headers
        .iter()
        .find(|header| header.name.eq_ignore_ascii_case("content-length"))
        .and_then(|header| {
            std::str::from_utf8(header.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    let length = head + body;
    (bytes.len() >= length).then_some((length, request.path == Some("/readyz")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_says_its_length_right() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{text}"
        );
    }

    #[test]
    fn a_request_is_whole_once_its_body_has_arrived() {
        let request = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 4\r\n\r\n{}{}GET /readyz HTTP/1.1\r\n\r\n";
        let first = request.windows(3).position(|w| w == b"GET").unwrap();
        assert_eq!(whole_request(&request[..first - 1]), None);
        assert_eq!(whole_request(request), Some((first, false)));
        assert_eq!(
            whole_request(&request[first..]),
            Some((request.len() - first, true))
        );
    }
}
