//! Tool specifications: what the model is offered, and the rules for which tools a send gets.

pub mod args;
pub mod catalogue;
mod executor;
pub mod mcp_names;
pub mod schema;
pub(crate) mod text;
pub mod verb;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use catalogue::{
    available, built_in, has_web_tools, names, origin, search_project_chats_spec, skill_spec, workspace_specs,
};
pub use executor::{ToolError, ToolExecutor, ToolOutput};
pub use schema::{parse_args, schema_of};

/// One tool as offered to the model and described to the UI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    /// The name the model calls. Unique within one send's toolset.
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    // Shared: the same schema goes into every send that offers the tool.
    pub parameters: std::sync::Arc<serde_json::Value>,
    /// Progress template such as `searching for {query}`; rendered with the call's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// Identical calls within one request share one result.
    pub cacheable: bool,
    /// Counted against the per-turn web budget.
    #[serde(skip)]
    pub web: bool,
    /// Set for tools discovered on a user's MCP server: where it came from and what the server says
    /// about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpOrigin>,
}

/// Where an MCP tool came from; this is what the `mcpTools` message metadata records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpOrigin {
    /// The server's id in the store.
    #[serde(skip)]
    pub server_id: String,
    /// The server's display name as the user gave it.
    pub name: String,
    pub url: String,
    /// The tool's name on the server, without our prefix.
    #[serde(rename = "toolName")]
    pub tool_name: String,
    /// The tool's display name as the server gives it (`title`, else `annotations.title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The server's behaviour hints for the tool; absent when it gave none, which the MCP spec
    /// reads as "may change things, reaches the outside world".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpToolHints>,
}

/// The behaviour hints of an MCP tool's `annotations`, under the spec's names. They are the
/// server's claims, not facts: a hint left out takes the spec's default (`readOnlyHint` false,
/// `destructiveHint` true, `idempotentHint` false, `openWorldHint` true).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolHints {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite, not only add (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments changes nothing more (when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches entities outside the server (a web search does; a memory store does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}
