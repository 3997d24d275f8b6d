//! The streaming client for OpenAI-compatible chat-completions servers.

mod body;
mod non_streamed;

use std::sync::Arc;

use crate::sse::SseEvent;
use http::header::CONTENT_TYPE;

use crate::endpoint::{Endpoint, EndpointConfig, KeyHeader};
use crate::parser::{ChunkParser, ParserOptions, in_stream_error};
use crate::provider_error;
use crate::sse::{EventParser, event_stream};
use crate::transport::timed_body;
use crate::{ChatModel, ChatRequest, EventStream, LlmError, StreamEvent, Timeouts};

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
    /// OpenAI-compatible providers: a request that asks for its answer whole
    /// ([`ChatRequest::whole_answer`]) gets `stream: false`. Off for a server that answers only
    /// streams (some refuse `stream: false` for their reasoning models): every answer is streamed.
    pub whole_answers: bool,
    /// An HTTP proxy (`http://host:port`, credentials in the URL if it needs them) to reach the
    /// provider through. [`ProviderConfig::new`] takes the environment's: `HTTPS_PROXY` for an https
    /// base URL, `HTTP_PROXY` for http, else `ALL_PROXY`, hosts in `NO_PROXY` reached directly.
    pub proxy: Option<String>,
}

impl ProviderConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into();
        Self {
            name: name.into(),
            proxy: crate::endpoint::environment_proxy(&base_url),
            base_url,
            api_key: None,
            extra_headers: Vec::new(),
            timeouts: Timeouts::default(),
            whole_answers: true,
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
            .field("whole_answers", &self.whole_answers)
            // A proxy's URL may carry its password.
            .field("proxy", &self.proxy.as_ref().map(|_| "[set]"))
            .finish()
    }
}

/// A [`ChatModel`] backed by an OpenAI-compatible `/chat/completions` endpoint. Cloning is cheap
/// and clones share one connection pool, so one client per provider serves all its models.
#[derive(Clone)]
pub struct OpenAiCompatible {
    endpoint: Arc<Endpoint>,
    parser: ParserOptions,
    whole_answers: bool,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("name", &self.endpoint.name)
            .field("url", &self.endpoint.url)
            .field("parser", &self.parser)
            .finish()
    }
}

impl OpenAiCompatible {
    /// Checks the configuration and builds the HTTP client.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let endpoint = Endpoint::new(EndpointConfig {
            name: &config.name,
            base_url: &config.base_url,
            path: "chat/completions",
            api_key: config.api_key.as_deref(),
            key_header: KeyHeader::Bearer,
            fixed_headers: &[],
            extra_headers: &config.extra_headers,
            proxy: config.proxy.as_deref(),
            timeouts: config.timeouts,
        })?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            parser: ParserOptions::default(),
            whole_answers: config.whole_answers,
        })
    }

    /// The same provider, reading a model's output with these options (think tags).
    pub fn with_parser_options(mut self, options: ParserOptions) -> Self {
        self.parser = options;
        self
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

#[async_trait::async_trait]
impl ChatModel for OpenAiCompatible {
    async fn stream(&self, mut request: ChatRequest) -> Result<EventStream, LlmError> {
        request.whole_answer &= self.whole_answers;
        let whole_answer = request.whole_answer;
        self.endpoint
            .observed(whole_answer, self.stream_unmetered(request))
            .await
    }

    fn answers_whole(&self) -> bool {
        self.whole_answers
    }
}

impl OpenAiCompatible {
    async fn stream_unmetered(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let body = body::request_body(&request)?;
        let whole_answer = request.whole_answer;
        let (response, first_byte_deadline) = self.endpoint.post(body, whole_answer).await?;
        // The first byte's limit is the one `post` waited for, whichever way the answer comes.
        let timeouts = Timeouts {
            first_byte: self.endpoint.first_byte_limit(whole_answer),
            ..self.endpoint.timeouts
        };
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|kind| kind.starts_with("application/json"));
        if is_json {
            let body = timed_body(response, first_byte_deadline, timeouts.first_byte, timeouts.idle);
            let events = non_streamed::read(body, ChunkParser::new(self.parser)).await?;
            return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))));
        }
        Ok(event_stream(
            response,
            first_byte_deadline,
            timeouts,
            Chunks(ChunkParser::new(self.parser)),
        ))
    }
}

/// The chat-completions reading of the events: `data:` chunks until `[DONE]`.
struct Chunks(ChunkParser);

impl EventParser for Chunks {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if event.event == "error" {
            return Err(error_event(&event.data));
        }
        self.0.push_onto(&event.data, out)
    }

    fn is_done(&self) -> bool {
        self.0.is_done()
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        self.0.finish()
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
