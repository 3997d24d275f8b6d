//! The zero-delay upstream of load runs: an OpenAI-compatible `chat/completions` endpoint on
//! loopback that answers every request with the same prepared bytes.
//!
//! The tests' scripted upstream can pause, cut and fail on cue, and pays for it with a router and a
//! JSON parse per request. Here the answer is fixed, so the upstream's cost per request is reading
//! the request and one write, and what a run measures is the gateway rather than its upstream.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The largest request accepted (head and body); the gateway's requests are a few KiB.
const MAX_REQUEST: usize = 4 * 1024 * 1024;

/// A running upstream; it stops when this is dropped.
pub struct BenchUpstream {
    addr: SocketAddr,
    calls: Arc<AtomicUsize>,
    server: JoinHandle<()>,
}

/// The two prepared answers, whole responses with their heads.
struct Answers {
    stream: Bytes,
    json: Bytes,
    /// The answers are only the start of a stream, which then stays open until the client leaves.
    hold: bool,
    /// Streams are sent event by event on this schedule instead of as `stream`.
    paced: Option<PacedStream>,
}

/// How a model paces its stream: the first event after `first`, then one every `every`, each event
/// in its own chunked frame (and its own write), as a provider flushes tokens as they come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pacing {
    pub first: Duration,
    pub every: Duration,
}

struct PacedStream {
    head: Bytes,
    /// One SSE event per frame, already framed; the last is followed by the terminating chunk.
    frames: Vec<Bytes>,
    pacing: Pacing,
}

impl BenchUpstream {
    /// Binds a free loopback port. `sse` answers requests that ask for a stream, `completion` the
    /// others.
    pub async fn start(sse: &[u8], completion: &[u8]) -> std::io::Result<Self> {
        Self::serve_answers(Answers {
            stream: response("text/event-stream", sse, true),
            json: response("application/json", completion, false),
            hold: false,
            paced: None,
        })
        .await
    }

    /// Like [`BenchUpstream::start`], but a stream goes out one SSE event per chunked frame on the
    /// schedule of `pacing` (with zero delays, still one frame and one write per event).
    pub async fn start_paced(sse: &[u8], completion: &[u8], pacing: Pacing) -> std::io::Result<Self> {
        let frames = sse_events(sse)
            .map(|event| {
                let mut frame = format!("{:x}\r\n", event.len()).into_bytes();
                frame.extend_from_slice(event);
                frame.extend_from_slice(b"\r\n");
                Bytes::from(frame)
            })
            .collect();
        let head = Bytes::from_static(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        Self::serve_answers(Answers {
            stream: response("text/event-stream", sse, true),
            json: response("application/json", completion, false),
            hold: false,
            paced: Some(PacedStream { head, frames, pacing }),
        })
        .await
    }

    /// An upstream that starts every answer with `first` (SSE events) and then says nothing more,
    /// as a model that is still thinking: the turns it serves stay in flight until their clients
    /// leave.
    pub async fn start_holding(first: &[u8]) -> std::io::Result<Self> {
        let mut head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n",
            first.len()
        )
        .into_bytes();
        head.extend_from_slice(first);
        head.extend_from_slice(b"\r\n");
        let head = Bytes::from(head);
        Self::serve_answers(Answers {
            stream: head.clone(),
            json: head,
            hold: true,
            paced: None,
        })
        .await
    }

    async fn serve_answers(answers: Answers) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let answers = Arc::new(answers);
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, Arc::clone(&answers), Arc::clone(&counter)));
            }
        });
        Ok(Self { addr, calls, server })
    }

    /// The base URL a provider config uses (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests answered so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

