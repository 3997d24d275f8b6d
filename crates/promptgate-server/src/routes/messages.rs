//! `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic Messages API over the same
//! engine, for Anthropic's SDKs and Claude Code, whatever provider serves the model. The server's
//! tools run here, unseen; the client's own tools come back to it as `tool_use` blocks. Nothing of
//! the answer is stored. Errors take Anthropic's shape (`{"type": "error", "error": {"type",
//! "message"}, "request_id"}`), and the token may come as `x-api-key` as well as a bearer token.

use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use promptgate_service::events::TurnEvent;
use promptgate_service::facade::{FileTexts, messages_documents, messages_history, messages_tools};
use promptgate_service::records::UsageKind;
use promptgate_service::{CompletionRequest, OutputCap};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::{Caller, CurrentUser};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiJson;
use crate::facade_stream::{Answering, FacadeAnswer, answering, watched};
use crate::messages_api::{MessageEvents, MessageIdentity, WholeMessage, error_body};
use crate::state::AppState;

/// The most an Anthropic error body is read to be rewritten; ours are a few hundred bytes.
const MAX_ERROR_BODY: usize = 64 << 10;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/messages",
            post_with(messages, |op| {
                op.summary("Anthropic Messages API (streamed or not); the server's tools run on the server")
                    .description(
                        "For Anthropic's SDKs and Claude Code (`ANTHROPIC_BASE_URL` = this server), over any \
                         configured provider. The system prompt and tools come from your settings, as for a send; \
                         your `system` follows it. Your `tools` are offered beside the server's: a call to one ends \
                         the message with `stop_reason: \"tool_use\"`, and your next request, with the \
                         `tool_result`, continues the turn. `model` is one of this server's model ids. \
                         `max_tokens` holds on Anthropic providers, within the provider's configured \
                         `max_tokens`; other providers answer within their model's configuration. \
                         `tool_choice.disable_parallel_tool_use` asks for one tool call per step. Sampling \
                         and `thinking` settings are the model's configuration's; `anthropic-version` and \
                         `anthropic-beta` are accepted and change nothing. Auth: \
                         `Authorization: Bearer <token>` or `x-api-key: <token>`. Errors are Anthropic's shape.",
                    )
            }),
        )
}

/// `count_tokens`: the Messages API's shape, but no stream, so it is held to the request timeout
/// (it reads the request's PDFs and asks the user's MCP servers for their tools).
pub fn counting_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/messages/count_tokens",
            post_with(count_tokens, |op| {
                op.summary("Estimate a Messages request's input tokens").description(
                    "`{\"input_tokens\": N}`: how many tokens the model would be sent for this request, the \
                     server's prompt and tools included, counted as a send counts them (the model's tokenizer \
                     for OpenAI's models, else an estimate on the high side).",
                )
            }),
        )
}

/// The fields we read; the others (sampling, `thinking`, `metadata`, …) are accepted and left to
/// the model's configuration.
#[derive(Deserialize, JsonSchema)]
pub struct MessagesBody {
    /// One of this server's model ids; default: your settings' default model, then the server's.
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<Value>,
    /// A string, or text blocks.
    #[serde(default)]
    pub system: Option<Value>,
    /// Your tools: `[{name, description?, input_schema}]`. Provider tools (with another `type`) are
    /// not offered.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `{"type": "auto" | "any" | "tool" (with `name`) | "none"}`, with
    /// `disable_parallel_tool_use`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// The longest answer, in tokens; at least 1. Anthropic's API requires it, so clients send a
    /// fixed, often large number: see the operation's description for where it holds.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub stream: bool,
    #[serde(flatten)]
    #[schemars(skip)]
    pub ignored: Map<String, Value>,
}

impl MessagesBody {
    /// The request in the engine's terms, its PDF documents read by the server's file reader.
    async fn completion(self, state: &AppState, user: CurrentUser) -> ApiResult<(CompletionRequest, bool)> {
        let CurrentUser { id: user_id, key_id } = user;
        let documents = messages_documents(&self.messages);
        let files = if documents.is_empty() {
            FileTexts::default()
        } else {
            state.service.read_files(&user_id, &documents).await
        };
        let conversation = messages_history(self.system.as_ref(), &self.messages, &files)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        if self.max_tokens == Some(0) {
            return Err(ApiError::invalid("max_tokens: must be at least 1"));
        }
        let one_call_per_step = self
            .tool_choice
            .as_ref()
            .and_then(|choice| choice.get("disable_parallel_tool_use"))
            .and_then(Value::as_bool)
            == Some(true);
        let (client_tools, tool_choice) = messages_tools(self.tools.as_deref(), self.tool_choice.as_ref())
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        let request = CompletionRequest {
            user_id,
            model: self.model,
            conversation,
            client_tools,
            tool_choice,
            // Anthropic's field names mean nothing to another provider's API: none pass through.
            extra: Map::new(),
            parallel_tool_calls: one_call_per_step.then_some(false),
            output_cap: self.max_tokens.map(OutputCap::Required),
            on_end: Vec::new(),
            key_id,
            facade: UsageKind::Messages,
            streamed: self.stream,
        };
        Ok((request, self.stream))
    }
}

