//! Which protocol era a server speaks, decided by one short `server/discover` POST of our own.
//!
//! rmcp's `ClientLifecycleMode::Auto` does the same probe but waits up to 10 s for an answer before
//! falling back to `initialize`, which is more than a whole send's discovery budget. Probing
//! ourselves lets us bound the wait by a fraction of the caller's budget, and gives a first contact
//! whose HTTP status we read directly (connection refused, 401, 5xx, a body that is not JSON), so
//! those failures are worded precisely instead of through the transport's error text.

use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use crate::config::McpServerConfig;
use crate::error::{McpError, status_error};

pub(crate) const MODERN_VERSION: &str = "2026-07-28";
/// JSON-RPC code of a modern server rejecting the version we asked for.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// A discover answer is small; anything bigger is not one.
const MAX_PROBE_BODY: usize = 256 * 1024;
const DISCOVER_ANSWER: &str = "the answer to server/discover";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// `2026-07-28`: stateless, no handshake.
    Modern,
    /// `initialize` handshake with a session (`2025-11-25` and before).
    Legacy,
}

/// How much of a connect budget the era probe may use before we assume a legacy server.
pub(crate) fn probe_budget(total: Duration) -> Duration {
    (total / 3).min(Duration::from_secs(1))
}

/// Sends `server/discover` and reads the verdict. `Err` means the server is unusable (unreachable,
/// unauthorized, failing, garbage); an `Ok(Legacy)` on timeout is the caller's decision.
pub(crate) async fn detect(http: &reqwest::Client, config: &McpServerConfig) -> Result<Era, McpError> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "promptgate", "version": env!("CARGO_PKG_VERSION")},
        }},
    });
    let mut request = http
        .post(&config.url)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", MODERN_VERSION)
        .header("mcp-method", "server/discover")
        .body(body.to_string());
    for (name, value) in config.header_map()? {
        request = request.header(name, value);
    }
    if let Some(token) = &config.bearer_token {
        let mut value = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| McpError::InvalidConfig("the bearer token is not a valid header value".into()))?;
        value.set_sensitive(true);
        request = request.header(AUTHORIZATION, value);
    }
    let response = request.send().await.map_err(|e| McpError::from_reqwest(&e))?;
    let status = response.status().as_u16();
    if matches!(status, 401 | 403) || status >= 500 {
        return Err(status_error(status));
    }
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        });
    let message = if is_sse {
        first_sse_message(response).await?
    } else {
        read_json(response).await?
    };
    if (200..300).contains(&status) && message.is_none() {
        return Err(McpError::Protocol(
            "the server answered server/discover with a body that is not JSON".into(),
        ));
    }
    Ok(verdict(message.as_ref()))
}

/// Classifies a parsed answer (or a 4xx without a JSON body) following the spec's dual-era rules.
fn verdict(message: Option<&Value>) -> Era {
    let Some(message) = message else {
        return Era::Legacy;
    };
    if let Some(result) = message.get("result") {
        let speaks_modern = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(MODERN_VERSION)));
        return if speaks_modern { Era::Modern } else { Era::Legacy };
    }
    if let Some(error) = message.get("error")
        && error.get("code").and_then(Value::as_i64) == Some(UNSUPPORTED_PROTOCOL_VERSION)
    {
        let supports_modern = error
            .pointer("/data/supported")
            .and_then(Value::as_array)
            .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(MODERN_VERSION)));
        if supports_modern {
            return Era::Modern;
        }
    }
    Era::Legacy
}

/// The body as JSON, `None` when it is empty or not JSON at all.
async fn read_json(response: reqwest::Response) -> Result<Option<Value>, McpError> {
    let bytes = read_bounded(response, MAX_PROBE_BODY, DISCOVER_ANSWER, |_| false).await?;
    Ok(serde_json::from_slice(&bytes).ok())
}

/// The first JSON-RPC response carried by an SSE body, skipping priming events, comments and
/// notifications.
async fn first_sse_message(response: reqwest::Response) -> Result<Option<Value>, McpError> {
    let mut found = None;
    read_bounded(response, MAX_PROBE_BODY, DISCOVER_ANSWER, |buffer| {
        found = sse_response(buffer);
        found.is_some()
    })
    .await?;
    Ok(found)
}

/// Reads the body up to `max` bytes, stopping early once `done` says enough arrived; `what` names
/// the answer in the error past the bound.
pub(crate) async fn read_bounded(
    response: reqwest::Response,
    max: usize,
    what: &str,
    mut done: impl FnMut(&[u8]) -> bool,
) -> Result<BytesMut, McpError> {
    let mut buffer = BytesMut::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| McpError::from_reqwest(&e))?;
        if buffer.len() + chunk.len() > max {
            return Err(McpError::Protocol(format!("{what} exceeds {max} bytes")));
        }
        buffer.extend_from_slice(&chunk);
        if done(&buffer) {
            break;
        }
    }
    Ok(buffer)
}

fn sse_response(buffer: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(buffer);
    let text = text.replace("\r\n", "\n");
    // Only complete events (terminated by a blank line) are considered.
    let complete = &text[..text.rfind("\n\n")?];
    for event in complete.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&data.join("\n")) else {
            continue;
        };
        if message.get("result").is_some() || message.get("error").is_some() {
            return Some(message);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discover_result_with_the_modern_version_is_modern() {
        let answer =
            json!({"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2025-11-25","2026-07-28"]}});
        assert_eq!(verdict(Some(&answer)), Era::Modern);
        let old_only = json!({"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2025-11-25"]}});
        assert_eq!(verdict(Some(&old_only)), Era::Legacy);
    }

    #[test]
    fn errors_mean_legacy_unless_a_version_rejection_lists_the_modern_version() {
        let not_initialised = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}});
        assert_eq!(verdict(Some(&not_initialised)), Era::Legacy);
        let unknown = json!({"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}});
        assert_eq!(verdict(Some(&unknown)), Era::Legacy);
        let rejection = json!({"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"x","data":{"supported":["2026-07-28"]}}});
        assert_eq!(verdict(Some(&rejection)), Era::Modern);
        let legacy_rejection = json!({"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"x","data":{"supported":["2025-06-18"]}}});
        assert_eq!(verdict(Some(&legacy_rejection)), Era::Legacy);
        assert_eq!(verdict(None), Era::Legacy);
    }

    #[test]
    fn sse_reader_skips_priming_events_and_notifications() {
        let body = "id: 1\ndata:\n\n: comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"supportedVersions\":[\"2026-07-28\"]}}\n\n";
        let message = sse_response(body.as_bytes()).expect("a response");
        assert_eq!(verdict(Some(&message)), Era::Modern);
    }

    #[test]
    fn sse_reader_waits_for_a_complete_event() {
        assert!(sse_response(b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}").is_none());
        assert!(sse_response(b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\r\n\r\n").is_some());
    }

    #[test]
    fn probe_budget_is_a_third_capped_at_one_second() {
        assert_eq!(
            probe_budget(Duration::from_millis(900)),
            Duration::from_millis(300)
        );
        assert_eq!(probe_budget(Duration::from_secs(60)), Duration::from_secs(1));
    }
}
