//! Argument structs of the built-in tools. The schema offered to the model is generated from these
//! structs and executors parse the model's arguments with them, so the two cannot drift apart.
//!
//! Strict tools (`deny_unknown_fields`) reject keys they do not know; their schemas say
//! `additionalProperties: false`. Parsing is a little kinder than the schema in one respect: counts
//! accept any JSON number (or a numeric string) and are then clamped by the accessor methods, because
//! models now and then send `20.0` or `"20"` where an integer is asked for.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::schema::require_field;

/// Arguments of `render_html`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct RenderHtmlArgs {
    /// The whole HTML document to show the user. It must be self-contained and work offline: put CSS
    /// and JavaScript inline, embed images as data: URIs, load nothing from the network, and avoid
    /// layouts sized with 100vh.
    pub html: String,
    /// A short title for the artifact.
    pub title: String,
}

/// Arguments of `addTasks`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct AddTasksArgs {
    /// One entry per task to add, each the task's text.
    pub tasks: Vec<String>,
}

/// Arguments of `getTasks`: none.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
pub struct GetTasksArgs {}

/// Arguments of `deleteTasks`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct DeleteTasksArgs {
    /// Ids of the tasks to delete, as `getTasks` returned them.
    #[serde(rename = "taskIds")]
    pub task_ids: Vec<String>,
}

/// Arguments of `search`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = require_max_results)]
pub struct SearchArgs {
    /// What to search the web for.
    pub query: String,
    /// How many results to return, 1 to 25.
    // Required in the schema, yet a missing count is tolerated and means the default.
    #[serde(default, deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 25))]
    pub max_results: u32,
}

fn require_max_results(schema: &mut schemars::Schema) {
    require_field(schema, "max_results");
}

impl SearchArgs {
    /// Used when the model asks for 0 results.
    pub const DEFAULT_MAX_RESULTS: u32 = 10;
    pub const MIN_RESULTS: u32 = 1;
    pub const MAX_RESULTS: u32 = 25;

    /// The result count to ask the backend for.
    pub fn limit(&self) -> u32 {
        if self.max_results == 0 {
            Self::DEFAULT_MAX_RESULTS
        } else {
            self.max_results.clamp(Self::MIN_RESULTS, Self::MAX_RESULTS)
        }
    }
}

/// Arguments of `fetch_content`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchContentArgs {
    /// The absolute http(s) URL of the page to read.
    pub url: String,
    /// Upper bound on the characters of page text returned (1000 to 64000, default 16000).
    #[serde(default, deserialize_with = "lenient_opt_count")]
    #[schemars(range(min = 1000, max = 64000))]
    pub max_length: Option<u32>,
}

impl FetchContentArgs {
    pub const DEFAULT_MAX_LENGTH: u32 = 16_000;
    pub const MIN_LENGTH: u32 = 1_000;
    pub const MAX_LENGTH: u32 = 64_000;

    /// The text length to return: the default when absent, clamped to the allowed range.
    pub fn max_length(&self) -> u32 {
        self.max_length
            .unwrap_or(Self::DEFAULT_MAX_LENGTH)
            .clamp(Self::MIN_LENGTH, Self::MAX_LENGTH)
    }
}

/// Result-count rules shared by the mail and file listing tools.
pub struct ListingLimit;

impl ListingLimit {
    pub const DEFAULT: u32 = 20;
    pub const CAP: u32 = 50;

    fn apply(requested: u32) -> u32 {
        requested.clamp(1, Self::CAP)
    }
}

fn default_listing_limit() -> u32 {
    ListingLimit::DEFAULT
}

/// Arguments of `google_check_inbox`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleCheckInboxArgs {
    /// Gmail label to list, such as `INBOX`, `UNREAD` or `STARRED`.
    #[serde(default = "default_inbox_label")]
    pub label: String,
    /// How many conversations to return (at most 50).
    #[serde(default = "default_listing_limit", deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: u32,
    /// Also list messages in Spam and Trash.
    #[serde(default)]
    pub include_spam_trash: bool,
}

fn default_inbox_label() -> String {
    "INBOX".to_owned()
}

impl GoogleCheckInboxArgs {
    pub fn max_results(&self) -> u32 {
        ListingLimit::apply(self.max_results)
    }
}

/// Arguments of `google_search_emails`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleSearchEmailsArgs {
    /// A Gmail search expression, e.g. `from:anna@example.com after:2026/01/01 has:attachment`.
    pub query: String,
    /// How many messages to return (at most 50).
    #[serde(default = "default_listing_limit", deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: u32,
}

impl GoogleSearchEmailsArgs {
    pub fn max_results(&self) -> u32 {
        ListingLimit::apply(self.max_results)
    }
}

/// Arguments of `google_get_email`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleGetEmailArgs {
    /// The message id from an inbox listing or a search.
    pub id: String,
}

/// One address or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Recipients {
    One(String),
    Many(Vec<String>),
}

impl Recipients {
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Self::One(address) => vec![address.clone()],
            Self::Many(addresses) => addresses.clone(),
        }
    }
}

/// Arguments of `google_draft_email`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleDraftEmailArgs {
    /// Recipient address, or a list of addresses.
    pub to: Recipients,
    /// Subject line.
    pub subject: String,
    /// Plain-text body of the message.
    pub body: String,
    /// Carbon-copy address or addresses.
    pub cc: Option<Recipients>,
    /// Blind carbon-copy address or addresses.
    pub bcc: Option<Recipients>,
    /// Id of the message this draft answers; the draft joins its thread.
    pub reply_to_id: Option<String>,
    /// With `reply_to_id`: address everyone on the original message.
    #[serde(default)]
    pub reply_all: bool,
}

