//! The driver's HTTP/1.1 client: keep-alive connections to one address, each request written as
//! ready-made bytes, each answer read only as far as timing it and checking its end needs.
//!
//! The driver shares the machine with the server it measures, so every microsecond it spends is
//! one the server does not get. A general-purpose client (header maps, a pool keyed by origin,
//! redirect and proxy handling) cost about as much CPU per request as the upstream and the gateway
//! together; this one does the least that still reads every answer to its end.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::chunked::ChunkedDecoder;

/// Bytes read per `read` call; an answer in these runs fits in one or two.
const READ_BUFFER: usize = 16 * 1024;
/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// How many bytes at the end of a body are kept, for the end-of-stream check and error texts.
pub const TAIL_BYTES: usize = 256;

/// An answer, timed from the moment its request was handed to the client.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The first body byte; the end of the head for an empty body.
    pub first_byte: Duration,
    pub total: Duration,
    /// From the same moment to when the body's last bytes reached this machine's kernel: `total`
    /// without the driver's own wait to run the task that reads them (see `stamped`). None when the
    /// kernel gave no stamp.
    pub wire_total: Option<Duration>,
    /// The last [`TAIL_BYTES`] of the body.
    pub tail: Vec<u8>,
}

/// Keep-alive connections to one server.
#[derive(Debug)]
pub struct WireClient {
    addr: SocketAddr,
    idle: Mutex<Vec<TcpStream>>,
}

/// How the end of a response body is found.
enum Framing {
    Length(usize),
    Chunked(ChunkedDecoder),
    /// Neither a length nor chunked: the body ends when the server closes the connection.
    UntilClose,
}

