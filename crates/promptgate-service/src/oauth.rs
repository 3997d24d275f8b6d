//! Connecting the user's integrations: their state, the authorization-code flow with PKCE that
//! connects one (the pending authorizations live in the store, so the provider's callback may land
//! on any instance sharing the database), and disconnecting. Tokens go sealed into the store and
//! never into a result or a log.

use std::time::Duration;

use promptgate_core::settings::{IntegrationProvider, IntegrationState};
use promptgate_store::{OAuthPending, PendingLimits, PendingRefused};

use crate::consent::WaitingCall;
use crate::{Service, ServiceError};

/// What an integration's pending authorization keeps beside the PKCE verifier.
#[derive(serde::Serialize, serde::Deserialize)]
struct IntegrationDetails {
    /// The tool call that waits for this authorization mid-turn, if one does.
    #[serde(default)]
    waiting: Option<WaitingCall>,
}

/// How long a user has to finish the provider's consent screen.
const PENDING_TTL: Duration = Duration::from_secs(10 * 60);
/// Authorizations in flight across all users; beyond this, new ones are refused until some expire.
const MAX_PENDING: usize = 10_000;
/// Authorizations in flight per user; starting another drops that user's oldest, so one account
/// cannot crowd out everyone else.
const MAX_PENDING_PER_USER: usize = 8;
/// Longer `state`/`code` values than these are not ours or not plausible.
const MAX_STATE_LEN: usize = 256;
const MAX_CODE_LEN: usize = 4096;

pub(crate) fn limits() -> PendingLimits {
    PendingLimits {
        ttl: PENDING_TTL,
        per_user: MAX_PENDING_PER_USER,
        total: MAX_PENDING,
    }
}

/// What the provider's redirect brings back to the callback.
#[derive(Debug, Default)]
pub struct OAuthCallback {
    pub code: Option<String>,
    pub state: Option<String>,
    /// Set by the provider when the user declined or the request was refused.
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// The authorization server's issuer (RFC 9207), checked for MCP servers.
    pub iss: Option<String>,
}

/// The callback's `state`, when it is one we could have issued.
fn valid_state(callback: &OAuthCallback) -> Result<&str, ServiceError> {
    plausible(&callback.state, MAX_STATE_LEN, ServiceError::UnknownAuthorization)
}

/// The callback's code, when it has a plausible one.
pub(crate) fn valid_code(callback: &OAuthCallback) -> Result<&str, ServiceError> {
    plausible(
        &callback.code,
        MAX_CODE_LEN,
        ServiceError::MissingAuthorizationCode,
    )
}

/// A callback field that is present, not empty and at most `max` bytes; `refused` otherwise.
fn plausible(field: &Option<String>, max: usize, refused: ServiceError) -> Result<&str, ServiceError> {
    field
        .as_deref()
        .filter(|value| !value.is_empty() && value.len() <= max)
        .ok_or(refused)
}