/// Arguments of `google_check_calendar`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleCheckCalendarArgs {
    /// How many days ahead to look, starting now (default 7).
    #[serde(default = "default_days_ahead", deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 365))]
    pub days_ahead: u32,
    /// Which calendar to read (default `primary`).
    #[serde(default = "default_calendar_id")]
    pub calendar_id: String,
}

fn default_days_ahead() -> u32 {
    GoogleCheckCalendarArgs::DEFAULT_DAYS_AHEAD
}

fn default_calendar_id() -> String {
    "primary".to_owned()
}

impl GoogleCheckCalendarArgs {
    pub const DEFAULT_DAYS_AHEAD: u32 = 7;
    /// A year keeps one call's event list bounded.
    pub const MAX_DAYS_AHEAD: u32 = 365;

    pub fn days_ahead(&self) -> u32 {
        self.days_ahead.clamp(1, Self::MAX_DAYS_AHEAD)
    }
}

/// Arguments of `microsoft_list_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MicrosoftListMessagesArgs {
    /// How many messages to return (at most 50).
    #[serde(deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 50))]
    pub top: u32,
    /// Paging token from the previous call's result; an empty string for the first page.
    #[serde(rename = "skipToken")]
    #[schemars(required)]
    pub skip_token: Option<String>,
    /// An OData `$filter` expression such as `isRead eq false`; an empty string for none.
    #[schemars(required)]
    pub filter: Option<String>,
    /// Return the HTML body as well as the text.
    #[serde(rename = "includeBodyHtml")]
    pub include_body_html: bool,
}

impl MicrosoftListMessagesArgs {
    pub fn top(&self) -> u32 {
        ListingLimit::apply(self.top)
    }

    /// The paging token, if the model gave a non-empty one.
    pub fn skip_token(&self) -> Option<&str> {
        non_empty(self.skip_token.as_deref())
    }

    /// The filter expression, if the model gave a non-empty one.
    pub fn filter(&self) -> Option<&str> {
        non_empty(self.filter.as_deref())
    }
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// Arguments of `microsoft_get_message`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MicrosoftGetMessageArgs {
    /// The message id from a listing.
    pub id: String,
    /// Return the HTML body as well as the text.
    #[serde(rename = "includeBodyHtml")]
    pub include_body_html: bool,
}

/// Arguments of `microsoft_search_onedrive`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MicrosoftSearchOnedriveArgs {
    /// Words to look for in file names and contents.
    pub query: String,
    /// How many files to return (at most 50).
    #[serde(default = "default_listing_limit", deserialize_with = "lenient_count")]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: u32,
}

impl MicrosoftSearchOnedriveArgs {
    pub fn max_results(&self) -> u32 {
        ListingLimit::apply(self.max_results)
    }
}

/// Arguments of `microsoft_get_onedrive_file_content`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MicrosoftGetOnedriveFileContentArgs {
    /// The file id from a OneDrive search.
    pub file_id: String,
}

/// Arguments of `skill`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct SkillArgs {
    /// The skill's name exactly as the skill list shows it.
    pub name: String,
}

/// Arguments of `search_project_chats`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct SearchProjectChatsArgs {
    /// Keywords to look for in the project's other chats.
    pub query: String,
}

/// Arguments of the harness workspace's `read`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read; relative paths start at the workspace home.
    pub path: String,
    /// First line to return, counting from 1.
    #[serde(default, deserialize_with = "lenient_opt_count")]
    #[schemars(range(min = 1))]
    pub offset: Option<u32>,
    /// Most lines to return.
    #[serde(default, deserialize_with = "lenient_opt_count")]
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
}

/// Arguments of the harness workspace's `write`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The file to create or replace; relative paths start at the workspace home.
    pub path: String,
    /// The file's whole new content.
    pub content: String,
}

/// Arguments of the harness workspace's `edit`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The file to edit; relative paths start at the workspace home.
    pub path: String,
    /// Replacements applied in order; all or none take effect.
    #[schemars(length(min = 1))]
    pub edits: Vec<TextEdit>,
}

/// One exact replacement of an `edit` call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TextEdit {
    /// Text to find; it must occur exactly once in the file.
    pub old_text: String,
    /// What replaces it.
    pub new_text: String,
}

/// Arguments of the harness workspace's `bash`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The shell command or script to run.
    pub command: String,
    /// Seconds to allow; the workspace's own limit caps it.
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// A count as models actually send it: an integer, a float with an integral meaning, or a numeric
/// string. Negative values become 0 and huge ones saturate; the accessors clamp afterwards.
fn lenient_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    count_from_value(&value)
        .ok_or_else(|| serde::de::Error::custom(format!("expected a whole number, got {value}")))
}

fn lenient_opt_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    if value.is_null() {
        return Ok(None);
    }
    count_from_value(&value)
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("expected a whole number, got {value}")))
}

fn count_from_value(value: &serde_json::Value) -> Option<u32> {
    let number = match value {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if !number.is_finite() {
        return None;
    }
    // `as` saturates for floats, which is exactly the clamping wanted here.
    Some(number.round().max(0.0) as u32)
}
