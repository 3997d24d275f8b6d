//! The executors of the built-in tools other than the raw web clients: artifacts, tasks, skills,
//! project chat search, and the web tools as the model sees them (numbered as citable sources).
//!
//! Each is built per send with the handles it needs, so a call takes only the model's arguments.
//! What they keep goes through core's storage traits (`promptgate_core::storage`), which the store
//! implements; this crate does not depend on the store.

mod artifacts;
mod project_chats;
mod skill;
mod tasks;
mod web_tools;

pub use artifacts::{MAX_HTML_BYTES, MAX_TITLE_CHARS, RenderHtml};
pub use project_chats::{PROJECT_CHAT_HIT_LIMIT, SearchProjectChats};
pub use skill::{OnSkillLoaded, SkillTool};
pub use tasks::{AddTasks, DeleteTasks, GetTasks, MAX_TASK_CHARS, MAX_TASKS_PER_CALL};
pub use web_tools::{FetchContent, WebSearch};

use promptgate_core::storage::StorageError;
use serde::de::DeserializeOwned;
use serde_json::Value;

use promptgate_core::tools::ToolError;

/// The model's arguments for `tool`, or an error that tells the model what was wrong with them.
fn parse<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolError> {
    promptgate_core::tools::parse_args(tool, input).map_err(|e| match e {
        promptgate_core::Error::InvalidToolArguments { reason, .. } => ToolError::InvalidArguments(reason),
        other => ToolError::InvalidArguments(other.to_string()),
    })
}

/// A storage failure as the model may see it: validation messages pass through, database details
/// stay in the log.
fn storage_failed(action: &str, error: StorageError) -> ToolError {
    match error {
        StorageError::Invalid(reason) => ToolError::Failed(format!("Could not {action}: {reason}.")),
        StorageError::NotFound => {
            ToolError::Failed(format!("Could not {action}: this chat or user no longer exists."))
        }
        StorageError::Failed(detail) => {
            tracing::warn!(error = %detail, "store call of a built-in tool failed");
            ToolError::Failed(format!(
                "Could not {action} because the database is unavailable right now; try again later."
            ))
        }
    }
}

/// `text` cut to `max` characters, with `…` when cut; for echoing model input back in messages.
fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