impl Drop for BenchUpstream {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A whole `200` response. A chunked one carries the body as one chunk and the terminating chunk,
/// the way a provider that has the whole answer at once frames its stream.
fn response(content_type: &str, body: &[u8], chunked: bool) -> Bytes {
    let framing = if chunked {
        format!(
            "cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n",
            body.len()
        )
    } else {
        format!("content-length: {}\r\n\r\n", body.len())
    };
    let mut out = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n{framing}").into_bytes();
    out.extend_from_slice(body);
    if chunked {
        out.extend_from_slice(b"\r\n0\r\n\r\n");
    }
    Bytes::from(out)
}

const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 38\r\n\r\n{\"error\":{\"message\":\"no such route\"}}";
const BAD_REQUEST: &[u8] = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/// Answers the requests of one connection until the client closes it.
async fn serve(mut stream: TcpStream, answers: Arc<Answers>, calls: Arc<AtomicUsize>) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    loop {
        let Some((head_len, body_len, is_post)) = read_head(&mut stream, &mut buf).await else {
            return;
        };
        let Some(end) = head_len.checked_add(body_len).filter(|end| *end <= MAX_REQUEST) else {
            let _ = stream.write_all(BAD_REQUEST).await;
            return;
        };
        while buf.len() < end {
            if read_more(&mut stream, &mut buf).await.is_none() {
                return;
            }
        }
        let wants_stream = is_post && asks_for_stream(&buf[head_len..end]);
        let answer: &[u8] = if !is_post {
            NOT_FOUND
        } else if wants_stream {
            &answers.stream
        } else {
            &answers.json
        };
        calls.fetch_add(1, Ordering::Relaxed);
        let sent = match &answers.paced {
            Some(paced) if wants_stream => send_paced(&mut stream, paced).await,
            _ => stream.write_all(answer).await,
        };
        if sent.is_err() {
            return;
        }
        if answers.hold {
            // Nothing more is sent; the connection ends when the client closes it.
            let mut rest = [0u8; 1024];
            while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
            return;
        }
        // Pipelined bytes of the next request stay in the buffer.
        buf.drain(..end);
    }
}

async fn send_paced(stream: &mut TcpStream, paced: &PacedStream) -> std::io::Result<()> {
    stream.write_all(&paced.head).await?;
    for (n, frame) in paced.frames.iter().enumerate() {
        let wait = if n == 0 {
            paced.pacing.first
        } else {
            paced.pacing.every
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        stream.write_all(frame).await?;
    }
    stream.write_all(b"0\r\n\r\n").await
}

/// The events of an SSE body, each with the blank line that ends it.
fn sse_events(sse: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = sse;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .windows(2)
            .position(|w| w == b"\n\n")
            .map_or(rest.len(), |at| at + 2);
        let (event, tail) = rest.split_at(end);
        rest = tail;
        Some(event)
    })
}

/// Reads until a whole request head is in `buf`: its length, the body's length and whether it is
/// a `POST`. `None` when the connection ends or the head is unusable (then it is closed).
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(usize, usize, bool)> {
    loop {
        if !buf.is_empty() {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut request = httparse::Request::new(&mut headers);
            match request.parse(buf) {
                Ok(httparse::Status::Complete(head_len)) => {
                    let body_len = request
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                        .unwrap_or(0);
                    return Some((head_len, body_len, request.method == Some("POST")));
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_REQUEST => {}
                _ => {
                    let _ = stream.write_all(BAD_REQUEST).await;
                    return None;
                }
            }
        }
        read_more(stream, buf).await?;
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    buf.reserve(16 * 1024);
    match stream.read_buf(buf).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(()),
    }
}

/// Whether a chat-completions body sets `"stream": true`. A byte search, not a parse: the upstream
/// must stay cheap, and the bodies it sees come from the gateway and the driver.
fn asks_for_stream(body: &[u8]) -> bool {
    memchr::memmem::find(body, b"\"stream\":true").is_some()
        || memchr::memmem::find(body, b"\"stream\": true").is_some()
}

#[cfg(test)]
mod tests {
    use super::asks_for_stream;

    #[test]
    fn the_stream_flag_is_found_in_compact_and_spaced_json() {
        assert!(asks_for_stream(br#"{"model":"m","stream":true,"messages":[]}"#));
        assert!(asks_for_stream(br#"{"stream": true}"#));
        assert!(!asks_for_stream(br#"{"stream":false,"messages":[]}"#));
        assert!(!asks_for_stream(br#"{"messages":[]}"#));
    }
}
