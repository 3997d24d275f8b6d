//! The interface between the turn engine and a model: upstream messages in, a stream of events out.

use std::pin::Pin;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One upstream chat message (OpenAI wire shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: plain text, or parts (text and images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl UserContent {
    /// The text as one string: parts joined by `separator`, each image standing as `image` (or left
    /// out when `None`), for readers that take text only.
    pub fn joined_text(&self, separator: &str, image: Option<&str>) -> String {
        match self {
            UserContent::Text(text) => text.clone(),
            UserContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } => image,
                })
                .collect::<Vec<_>>()
                .join(separator),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    pub url: String,
}

/// A complete tool call as the model made it. `arguments` is the raw JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// Shared with the tool's spec rather than copied per request.
    pub parameters: std::sync::Arc<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    Auto,
    None,
    Required,
}

/// One request to a model. `extra` is merged into the upstream body last (profile provider options,
/// unknown fields a client passed through the OpenAI facade).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolDefinition>,
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f64>,
    pub parallel_tool_calls: Option<bool>,
    pub reasoning_effort: Option<String>,
    /// The client's limit on the tokens this request may produce. Each provider writes it in its
    /// own field and keeps within any limit it is configured with.
    pub max_output_tokens: Option<u64>,
    /// Ask for the answer in one piece rather than streamed, for a caller that shows nothing
    /// before the end (a facade client that asked for one JSON answer): the provider writes one
    /// body and the gateway reads one, instead of a frame per token. Providers without a reading
    /// of whole answers (Anthropic's) stream as usual.
    pub whole_answer: bool,
    pub extra: Map<String, Value>,
    /// Where the prompt stops being the same from one request to the next. Providers that cache
    /// only where they are told (Anthropic) place their breakpoints from it; the OpenAI-compatible
    /// wire has no such field, so those providers send exactly what they sent without it.
    pub cache: CacheHints,
}

/// The stable prefixes of a request, for providers with explicit prompt caching.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// Length in bytes of the leading part of the first system message that does not change
    /// between sends (the stable half of the prompt); what follows it carries the clock.
    pub stable_system_len: Option<usize>,
    /// Index in `messages` of the last message before the newest user turn: everything up to it
    /// was already sent on an earlier send of the conversation.
    pub conversation_prefix_end: Option<usize>,
}

/// What a model stream yields, already normalised across provider quirks.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The first fragment of a tool call; `index` groups the later argument fragments.
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a tool call's JSON arguments, verbatim.
    ToolCallArgumentsDelta {
        index: usize,
        fragment: String,
    },
    /// Token counts; a later value replaces an earlier one.
    Usage(Usage),
    /// The model finished this step. The stream ends after it.
    Finished(FinishReason),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Prompt tokens read from the provider's prompt cache (part of `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Prompt tokens written to the provider's prompt cache by this request (part of
    /// `prompt_tokens`); only providers with explicit caching report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    /// Parses OpenAI's `finish_reason` (`function_call` counts as tool calls).
    pub fn from_openai(s: &str) -> Self {
        match s {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("could not connect to the model provider: {0}")]
    Connect(String),
    #[error("the model provider answered {status}: {message}")]
    Status { status: u16, message: String },
    /// The provider refused the request because the prompt does not fit the model's context
    /// window (OpenAI's `context_length_exceeded`, Anthropic's `prompt is too long`, ...).
    #[error("the prompt is longer than the model's context window: {0}")]
    ContextTooLong(String),
    #[error("the model provider did not respond within {seconds} s ({phase})")]
    Timeout { phase: TimeoutPhase, seconds: u64 },
    #[error("the model provider sent an unreadable stream: {0}")]
    Protocol(String),
    #[error("the request was cancelled")]
    Cancelled,
}

impl LlmError {
    /// The wait a refusing provider asked for (`retry-after`), when it gave one.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Status { message, .. } => crate::provider_error::retry_after_of(message),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    Connect,
    FirstByte,
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "connect",
            Self::FirstByte => "first byte",
            Self::Idle => "idle gap",
        })
    }
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A model the turn engine can stream from. Dropping the returned stream cancels the request.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError>;

    /// The API flavour this model speaks, as the GenAI semantic conventions name providers
    /// (`gen_ai.provider.name`): an OpenAI-compatible upstream is `openai` whoever runs it.
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    /// Asks for an answer whole when a request says so ([`ChatRequest::whole_answer`]); a model
    /// that does not streams it anyway.
    fn answers_whole(&self) -> bool {
        false
    }
}

/// The whole text of a model's answer, for the side requests that read it at once (a summary, a
/// citation review) rather than stream it to anyone: asked for whole where the model can.
pub async fn answer_text(model: &dyn ChatModel, request: ChatRequest) -> Result<String, LlmError> {
    use futures::StreamExt;
    let request = ChatRequest {
        whole_answer: true,
        ..request
    };
    let mut stream = model.stream(request).await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::TextDelta(delta) = event? {
            text.push_str(&delta);
        }
    }
    Ok(text)
}