impl WireClient {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A `POST` of a JSON `body` to `path`, as the bytes that go on the wire.
    pub fn post_json(&self, path: &str, body: &[u8]) -> Vec<u8> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: */*\r\ncontent-length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let mut request = Vec::with_capacity(head.len() + body.len());
        request.extend_from_slice(head.as_bytes());
        request.extend_from_slice(body);
        request
    }

    /// Sends `request` (whole HTTP/1.1 request bytes) and reads the answer to its end, on a kept
    /// connection when one is free. A failure is never retried: the server may have acted on the
    /// request (a send creates a thread), and the run must count what really happened.
    pub async fn send(&self, request: &[u8], begun: Instant) -> Result<Answer, String> {
        let begun_wall = SystemTime::now();
        let stream = match self.take_idle() {
            Some(stream) => stream,
            None => {
                let stream = TcpStream::connect(self.addr)
                    .await
                    .map_err(|e| format!("cannot connect to {}: {e}", self.addr))?;
                stream
                    .set_nodelay(true)
                    .map_err(|e| format!("TCP_NODELAY: {e}"))?;
                super::stamped::enable(&stream).map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
                stream
            }
        };
        self.exchange(stream, request, begun, begun_wall).await
    }

    fn take_idle(&self) -> Option<TcpStream> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
    }

    fn keep(&self, stream: TcpStream) {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(stream);
    }

    async fn exchange(
        &self,
        mut stream: TcpStream,
        request: &[u8],
        begun: Instant,
        begun_wall: SystemTime,
    ) -> Result<Answer, String> {
        if let Err(e) = stream.write_all(request).await {
            return Err(format!("sending the request: {e}"));
        }
        let mut buf = vec![0u8; READ_BUFFER];
        let mut filled = 0;
        let mut arrived: Option<SystemTime> = None;
        // The head: read until httparse finds its end.
        let (status, mut framing, keep_alive, head_len) = loop {
            if filled == buf.len() {
                if buf.len() >= MAX_HEAD {
                    return Err(failed("the response head is too large"));
                }
                buf.resize(buf.len() * 2, 0);
            }
            let n = match super::stamped::read(&stream, &mut buf[filled..]).await {
                Ok((0, _)) if filled == 0 => {
                    return Err(failed("the server closed the connection without answering"));
                }
                Ok((0, _)) => return Err(failed("the connection closed inside the response head")),
                Err(e) => return Err(failed(&format!("reading the response: {e}"))),
                Ok((n, at)) => {
                    arrived = at.or(arrived);
                    n
                }
            };
            filled += n;
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&buf[..filled]) {
                Ok(httparse::Status::Partial) => continue,
                Err(e) => return Err(failed(&format!("malformed response head: {e}"))),
                Ok(httparse::Status::Complete(len)) => {
                    let status = response.code.unwrap_or(0);
                    let (framing, keep_alive) = framing_of(response.headers, response.version == Some(1))?;
                    break (status, framing, keep_alive, len);
                }
            }
        };

        let mut body = Body {
            first_byte: None,
            tail: Vec::with_capacity(TAIL_BYTES * 2),
        };
        let head_done = begun.elapsed();
        let mut done = body.take(&mut framing, &buf[head_len..filled], begun)?;
        while !done {
            let n = match super::stamped::read(&stream, &mut buf).await {
                Ok((0, _)) if matches!(framing, Framing::UntilClose) => break,
                Ok((0, _)) => return Err(failed("the connection closed before the body ended")),
                Err(e) => return Err(failed(&format!("reading the body: {e}"))),
                Ok((n, at)) => {
                    arrived = at.or(arrived);
                    n
                }
            };
            done = body.take(&mut framing, &buf[..n], begun)?;
        }
        let total = begun.elapsed();
        if keep_alive && !matches!(framing, Framing::UntilClose) {
            self.keep(stream);
        }
        Ok(Answer {
            status,
            first_byte: body.first_byte.unwrap_or(head_done),
            total,
            wire_total: arrived.and_then(|at| at.duration_since(begun_wall).ok()),
            tail: body.tail,
        })
    }
}

fn failed(message: &str) -> String {
    message.to_owned()
}

/// The body framing and whether the connection may be reused, from the response headers.
fn framing_of(headers: &[httparse::Header<'_>], http11: bool) -> Result<(Framing, bool), String> {
    let mut framing = Framing::UntilClose;
    let mut keep_alive = http11;
    for header in headers {
        let value = std::str::from_utf8(header.value).unwrap_or_default().trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let length = value
                .parse()
                .map_err(|_| failed(&format!("bad content-length {value:?}")))?;
            if !matches!(framing, Framing::Chunked(_)) {
                framing = Framing::Length(length);
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if value.to_ascii_lowercase().ends_with("chunked") {
                framing = Framing::Chunked(ChunkedDecoder::default());
            }
        } else if header.name.eq_ignore_ascii_case("connection") {
            keep_alive =
                !value.eq_ignore_ascii_case("close") && (http11 || value.eq_ignore_ascii_case("keep-alive"));
        }
    }
    Ok((framing, keep_alive))
}

/// What is kept of a body while it streams past.
struct Body {
    first_byte: Option<Duration>,
    tail: Vec<u8>,
}

impl Body {
    /// Takes the next bytes of the body; true once the body is complete.
    fn take(&mut self, framing: &mut Framing, bytes: &[u8], begun: Instant) -> Result<bool, String> {
        let mut data = |piece: &[u8]| {
            if piece.is_empty() {
                return;
            }
            if self.first_byte.is_none() {
                self.first_byte = Some(begun.elapsed());
            }
            self.tail.extend_from_slice(piece);
            if self.tail.len() > TAIL_BYTES * 2 {
                self.tail.drain(..self.tail.len() - TAIL_BYTES);
            }
        };
        let done = match framing {
            Framing::Length(left) => {
                let take = (*left).min(bytes.len());
                data(&bytes[..take]);
                *left -= take;
                *left == 0
            }
            Framing::Chunked(decoder) => {
                decoder.feed(bytes, data)?;
                decoder.is_done()
            }
            Framing::UntilClose => {
                data(bytes);
                false
            }
        };
        if done && self.tail.len() > TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        Ok(done)
    }
}

/// Opens `count` connections to `addr`, sends `request(n)` on each, and returns them once each
/// answer has started (its head and first body bytes read): requests the server is in the middle
/// of answering. Dropping the streams ends them.
pub async fn hold_open(
    addr: SocketAddr,
    count: usize,
    request: impl Fn(usize) -> Vec<u8>,
) -> Result<Vec<TcpStream>, String> {
    let mut held = Vec::with_capacity(count);
    for n in 0..count {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        stream
            .write_all(&request(n))
            .await
            .map_err(|e| format!("sending request {n}: {e}"))?;
        held.push(stream);
    }
    for (n, stream) in held.iter_mut().enumerate() {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // The head, then at least one byte past it.
        loop {
            let read = tokio::time::timeout(Duration::from_secs(15), stream.read(&mut buf))
                .await
                .map_err(|_| format!("answer {n} did not start within 15 s"))?
                .map_err(|e| format!("reading answer {n}: {e}"))?;
            if read == 0 {
                return Err(format!(
                    "answer {n} ended before it started: {}",
                    String::from_utf8_lossy(&seen)
                ));
            }
            seen.extend_from_slice(&buf[..read]);
            let head_end = memchr::memmem::find(&seen, b"\r\n\r\n");
            if head_end.is_some_and(|end| seen.len() > end + 4) {
                if !seen.starts_with(b"HTTP/1.1 200") {
                    return Err(format!("answer {n}: {}", String::from_utf8_lossy(&seen)));
                }
                break;
            }
        }
    }
    Ok(held)
}
