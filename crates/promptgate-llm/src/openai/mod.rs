//! The streaming client for OpenAI-compatible chat-completions servers.

mod body;
mod non_streamed;
mod transport;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{FutureExt, Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::parser::{ChunkParser, ParserOptions, in_stream_error};
use crate::provider_error;
use crate::{ChatModel, ChatRequest, EventStream, LlmError, StreamEvent, TimeoutPhase};
use transport::{BodyError, timed_body, timeout};

/// Largest error body read from a provider that answered with a failure status.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The longest wait for the body of an error response.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(10);
/// How long the rest of a body is read after `[DONE]`, so its connection can be reused.
const DRAIN_AFTER_DONE: Duration = Duration::from_secs(2);

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
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        }
    }
}

/// One OpenAI-compatible provider.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Used in logs.
    pub name: String,
    /// Requests go to `{base_url}/chat/completions`, so the base URL includes the version path
    /// when the provider has one (`https://api.openai.com/v1`). A trailing `/` is ignored.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when present.
    pub api_key: Option<String>,
    /// Sent with every request, e.g. `HTTP-Referer` for OpenRouter or `api-key` for Azure.
    pub extra_headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
}

impl ProviderConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            api_key: None,
            extra_headers: Vec::new(),
            timeouts: Timeouts::default(),
        }
    }
}

/// Hides the API key and header values, which may hold secrets too.
impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("extra_headers", &header_names)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// A [`ChatModel`] backed by an OpenAI-compatible `/chat/completions` endpoint. Cloning is cheap
/// and clones share one connection pool, so one client per provider serves all its models.
#[derive(Clone)]
pub struct OpenAiCompatible {
    inner: Arc<Inner>,
    parser: ParserOptions,
}

struct Inner {
    name: String,
    url: String,
    parsed_url: reqwest::Url,
    api_key: Option<String>,
    timeouts: Timeouts,
    http: reqwest::Client,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("name", &self.inner.name)
            .field("url", &self.inner.url)
            .field("parser", &self.parser)
            .finish()
    }
}

