//! The `Response` object and its output items, as the Responses API's clients read them.
//!
//! The object repeats what the request asked for (its [`Echo`]) around what the turn produced: the
//! output items in order, the status, usage, and why it failed or stopped short.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// What every `Response` object of one request repeats from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    /// `resp_…`
    pub id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// The model as the client knows it.
    pub model: String,
    pub instructions: Option<String>,
    pub metadata: Map<String, Value>,
    pub previous_response_id: Option<String>,
    /// The client's function tools, as it sent them.
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub parallel_tool_calls: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub store: bool,
}

/// Where a response is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

/// Why a response stopped short (`incomplete_details.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shortfall {
    /// The output token cap, or the turn's step cap (which cuts an answer short the same way).
    MaxOutputTokens,
    ContentFilter,
}

/// Where an output item is in its life; `failed` only for a server-run call that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Failed,
}

/// One output item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: String,
    pub status: ItemStatus,
    pub kind: ItemKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ItemKind {
    /// Assistant text: one `output_text` part.
    Message { text: String },
    /// The model's reasoning, as one summary part.
    Reasoning { text: String },
    /// A call of one of the client's function tools; the response ends with it.
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// A call the server made to one of the user's MCP servers.
    McpCall {
        server_label: String,
        name: String,
        arguments: String,
        output: Option<String>,
        error: Option<String>,
    },
    /// A web search or page read the server made (`action` is the API's `search` or `open_page`).
    WebSearch { action: Value },
}

/// An item as the API writes it, serialised from its fields. Each shape's fields are in
/// alphabetical order, as the items were written when they were JSON trees.
impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (id, status) = (self.id.as_str(), self.status);
        // A message's text and a reasoning item's summary show once the item is done.
        let done = status != ItemStatus::InProgress;
        match &self.kind {
            ItemKind::Message { text } => {
                let parts = [TextPart::new(text)];
                MessageItem {
                    content: if done { &parts[..] } else { &[] },
                    id,
                    role: "assistant",
                    status,
                    kind: "message",
                }
                .serialize(serializer)
            }
            ItemKind::Reasoning { text } => {
                let parts = [SummaryPart::new(text)];
                ReasoningItem {
                    id,
                    status,
                    summary: if done { &parts[..] } else { &[] },
                    kind: "reasoning",
                }
                .serialize(serializer)
            }
            ItemKind::FunctionCall {
                call_id,
                name,
                arguments,
            } => FunctionCallItem {
                arguments,
                call_id,
                id,
                name,
                status,
                kind: "function_call",
            }
            .serialize(serializer),
            ItemKind::McpCall {
                server_label,
                name,
                arguments,
                output,
                error,
            } => McpCallItem {
                arguments,
                error: error.as_deref(),
                id,
                name,
                output: output.as_deref(),
                server_label,
                status,
                kind: "mcp_call",
            }
            .serialize(serializer),
            ItemKind::WebSearch { action } => WebSearchItem {
                action,
                id,
                status,
                kind: "web_search_call",
            }
            .serialize(serializer),
        }
    }
}

#[derive(Serialize)]
struct MessageItem<'a> {
    content: &'a [TextPart<'a>],
    id: &'a str,
    role: &'static str,
    status: ItemStatus,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct ReasoningItem<'a> {
    id: &'a str,
    status: ItemStatus,
    summary: &'a [SummaryPart<'a>],
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct FunctionCallItem<'a> {
    arguments: &'a str,
    call_id: &'a str,
    id: &'a str,
    name: &'a str,
    status: ItemStatus,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct McpCallItem<'a> {
    arguments: &'a str,
    error: Option<&'a str>,
    id: &'a str,
    name: &'a str,
    output: Option<&'a str>,
    server_label: &'a str,
    status: ItemStatus,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct WebSearchItem<'a> {
    action: &'a Value,
    id: &'a str,
    status: ItemStatus,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// A content part of an item: a message's text or a reasoning item's summary.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Part<'a> {
    Text(TextPart<'a>),
    Summary(SummaryPart<'a>),
}

/// An `output_text` content part.
#[derive(Serialize)]
pub struct TextPart<'a> {
    annotations: [(); 0],
    logprobs: [(); 0],
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> TextPart<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            annotations: [],
            logprobs: [],
            text,
            kind: "output_text",
        }
    }
}

