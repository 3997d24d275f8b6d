//! The streaming client for Anthropic's Messages API (`{base_url}/messages`): text, tool use and
//! thinking, with prompt-cache breakpoints placed from the request's [`crate::CacheHints`].

mod body;
mod events;
mod thinking;

use std::sync::Arc;

use crate::sse::SseEvent;

use crate::endpoint::{Endpoint, EndpointConfig, KeyHeader};
use crate::sse::event_stream;
use crate::{ChatModel, ChatRequest, EventStream, LlmError, ProviderConfig, StreamEvent};
use body::BodyOptions;
use events::MessageEvents;
use thinking::ThinkingMemory;

/// The API version every request names; the wire format read here is this version's.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Where Anthropic serves the Messages API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The answer's length limit when the provider config sets none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// How a model's reasoning setting (`low`, `medium`, `high`) turns into Anthropic's thinking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ThinkingMode {
    /// `thinking: {type: "adaptive"}` with the setting as `output_config.effort` (current models).
    #[default]
    Adaptive,
    /// `thinking: {type: "enabled", budget_tokens}` with a budget per level (older models).
    Budget,
}

/// One Anthropic provider: where it is and how to reach it, as for any provider (requests go to
/// `{base_url}/messages`; the key is sent as `x-api-key`), and what the Messages API asks for on
/// top. Its `Debug` output hides the key and header values.
#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    pub provider: ProviderConfig,
    /// `max_tokens` of every request unless a model's provider options set it.
    pub max_tokens: u64,
    pub thinking: ThinkingMode,
}

impl AnthropicConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            provider: ProviderConfig::new(name, base_url),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking: ThinkingMode::default(),
        }
    }
}

/// A [`ChatModel`] backed by Anthropic's Messages API. Clones share one connection pool and one
/// memory of thinking blocks, so one client per provider serves all its models.
#[derive(Clone)]
pub struct Anthropic {
    endpoint: Arc<Endpoint>,
    options: Arc<Options>,
}

struct Options {
    max_tokens: u64,
    thinking: ThinkingMode,
    memory: ThinkingMemory,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("name", &self.endpoint.name)
            .field("url", &self.endpoint.url)
            .finish()
    }
}

impl Anthropic {
    /// Checks the configuration and builds the HTTP client.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let provider = &config.provider;
        let endpoint = Endpoint::new(EndpointConfig {
            name: &provider.name,
            base_url: &provider.base_url,
            path: "messages",
            api_key: provider.api_key.as_deref(),
            key_header: KeyHeader::Plain("x-api-key"),
            fixed_headers: &[("anthropic-version", ANTHROPIC_VERSION)],
            extra_headers: &provider.extra_headers,
            proxy: provider.proxy.as_deref(),
            timeouts: provider.timeouts,
        })?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            options: Arc::new(Options {
                max_tokens: config.max_tokens.max(1),
                thinking: config.thinking,
                memory: ThinkingMemory::default(),
            }),
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    async fn stream_unmetered(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let body = body::request_body(
            &request,
            &BodyOptions {
                max_tokens: self.options.max_tokens,
                thinking: self.options.thinking,
                memory: &self.options.memory,
            },
        )?;
        let (response, first_byte_deadline) = self.endpoint.post(body, false).await?;
        let parser = Remembering {
            events: MessageEvents::new(),
            options: Arc::clone(&self.options),
        };
        Ok(event_stream(
            response,
            first_byte_deadline,
            self.endpoint.timeouts,
            parser,
        ))
    }
}

#[async_trait::async_trait]
impl ChatModel for Anthropic {
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        self.endpoint
            .observed(false, self.stream_unmetered(request))
            .await
    }

    fn provider_name(&self) -> &'static str {
        "anthropic"
    }
}

/// Reads the answer's events and, once it is whole, keeps its thinking for the next step of the
/// tool loop.
struct Remembering {
    events: MessageEvents,
    options: Arc<Options>,
}

impl crate::sse::EventParser for Remembering {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        out.extend(self.events.push(&event.event, &event.data)?);
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.events.is_done()
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        let events = self.events.finish()?;
        // Only a complete answer's thinking is worth sending back: a cut one would be refused.
        if let Some(kept) = self.events.take_thinking() {
            self.options.memory.remember(kept);
        }
        Ok(events)
    }
}
