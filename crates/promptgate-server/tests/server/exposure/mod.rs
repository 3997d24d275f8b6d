//! What reaches the server from the network: Host and Origin checks, CORS, connection limits,
//! per-user limits, strict input, and user isolation over every documented operation.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod connections;
mod hosts_and_origins;
mod isolation;
mod observability;
mod strict_input;
mod user_limits;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response read off a raw socket.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        assert!(
            self.header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "not JSON: {self:?}"
        );
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", self.body))
    }

    /// The error code of a JSON error body.
    pub fn code(&self) -> String {
        crate::common::error_code(&self.json()).to_owned()
    }
}

/// Sends `head` (request line and headers, without the blank line; `Connection: close` is added)
/// and `body` over a fresh connection, and reads the whole answer.
pub async fn raw(addr: SocketAddr, head: &str, body: &[u8]) -> Raw {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("{head}\r\nconnection: close\r\n");
    if !body.is_empty() {
        request.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    // A server that refuses early may close before the whole body is written; its answer counts.
    let _ = tcp.write_all(body).await;
    let mut bytes = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), tcp.read_to_end(&mut bytes))
        .await
        .expect("the server never finished its answer")
        .unwrap();
    parse(&bytes)
}

pub fn parse(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {text:?}"));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Raw {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}
