//! MCP elicitation: the questions a thread's running tool calls wait on, and answering one with a
//! plain API call, from any device and on any instance. The question itself reaches the client as
//! a `data-elicitation` part of the running answer; this is how the answer gets back.

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::extract::Path;
use promptgate_service::{ElicitationAction, ElicitationReply};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::validate::bounded_text;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

/// Longest elicitation id read from a request.
const MAX_ID_CHARS: usize = 256;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/threads/{id}/elicitations",
            get_with(list, |op| {
                op.summary("The questions MCP servers ask the user in the thread's running tool calls")
                    .description(
                        "Each item is the `data` of the `data-elicitation` part that showed it (state \
                         `waiting`), so a reloaded page or another browser can show the form. Answered, \
                         expired and cancelled ones are not listed.",
                    )
            }),
        )
        .api_route(
            "/v1/threads/{id}/elicitations/{elicitation_id}",
            post_with(answer, |op| {
                op.summary(
                    "Answer an MCP server's question: accept (with the form's content), decline or cancel",
                )
                .description(
                    "The waiting tool call receives the answer on whichever instance runs it, and the \
                         server gets it as its `ElicitResult`. `accept` of a form must carry `content` \
                         that fits the requested schema (`422 invalid_body` names the field otherwise); \
                         `accept` of a URL question means the user opened the page and carries no content. \
                         An elicitation already answered, expired (`[mcp] elicitation_timeout_secs`) or \
                         cancelled by Stop is refused with `409 conflict`. Answers with the part's `data` \
                         in its new state.",
                )
            }),
        )
}

/// A question as the user is shown it: the `data` of its `data-elicitation` part.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShownElicitation {
    pub elicitation_id: String,
    /// The MCP server that asks, by the name the user gave it.
    pub server: String,
    /// The tool call that waits for the answer.
    pub tool_call_id: String,
    /// `form` (fill in `requestedSchema`) or `url` (open `url` outside the app).
    pub mode: String,
    /// `waiting`, then `accepted`, `declined`, `cancelled` (by the user or Stop) or `expired`.
    pub state: String,
    pub message: String,
    /// Form mode: a flat JSON Schema object of string, number, integer, boolean and choice fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: http(s) only; never fetched by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long the call waits for the answer from when it asked.
    pub expires_in_secs: u64,
}

fn shown(data: Value) -> Option<ShownElicitation> {
    serde_json::from_value(data).ok()
}

async fn list(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
) -> ApiResult<Json<Vec<ShownElicitation>>> {
    let waiting = state.service.waiting_elicitations(&user.id, &thread_id).await?;
    Ok(Json(waiting.into_iter().filter_map(shown).collect()))
}

/// The user's answer, as the server receives it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElicitationAnswerBody {
    pub action: AnswerAction,
    /// The form's fields, for `accept` of a form only.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, Value>>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum AnswerAction {
    /// Form: the content is the answer. URL: the user opened the page.
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

async fn answer(
    Caller { state, user }: Caller,
    Path((thread_id, elicitation_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<ElicitationAnswerBody>,
) -> ApiResult<Json<ShownElicitation>> {
    bounded_text("elicitation_id", &elicitation_id, MAX_ID_CHARS)?;
    let action = match body.action {
        AnswerAction::Accept => ElicitationAction::Accept,
        AnswerAction::Decline => ElicitationAction::Decline,
        AnswerAction::Cancel => ElicitationAction::Cancel,
    };
    let reply = ElicitationReply {
        action,
        content: body.content.map(Value::Object),
    };
    let data = state
        .service
        .answer_elicitation(&user.id, &thread_id, &elicitation_id, reply)
        .await?;
    shown(data).map(Json).ok_or_else(|| {
        tracing::error!("a kept elicitation does not read back");
        ApiError::internal()
    })
}
