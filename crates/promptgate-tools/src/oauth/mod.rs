//! OAuth 2.0 for the Google and Microsoft integrations: authorization-code flow with PKCE, token
//! renewal, revocation, encryption of tokens at rest, and the shared API request discipline.
//!
//! Wiring, per provider:
//! 1. `authorize`: [`OAuthProviderConfig::start_authorization`] gives the URL to redirect to; keep
//!    `state` → (`user`, `code_verifier`) server-side for a few minutes.
//! 2. callback: look the `state` up (once), then [`AccessTokens::connect`] with the code and the
//!    verifier; the tokens go sealed into the
//!    [`TokenVault`](promptgate_core::storage::TokenVault) (which the store implements) and are
//!    never returned.
//! 3. per send: an [`AccessTokens`] for the user (sharing one process-wide [`RefreshLocks`]) feeds a
//!    `GoogleClient` / `GraphClient`, whose tools `IntegrationExecutor::all` lists by name.
//! 4. disconnect: [`AccessTokens::disconnect`] revokes where possible and forgets the tokens.

mod client;
mod config;
mod executor;
pub(crate) mod http;
mod pkce;
mod sealer;
pub(crate) mod text;
mod tokens;

pub use client::{OAuthClient, TokenSet};
pub use config::{OAuthProviderConfig, PendingAuthorization};
pub use executor::{IntegrationExecutor, IntegrationTool};
pub use pkce::{PkcePair, new_state, pkce_pair, s256_challenge};
pub use sealer::TokenSealer;
pub use tokens::{AccessTokens, RefreshLocks};

/// Reads a tool call's arguments with the argument struct core defines for `tool`, reporting a
/// mismatch as the model's mistake so it can correct the call.
pub(crate) fn tool_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    input: &serde_json::Value,
) -> Result<T, promptgate_core::tools::ToolError> {
    promptgate_core::tools::parse_args(tool, input).map_err(|err| match err {
        promptgate_core::Error::InvalidToolArguments { reason, .. } => {
            promptgate_core::tools::ToolError::InvalidArguments(reason)
        }
        other => promptgate_core::tools::ToolError::InvalidArguments(other.to_string()),
    })
}
