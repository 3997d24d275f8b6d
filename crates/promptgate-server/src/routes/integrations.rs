//! `GET /v1/integrations`, `GET/PUT/DELETE /v1/integrations/{provider}`, and the OAuth flow that
//! connects one: `GET /v1/integrations/{provider}/authorize` starts an authorization-code flow with
//! PKCE and hands out the provider's URL, `GET /v1/integrations/{provider}/callback` completes it, and
//! `DELETE /v1/integrations/{provider}` undoes it. The flow itself is the service's; tokens never reach
//! a response or a log.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use promptgate_core::settings::{IntegrationProvider, IntegrationState};
use promptgate_service::OAuthCallback;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::summary;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/integrations",
            get_with(list, summary("Both integrations and their state")),
        )
        .api_route(
            "/v1/integrations/{provider}",
            get_with(get_one, summary("One integration (`google` or `microsoft`)"))
                .put_with(put_one, summary("Enable or disable an integration; `connected: false` disconnects it"))
                .delete_with(delete_one, summary("Disconnect: revoke the grant where the provider supports it and forget the tokens")),
        )
        .api_route(
            "/v1/integrations/{provider}/authorize",
            get_with(authorize, summary("Start connecting an integration: the URL to send the user's browser to")),
        )
        .api_route(
            "/v1/integrations/{provider}/callback",
            get_with(callback, summary("Where the provider redirects the browser; completes the connection (no Authorization header: `state` identifies the user)")),
        )
}

#[derive(Serialize, JsonSchema)]
pub struct IntegrationView {
    pub provider: IntegrationProvider,
    /// Tokens are stored for this provider.
    pub connected: bool,
    /// Its tools are offered when connected.
    pub enabled: bool,
}

#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IntegrationUpdate {
    pub enabled: Option<bool>,
    pub connected: Option<bool>,
}

fn provider(name: &str) -> Result<IntegrationProvider, ApiError> {
    IntegrationProvider::parse(name).ok_or_else(|| ApiError::not_found("integration provider", name))
}

fn view(provider: IntegrationProvider, state: IntegrationState) -> IntegrationView {
    IntegrationView {
        provider,
        connected: state.connected,
        enabled: state.enabled,
    }
}

async fn list(Caller { state, user }: Caller) -> ApiResult<Json<Vec<IntegrationView>>> {
    let mut out = Vec::new();
    for p in IntegrationProvider::ALL {
        out.push(view(p, state.service.integration(&user.id, p).await?));
    }
    Ok(Json(out))
}

async fn get_one(
    Caller { state, user }: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<IntegrationView>> {
    let p = provider(&name)?;
    Ok(Json(view(p, state.service.integration(&user.id, p).await?)))
}

async fn put_one(
    Caller { state, user }: Caller,
    Path(name): Path<String>,
    ApiJson(update): ApiJson<IntegrationUpdate>,
) -> ApiResult<Json<IntegrationView>> {
    let p = provider(&name)?;
    let current = state
        .service
        .update_integration(&user.id, p, update.enabled, update.connected)
        .await?;
    Ok(Json(view(p, current)))
}

async fn delete_one(
    Caller { state, user }: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<IntegrationView>> {
    let p = provider(&name)?;
    let current = state.service.disconnect_integration(&user.id, p).await?;
    Ok(Json(view(p, current)))
}

#[derive(Serialize, JsonSchema)]
pub struct AuthorizationStart {
    /// Open this in the user's browser; the provider (or authorization server) redirects back to
    /// the callback.
    pub authorization_url: String,
}

async fn authorize(
    Caller { state, user }: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<AuthorizationStart>> {
    let p = provider(&name)?;
    let authorization_url = state.service.start_authorization(&user.id, p).await?;
    Ok(Json(AuthorizationStart { authorization_url }))
}

#[derive(Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The authorization server's issuer (RFC 9207): checked for MCP servers, where it is sent or
    /// promised.
    pub iss: Option<String>,
    /// Set by the provider when the user declined or the request was refused.
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl From<CallbackQuery> for OAuthCallback {
    fn from(query: CallbackQuery) -> Self {
        OAuthCallback {
            code: query.code,
            state: query.state,
            error: query.error,
            error_description: query.error_description,
            iss: query.iss,
        }
    }
}

async fn callback(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<CallbackQuery>,
) -> ApiResult<Html<String>> {
    let p = provider(&name)?;
    let callback = OAuthCallback::from(query);
    let name = state.service.complete_authorization(p, &callback).await?;
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} connected</title></head>\
         <body><p>{name} is connected. You can close this window.</p></body></html>"
    )))
}
