//! What the tool executors keep in persistence, as traits the store implements: the user's task
//! list, HTML artifacts, the keyword search over a project's chats, the vault of sealed
//! integration tokens, and the harness's per-thread workspace files; and the other way round, the
//! [`SecretBox`] the store seals MCP secrets with.
//!
//! They live here so the tools (and the workspace) and the store meet in a crate both already
//! depend on, and neither depends on the other. The rows they speak are plain types, serialised as
//! the model sees them.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::settings::IntegrationProvider;

/// Why a storage call failed, in the degree of detail a caller may pass on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The input was refused; the reason is fit to show to the user or the model.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The user, or a row the call names, does not exist (for this user).
    #[error("not found")]
    NotFound,
    /// Anything else (database down, conflict); the text is for logs only.
    #[error("{0}")]
    Failed(String),
}

/// One entry of a user's task list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub item: String,
    pub completed: bool,
    /// Epoch milliseconds.
    pub created_at: i64,
}

/// An HTML document the model rendered for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub id: String,
    /// The chat it belongs to (and is deleted with); `None` for a send without a stored chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub title: String,
    pub html: String,
    /// Epoch milliseconds.
    pub created_at: i64,
}

/// One message that matched a project chat search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatHit {
    pub thread_id: String,
    /// About 200 characters of the message text around the first matching word.
    pub excerpt: String,
}

/// One file or directory of a thread's workspace. `path` is absolute inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceEntry {
    pub path: String,
    pub is_dir: bool,
    /// Empty for directories.
    pub content: Vec<u8>,
}

/// What a run of the workspace tools changed: entries written (created or replaced) and paths removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceChanges {
    pub written: Vec<WorkspaceEntry>,
    pub removed: Vec<String>,
}

impl WorkspaceChanges {
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}

/// A user's task list.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Adds `items` in order, all or nothing, and returns them as stored (with their ids).
    /// `NotFound` when the user does not exist.
    async fn add_tasks(&self, user_id: &str, items: &[String]) -> Result<Vec<Task>, StorageError>;
    /// All of the user's tasks, oldest first.
    async fn list_tasks(&self, user_id: &str) -> Result<Vec<Task>, StorageError>;
    /// Deletes those of `ids` that are the user's tasks and returns how many went.
    async fn delete_tasks(&self, user_id: &str, ids: &[String]) -> Result<u64, StorageError>;
}

/// Where rendered HTML artifacts are kept.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// Stores a document, attached to `thread_id` when given. `NotFound` when that chat is not the
    /// user's (or the user does not exist).
    async fn create_artifact(
        &self,
        user_id: &str,
        artifact: NewArtifact<'_>,
    ) -> Result<Artifact, StorageError>;
}

/// A document to keep: its title and HTML, and the chat it belongs to, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewArtifact<'a> {
    pub thread_id: Option<&'a str>,
    pub title: &'a str,
    pub html: &'a str,
}

/// Keyword search over the messages of some of a user's chats.
#[async_trait]
pub trait ChatSearch: Send + Sync {
    /// The user's other chats of a project (all but `exclude_thread_id`) as `(thread_id, title)`,
    /// most recently updated first. Empty when the project is not the user's.
    async fn project_threads(
        &self,
        user_id: &str,
        project_id: &str,
        exclude_thread_id: &str,
    ) -> Result<Vec<(String, Option<String>)>, StorageError>;

    /// At most `limit` messages of `thread_ids` (the user's own chats only) that match `query`,
    /// best first. Empty when nothing matched.
    async fn search_messages(
        &self,
        user_id: &str,
        search: MessageSearch<'_>,
    ) -> Result<Vec<ChatHit>, StorageError>;
}

/// What a message search looks for: up to `limit` messages matching `query` in `thread_ids`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSearch<'a> {
    pub thread_ids: &'a [String],
    pub query: &'a str,
    pub limit: u32,
}

/// Where sealed integration token sets live, one per user and provider. Implementations must not
/// echo the sealed blob in their errors.
#[async_trait]
pub trait TokenVault: Send + Sync {
    async fn load(&self, key: VaultKey<'_>) -> Result<Option<String>, StorageError>;
    /// Replaces whatever was stored for the user and provider.
    async fn store(&self, key: VaultKey<'_>, sealed: &str) -> Result<(), StorageError>;
    /// Forgetting a set that is not there is not an error.
    async fn delete(&self, key: VaultKey<'_>) -> Result<(), StorageError>;
}

/// Which token set a vault call is about: one user's, from one provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultKey<'a> {
    pub user_id: &'a str,
    pub provider: IntegrationProvider,
}

/// Where the harness workspace's files are kept, per user and thread.
#[async_trait]
pub trait WorkspaceStore: Send + Sync {
    /// Every entry of the thread's workspace, sorted by path (parents before children); empty for a
    /// thread that never used one. `NotFound` when the thread is not the user's.
    async fn load_workspace(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Vec<WorkspaceEntry>, StorageError>;
    /// Applies one run's changes all or nothing, removals before writes (a path may be removed and
    /// written again). `NotFound` when the thread is not the user's; `Invalid` for an entry the
    /// store refuses (a relative path, a file over its size limit).
    async fn save_workspace(
        &self,
        user_id: &str,
        thread_id: &str,
        changes: &WorkspaceChanges,
    ) -> Result<(), StorageError>;
}

/// Seals and opens secret text, so the store keeps secrets at rest without knowing the cipher.
/// Implemented by the gateway's token sealer. Errors must not contain the plaintext.
pub trait SecretBox: Send + Sync {
    fn seal(&self, plaintext: &str) -> Result<String, String>;
    fn open(&self, sealed: &str) -> Result<String, String>;
}
