//! `GET /v1/threads/{id}/prompt`: the exact prompt and toolset a send would use now.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, State};
use promptgate_core::tools::ToolSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::CurrentUser;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/threads/{id}/prompt",
        get_with(preview, |op| {
            op.summary("The prompt and toolset a send to this thread would use now").description(
                "`stable` is byte-identical between sends until a setting changes; `volatile` is the date line; \
                 `system` is what the model receives for its engine; `notes` are the per-send notes.",
            )
        }),
    )
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewQuery {
    /// Model id; default: your settings' default model, then the server's.
    #[serde(default)]
    pub model: Option<String>,
    /// The text of a message you are about to send (its `/slug` tokens add skill instructions).
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct PromptPreview {
    pub model: String,
    pub stable: String,
    pub volatile: String,
    pub full: String,
    pub system: String,
    pub notes: Vec<String>,
    pub tools: Vec<ToolSpec>,
    pub has_web_tools: bool,
    pub harness_signature: String,
}

async fn preview(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiQuery(query): ApiQuery<PreviewQuery>,
) -> ApiResult<Json<PromptPreview>> {
    let prepared = state
        .service
        .preview(
            &user.id,
            &thread_id,
            query.model.as_deref(),
            query.message.as_deref(),
        )
        .await?;
    let plan = prepared.composed;
    Ok(Json(PromptPreview {
        model: prepared.model.id,
        stable: plan.parts.stable,
        volatile: plan.parts.volatile,
        full: plan.parts.full,
        system: plan.system,
        notes: plan.notes,
        tools: plan.tools,
        has_web_tools: plan.has_web_tools,
        harness_signature: plan.harness_signature,
    }))
}
