//! Sending messages: the AI SDK UI message stream (`POST /v1/chat`, `POST /v1/threads/{id}/messages`),
//! Stop, and the artifacts that `render_html` stores.

use aide::OperationOutput;
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as ApiResponse, StatusCode as ApiStatus};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use promptgate_turn::send::{SendError, SendHandle, SendInput, SendRequest};
use promptgate_turn::{SSE_DONE, TurnEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::validate::client_id;
use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/chat",
            post_with(chat, |op| {
                op.summary("Send a message the way useChat does; answers with the UI message stream").description(
                    "The body is what the AI SDK's DefaultChatTransport sends: `{id, messages, trigger, messageId?}` \
                     plus an optional `model`. `id` is the thread (created on first use); the stored history is \
                     authoritative and only the last message is new.",
                )
            }),
        )
        .api_route(
            "/v1/threads/{id}/messages",
            post_with(post_message, |op| op.summary("Send a message to an existing thread; answers with the UI message stream")),
        )
        .api_route(
            "/v1/chat/{id}/stop",
            post_with(stop, |op| op.summary("Stop the thread's running turn; its partial answer is saved as stopped")),
        )
        .api_route("/v1/artifacts/{id}", get_with(artifact, |op| op.summary("An HTML artifact, served sandboxed")))
}

/// `useChat`'s request body. Unknown fields (the transport's `body` option may add some) are ignored.
#[derive(Deserialize, JsonSchema)]
pub struct ChatBody {
    /// The thread id.
    pub id: String,
    /// The whole conversation as UI messages; only the last one is new.
    pub messages: Vec<Value>,
    /// `submit-message` (default) or `regenerate-message`.
    #[serde(default)]
    pub trigger: Option<String>,
    #[serde(default, rename = "messageId")]
    pub message_id: Option<String>,
    /// Model id; default: your settings' default model, then the server's.
    #[serde(default)]
    pub model: Option<String>,
    /// An automatic retry of this turn id: the web budget and sources carry over.
    #[serde(default, rename = "retryOf")]
    pub retry_of: Option<String>,
}

async fn chat(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<ChatBody>,
) -> ApiResult<UiStream> {
    client_id("id", &body.id)?;
    let input = match body.trigger.as_deref() {
        Some("regenerate-message") => SendInput::Regenerate,
        None | Some("submit-message") => {
            let last = body
                .messages
                .last()
                .ok_or_else(|| ApiError::invalid("messages must not be empty"))?;
            if last.get("role").and_then(Value::as_str) != Some("user") {
                return Err(ApiError::invalid(
                    "the last message must be the user's new message",
                ));
            }
            let parts = last
                .get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let id = last.get("id").and_then(Value::as_str).map(str::to_owned);
            if let Some(id) = &id {
                client_id("messages[-1].id", id)?;
            }
            SendInput::Message { id, parts }
        }
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "trigger {} is not supported; use submit-message or regenerate-message",
                crate::error::preview(other)
            )));
        }
    };
    let handle = state
        .turns
        .send(SendRequest {
            user_id: user.id,
            thread_id: body.id,
            create_thread: true,
            input,
            model: body.model,
            retry_of: body.retry_of,
        })
        .await
        .map_err(send_error)?;
    Ok(UiStream::new(handle))
}

/// A message for an existing thread: plain text, or UI message parts.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadMessage {
    pub message: MessageContent,
    #[serde(default)]
    pub model: Option<String>,
    /// An automatic retry of this turn id: the web budget and sources carry over.
    #[serde(default)]
    pub retry_of: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts { parts: Vec<Value> },
}

async fn post_message(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<ThreadMessage>,
) -> ApiResult<UiStream> {
    let parts = match body.message {
        MessageContent::Text(text) => vec![json!({"type": "text", "text": text})],
        MessageContent::Parts { parts } => parts,
    };
    let handle = state
        .turns
        .send(SendRequest {
            user_id: user.id,
            thread_id,
            create_thread: false,
            input: SendInput::Message { id: None, parts },
            model: body.model,
            retry_of: body.retry_of,
        })
        .await
        .map_err(send_error)?;
    Ok(UiStream::new(handle))
}

