//! `GET /v1/threads/{id}/prompt`: the exact prompt and toolset a send would use now.

use std::sync::LazyLock;

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
                 `system` is what the model receives for its engine (with the summary of the thread's older \
                 part, if it has one); `notes` are the per-send notes; `context` says how much of the thread \
                 the model would see.",
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
    /// An opaque digest of what a harness model's kept conversation depends on (the model and its
    /// provider, thinking level, stable prompt, regenerations): it changes when any of them does.
    /// Equal only within one server process.
    pub harness_signature: String,
    pub context: PreviewContext,
}

/// How much of the thread the model would see: the newest turns that fit its context window, after
/// a summary of the older part or a note that it is left out.
#[derive(Serialize, JsonSchema)]
pub struct PreviewContext {
    /// How tokens are counted for this model: `o200k_base`, `cl100k_base` or `estimate`.
    pub tokenizer: String,
    /// The model's context window, in tokens.
    pub window_tokens: u64,
    /// The prompt as counted: system prompt, tools, the older part's block and the messages.
    pub prompt_tokens: u64,
    /// Messages of the thread sent as they are.
    pub sent_messages: u64,
    /// Older messages the summary stands in for.
    pub summarised_messages: u64,
    /// Older messages the model sees nothing of.
    pub dropped_messages: u64,
    /// The summary of the older part, as the model reads it.
    pub summary: Option<String>,
    /// The thread has outgrown the window: the next send compacts it (summarises or leaves out
    /// older turns) before it asks the model.
    pub compaction_due: bool,
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
    let composed = prepared.composed;
    let context = prepared.context;
    Ok(Json(PromptPreview {
        context: PreviewContext {
            tokenizer: context.tokenizer.to_owned(),
            window_tokens: context.window_tokens,
            prompt_tokens: context.prompt_tokens,
            sent_messages: context.sent_messages,
            summarised_messages: context.summarised_messages,
            dropped_messages: context.dropped_messages,
            summary: context.summary,
            compaction_due: context.compaction_due,
        },
        model: prepared.model.id,
        stable: composed.parts.stable,
        volatile: composed.parts.volatile,
        full: composed.parts.full,
        system: composed.system,
        notes: composed.notes,
        tools: composed.tools,
        has_web_tools: composed.has_web_tools,
        harness_signature: opaque(&composed.harness_signature),
    }))
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
