//! OAuth 2.0 for the Google and Microsoft integrations: authorization-code flow with PKCE, token
//! renewal, revocation, encryption of tokens at rest, and the shared API request discipline.

mod client;
mod config;
pub(crate) mod http;
mod pkce;
mod sealer;
pub(crate) mod text;
mod tokens;

pub use client::{OAuthClient, TokenSet};
pub use config::OAuthProviderConfig;
pub use pkce::{PkcePair, new_state, pkce_pair, s256_challenge};
pub use sealer::TokenSealer;
pub use tokens::{AccessTokens, RefreshLocks, TokenVault};
