//! Gmail and Google Calendar, shaped into the results the `google_*` tools return.

mod address;
mod calendar;
mod draft;
mod executors;
mod gmail;
mod mime;

use serde_json::Value;

use crate::oauth::AccessTokens;
use crate::oauth::http::{ApiReply, JSON_RESPONSE_LIMIT, api_url, send_authorized};
use promptgate_core::tools::ToolError;

pub use draft::DraftEmail;
pub use executors::{GoogleExecutor, GoogleTool};

pub const DEFAULT_GMAIL_BASE: &str = "https://gmail.googleapis.com/gmail/v1";
pub const DEFAULT_CALENDAR_BASE: &str = "https://www.googleapis.com/calendar/v3";

/// Gmail and Calendar for one user. The bases are configurable so tests can point at loopback.
#[derive(Debug, Clone)]
pub struct GoogleClient {
    pub gmail_base: String,
    pub calendar_base: String,
    pub http: reqwest::Client,
    pub tokens: AccessTokens,
}

const GMAIL: &str = "Gmail";
const CALENDAR: &str = "Google Calendar";

impl GoogleClient {
    /// A client on Google's production endpoints.
    pub fn new(http: reqwest::Client, tokens: AccessTokens) -> Self {
        Self {
            gmail_base: DEFAULT_GMAIL_BASE.to_owned(),
            calendar_base: DEFAULT_CALENDAR_BASE.to_owned(),
            http,
            tokens,
        }
    }

    async fn gmail_get(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<ApiReply, ToolError> {
        let url = api_url(&self.gmail_base, segments, query)?;
        send_authorized(&self.tokens, GMAIL, JSON_RESPONSE_LIMIT, |token| {
            self.http.get(url.clone()).bearer_auth(token)
        })
        .await
    }

    async fn gmail_get_json(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Value, ToolError> {
        self.gmail_get(segments, query).await?.json(GMAIL)
    }
}