#[derive(Serialize, JsonSchema)]
pub struct StopResult {
    /// False when no turn was running in the thread.
    pub stopped: bool,
}

async fn stop(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Json<StopResult> {
    let stopped = state.turns.stop(&user.id, &thread_id);
    tracing::info!(user = %user.id, thread = %thread_id, stopped, "stop requested");
    Json(StopResult { stopped })
}

/// Content Security Policy for artifacts: inline code only, no network, in an opaque-origin sandbox.
const ARTIFACT_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     img-src data: blob:; font-src data:; media-src data: blob:; sandbox allow-scripts";

async fn artifact(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Html> {
    let artifact = state
        .store
        .get_artifact(&user.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("artifact", &id))?;
    Ok(Html(artifact.html))
}

/// A sandboxed HTML document.
pub struct Html(String);

impl Html {
    pub fn new(html: String) -> Self {
        Self(html)
    }
}

impl IntoResponse for Html {
    fn into_response(self) -> Response {
        let mut res = self.0.into_response();
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(ARTIFACT_CSP),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-cache"),
        );
        res
    }
}

impl OperationOutput for Html {
    type Inner = String;

    fn operation_response(_ctx: &mut GenContext, _op: &mut Operation) -> Option<ApiResponse> {
        let mut res = ApiResponse {
            description: "The HTML document, under a sandboxing CSP".into(),
            ..Default::default()
        };
        res.content.insert("text/html".into(), MediaType::default());
        Some(res)
    }

    fn inferred_responses(ctx: &mut GenContext, op: &mut Operation) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(ApiStatus::Code(200)), r)])
            .unwrap_or_default()
    }
}

pub(crate) fn send_error(err: SendError) -> ApiError {
    match err {
        SendError::UnknownThread(id) => ApiError::not_found("thread", &id),
        SendError::UnknownModel(id) => ApiError::not_found("model", &id),
        SendError::ProviderMissing(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "provider_unavailable",
            err.to_string(),
        ),
        SendError::Busy(_) => ApiError::new(StatusCode::CONFLICT, "turn_in_progress", err.to_string()),
        SendError::InvalidMessage(m) => ApiError::invalid(m),
        SendError::Overloaded(_) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", err.to_string())
        }
        SendError::Store(e) => e.into(),
    }
}

/// An SSE response: never cached, never buffered by proxies.
pub(crate) fn event_stream(body: Body) -> Response {
    let mut res = Response::new(body);
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

/// The AI SDK UI message stream: one `data: <chunk>` event per chunk, `: keep-alive` comments while
/// tools run, then `data: [DONE]`. Dropping the body (client disconnect) stops the turn.
pub struct UiStream(SendHandle);

impl UiStream {
    pub fn new(handle: SendHandle) -> Self {
        Self(handle)
    }
}

impl IntoResponse for UiStream {
    fn into_response(self) -> Response {
        let handle = self.0;
        let watch = crate::observe::TurnWatch::start("chat", &handle.turn_id, &handle.model_id);
        let frames = crate::observe::watch_turn(watch, handle.events)
            .map(|event: TurnEvent| Ok::<_, std::convert::Infallible>(event.to_sse()))
            .chain(futures::stream::once(async { Ok(SSE_DONE.to_owned()) }));
        let mut res = event_stream(Body::from_stream(frames));
        let headers = res.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        headers.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
        if let Ok(turn) = HeaderValue::from_str(&handle.turn_id) {
            headers.insert("x-promptgate-turn-id", turn);
        }
        res
    }
}

impl OperationOutput for UiStream {
    type Inner = ();

    fn operation_response(_ctx: &mut GenContext, _op: &mut Operation) -> Option<ApiResponse> {
        let mut res = ApiResponse {
            description:
                "Server-Sent Events in the AI SDK UI message stream protocol (v1), ending with `data: [DONE]`"
                    .into(),
            ..Default::default()
        };
        res.content
            .insert("text/event-stream".into(), MediaType::default());
        Some(res)
    }

    fn inferred_responses(ctx: &mut GenContext, op: &mut Operation) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(ApiStatus::Code(200)), r)])
            .unwrap_or_default()
    }
}