impl OpenAiCompatible {
    /// Checks the configuration and builds the HTTP client.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        // reqwest is built without a default TLS crypto provider and would panic without one.
        // Installing fails harmlessly when the process already chose a provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = config.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Connect(format!(
                "provider `{}`: the base URL must start with http:// or https://",
                config.name
            )));
        }
        let url = format!("{base}/chat/completions");
        // Parsed once here rather than on every request.
        let parsed_url = reqwest::Url::parse(&url)
            .map_err(|e| LlmError::Connect(format!("provider `{}`: invalid base URL: {e}", config.name)))?;

        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        for (name, value) in &config.extra_headers {
            let invalid =
                || LlmError::Connect(format!("provider `{}`: invalid header `{name}`", config.name));
            let name = HeaderName::try_from(name.as_str()).map_err(|_| invalid())?;
            let mut value = HeaderValue::try_from(value.as_str()).map_err(|_| invalid())?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| {
                LlmError::Connect(format!(
                    "provider `{}`: the API key is not a valid header value",
                    config.name
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }

        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(config.timeouts.connect)
            // A redirect is reported, not followed: following turns a POST into a bodiless GET
            // (301, 302) or re-sends the prompt, key included, to wherever the answer points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| LlmError::Connect(format!("could not build the HTTP client: {}", describe(&e))))?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: config.name,
                url,
                parsed_url,
                api_key: config.api_key,
                timeouts: config.timeouts,
                http,
            }),
            parser: ParserOptions::default(),
        })
    }

    /// The same provider, reading a model's output with these options (think tags).
    pub fn with_parser_options(mut self, options: ParserOptions) -> Self {
        self.parser = options;
        self
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    async fn send(&self, request: &ChatRequest) -> Result<(reqwest::Response, Instant), LlmError> {
        let inner = &self.inner;
        let body = body::request_body(request)?;
        let first_byte_deadline = Instant::now() + inner.timeouts.first_byte;
        let pending = inner.http.post(inner.parsed_url.clone()).body(body).send();
        let response = match tokio::time::timeout_at(first_byte_deadline, pending).await {
            Err(_) => return Err(timeout(TimeoutPhase::FirstByte, inner.timeouts.first_byte)),
            Ok(Err(e)) => return Err(self.send_error(e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            // The headers may have come just before the deadline; the body gets its own short wait.
            let body_deadline = Instant::now() + inner.timeouts.idle.min(ERROR_BODY_WAIT);
            let body = read_bounded(response, body_deadline).await;
            let message = provider_error::message_from_body(&body);
            tracing::warn!(provider = %inner.name, status = status.as_u16(), "the model provider refused the request");
            return Err(LlmError::Status {
                status: status.as_u16(),
                message: provider_error::sanitise(&message, inner.api_key.as_deref()),
            });
        }
        Ok((response, first_byte_deadline))
    }

    fn send_error(&self, error: reqwest::Error) -> LlmError {
        let timeouts = self.inner.timeouts;
        if error.is_connect() && error.is_timeout() {
            timeout(TimeoutPhase::Connect, timeouts.connect)
        } else if error.is_timeout() {
            timeout(TimeoutPhase::FirstByte, timeouts.first_byte)
        } else {
            LlmError::Connect(format!(
                "provider `{}`: {}",
                self.inner.name,
                describe(&error.without_url())
            ))
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for OpenAiCompatible {
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let started = std::time::Instant::now();
        let provider = self.inner.name.clone();
        metrics::counter!("promptgate_upstream_requests_total", "provider" => provider.clone()).increment(1);
        match self.stream_unmetered(request).await {
            Ok(stream) => Ok(metered(provider, started, stream)),
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

/// Records the time to the first event (the first token, or the first tool-call fragment) and any
/// error the stream ends with.
fn metered(provider: String, started: std::time::Instant, stream: EventStream) -> EventStream {
    let mut first = true;
    Box::pin(stream.map(move |item| {
        match &item {
            Ok(_) if first => {
                first = false;
                metrics::histogram!("promptgate_upstream_time_to_first_token_seconds", "provider" => provider.clone())
                    .record(started.elapsed().as_secs_f64());
            }
            Ok(_) => {}
            Err(err) => count_upstream_error(&provider, err),
        }
        item
    }))
}

impl OpenAiCompatible {
    async fn stream_unmetered(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let (response, first_byte_deadline) = self.send(&request).await?;
        let timeouts = self.inner.timeouts;
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|kind| kind.starts_with("application/json"));
        let body = timed_body(response, first_byte_deadline, timeouts.first_byte, timeouts.idle);
        if is_json {
            let events = non_streamed::read(body, ChunkParser::new(self.parser)).await?;
            return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))));
        }
        let sse = Box::pin(body).eventsource();
        let reader = Reader {
            sse: Some(sse),
            first_event_deadline: Some((first_byte_deadline, timeouts.first_byte)),
            parser: ChunkParser::new(self.parser),
            ready: VecDeque::new(),
            closed: false,
        };
        Ok(Box::pin(reader.into_stream()))
    }
}

/// Drives the parser from the SSE events. Dropping it drops the response body, which closes the
/// connection: that is how a cancelled turn stops the upstream request.
struct Reader<S> {
    sse: Option<S>,
    /// Until the first event arrives, the wait is bounded by the first-byte deadline.
    first_event_deadline: Option<(Instant, Duration)>,
    parser: ChunkParser,
    ready: VecDeque<StreamEvent>,
    closed: bool,
}

impl<S> Reader<S>
where
    S: Stream<Item = Result<Event, EventStreamError<BodyError>>> + Send + Unpin + 'static,
{
    fn into_stream(self) -> impl Stream<Item = Result<StreamEvent, LlmError>> + Send {
        futures::stream::unfold(self, |mut reader| async move {
            let item = reader.next_event().await?;
            Some((item, reader))
        })
    }

    async fn next_event(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.closed {
                return None;
            }
            if self.parser.is_done() {
                self.release_connection();
                return self.end();
            }
            let Some(sse) = self.sse.as_mut() else {
                return self.end();
            };
            let next = match self.first_event_deadline {
                Some((deadline, limit)) => match tokio::time::timeout_at(deadline, sse.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.closed = true;
                        return Some(Err(timeout(TimeoutPhase::FirstByte, limit)));
                    }
                },
                None => sse.next().await,
            };
            self.first_event_deadline = None;
            let pushed = match next {
                None => return self.end(),
                Some(Err(e)) => Err(stream_error(e)),
                Some(Ok(event)) if event.event == "error" => Err(error_event(&event.data)),
                Some(Ok(event)) => self.parser.push(&event.data),
            };
            match pushed {
                Ok(events) => self.ready.extend(events),
                Err(e) => {
                    self.closed = true;
                    return Some(Err(e));
                }
            }
        }
    }

    /// After `[DONE]` only the end of the body is left. Reading it hands the connection back to
    /// the pool instead of closing it. What has already arrived is read now, so the next request
    /// can reuse the connection; anything still on its way is read in the background, so the
    /// caller is never held up.
    fn release_connection(&mut self) {
        let Some(mut sse) = self.sse.take() else {
            return;
        };
        loop {
            match sse.next().now_or_never() {
                Some(Some(_)) => continue,
                Some(None) => return,
                None => break,
            }
        }
        tokio::spawn(async move {
            let drain = async { while sse.next().await.is_some() {} };
            let _ = tokio::time::timeout(DRAIN_AFTER_DONE, drain).await;
        });
    }

    fn end(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        self.closed = true;
        match self.parser.finish() {
            Ok(events) => {
                self.ready.extend(events);
                self.ready.pop_front().map(Ok)
            }
            Err(e) => Some(Err(e)),
        }
    }
}

fn stream_error(error: EventStreamError<BodyError>) -> LlmError {
    match error {
        EventStreamError::Transport(e) => e.into(),
        EventStreamError::Utf8(_) => LlmError::Protocol("the stream is not valid UTF-8".to_owned()),
        EventStreamError::Parser(e) => LlmError::Protocol(format!("malformed server-sent event: {e}")),
    }
}

/// An SSE `event: error`, which some servers use instead of an `{"error":…}` chunk.
fn error_event(data: &str) -> LlmError {
    match serde_json::from_str::<serde_json::Value>(data) {
        Ok(value) => in_stream_error(&value),
        Err(_) => LlmError::Status {
            status: 502,
            message: provider_error::sanitise(data.trim(), None),
        },
    }
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of an error response, giving up at the deadline.
async fn read_bounded(mut response: reqwest::Response, deadline: Instant) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    body
}

/// An error with its causes, which is where reqwest keeps the useful part.
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
