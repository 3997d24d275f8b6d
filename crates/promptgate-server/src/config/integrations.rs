//! The `[integrations]` section: the Google and Microsoft OAuth clients.

use serde::Deserialize;

/// The `[integrations]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegrationsConfig {
    /// Environment variable holding the base64 of the 32-byte key that seals tokens at rest.
    pub token_key_env: String,
    /// Where browsers reach this server; the callback is `{this}/v1/integrations/{provider}/callback`.
    pub redirect_base_url: String,
    #[serde(default)]
    pub google: Option<OAuthEntry>,
    #[serde(default)]
    pub microsoft: Option<OAuthEntry>,
}

/// One provider's OAuth client registration. The endpoint overrides exist for tests and proxies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthEntry {
    pub client_id: String,
    /// Environment variable holding the client secret.
    pub client_secret_env: String,
    #[serde(default)]
    pub auth_url: Option<String>,
    #[serde(default)]
    pub token_url: Option<String>,
    #[serde(default)]
    pub revoke_url: Option<String>,
    /// Google: the Gmail API base (`.../gmail/v1`). Microsoft: the Graph base (`.../v1.0`).
    #[serde(default)]
    pub api_base_url: Option<String>,
    /// Google only: the Calendar API base (`.../calendar/v3`).
    #[serde(default)]
    pub calendar_base_url: Option<String>,
}
