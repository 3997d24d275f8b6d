//! `GET /v1/threads/{id}/prompt`: the exact prompt and toolset a send would use now.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use promptgate_core::plan::{SendInput, UpstreamIdentity, plan_send};
use promptgate_core::tools::ToolSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
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
    let requested = match query.model {
        Some(m) => m,
        None => state
            .store
            .get_settings(&user.id)
            .await?
            .default_model
            .unwrap_or_else(|| state.config.default_model.clone()),
    };
    let ctx = state
        .store
        .load_send_context(&user.id, &thread_id, &requested)
        .await?;
    if ctx.thread.is_none() {
        return Err(ApiError::not_found("thread", &thread_id));
    }
    let model = ctx
        .model
        .as_ref()
        .ok_or_else(|| ApiError::not_found("model", &requested))?;
    let provider = state.config.provider(&model.provider);
    let api_key = provider
        .and_then(|p| p.api_key_env.as_deref())
        .and_then(|var| std::env::var(var).ok());
    let last_user_text = query.message.unwrap_or_default();
    let plan = plan_send(
        &SendInput {
            settings: &ctx.settings,
            integrations: &ctx.integrations,
            model,
            upstream: UpstreamIdentity {
                provider: &model.provider,
                base_url: provider.and_then(|p| p.base_url.as_deref()).unwrap_or(""),
                api_key: api_key.as_deref(),
            },
            project: ctx.project.as_ref(),
            sibling_count: ctx.sibling_count,
            skills: &ctx.skills,
            mcp_servers: &[],
            last_user_text: &last_user_text,
            ask_responses: &[],
            voice_mode: false,
            client_env: "web",
            app_version: None,
            regeneration_revision: 0,
        },
        Utc::now(),
    );
    Ok(Json(PromptPreview {
        model: model.id.clone(),
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
