//! The `Response` object and its output items, as the Responses API's clients read them.
//!
//! The object repeats what the request asked for (its [`Echo`]) around what the turn produced: the
//! output items in order, the status, usage, and why it failed or stopped short.

use serde::Serialize;
use serde_json::{Map, Value, json};

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

impl Item {
    /// The item as the API writes it.
    pub fn to_json(&self) -> Value {
        let status = self.status;
        match &self.kind {
            ItemKind::Message { text } => json!({
                "type": "message", "id": self.id, "status": status, "role": "assistant",
                "content": if status == ItemStatus::InProgress { json!([]) } else { json!([text_part(text)]) },
            }),
            ItemKind::Reasoning { text } => json!({
                "type": "reasoning", "id": self.id, "status": status,
                "summary": if status == ItemStatus::InProgress { json!([]) } else { json!([summary_part(text)]) },
            }),
            ItemKind::FunctionCall {
                call_id,
                name,
                arguments,
            } => json!({
                "type": "function_call", "id": self.id, "status": status,
                "call_id": call_id, "name": name, "arguments": arguments,
            }),
            ItemKind::McpCall {
                server_label,
                name,
                arguments,
                output,
                error,
            } => json!({
                "type": "mcp_call", "id": self.id, "status": status,
                "server_label": server_label, "name": name, "arguments": arguments,
                "output": output, "error": error,
            }),
            ItemKind::WebSearch { action } => json!({
                "type": "web_search_call", "id": self.id, "status": status, "action": action,
            }),
        }
    }
}

/// An `output_text` content part.
pub fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// A reasoning summary part.
pub fn summary_part(text: &str) -> Value {
    json!({"type": "summary_text", "text": text})
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

/// The whole `Response` object.
pub fn response_json(echo: &Echo, state: &State<'_>) -> Value {
    let output: Vec<Value> = state.output.iter().map(Item::to_json).collect();
    let mut object = json!({
        "id": echo.id,
        "object": "response",
        "created_at": echo.created_at,
        "status": state.status,
        "background": false,
        "error": state.error.map(|(code, message)| json!({"code": code, "message": message})),
        "incomplete_details": state.shortfall.map(|reason| json!({"reason": reason})),
        "instructions": echo.instructions,
        "max_output_tokens": echo.max_output_tokens,
        "metadata": echo.metadata,
        "model": echo.model,
        "output": output,
        "parallel_tool_calls": echo.parallel_tool_calls,
        "previous_response_id": echo.previous_response_id,
        "reasoning": {"effort": null, "summary": null},
        "store": echo.store,
        "temperature": echo.temperature,
        "text": {"format": {"type": "text"}},
        "tool_choice": echo.tool_choice,
        "tools": echo.tools,
        "top_p": echo.top_p,
        "truncation": "disabled",
        "usage": state.usage,
    });
    if let (Some(at), Some(object)) = (state.completed_at, object.as_object_mut()) {
        object.insert("completed_at".into(), at.into());
    }
    object
}
