//! Connecting an integration: `GET /v1/integrations/{provider}/authorize` starts an
//! authorization-code flow with PKCE, `GET /v1/integrations/{provider}/callback` completes it, and
//! [`disconnect`] undoes it. Tokens go sealed into the store and never into a response or a log.

use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use promptgate_core::settings::{IntegrationState, Provider};
use promptgate_store::{OAuthPending, PendingLimits, PendingRefused};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::integrations::provider;
use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

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

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/integrations/{provider}/authorize",
            get_with(authorize, |op| {
                op.summary("Start connecting an integration: the URL to send the user's browser to")
            }),
        )
        .api_route(
            "/v1/integrations/{provider}/callback",
            get_with(callback, |op| {
                op.summary(
                    "Where the provider redirects the browser; completes the connection (no Authorization header: `state` identifies the user)",
                )
            }),
        )
}

/// Where the pending authorizations live: the store, so the provider's callback may land on any
/// instance sharing the database, not only on the one that started the flow.
fn limits() -> PendingLimits {
    PendingLimits {
        ttl: PENDING_TTL,
        per_user: MAX_PENDING_PER_USER,
        total: MAX_PENDING,
    }
}

#[derive(Serialize, JsonSchema)]
pub struct AuthorizationStart {
    /// Open this in the user's browser; the provider redirects back to the callback.
    pub authorization_url: String,
}

fn not_configured(p: Provider) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "integration_not_configured",
        format!(
            "this server has no OAuth client for {}; see [integrations] in the configuration",
            p.as_str()
        ),
    )
}

async fn authorize(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> ApiResult<Json<AuthorizationStart>> {
    let p = provider(&name)?;
    let oauth = state
        .turns
        .integrations()
        .and_then(|i| i.oauth(p))
        .ok_or_else(|| not_configured(p))?;
    let started = oauth.config().start_authorization().map_err(|err| {
        tracing::error!(provider = p.as_str(), error = %err, "cannot build the authorization URL");
        ApiError::internal()
    })?;
    let pending = OAuthPending {
        user_id: user.id.clone(),
        provider: p.as_str().to_owned(),
        code_verifier: started.code_verifier.clone(),
    };
    match state
        .store
        .put_oauth_pending(&started.state, &pending, limits())
        .await?
    {
        Ok(()) => {}
        Err(PendingRefused::TooMany) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_authorizations",
                "too many integration authorizations are in progress; try again in a few minutes",
            ));
        }
    }
    tracing::info!(user = %user.id, provider = p.as_str(), "integration authorization started");
    Ok(Json(AuthorizationStart {
        authorization_url: started.url,
    }))
}

#[derive(Deserialize, JsonSchema)]
pub struct CallbackQuery {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    /// Set by the provider when the user declined or the request was refused.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_description: Option<String>,
}

fn bad_state() -> ApiError {
    ApiError::bad_request(
        "invalid_state",
        "this authorization is unknown, was already used or has expired; start connecting again",
    )
}

fn clip(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

async fn callback(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<CallbackQuery>,
) -> ApiResult<Html<String>> {
    let p = provider(&name)?;
    let key = query
        .state
        .as_deref()
        .filter(|s| !s.is_empty() && s.len() <= MAX_STATE_LEN)
        .ok_or_else(bad_state)?;
    let pending = state.store.take_oauth_pending(key).await?.ok_or_else(bad_state)?;
    if pending.provider != p.as_str() {
        return Err(bad_state());
    }
    if let Some(error) = &query.error {
        let detail = query
            .error_description
            .as_deref()
            .map(|d| format!(": {}", clip(d, 200)))
            .unwrap_or_default();
        tracing::info!(user = %pending.user_id, provider = p.as_str(), error = %clip(error, 60), "the provider refused the authorization");
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "provider_error",
            format!(
                "{} refused the authorization ({}){detail}",
                p.as_str(),
                clip(error, 60)
            ),
        ));
    }
    let code = query
        .code
        .as_deref()
        .filter(|c| !c.is_empty() && c.len() <= MAX_CODE_LEN)
        .ok_or_else(|| {
            ApiError::bad_request("invalid_callback", "the callback carries no authorization code")
        })?;
    let tokens = state
        .turns
        .integrations()
        .and_then(|i| i.tokens(&state.store, &pending.user_id, p))
        .ok_or_else(|| not_configured(p))?;
    let before = state.store.get_integration(&pending.user_id, p).await?;
    tokens.connect(code, &pending.code_verifier).await.map_err(|err| {
        tracing::warn!(user = %pending.user_id, provider = p.as_str(), error = %err, "completing the authorization failed");
        ApiError::new(StatusCode::BAD_GATEWAY, "provider_error", err.to_string())
    })?;
    // A user who never touched the integration gets it enabled by connecting; one who set
    // `enabled` keeps that choice. (An untouched integration reads as disconnected and disabled.)
    let untouched = before == IntegrationState::default();
    let now = IntegrationState {
        connected: true,
        enabled: before.enabled || untouched,
    };
    state.store.put_integration(&pending.user_id, p, now).await?;
    tracing::info!(user = %pending.user_id, provider = p.as_str(), enabled = now.enabled, "integration connected");
    let name = tokens.provider_name();
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} connected</title></head>\
         <body><p>{name} is connected. You can close this window.</p></body></html>"
    )))
}

/// Revokes the grant where the provider supports it, forgets the tokens, and marks the integration
/// disconnected (its `enabled` choice stays). Without an OAuth client for the provider the tokens
/// are still forgotten.
pub(super) async fn disconnect(state: &AppState, user_id: &str, p: Provider) -> ApiResult<IntegrationState> {
    match state.turns.integrations().and_then(|i| i.tokens(&state.store, user_id, p)) {
        Some(tokens) => tokens.disconnect().await.map_err(|err| {
            tracing::error!(user = %user_id, provider = p.as_str(), error = %err, "forgetting the tokens failed");
            ApiError::internal()
        })?,
        None => state.store.delete_integration_secret(user_id, p).await?,
    }
    let mut current = state.store.get_integration(user_id, p).await?;
    current.connected = false;
    state.store.put_integration(user_id, p, current).await?;
    tracing::info!(user = %user_id, provider = p.as_str(), "integration disconnected");
    Ok(current)
}
