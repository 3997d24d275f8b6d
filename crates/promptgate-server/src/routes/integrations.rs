//! `GET /v1/integrations`, `GET/PUT/DELETE /v1/integrations/{provider}`, and the OAuth flow that
//! connects one: `authorize` hands out the provider's URL, `callback` completes it.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, State};
use promptgate_core::settings::{IntegrationState, Provider};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/integrations",
            get_with(list, |op| op.summary("Both integrations and their state")),
        )
        .api_route(
            "/v1/integrations/{provider}",
            get_with(get_one, |op| {
                op.summary("One integration (`google` or `microsoft`)")
            })
            .put_with(put_one, |op| {
                op.summary("Enable or disable an integration; `connected: false` disconnects it")
            })
            .delete_with(delete_one, |op| {
                op.summary(
                    "Disconnect: revoke the grant where the provider supports it and forget the tokens",
                )
            }),
        )
        .merge(super::oauth::routes())
}

#[derive(Serialize, JsonSchema)]
pub struct IntegrationView {
    pub provider: Provider,
    /// Tokens are stored for this provider.
    pub connected: bool,
    /// Its tools are offered when connected.
    pub enabled: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntegrationUpdate {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub connected: Option<bool>,
}

pub(super) fn provider(name: &str) -> Result<Provider, ApiError> {
    Provider::parse(name).ok_or_else(|| ApiError::not_found("integration provider", name))
}

pub(super) fn view(provider: Provider, state: IntegrationState) -> IntegrationView {
    IntegrationView {
        provider,
        connected: state.connected,
        enabled: state.enabled,
    }
}

async fn list(State(state): State<AppState>, user: CurrentUser) -> ApiResult<Json<Vec<IntegrationView>>> {
    let mut out = Vec::new();
    for p in Provider::ALL {
        out.push(view(p, state.service.integration(&user.id, p).await?));
    }
    Ok(Json(out))
}

async fn get_one(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> ApiResult<Json<IntegrationView>> {
    let p = provider(&name)?;
    Ok(Json(view(p, state.service.integration(&user.id, p).await?)))
}

async fn put_one(
    State(state): State<AppState>,
    user: CurrentUser,
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
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> ApiResult<Json<IntegrationView>> {
    let p = provider(&name)?;
    let current = state.service.disconnect_integration(&user.id, p).await?;
    Ok(Json(view(p, current)))
}
