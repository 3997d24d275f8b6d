//! The `[responses]` section: how long the Responses API keeps what clients ask it to keep.

use serde::Deserialize;

/// Kept responses of `POST /v1/responses`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponsesConfig {
    /// How long a kept response can be read and continued; older ones are deleted.
    pub retention_days: u64,
    /// How many kept responses each user holds at most; storing one more deletes the oldest.
    pub max_per_user: usize,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            retention_days: promptgate_service::deployment::DEFAULT_RESPONSE_RETENTION.as_secs() / 86_400,
            max_per_user: promptgate_service::deployment::DEFAULT_RESPONSES_PER_USER,
        }
    }
}
