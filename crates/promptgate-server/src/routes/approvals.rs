//! Tool approvals: the calls a thread waits for, and answering them with a plain API call (a
//! second device, a notification, a client without `useChat`). `useChat`'s own answer arrives on
//! `POST /v1/chat` as the continued assistant message; [`continuation`] reads it from there.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::Path;
use axum::http::HeaderMap;
use promptgate_service::{ApprovalReply, MAX_APPROVAL_REASON, MAX_APPROVAL_REPLIES, SendInput, SendRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::chat::{UiStream, ui_send};
use super::validate::bounded_text;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use crate::ui_stream::requested_version;

/// Longest approval id or tool call id read from a request.
const MAX_ID_CHARS: usize = 256;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/threads/{id}/approvals",
        get_with(list, |op| {
            op.summary("The tool calls the thread waits for: each needs the user's approve or deny")
        })
        .post_with(answer, |op| {
            op.summary("Approve or deny the calls the thread waits for; answers with the continued turn's UI message stream")
                .description(
                    "Every call waiting in the message is answered at once (`answers`, one per `approval_id`). \
                     The answer is checked against what the server stored when it asked, on any instance and after \
                     a restart: an unknown, already answered or cancelled approval is refused with \
                     `409 approval_refused`. An approved call runs, a denied one gets `tool-output-denied` and the \
                     model reads the reason; a call whose approval expired (`[approval] expiry_secs`) counts as \
                     denied. The stream continues the same assistant message, like `POST /v1/chat` with \
                     `useChat`'s `addToolApprovalResponse`; it takes the same `X-Promptgate-UI-Stream` header.",
                )
        }),
    )
}

/// A call waiting for the user.
#[derive(Serialize, JsonSchema)]
pub struct WaitingApproval {
    pub approval_id: String,
    /// The assistant message that asked (its tool part is in state `approval-requested`).
    pub message_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: Value,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// Epoch milliseconds; an answer after it counts as a denial.
    pub expires_at: i64,
    pub expired: bool,
}

async fn list(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
) -> ApiResult<Json<Vec<WaitingApproval>>> {
    let waiting = state.service.waiting_approvals(&user.id, &thread_id).await?;
    Ok(Json(
        waiting
            .into_iter()
            .map(|a| WaitingApproval {
                input: serde_json::from_str(&a.input).unwrap_or(Value::Null),
                approval_id: a.approval_id,
                message_id: a.message_id,
                tool_call_id: a.tool_call_id,
                tool_name: a.tool_name,
                created_at: a.created_at,
                expires_at: a.expires_at,
                expired: a.expired,
            })
            .collect(),
    ))
}

/// The user's answers.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    pub answers: Vec<AnswerItem>,
    /// Model id for the continued turn; default: your settings' default model, then the server's.
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerItem {
    pub approval_id: String,
    pub approved: bool,
    /// Why; the model reads it with a denial.
    #[serde(default)]
    pub reason: Option<String>,
}

async fn answer(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<AnswerBody>,
) -> ApiResult<UiStream> {
    let version = requested_version(&headers, &state.config.ui_stream)?;
    check_count(body.answers.len())?;
    let mut replies = Vec::with_capacity(body.answers.len());
    for (n, item) in body.answers.into_iter().enumerate() {
        bounded_text(
            &format!("answers[{n}].approval_id"),
            &item.approval_id,
            MAX_ID_CHARS,
        )?;
        if let Some(reason) = &item.reason {
            bounded_text(&format!("answers[{n}].reason"), reason, MAX_APPROVAL_REASON)?;
        }
        replies.push(ApprovalReply {
            approval_id: item.approval_id,
            approved: item.approved,
            reason: item.reason,
            tool_call_id: None,
            input: None,
        });
    }
    let input = SendInput::Approval(replies);
    let handle = state
        .service
        .send(SendRequest {
            model: body.model,
            ..ui_send(&state, user, &headers, version, thread_id, input)
        })
        .await?;
    Ok(UiStream::new(handle, version))
}

fn check_count(count: usize) -> Result<(), ApiError> {
    if count == 0 || count > MAX_APPROVAL_REPLIES {
        return Err(ApiError::invalid(format!(
            "answers has {count} entries; between 1 and {MAX_APPROVAL_REPLIES} are accepted"
        )));
    }
    Ok(())
}

/// The answers a `useChat` request carries: its last message is the assistant message that
/// asked, with parts in state `approval-responded` (`addToolApprovalResponse`). `None` when the
/// request is not such an answer.
pub fn continuation(last: &Value) -> Result<Option<Vec<ApprovalReply>>, ApiError> {
    if last.get("role").and_then(Value::as_str) != Some("assistant") {
        return Ok(None);
    }
    let parts = last
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let responded: Vec<&Value> = parts
        .iter()
        .filter(|part| part.get("state").and_then(Value::as_str) == Some("approval-responded"))
        .collect();
    if responded.is_empty() {
        return Ok(None);
    }
    check_count(responded.len())?;
    responded
        .into_iter()
        .map(reply_of_part)
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn reply_of_part(part: &Value) -> Result<ApprovalReply, ApiError> {
    let approval = part.get("approval").unwrap_or(&Value::Null);
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(approval_id), Some(approved)) = (
        text(approval, "id"),
        approval.get("approved").and_then(Value::as_bool),
    ) else {
        return Err(ApiError::invalid(
            "a tool part in state approval-responded needs approval.id and approval.approved",
        ));
    };
    bounded_text("approval.id", &approval_id, MAX_ID_CHARS)?;
    let reason = text(approval, "reason");
    if let Some(reason) = &reason {
        bounded_text("approval.reason", reason, MAX_APPROVAL_REASON)?;
    }
    Ok(ApprovalReply {
        approval_id,
        approved,
        reason,
        tool_call_id: text(part, "toolCallId"),
        input: part.get("input").cloned(),
    })
}
