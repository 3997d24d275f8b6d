//! The request discipline every Google and Microsoft API call shares: bearer token with one
//! refresh-and-retry on 401, one polite retry on 429/503 when the wait is short, bounded bodies,
//! and error messages that name the service but never carry a token.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::AccessTokens;
use promptgate_core::tools::ToolError;

pub(crate) const TOKEN_RESPONSE_LIMIT: usize = 64 * 1024;
/// Gmail `format=full` messages with inline HTML can be large; beyond this we refuse.
pub(crate) const JSON_RESPONSE_LIMIT: usize = 8 * 1024 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `Retry-After` we are willing to sit out inside a tool call.
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);

/// A response that was neither a 401 nor a rate limit we could wait out.
#[derive(Debug)]
pub(crate) struct ApiReply {
    pub status: StatusCode,
    pub content_type: Option<String>,
    pub body: Bytes,
    /// The body stopped at the caller's limit.
    pub clipped: bool,
}

impl ApiReply {
    /// The JSON body of a successful reply, or an error naming `service` and the provider's reason.
    pub fn json(&self, service: &str) -> Result<Value, ToolError> {
        if !self.status.is_success() {
            return Err(status_error(service, self.status, &self.body));
        }
        if self.clipped {
            return Err(ToolError::Failed(format!(
                "{service} sent a response too large to process"
            )));
        }
        serde_json::from_slice(&self.body)
            .map_err(|_| ToolError::Failed(format!("{service} answered with a body that is not valid JSON")))
    }
}

/// Sends the request `build` makes for a bearer token, applying the shared retry rules.
/// Reads at most `body_limit` bytes of the body (`clipped` tells when there was more).
pub(crate) async fn send_authorized<F>(
    tokens: &AccessTokens,
    service: &str,
    body_limit: usize,
    build: F,
) -> Result<ApiReply, ToolError>
where
    F: Fn(&str) -> reqwest::RequestBuilder,
{
    let mut waited = false;
    loop {
        let response = tokens
            .with_token(|token| {
                let request = build(&token).timeout(REQUEST_TIMEOUT);
                async move {
                    request
                        .send()
                        .await
                        .map_err(|err| request_failed(service, "API", err))
                }
            })
            .await?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED {
            let name = tokens.provider_name();
            return Err(ToolError::Unauthorized(format!(
                "{service} rejected the {name} authorization even after renewing it; reconnect {name}"
            )));
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
            let wait = retry_after(&response);
            match wait {
                Some(wait) if !waited && wait <= MAX_RETRY_WAIT => {
                    tracing::debug!(
                        service,
                        status = status.as_u16(),
                        wait_secs = wait.as_secs(),
                        "waiting before retry"
                    );
                    waited = true;
                    tokio::time::sleep(wait).await;
                    continue;
                }
                _ => return Err(busy_error(service, status, wait)),
            }
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let (body, clipped) = read_up_to(response, body_limit, service).await?;
        return Ok(ApiReply {
            status,
            content_type,
            body,
            clipped,
        });
    }
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    // Only the delta-seconds form; an HTTP date is rare from these APIs and treated as "long".
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

fn busy_error(service: &str, status: StatusCode, wait: Option<Duration>) -> ToolError {
    let what = if status == StatusCode::TOO_MANY_REQUESTS {
        "is rate limiting requests"
    } else {
        "is temporarily unavailable"
    };
    match wait {
        Some(wait) => ToolError::Failed(format!("{service} {what}; try again in {} s", wait.as_secs())),
        None => ToolError::Failed(format!("{service} {what}; try again later")),
    }
}

/// A clear message for a non-success status, with the provider's own reason when it gave one
/// (Google and Graph both use `{"error": {"message": …}}`; OAuth-style bodies use a string).
pub(crate) fn status_error(service: &str, status: StatusCode, body: &[u8]) -> ToolError {
    let reason = serde_json::from_slice::<Value>(body).ok().and_then(|json| {
        let error = json.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(|text| text.chars().take(300).collect::<String>())
    });
    let what = match status.as_u16() {
        400 => "rejected the request as invalid",
        403 => "denied access",
        404 => "could not find what was asked for",
        500..=599 => "had an internal problem",
        _ => "answered with an error",
    };
    let code = status.as_u16();
    match reason {
        Some(reason) if !reason.is_empty() => {
            ToolError::Failed(format!("{service} {what} (HTTP {code}): {reason}"))
        }
        _ => ToolError::Failed(format!("{service} {what} (HTTP {code})")),
    }
}

/// Transport failures, with the URL stripped: query strings can carry user search terms.
pub(crate) fn request_failed(service: &str, what: &str, err: reqwest::Error) -> ToolError {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    // reqwest's own message is generic ("error sending request"); the cause chain says what broke.
    let err = err.without_url();
    let mut detail = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    ToolError::Failed(format!("the {service} {what} request {kind}: {detail}"))
}

/// The whole body, or an error when it exceeds `limit`.
pub(crate) async fn read_bounded(
    response: reqwest::Response,
    limit: usize,
    service: &str,
) -> Result<Bytes, ToolError> {
    let (body, clipped) = read_up_to(response, limit, service).await?;
    if clipped {
        return Err(ToolError::Failed(format!(
            "{service} sent a response too large to process"
        )));
    }
    Ok(body)
}

async fn read_up_to(
    response: reqwest::Response,
    limit: usize,
    service: &str,
) -> Result<(Bytes, bool), ToolError> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| request_failed(service, "response", err))?;
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((Bytes::from(body), true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((Bytes::from(body), false))
}

/// `base` + path segments (each percent-encoded, so an id can never climb the path) + query.
pub(crate) fn api_url(base: &str, segments: &[&str], query: &[(&str, &str)]) -> Result<url::Url, ToolError> {
    let mut url = url::Url::parse(base).map_err(|err| {
        ToolError::Failed(format!(
            "the configured API base URL {base:?} is not valid: {err}"
        ))
    })?;
    url.path_segments_mut()
        .map_err(|()| ToolError::Failed(format!("the configured API base URL {base:?} cannot take a path")))?
        .pop_if_empty()
        .extend(segments);
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    Ok(url)
}

/// A string field of provider JSON, empty when absent: the APIs omit empty fields.
pub(crate) fn str_field<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// An array field of provider JSON, empty when absent.
pub(crate) fn array_field<'a>(value: &'a Value, name: &str) -> &'a [Value] {
    value
        .get(name)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}
