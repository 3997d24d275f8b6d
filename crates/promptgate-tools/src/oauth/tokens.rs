//! Keeping one user's provider tokens usable: load the sealed set, renew it shortly before it
//! expires or when the API rejects it, and never renew the same grant twice at once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use chrono::{Duration, Utc};
use promptgate_core::settings::IntegrationProvider;
use promptgate_core::storage::{StorageError, TokenVault, VaultKey};

use super::{OAuthClient, TokenSealer, TokenSet};
use promptgate_core::tools::ToolError;

/// Renew this long before the provider's stated expiry, so a token does not lapse mid-request.
const EXPIRY_MARGIN: Duration = Duration::seconds(60);

/// A vault failure as a tool result: the detail goes to the log, the call says only that the tokens
/// could not be reached.
fn vault_failed(provider: IntegrationProvider, err: &StorageError) -> ToolError {
    tracing::error!(provider = provider.as_str(), error = %err, "the integration tokens could not be accessed");
    ToolError::Failed("the stored integration tokens could not be accessed".to_owned())
}

type RefreshKey = (String, IntegrationProvider);

/// One lock per user and provider, shared by every [`AccessTokens`] of the process, so two tool
/// calls in flight for the same user renew a grant once rather than twice (a second refresh with a
/// rotated refresh token would fail at Microsoft).
#[derive(Debug, Clone, Default)]
pub struct RefreshLocks {
    locks: Arc<Mutex<HashMap<RefreshKey, Arc<tokio::sync::Mutex<()>>>>>,
}

impl RefreshLocks {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock_for(&self, user_id: &str, provider: IntegrationProvider) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .locks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Drop locks nobody holds any more, so the map stays as small as the number of users
        // currently renewing.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        locks.entry((user_id.to_owned(), provider)).or_default().clone()
    }
}

/// Valid access tokens for one user and provider.
#[derive(Clone)]
pub struct AccessTokens {
    oauth: OAuthClient,
    vault: Arc<dyn TokenVault>,
    sealer: Arc<TokenSealer>,
    locks: RefreshLocks,
    user_id: String,
    provider: IntegrationProvider,
    /// The last set read from or written to the vault, so the calls of one send (an inbox listing
    /// makes one request per message) do not each pay a store round trip and a decryption.
    cached: Arc<Mutex<Option<TokenSet>>>,
}

