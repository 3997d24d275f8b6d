//! What every provider client shares whatever its wire format: the checked endpoint URL, the
//! provider's headers, the route requests take ([`Route`]), the request with its deadlines, refusals
//! turned into [`LlmError::Status`], and the upstream metrics.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::connection::{Http1Client, ResponseBody, Route, SendError};
use crate::provider_error;
use crate::transport::timeout;
use crate::{EventStream, LlmError, TimeoutPhase};

/// Largest error body read from a provider that answered with a failure status.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The longest wait for the body of an error response.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(10);

/// The environment's proxy variables for a scheme, in the order curl reads them.
const HTTPS_PROXY_VARIABLES: [&str; 4] = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"];
const HTTP_PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// The proxy the environment names for `base_url`'s scheme, if any.
pub(crate) fn environment_proxy(base_url: &str) -> Option<String> {
    let variables = if base_url.trim_start().starts_with("https://") {
        HTTPS_PROXY_VARIABLES
    } else {
        HTTP_PROXY_VARIABLES
    };
    variables
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
}

/// How long to wait for each phase of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP and TLS).
    pub connect: Duration,
    /// From sending the request until the response headers and the first event of the body
    /// (keep-alive comments do not count as an event).
    pub first_byte: Duration,
    /// The longest silence allowed between two pieces of the body once it started.
    pub idle: Duration,
    /// From sending a request for a whole answer ([`crate::ChatRequest::whole_answer`]) until
    /// its first byte: the provider says nothing while the model writes, so this is the time the
    /// whole answer may take. As long as OpenAI's own clients wait.
    pub whole_answer: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(60),
            whole_answer: Duration::from_secs(600),
        }
    }
}

/// How a provider wants its API key.
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and the servers that copy it).
    Bearer,
    /// The key alone in a header of its own (`x-api-key` at Anthropic).
    Plain(&'static str),
}

/// What an [`Endpoint`] is built from.
pub(crate) struct EndpointConfig<'a> {
    pub name: &'a str,
    pub base_url: &'a str,
    /// Appended to the base URL after a `/`.
    pub path: &'a str,
    pub api_key: Option<&'a str>,
    pub key_header: KeyHeader,
    /// Headers the wire format needs on every request (an API version).
    pub fixed_headers: &'a [(&'static str, &'static str)],
    /// Headers from the operator's config.
    pub extra_headers: &'a [(String, String)],
    /// An HTTP proxy to reach the endpoint through.
    pub proxy: Option<&'a str>,
    pub timeouts: Timeouts,
}

/// One provider's endpoint, ready to post request bodies to.
pub(crate) struct Endpoint {
    pub name: String,
    pub url: String,
    /// Every request's headers: the wire format's, the operator's, the key and `Host`.
    headers: HeaderMap,
    api_key: Option<String>,
    pub timeouts: Timeouts,
    route: Route,
}

/// A provider's response, its body read as it streams.
pub(crate) type Response = http::Response<ResponseBody>;

