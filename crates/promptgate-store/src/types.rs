//! The store's API types: the rows it returns and the inputs it takes. Most HTTP bodies are the
//! server's own types, converted from and to these. A row the API shows as it is (a message, an MCP
//! server) is one type with its JSON shape here, rather than a copy in the server field for field;
//! `openapi.yaml` is compared with what these generate, so a change to them cannot reach the API
//! unseen.
//! Rows that the tools and the workspace read through core's storage traits (tasks, artifacts, chat
//! hits, workspace entries) are core's types, in `promptgate_core::storage`.

use std::collections::BTreeMap;
use std::fmt;

pub use promptgate_core::settings::NewSkill;
use promptgate_core::settings::{IntegrationStatus, Model, Project, Skill, UserSettings};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub name: String,
    /// Epoch milliseconds.
    pub created_at: i64,
}

/// A user and the number of API tokens it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserTokens {
    pub user: User,
    pub tokens: i64,
}

/// What one user keeps (see `Store::storage_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageUsage {
    /// Bytes of messages, artifacts and workspace files.
    pub bytes: u64,
    pub threads: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProject {
    pub name: String,
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: String,
    pub project_id: Option<String>,
    pub title: Option<String>,
    pub created_at: i64,
    /// Bumped by renames, moves and every appended message; threads are listed by it, newest first.
    pub updated_at: i64,
}

/// One page of a longer list, and whether the list goes on past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub more: bool,
}

impl<T> Page<T> {
    /// The first `limit` of `items`, fetched with one extra row to learn whether more follow.
    pub(crate) fn of(mut items: Vec<T>, limit: u32) -> Page<T> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let more = items.len() > limit;
        items.truncate(limit);
        Page { items, more }
    }
}

/// Where a page of the thread list starts: after this thread in the list's order (most recently
/// updated first, ties by id). Keys rather than positions, so threads created while a client pages
/// do not shift the pages it has not read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadsAfter {
    pub updated_at: i64,
    pub id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewThread {
    /// Client-chosen id (`[A-Za-z0-9_-]{1,128}`); a UUID v7 is generated when absent.
    pub id: Option<String>,
    pub project_id: Option<String>,
    pub title: Option<String>,
}

/// A partial thread update: an absent field is left alone, `null` clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadUpdate {
    pub title: Option<Option<String>>,
    pub project_id: Option<Option<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// Where an assistant message stands; absent for user messages. `streaming`: its turn is still
/// running and the parts are its last checkpoint. `interrupted`: the process running the turn
/// ended before the turn did; the parts are its last checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Streaming,
    Complete,
    Stopped,
    Error,
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub id: String,
    pub thread_id: String,
    pub role: Role,
    /// UI message parts (a JSON array).
    pub parts: Value,
    /// Message metadata (a JSON object), e.g. the turn's sources.
    pub metadata: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MessageStatus>,
    pub created_at: i64,
    /// Position in the thread, starting at 1.
    pub seq: i64,
    /// The position of the earlier user message this one edits (a user message whose id repeats
    /// it). Reads of a thread's tail and appends fill it in; other reads leave it `None`. Not
    /// shown by the API.
    #[serde(skip)]
    pub edit_of: Option<i64>,
}

/// What stands in for the older part of a thread in a send once the thread outgrew its model's
/// context window: the conversation up to the stored message at `through_seq`, summarised or left
/// out with a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadContext {
    /// The position of the last stored message the record covers.
    pub through_seq: i64,
    /// Messages of the conversation up to there.
    pub covered: i64,
    /// How many of them (the newest) the summary was written from; 0 without a summary.
    pub summarised: i64,
    /// `None`: the covered messages are left out, and the model is told so.
    pub summary: Option<String>,
    /// Epoch milliseconds.
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// Client-chosen id (`[A-Za-z0-9_-]{1,128}`); a UUID v7 is generated when absent.
    pub id: Option<String>,
    pub thread_id: String,
    pub role: Role,
    pub parts: Value,
    pub metadata: Value,
    pub status: Option<MessageStatus>,
}

