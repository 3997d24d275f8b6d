//! `GET /v1/threads/{id}/prompt`: the exact prompt and toolset a send would use now; `GET /v1/prompt`:
//! the same for the first send of a new chat.

use std::sync::LazyLock;

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::Path;
use promptgate_core::tools::ToolSpec;
use promptgate_service::{ContextReport, PreviewAsk, SendPreview, WebToolsOff};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiQuery;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/prompt",
            get_with(preview_new_chat, |op| {
                op.summary("The prompt and toolset the first send of a new chat would use now").description(
                    "The same answer as `GET /v1/threads/{id}/prompt`, for a chat that has no thread yet: `context` \
                     counts no messages. With `project_id` (one of your projects), the chat is taken to start in \
                     that project: its instructions are in the prompt, and `search_project_chats` is offered when \
                     the project has chats.",
                )
            }),
        )
        .api_route(
        "/v1/threads/{id}/prompt",
        get_with(preview, |op| {
            op.summary("The prompt and toolset a send to this thread would use now").description(
                "`stable` is byte-identical between sends until a setting changes; `volatile` is the date line; \
                 `system` is what the model receives for its engine (with the summary of the thread's older \
                 part, if it has one); `notes` are the per-send notes; `context` says how much of the thread \
                 the model would see.",
            )
        }),
    )
}

#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PreviewQuery {
    /// Model id; default: your settings' default model, then the server's.
    pub model: Option<String>,
    /// The text of a message you are about to send (its `/slug` tokens add skill instructions).
    pub message: Option<String>,
    /// The user talks by voice, as a send's `voice_mode` says: the notes ask for spoken replies.
    pub voice_mode: bool,
    /// A new chat only (`GET /v1/prompt`): the project it will be created in. A thread's project is
    /// the thread's own.
    pub project_id: Option<String>,
}

impl PreviewQuery {
    fn ask(&self) -> PreviewAsk<'_> {
        PreviewAsk {
            model: self.model.as_deref(),
            message: self.message.as_deref(),
            voice_mode: self.voice_mode,
        }
    }
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
    /// Each tool's approval policy by name: `allow` runs at once, `ask` waits for the user's
    /// approval (AI SDK 6+ clients; the others get the operator's `[approval] without_client`),
    /// `deny` is refused.
    pub tool_approval: std::collections::BTreeMap<String, promptgate_core::approval::ApprovalPolicy>,
    pub has_web_tools: bool,
    /// Why `has_web_tools` is false; absent when it is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_tools_off: Option<WebToolsOffReason>,
    /// An opaque digest of what a harness model's kept conversation depends on (the model and its
    /// provider, thinking level, stable prompt, regenerations): it changes when any of them does.
    /// Equal only within one server process.
    pub harness_signature: String,
    pub context: ContextReport,
}

/// Why a send offers no web tools: `settings` (your "Web tools" setting is off), `model` (the model
/// calls no tools), `no_search_backend` (this gateway has no search backend configured).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebToolsOffReason {
    Settings,
    Model,
    NoSearchBackend,
}

impl From<WebToolsOff> for WebToolsOffReason {
    fn from(reason: WebToolsOff) -> Self {
        match reason {
            WebToolsOff::Settings => Self::Settings,
            WebToolsOff::Model => Self::Model,
            WebToolsOff::NoBackend => Self::NoSearchBackend,
        }
    }
}

async fn preview(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
    ApiQuery(query): ApiQuery<PreviewQuery>,
) -> ApiResult<Json<PromptPreview>> {
    if query.project_id.is_some() {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "project_id is for a new chat (GET /v1/prompt); a thread's project is its own",
        ));
    }
    let prepared = state.service.preview(&user.id, &thread_id, query.ask()).await?;
    Ok(Json(PromptPreview::from(prepared)))
}

async fn preview_new_chat(
    Caller { state, user }: Caller,
    ApiQuery(query): ApiQuery<PreviewQuery>,
) -> ApiResult<Json<PromptPreview>> {
    let prepared = state
        .service
        .preview_new_chat(&user.id, query.project_id.as_deref(), query.ask())
        .await?;
    Ok(Json(PromptPreview::from(prepared)))
}

impl From<SendPreview> for PromptPreview {
    fn from(prepared: SendPreview) -> Self {
        let composed = prepared.composed;
        Self {
            context: prepared.context,
            model: prepared.model.id,
            stable: composed.parts.stable,
            volatile: composed.parts.volatile,
            full: composed.parts.full,
            system: composed.system,
            notes: composed.notes,
            tools: composed.tools,
            tool_approval: prepared.approvals,
            has_web_tools: composed.has_web_tools,
            web_tools_off: prepared.web_tools_off.map(WebToolsOffReason::from),
            harness_signature: opaque(&composed.harness_signature),
        }
    }
}

/// The harness signature as users may see it. The signature itself carries the provider's base URL
/// (often an internal address) and a hash of its key, which are the operator's business; a keyed
/// digest still changes whenever the signature does, and the key, drawn once per process, keeps
/// anyone from testing guesses of the address against it.
fn opaque(signature: &str) -> String {
    static KEY: LazyLock<[u8; 32]> = LazyLock::new(rand::random);
    let digest = super::artifacts::hmac_sha256(KEY.as_slice(), signature.as_bytes());
    hex::encode(&digest[..16])
}