impl Endpoint {
    /// Checks the configuration and builds the HTTP client.
    pub fn new(config: EndpointConfig<'_>) -> Result<Self, LlmError> {
        let invalid = |what: &str| LlmError::Connect(format!("provider `{}`: {what}", config.name));
        let base = config.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(invalid("the base URL must start with http:// or https://"));
        }
        let url = format!("{base}/{}", config.path);
        // Parsed once here rather than on every request.
        let parsed_url = url::Url::parse(&url).map_err(|e| invalid(&format!("invalid base URL: {e}")))?;

        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        for (name, value) in config.fixed_headers {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        for (name, value) in config.extra_headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| invalid(&format!("invalid header `{name}`")))?;
            // Operators put secrets in headers too (Azure's `api-key`); they stay out of logs.
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|_| invalid(&format!("invalid header `{name}`")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if let Some(key) = config.api_key.filter(|k| !k.is_empty()) {
            let (name, text) = match config.key_header {
                KeyHeader::Bearer => (AUTHORIZATION, format!("Bearer {key}")),
                KeyHeader::Plain(name) => (HeaderName::from_static(name), key.to_owned()),
            };
            let mut value = HeaderValue::try_from(text)
                .map_err(|_| invalid("the API key is not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }

        let host = HeaderValue::try_from(Http1Client::authority(&parsed_url))
            .map_err(|_| invalid("the base URL's host is not a valid header value"))?;
        headers.insert(HOST, host);
        let tls = match parsed_url.scheme() {
            "https" => Some(
                promptgate_outbound::platform_tls_config()
                    .map_err(|e| invalid(&format!("no TLS root certificates: {e}")))?,
            ),
            _ => None,
        };
        let route =
            Route::new(&parsed_url, tls, config.timeouts.connect, config.proxy).map_err(|e| invalid(&e))?;
        Ok(Self {
            name: config.name.to_owned(),
            url,
            headers,
            api_key: config.api_key.map(str::to_owned),
            timeouts: config.timeouts,
            route,
        })
    }

    /// The wait for a request's first byte: a whole answer's first byte comes when it is written.
    pub fn first_byte_limit(&self, whole_answer: bool) -> Duration {
        if whole_answer {
            self.timeouts.whole_answer
        } else {
            self.timeouts.first_byte
        }
    }

    /// Posts a request body. Returns the successful response and the first-byte deadline, which
    /// the body's first event shares; a refusal becomes [`LlmError::Status`] with the provider's
    /// message (key removed) and the wait it asked for.
    pub async fn post(&self, body: Vec<u8>, whole_answer: bool) -> Result<(Response, Instant), LlmError> {
        let first_byte_limit = self.first_byte_limit(whole_answer);
        let first_byte_deadline = Instant::now() + first_byte_limit;
        let pending = self.route.send(&self.headers, body);
        let response = match tokio::time::timeout_at(first_byte_deadline, pending).await {
            Err(_) => return Err(timeout(TimeoutPhase::FirstByte, first_byte_limit)),
            Ok(Err(e)) => return Err(self.send_error(e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        // A redirect is a refusal too, never followed: following turns a POST into a bodiless GET
        // (301, 302) or re-sends the prompt, key included, to wherever the answer points.
        if !status.is_success() {
            // The headers may have come just before the deadline; the body gets its own short wait.
            let body_deadline = Instant::now() + self.timeouts.idle.min(ERROR_BODY_WAIT);
            let retry_after = provider_error::retry_after(response.headers());
            let body = read_bounded(response, body_deadline).await;
            let message = provider_error::message_from_body(&body);
            tracing::warn!(provider = %self.name, status = status.as_u16(), "the model provider refused the request");
            let json = serde_json::from_slice::<serde_json::Value>(&body).ok();
            return Err(provider_error::refusal(
                status.as_u16(),
                json.as_ref(),
                provider_error::with_retry_after(
                    provider_error::sanitise(&message, self.api_key.as_deref()),
                    retry_after,
                ),
            ));
        }
        Ok((response, first_byte_deadline))
    }

    fn send_error(&self, error: SendError) -> LlmError {
        match error {
            SendError::ConnectTimeout => timeout(TimeoutPhase::Connect, self.timeouts.connect),
            error => LlmError::Connect(format!("provider `{}`: {error}", self.name)),
        }
    }

    /// Runs one request with its metrics: the request counted, the time to its first event
    /// recorded (for a streamed answer: a whole one has no first token to time), and any error it
    /// fails with or its stream ends with counted by kind.
    pub async fn observed(
        &self,
        whole_answer: bool,
        request: impl Future<Output = Result<EventStream, LlmError>>,
    ) -> Result<EventStream, LlmError> {
        let started = std::time::Instant::now();
        let provider = self.name.clone();
        metrics::counter!("promptgate_upstream_requests_total", "provider" => provider.clone()).increment(1);
        match request.await {
            Ok(stream) => Ok(metered(provider, (!whole_answer).then_some(started), stream)),
            Err(err) => {
                count_upstream_error(&provider, &err);
                Err(err)
            }
        }
    }
}

/// Upstream failures by provider and kind (`connect`, `timeout_first_byte`, `status_5xx`, ...).
fn count_upstream_error(provider: &str, err: &LlmError) {
    let kind = match err {
        LlmError::Cancelled => return,
        LlmError::Connect(_) => "connect".to_owned(),
        LlmError::Status { status, .. } => format!("status_{}xx", status / 100),
        LlmError::ContextTooLong(_) => "context_too_long".to_owned(),
        LlmError::Timeout { phase, .. } => match phase {
            TimeoutPhase::Connect => "timeout_connect".to_owned(),
            TimeoutPhase::FirstByte => "timeout_first_byte".to_owned(),
            TimeoutPhase::Idle => "timeout_idle".to_owned(),
        },
        LlmError::Protocol(_) => "protocol".to_owned(),
    };
    metrics::counter!("promptgate_upstream_errors_total", "provider" => provider.to_owned(), "kind" => kind)
        .increment(1);
}

/// Records the time from `started` to the first event (the first token, or the first tool-call
/// fragment) and any error the stream ends with.
fn metered(provider: String, started: Option<std::time::Instant>, stream: EventStream) -> EventStream {
    let mut first = started;
    Box::pin(stream.map(move |item| {
        match &item {
            Ok(_) => {
                if let Some(started) = first.take() {
                    metrics::histogram!("promptgate_upstream_time_to_first_token_seconds", "provider" => provider.clone())
                        .record(started.elapsed().as_secs_f64());
                }
            }
            Err(err) => count_upstream_error(&provider, err),
        }
        item
    }))
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of an error response, giving up at the deadline.
async fn read_bounded(response: Response, deadline: Instant) -> Vec<u8> {
    let mut response = response.into_body();
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout_at(deadline, response.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    body
}

/// An error with its causes, which is where hyper keeps the useful part.
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