fn clip(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

impl Service {
    pub async fn integration(
        &self,
        user_id: &str,
        provider: IntegrationProvider,
    ) -> Result<IntegrationState, ServiceError> {
        Ok(self.store.get_integration(user_id, provider).await?)
    }

    /// Turns an integration on or off; `connected: Some(false)` disconnects it. Connecting is only
    /// done by authorizing.
    pub async fn update_integration(
        &self,
        user_id: &str,
        provider: IntegrationProvider,
        enabled: Option<bool>,
        connected: Option<bool>,
    ) -> Result<IntegrationState, ServiceError> {
        let mut current = self.store.get_integration(user_id, provider).await?;
        if connected == Some(true) && !current.connected {
            return Err(ServiceError::ConnectByAuthorizing(provider));
        }
        if connected == Some(false) && current.connected {
            current = self.disconnect_integration(user_id, provider).await?;
        }
        if let Some(enabled) = enabled {
            current.enabled = enabled;
        }
        self.store.put_integration(user_id, provider, current).await?;
        tracing::info!(user = %user_id, provider = provider.as_str(), connected = current.connected, enabled = current.enabled, "integration updated");
        Ok(current)
    }

    /// Starts connecting an integration: the URL to send the user's browser to.
    pub async fn start_authorization(
        &self,
        user_id: &str,
        provider: IntegrationProvider,
    ) -> Result<String, ServiceError> {
        self.begin_authorization(user_id, provider, None).await
    }

    /// Starts connecting an integration on behalf of the tool call `waiting` mid-turn, if one
    /// waits (its callback then wakes it).
    pub(crate) async fn begin_authorization(
        &self,
        user_id: &str,
        provider: IntegrationProvider,
        waiting: Option<&WaitingCall>,
    ) -> Result<String, ServiceError> {
        let oauth = self
            .integrations
            .as_ref()
            .and_then(|i| i.oauth(provider))
            .ok_or(ServiceError::IntegrationNotConfigured(provider))?;
        let started = oauth.config().start_authorization().map_err(|err| {
            tracing::error!(provider = provider.as_str(), error = %err, "cannot build the authorization URL");
            ServiceError::Internal
        })?;
        let pending = OAuthPending {
            user_id: user_id.to_owned(),
            provider: provider.as_str().to_owned(),
            code_verifier: started.code_verifier.clone(),
            details: waiting
                .map(|waiting| {
                    serde_json::to_string(&IntegrationDetails {
                        waiting: Some(waiting.clone()),
                    })
                })
                .transpose()
                .map_err(|_| ServiceError::Internal)?,
        };
        match self
            .store
            .put_oauth_pending(&started.state, &pending, limits())
            .await?
        {
            Ok(()) => {}
            Err(PendingRefused::TooMany) => return Err(ServiceError::TooManyAuthorizations),
        }
        tracing::info!(user = %user_id, provider = provider.as_str(), "integration authorization started");
        Ok(started.url)
    }

    /// The pending authorization the callback's `state` names, taken out so that it serves once.
    pub(crate) async fn take_pending(&self, callback: &OAuthCallback) -> Result<OAuthPending, ServiceError> {
        let state = valid_state(callback)?;
        self.store
            .take_oauth_pending(state)
            .await?
            .ok_or(ServiceError::UnknownAuthorization)
    }

    /// Completes an authorization the provider redirected back: exchanges the code for tokens and
    /// marks the integration connected. Returns the provider's name for the page the browser shows.
    pub async fn complete_authorization(
        &self,
        provider: IntegrationProvider,
        callback: &OAuthCallback,
    ) -> Result<String, ServiceError> {
        let pending = self.take_pending(callback).await?;
        if pending.provider != provider.as_str() {
            return Err(ServiceError::UnknownAuthorization);
        }
        if let Some(error) = &callback.error {
            let detail = callback
                .error_description
                .as_deref()
                .map(|d| format!(": {}", clip(d, 200)))
                .unwrap_or_default();
            tracing::info!(user = %pending.user_id, provider = provider.as_str(), error = %clip(error, 60), "the provider refused the authorization");
            return Err(ServiceError::ProviderRefused(format!(
                "{} refused the authorization ({}){detail}",
                provider.as_str(),
                clip(error, 60)
            )));
        }
        let code = valid_code(callback)?;
        let tokens = self
            .integrations
            .as_ref()
            .and_then(|i| i.tokens(&self.store, &pending.user_id, provider))
            .ok_or(ServiceError::IntegrationNotConfigured(provider))?;
        let before = self.store.get_integration(&pending.user_id, provider).await?;
        tokens.connect(code, &pending.code_verifier).await.map_err(|err| {
            tracing::warn!(user = %pending.user_id, provider = provider.as_str(), error = %err, "completing the authorization failed");
            ServiceError::ProviderRefused(err.to_string())
        })?;
        // A user who never touched the integration gets it enabled by connecting; one who set
        // `enabled` keeps that choice. (An untouched integration reads as disconnected and disabled.)
        let untouched = before == IntegrationState::default();
        let now = IntegrationState {
            connected: true,
            enabled: before.enabled || untouched,
        };
        self.store
            .put_integration(&pending.user_id, provider, now)
            .await?;
        tracing::info!(user = %pending.user_id, provider = provider.as_str(), enabled = now.enabled, "integration connected");
        let details = pending
            .details
            .as_deref()
            .and_then(|text| serde_json::from_str::<IntegrationDetails>(text).ok());
        if let Some(waiting) = details.and_then(|details| details.waiting) {
            self.wake_waiting_call(&pending.user_id, &waiting).await;
        }
        Ok(tokens.provider_name().to_owned())
    }

    /// Revokes the grant where the provider supports it, forgets the tokens, and marks the
    /// integration disconnected (its `enabled` choice stays). Without an OAuth client for the
    /// provider the tokens are still forgotten.
    pub async fn disconnect_integration(
        &self,
        user_id: &str,
        provider: IntegrationProvider,
    ) -> Result<IntegrationState, ServiceError> {
        match self
            .integrations
            .as_ref()
            .and_then(|i| i.tokens(&self.store, user_id, provider))
        {
            Some(tokens) => tokens.disconnect().await.map_err(|err| {
                tracing::error!(user = %user_id, provider = provider.as_str(), error = %err, "forgetting the tokens failed");
                ServiceError::Internal
            })?,
            None => self.store.delete_integration_secret(user_id, provider).await?,
        }
        let mut current = self.store.get_integration(user_id, provider).await?;
        current.connected = false;
        self.store.put_integration(user_id, provider, current).await?;
        tracing::info!(user = %user_id, provider = provider.as_str(), "integration disconnected");
        Ok(current)
    }
}