/// A reasoning summary part.
#[derive(Serialize)]
pub struct SummaryPart<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> SummaryPart<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            kind: "summary_text",
        }
    }
}

/// Token counts in the API's names. The details are always present: Codex and the SDKs' types
/// expect them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub input_tokens_details: InputDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputDetails,
    pub total_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct InputDetails {
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OutputDetails {
    pub reasoning_tokens: u64,
}

impl Usage {
    /// From the engine's usage metadata (the AI SDK's names), which counts the whole turn so far.
    pub fn from_metadata(usage: &Value) -> Self {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        Self {
            input_tokens: count("inputTokens"),
            input_tokens_details: InputDetails {
                cached_tokens: count("cachedInputTokens"),
            },
            output_tokens: count("outputTokens"),
            output_tokens_details: OutputDetails {
                reasoning_tokens: count("reasoningTokens"),
            },
            total_tokens: count("totalTokens"),
        }
    }
}

/// What the turn made of the response so far.
#[derive(Debug, Clone, PartialEq)]
pub struct State<'a> {
    pub status: Status,
    pub output: &'a [Item],
    pub usage: Option<Usage>,
    /// `(code, message)` of a failed response.
    pub error: Option<(&'static str, &'a str)>,
    pub shortfall: Option<Shortfall>,
    /// Unix seconds, once it completed.
    pub completed_at: Option<i64>,
}

/// The whole `Response` object, serialised from borrowed fields: a stream writes it three times
/// (created, in progress, its end), and as a JSON tree it cost more than all the stream's other
/// events together. In alphabetical order, as it was written when it was a JSON tree.
#[derive(Debug, Serialize)]
pub struct ResponseObject<'a> {
    background: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<i64>,
    created_at: i64,
    error: Option<ErrorFields<'a>>,
    id: &'a str,
    incomplete_details: Option<IncompleteDetails>,
    instructions: Option<&'a str>,
    max_output_tokens: Option<u64>,
    metadata: &'a Map<String, Value>,
    model: &'a str,
    object: &'static str,
    output: &'a [Item],
    parallel_tool_calls: bool,
    previous_response_id: Option<&'a str>,
    reasoning: ReasoningSettings,
    status: Status,
    store: bool,
    temperature: Option<f64>,
    text: TextSettings,
    tool_choice: &'a Value,
    tools: &'a [Value],
    top_p: Option<f64>,
    truncation: &'static str,
    usage: Option<Usage>,
}

#[derive(Debug, Serialize)]
struct ErrorFields<'a> {
    code: &'static str,
    message: &'a str,
}

#[derive(Debug, Serialize)]
struct IncompleteDetails {
    reason: Shortfall,
}

/// `{"effort": null, "summary": null}`: the gateway passes no reasoning settings on.
#[derive(Debug, Serialize)]
struct ReasoningSettings {
    effort: Option<()>,
    summary: Option<()>,
}

/// `{"format": {"type": "text"}}`.
#[derive(Debug, Serialize)]
struct TextSettings {
    format: TextFormat,
}

#[derive(Debug, Serialize)]
struct TextFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> ResponseObject<'a> {
    pub fn new(echo: &'a Echo, state: &State<'a>) -> Self {
        Self {
            background: false,
            completed_at: state.completed_at,
            created_at: echo.created_at,
            error: state.error.map(|(code, message)| ErrorFields { code, message }),
            id: &echo.id,
            incomplete_details: state.shortfall.map(|reason| IncompleteDetails { reason }),
            instructions: echo.instructions.as_deref(),
            max_output_tokens: echo.max_output_tokens,
            metadata: &echo.metadata,
            model: &echo.model,
            object: "response",
            output: state.output,
            parallel_tool_calls: echo.parallel_tool_calls,
            previous_response_id: echo.previous_response_id.as_deref(),
            reasoning: ReasoningSettings {
                effort: None,
                summary: None,
            },
            status: state.status,
            store: echo.store,
            temperature: echo.temperature,
            text: TextSettings {
                format: TextFormat { kind: "text" },
            },
            tool_choice: &echo.tool_choice,
            tools: &echo.tools,
            top_p: echo.top_p,
            truncation: "disabled",
            usage: state.usage,
        }
    }
}
