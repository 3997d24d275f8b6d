//! The `[responses]` section: how long the Responses API keeps what clients ask it to keep.

use serde::Deserialize;

/// Kept responses of `POST /v1/responses`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponsesConfig {
    /// How long a kept response can be read and continued; older ones are deleted.
    pub retention_days: u64,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            retention_days: promptgate_service::deployment::DEFAULT_RESPONSE_RETENTION.as_secs() / 86_400,
        }
    }
}