impl std::fmt::Debug for AccessTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessTokens")
            .field("user_id", &self.user_id)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl AccessTokens {
    pub fn new(
        oauth: OAuthClient,
        vault: Arc<dyn TokenVault>,
        sealer: Arc<TokenSealer>,
        locks: RefreshLocks,
        user_id: impl Into<String>,
        provider: IntegrationProvider,
    ) -> Self {
        Self {
            oauth,
            vault,
            sealer,
            locks,
            user_id: user_id.into(),
            provider,
            cached: Arc::default(),
        }
    }

    /// "Google" or "Microsoft", for messages.
    pub fn provider_name(&self) -> &str {
        &self.oauth.config().display_name
    }

    /// Completes an authorization: trades the callback's code for tokens and stores them sealed.
    pub async fn connect(&self, code: &str, code_verifier: &str) -> Result<(), ToolError> {
        let tokens = self.oauth.exchange_code(code, code_verifier).await?;
        self.save(&tokens).await
    }

    /// Revokes the grant at the provider when it supports that, then forgets the tokens. The
    /// tokens are forgotten even when revocation fails: the user asked us to let go of them.
    pub async fn disconnect(&self) -> Result<(), ToolError> {
        if let Some(tokens) = self.load_optional().await? {
            let token = tokens.refresh_token.as_deref().unwrap_or(&tokens.access_token);
            if let Err(err) = self.oauth.revoke(token).await {
                tracing::warn!(provider = self.provider.as_str(), error = %err, "revocation failed; forgetting the tokens anyway");
            }
        }
        self.remember(None);
        self.vault
            .delete(self.key())
            .await
            .map_err(|err| vault_failed(self.provider, &err))
    }

    /// An access token that is valid for at least another minute, renewing it if needed.
    pub async fn access_token(&self) -> Result<String, ToolError> {
        if let Some(token) = self.cached_valid() {
            return Ok(token);
        }
        let tokens = self.load().await?;
        if !tokens.expires_within(EXPIRY_MARGIN, Utc::now()) {
            return Ok(tokens.access_token);
        }
        let lock = self.locks.lock_for(&self.user_id, self.provider);
        let _renewing = lock.lock().await;
        // Whoever held the lock before us may already have renewed.
        let tokens = self.load().await?;
        if !tokens.expires_within(EXPIRY_MARGIN, Utc::now()) {
            return Ok(tokens.access_token);
        }
        self.renew(tokens).await
    }

    /// Runs `call` with a token. When the API answers 401, renews the token once and runs `call`
    /// again with the new one; whatever the second attempt answers is returned.
    pub async fn with_token<F, Fut>(&self, call: F) -> Result<reqwest::Response, ToolError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<reqwest::Response, ToolError>>,
    {
        let token = self.access_token().await?;
        let response = call(token.clone()).await?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        tracing::debug!(
            provider = self.provider.as_str(),
            "access token rejected; renewing once"
        );
        let fresh = self.renew_rejected(&token).await?;
        call(fresh).await
    }

    async fn renew_rejected(&self, rejected: &str) -> Result<String, ToolError> {
        let lock = self.locks.lock_for(&self.user_id, self.provider);
        let _renewing = lock.lock().await;
        let tokens = self.load().await?;
        if tokens.access_token != rejected {
            // A concurrent call renewed it while we were waiting.
            return Ok(tokens.access_token);
        }
        self.renew(tokens).await
    }

    async fn renew(&self, tokens: TokenSet) -> Result<String, ToolError> {
        let name = self.provider_name();
        let refresh_token = tokens.refresh_token.ok_or_else(|| {
            ToolError::Unauthorized(format!(
                "the {name} authorization has expired and cannot be renewed; reconnect {name}"
            ))
        })?;
        let renewed = self.oauth.refresh(&refresh_token).await?;
        self.save(&renewed).await?;
        Ok(renewed.access_token)
    }

    /// Where this user's set from this provider is kept in the vault.
    fn key(&self) -> VaultKey<'_> {
        VaultKey {
            user_id: &self.user_id,
            provider: self.provider,
        }
    }

    async fn save(&self, tokens: &TokenSet) -> Result<(), ToolError> {
        let sealed = self.sealer.seal(tokens)?;
        self.vault
            .store(self.key(), &sealed)
            .await
            .map_err(|err| vault_failed(self.provider, &err))?;
        self.remember(Some(tokens.clone()));
        Ok(())
    }

    fn cached_valid(&self) -> Option<String> {
        let cached = self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cached
            .as_ref()
            .filter(|tokens| !tokens.expires_within(EXPIRY_MARGIN, Utc::now()))
            .map(|tokens| tokens.access_token.clone())
    }

    fn remember(&self, tokens: Option<TokenSet>) {
        *self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tokens;
    }

    async fn load(&self) -> Result<TokenSet, ToolError> {
        self.load_optional().await?.ok_or_else(|| {
            let name = self.provider_name();
            ToolError::Failed(format!(
                "{name} is not connected; connect {name} in the integration settings first"
            ))
        })
    }

    /// Always reads the vault (the source of truth another instance may have renewed into).
    async fn load_optional(&self) -> Result<Option<TokenSet>, ToolError> {
        let sealed = self
            .vault
            .load(self.key())
            .await
            .map_err(|err| vault_failed(self.provider, &err))?;
        let tokens = match sealed {
            Some(sealed) => Some(self.sealer.open(&sealed)?),
            None => None,
        };
        self.remember(tokens.clone());
        Ok(tokens)
    }
}