async fn messages(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<MessagesBody>,
) -> ApiResult<Message> {
    let (request, stream) = body.completion(&state, user).await?;
    let handle = state.service.complete(request).await?;
    let identity = MessageIdentity {
        id: format!("msg_{}", handle.turn_id.trim_start_matches("turn_")),
        model: handle.model_id.clone(),
    };
    let events = match answering(watched("messages", handle), stream).await {
        Answering::Stream(events) => {
            return Ok(Message::Stream(Box::new((events, MessageEvents::new(identity)))));
        }
        Answering::Whole(events) => events,
    };
    let whole = super::completions::read_whole(&state, WholeMessage::new(identity), events)
        .await
        .ok_or_else(ApiError::internal)?;
    whole
        .finish_json()
        .map(Message::Whole)
        .map_err(super::completions::whole_turn_failed)
}

impl super::completions::Fold for WholeMessage {
    fn push(&mut self, event: &TurnEvent) {
        WholeMessage::push(self, event);
    }
}

#[derive(Serialize, JsonSchema)]
pub struct TokenCount {
    pub input_tokens: u64,
}

async fn count_tokens(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<MessagesBody>,
) -> ApiResult<axum::Json<TokenCount>> {
    let (request, _) = body.completion(&state, user).await?;
    let input_tokens = state.service.count_input_tokens(request).await?;
    Ok(axum::Json(TokenCount { input_tokens }))
}

type Message = FacadeAnswer<MessageEvents>;

crate::api_doc::json_or_event_stream_output!(
    Message,
    "A `message` object, or with `stream: true` Anthropic's events from `message_start` \
         to `message_stop`"
);

/// Where Anthropic's clients put their key (Claude Code with `ANTHROPIC_API_KEY`, the SDKs before
/// 1.0); on these routes it is read as the bearer token when no `Authorization` header is sent.
pub const API_KEY: &str = "x-api-key";

/// Anthropic's conventions at the edge of these routes: the key of `x-api-key` is taken as the
/// bearer token, error responses are rewritten into Anthropic's shape, and the request is named as
/// Anthropic does (`request-id`). It wraps these routes only, outside the per-user limits, so their
/// refusals are rewritten too.
pub async fn anthropic_boundary(mut req: Request, next: Next) -> Response {
    bearer_from_api_key(req.headers_mut());
    let request_id = req.headers().get("x-request-id").cloned();
    let res = next.run(req).await;
    let status = res.status();
    let mut res = if status.is_client_error() || status.is_server_error() {
        rewrite_error(res).await
    } else {
        res
    };
    if let Some(id) = request_id {
        res.headers_mut().insert("request-id", id);
    }
    res
}

/// The key of `x-api-key` taken as the bearer token, for a route Anthropic's clients read besides
/// these (the model list), whose errors stay in this server's shape.
pub async fn api_key_as_bearer(mut req: Request, next: Next) -> Response {
    bearer_from_api_key(req.headers_mut());
    next.run(req).await
}

fn bearer_from_api_key(headers: &mut axum::http::HeaderMap) {
    if headers.contains_key(header::AUTHORIZATION) {
        return;
    }
    let Some(key) = headers.get(API_KEY).and_then(|key| key.to_str().ok()) else {
        return;
    };
    if let Ok(bearer) = HeaderValue::from_str(&format!("Bearer {}", key.trim())) {
        headers.insert(header::AUTHORIZATION, bearer);
    }
}

async fn rewrite_error(res: Response) -> Response {
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY).await else {
        let body = error_body(ErrorCode::for_status(parts.status), "an error occurred");
        return (parts.status, axum::Json(body)).into_response();
    };
    let ours: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let text_at = |pointer: &str| ours.pointer(pointer).and_then(Value::as_str);
    let message = text_at("/error/message").unwrap_or("an error occurred");
    // Every error body carries a code of the table; a body without one is named by its status.
    let code = text_at("/error/code")
        .and_then(ErrorCode::parse)
        .unwrap_or_else(|| ErrorCode::for_status(parts.status));
    // Anthropic answers a malformed request with 400, where this server says 422.
    if parts.status == StatusCode::UNPROCESSABLE_ENTITY {
        parts.status = StatusCode::BAD_REQUEST;
    }
    let request_id = text_at("/error/request_id");
    let body = error_body_with_id(code, message, request_id);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(serde_json::to_vec(&body).unwrap_or_default()))
}

/// An error answered before the request reached these routes (the admission gate's refusal), as
/// [`anthropic_boundary`] would have rewritten it: Anthropic's body with the request's id, and the
/// id in `request-id`.
pub fn anthropic_error(code: ErrorCode, message: &str, request_id: Option<&HeaderValue>) -> Response {
    let body = error_body_with_id(code, message, request_id.and_then(|id| id.to_str().ok()));
    let mut res = (code.status(), axum::Json(body)).into_response();
    if let Some(id) = request_id {
        res.headers_mut().insert("request-id", id.clone());
    }
    res
}

/// Anthropic's error body with the request's id beside the error, where Anthropic puts its own.
fn error_body_with_id(code: ErrorCode, message: &str, request_id: Option<&str>) -> Value {
    let mut body = error_body(code, message);
    if let Some(id) = request_id {
        body["request_id"] = Value::from(id);
    }
    body
}