/// An MCP server as the API shows it: the secret header values and the bearer token never leave the
/// store through this type, only whether they are set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    pub id: String,
    pub name: String,
    pub url: String,
    pub enabled: bool,
    /// Names of the configured secret headers, sorted.
    pub header_names: Vec<String>,
    pub has_bearer_token: bool,
    pub created_at: i64,
    /// The OAuth client id you gave with the server, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_client_id: Option<String>,
    /// A secret for that client is stored (it is never returned).
    #[serde(default)]
    pub oauth_client_secret_set: bool,
}

/// Create or replace an MCP server. An update replaces the secrets too: headers and token that are
/// not sent again are removed.
#[derive(Clone, PartialEq, Eq)]
pub struct NewMcpServer {
    pub name: String,
    pub url: String,
    pub enabled: bool,
    pub headers: BTreeMap<String, String>,
    pub bearer_token: Option<String>,
    /// The OAuth client to authorize the server with, where its authorization server knows
    /// promptgate by a client the user registered there; the secret is stored sealed.
    pub oauth_client_id: Option<String>,
    pub oauth_client_secret: Option<String>,
}

impl fmt::Debug for NewMcpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewMcpServer")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("enabled", &self.enabled)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .field("oauth_client_id", &self.oauth_client_id)
            .field(
                "oauth_client_secret",
                &self.oauth_client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The OAuth client a user gave with one of their MCP servers. Deliberately not `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct McpOAuthClient {
    pub client_id: String,
    pub client_secret: Option<String>,
}

impl fmt::Debug for McpOAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpOAuthClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The secrets an MCP client needs to connect. Deliberately not `Serialize`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct McpSecrets {
    pub headers: BTreeMap<String, String>,
    pub bearer_token: Option<String>,
}

impl fmt::Debug for McpSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSecrets")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Everything one send needs, loaded together.
#[derive(Debug, Clone)]
pub struct SendContext {
    pub settings: UserSettings,
    pub integrations: IntegrationStatus,
    /// The model the send asked for (or defaulted to): the user's own or a system one, if it exists.
    pub model: Option<Model>,
    /// The id that was looked up for `model`.
    pub model_id: String,
    /// The thread, if it exists yet (a first send may create it).
    pub thread: Option<Thread>,
    /// The thread's project, if it has one.
    pub project: Option<Project>,
    /// Other threads in the same project, counted up to one: a send only needs to know whether there
    /// are any (to offer `search_project_chats`), and counting a big project is not free.
    pub sibling_count: u32,
    /// Enabled skills only.
    pub skills: Vec<Skill>,
    /// Enabled MCP servers with what is needed to connect to them.
    pub mcp_servers: Vec<(McpServer, McpSecrets)>,
    /// The thread's newest messages, as far back as the first read of a send goes.
    pub tail: crate::ThreadTail,
    /// What a send checks before it writes, read with the thread; `None` when no thread was read.
    pub checks: Option<SendChecks>,
}

/// What a send must know before it stores anything, read in the same statement as its thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendChecks {
    /// The user's stored bytes and threads, for their quota.
    pub storage: StorageUsage,
    /// A call of the thread waits for the user's approval (and its time has not run out), so the
    /// thread takes only the answer.
    pub approval_waiting: bool,
}

/// A response of the OpenAI Responses API to keep. The JSON values are the API's own shapes, which
/// the server decides; the store only keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct NewResponse {
    /// `resp_…`, the gateway's own id.
    pub id: String,
    pub previous_response_id: Option<String>,
    /// The `Response` object as its client received it.
    pub body: Value,
    /// The request's input items (an array), each with an `id`.
    pub input_items: Value,
    /// The messages the model saw up to the end of the response (an array), without the system prompt.
    pub conversation: Value,
}

/// A kept response as `GET /v1/responses/{id}` needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    pub id: String,
    pub body: Value,
    pub input_items: Value,
    /// Epoch milliseconds.
    pub created_at: i64,
}
