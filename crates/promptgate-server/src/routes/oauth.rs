//! Connecting an integration: `GET /v1/integrations/{provider}/authorize` starts an
//! authorization-code flow with PKCE, `GET /v1/integrations/{provider}/callback` completes it, and
//! `DELETE /v1/integrations/{provider}` undoes it. The flow itself is the service's; tokens never
//! reach a response or a log.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use promptgate_service::OAuthCallback;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::integrations::provider;
use crate::auth::CurrentUser;
use crate::error::ApiResult;
use crate::state::AppState;

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

#[derive(Serialize, JsonSchema)]
pub struct AuthorizationStart {
    /// Open this in the user's browser; the provider redirects back to the callback.
    pub authorization_url: String,
}

async fn authorize(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> ApiResult<Json<AuthorizationStart>> {
    let p = provider(&name)?;
    let authorization_url = state.service.start_authorization(&user.id, p).await?;
    Ok(Json(AuthorizationStart { authorization_url }))
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

async fn callback(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<CallbackQuery>,
) -> ApiResult<Html<String>> {
    let p = provider(&name)?;
    let callback = OAuthCallback {
        code: query.code,
        state: query.state,
        error: query.error,
        error_description: query.error_description,
    };
    let name = state.service.complete_authorization(p, &callback).await?;
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} connected</title></head>\
         <body><p>{name} is connected. You can close this window.</p></body></html>"
    )))
}
