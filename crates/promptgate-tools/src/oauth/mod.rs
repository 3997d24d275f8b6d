//! OAuth 2.0 for the Google and Microsoft integrations: authorization-code flow with PKCE, token
//! renewal, revocation, encryption of tokens at rest, and the shared API request discipline.

mod client;
mod config;
mod executor;
pub(crate) mod http;
mod pkce;
mod sealer;
pub(crate) mod text;
mod tokens;

pub use client::{OAuthClient, TokenSet};
pub use config::OAuthProviderConfig;
pub use executor::{IntegrationExecutor, IntegrationTool};
pub use pkce::{PkcePair, new_state, pkce_pair, s256_challenge};
pub use sealer::TokenSealer;
pub use tokens::{AccessTokens, RefreshLocks, TokenVault};

/// Reads a tool call's arguments with the argument struct core defines for `tool`, reporting a
/// mismatch as the model's mistake so it can correct the call.
pub(crate) fn tool_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    input: &serde_json::Value,
) -> Result<T, crate::ToolError> {
    promptgate_core::tools::parse_args(tool, input).map_err(|err| match err {
        promptgate_core::Error::InvalidToolArguments { reason, .. } => {
            crate::ToolError::InvalidArguments(reason)
        }
        other => crate::ToolError::InvalidArguments(other.to_string()),
    })
}
