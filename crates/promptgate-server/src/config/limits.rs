//! The `[limits]` section: request sizes and deadlines, per-user send limits, list pages.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body accepted, in bytes.
    pub body_bytes: usize,
    /// Deadline for ordinary (non-streaming) requests.
    pub request_timeout_secs: u64,
    /// `tokens` mode: turns one user may have running at once; past it a send gets 429.
    pub user_turns_in_flight: usize,
    /// `tokens` mode: sends one user may start per minute; past it a send gets 429.
    pub user_sends_per_minute: u32,
    /// Threads, messages or search results one list page holds when the request names no `limit`.
    pub page_size: u32,
    /// The largest `limit` a list page honours; a larger one is lowered to it.
    pub max_page_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1024 * 1024,
            request_timeout_secs: 30,
            user_turns_in_flight: 4,
            user_sends_per_minute: 30,
            page_size: 50,
            max_page_size: 200,
        }
    }
}
