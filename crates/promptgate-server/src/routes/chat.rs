//! Sending messages: the AI SDK UI message stream (`POST /v1/chat`, `POST /v1/threads/{id}/messages`),
//! resuming it, and Stop.

use aide::OperationOutput;
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as ApiResponse, StatusCode as ApiStatus};
use axum::Json;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use promptgate_core::prompt::{AskAnswer, AskResponse};
use promptgate_service::events::UiStreamVersion;
use promptgate_service::{
    ClientIdentity, ClientNotes, Follow, FollowStream, MAX_FEED_BYTES, SendHandle, SendInput, SendRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::validate::{bounded_text, client_id, required_text};
use crate::auth::{Caller, CurrentUser};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiJson;
use crate::state::AppState;
use crate::ui_stream::requested_version;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/chat",
            post_with(chat, |op| {
                op.summary("Send a message the way useChat does; answers with the UI message stream").description(
                    "The body is what the AI SDK's DefaultChatTransport sends: `{id, messages, trigger, messageId?}` \
                     plus an optional `model`. `id` is the thread (created on first use); the stored history is \
                     authoritative and only the last message is new. Optional header \
                     `X-Promptgate-Client: <environment>[; version=<version>]` names the client (environment \
                     `web`, `ios`, `android`, `desktop` or `cli`; anything else counts as `desktop`; default `web`); \
                     a harness model's prompt says where it is talking to. Optional header \
                     `X-Promptgate-UI-Stream: v5 | v6 | v7` names the AI SDK major the client runs: the stream \
                     carries only the fields every release of it accepts (default: the server's \
                     `[ui_stream] default`, itself `v5`, which every release from 5.0.0 accepts).",
                )
            }),
        )
        .api_route(
            "/v1/threads/{id}/messages",
            post_with(post_message, |op| {
                op.summary("Send a message to an existing thread; answers with the UI message stream")
                    .description(
                        "Takes the same optional `X-Promptgate-Client` and `X-Promptgate-UI-Stream` headers as \
                         `POST /v1/chat`.",
                    )
            }),
        )
        .api_route(
            "/v1/chat/{id}/stream",
            get_with(resume, |op| {
                op.summary("Resume the thread's running turn: its UI message stream from `start`, then live")
                    .description(
                        "What the AI SDK calls for `useChat({ resume: true })` (DefaultChatTransport.reconnectToStream). \
                         `204` with an empty body when no turn runs in the thread; otherwise the running turn's UI \
                         message stream from its `start` chunk, then live until `data: [DONE]`. Any number of readers \
                         may follow one turn; reading it never stops it. Any instance on the same database answers: \
                         the one running the turn from memory, another by following it through the database. `409 stream_too_long` when the turn's stream \
                         has outgrown what the server keeps (4 MiB): the answer so far is in the thread's messages. \
                         Takes the same optional `X-Promptgate-UI-Stream` header as `POST /v1/chat`.",
                    )
                    .response_with::<204, (), _>(|res| res.description("No turn is running in the thread"))
            }),
        )
        .api_route(
            "/v1/chat/{id}/stop",
            post_with(stop, |op| {
                op.summary("Stop the thread's running turn; its partial answer is saved as stopped")
                    .description("Any instance on the same database stops the turn, whichever instance runs it.")
            }),
        )
}

/// Declares a send body: the fields it lists, then the notes every send carries (a retry of, voice
/// mode, earlier `ask` answers), written once here; they come last, as they always did, so serde's
/// list of the fields it expects reads the same. Not a `#[serde(flatten)]` struct: flattening
/// would cost `ThreadMessage` its `deny_unknown_fields` and every body the path and position serde
/// names in a type error (`voice_mode: invalid type ... at line 1 column 28`), which clients see in
/// the 422's message.
macro_rules! send_body {
    ($(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        $(#[$meta])*
        pub struct $name {
        $($fields)*
        /// An automatic retry of this turn id (from the `start` chunk's `messageMetadata.turnId`): the web
        /// budget and sources carry over, whichever instance ran it. Also accepted as `retryOf`. An id
        /// that is not a turn of this thread is refused with `404 unknown_turn`; one that ended longer ago
        /// than `[turn] retry_window_secs` (default 10 minutes) with `409 retry_expired`.
        #[serde(default, alias = "retryOf")]
        pub retry_of: Option<String>,
        /// The user is talking by voice and the answer is read aloud: the prompt asks for short, spoken
        /// replies. Also accepted as `voiceMode`.
        #[serde(default, alias = "voiceMode")]
        pub voice_mode: bool,
        /// What the user answered in `ask` widgets of earlier answers, oldest first; the prompt lists them
        /// so the model builds on them instead of asking again. Also accepted as `askResponses`.
        #[serde(default, alias = "askResponses")]
        pub ask_responses: Vec<AskResponseBody>,
        }
    };
}

send_body! {
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
    }
}

/// Names the client, e.g. `X-Promptgate-Client: ios; version=2.3.0`.
pub const CLIENT_HEADER: &str = "x-promptgate-client";

/// The client the request names in [`CLIENT_HEADER`]: its first item is the environment, then
/// `key=value` parameters of which `version` is read. Missing or unreadable means the web app.
pub fn client_identity(headers: &HeaderMap) -> Option<ClientIdentity> {
    let value = headers.get(CLIENT_HEADER)?.to_str().ok()?;
    let mut items = value.split(';').map(str::trim);
    let environment = items.next().filter(|e| !e.is_empty())?.to_ascii_lowercase();
    let version = items
        .filter_map(|item| item.split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("version"))
        .map(|(_, version)| version.trim().trim_matches('"').to_owned())
        .filter(|version| !version.is_empty());
    Some(ClientIdentity { environment, version })
}

/// A send to `thread_id` from a UI-stream client, with what the request itself says filled in:
/// who sends and with which key, the client it names, the trace it belongs to, and whether its
/// stream can carry approval requests. Callers set what their body adds over the defaults here (a
/// thread to create, a model, a retry, the client's notes).
pub(super) fn ui_send(
    state: &AppState,
    user: CurrentUser,
    headers: &HeaderMap,
    version: UiStreamVersion,
    thread_id: String,
    input: SendInput,
) -> SendRequest {
    SendRequest {
        client: client_identity(headers),
        trace: crate::telemetry::trace_link(&state.config.telemetry),
        key_id: user.key_id,
        can_ask_approval: version >= UiStreamVersion::V6,
        ..SendRequest::new(user.id, thread_id, input)
    }
}

async fn chat(
    Caller { state, user }: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatBody>,
) -> ApiResult<UiStream> {
    client_id("id", &body.id)?;
    let version = requested_version(&headers, &state.config.ui_stream)?;
    let input = match body.trigger.as_deref() {
        Some("regenerate-message") => SendInput::Regenerate,
        None | Some("submit-message") => {
            let last = body
                .messages
                .last()
                .ok_or_else(|| ApiError::invalid("messages must not be empty"))?;
            match super::approvals::continuation(last)? {
                Some(replies) => SendInput::Approval(replies),
                None => new_user_message(last)?,
            }
        }
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "trigger {} is not supported; use submit-message or regenerate-message",
                crate::error::preview(other)
            )));
        }
    };
    let handle = state
        .service
        .send(SendRequest {
            create_thread: true,
            model: body.model,
            retry_of: body.retry_of,
            notes: client_notes(body.voice_mode, body.ask_responses)?,
            ..ui_send(&state, user, &headers, version, body.id, input)
        })
        .await?;
    Ok(UiStream::new(handle, version))
}

/// The last message of a `useChat` request as the user's new message.
fn new_user_message(last: &Value) -> Result<SendInput, ApiError> {
    if last.get("role").and_then(Value::as_str) != Some("user") {
        return Err(ApiError::invalid(
            "the last message must be the user's new message, or an answer to a tool approval",
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
    Ok(SendInput::Message { id, parts })
}

send_body! {
    /// A message for an existing thread: plain text, or UI message parts.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ThreadMessage {
        pub message: MessageContent,
        #[serde(default)]
        pub model: Option<String>,
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts { parts: Vec<Value> },
}

async fn post_message(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ThreadMessage>,
) -> ApiResult<UiStream> {
    let version = requested_version(&headers, &state.config.ui_stream)?;
    let parts = match body.message {
        MessageContent::Text(text) => vec![json!({"type": "text", "text": text})],
        MessageContent::Parts { parts } => parts,
    };
    let input = SendInput::Message { id: None, parts };
    let handle = state
        .service
        .send(SendRequest {
            model: body.model,
            retry_of: body.retry_of,
            notes: client_notes(body.voice_mode, body.ask_responses)?,
            ..ui_send(&state, user, &headers, version, thread_id, input)
        })
        .await?;
    Ok(UiStream::new(handle, version))
}

/// One answered `ask` widget question: `chosen` for the options picked (empty: none), or `answer`
/// for a free-text reply.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskResponseBody {
    /// The question as the widget showed it.
    pub prompt: String,
    #[serde(default)]
    pub chosen: Option<Vec<String>>,
    #[serde(default)]
    pub answer: Option<String>,
}

/// Most answered questions one send may carry, and the longest text of any of them.
const MAX_ASK_RESPONSES: usize = 64;
const MAX_ASK_TEXT: usize = 4_000;

fn client_notes(voice_mode: bool, asks: Vec<AskResponseBody>) -> Result<ClientNotes, ApiError> {
    if asks.len() > MAX_ASK_RESPONSES {
        return Err(ApiError::invalid(format!(
            "ask_responses has {} entries; at most {MAX_ASK_RESPONSES} are accepted",
            asks.len()
        )));
    }
    let mut ask_responses = Vec::with_capacity(asks.len());
    for (n, ask) in asks.into_iter().enumerate() {
        let field = format!("ask_responses[{n}]");
        required_text(&format!("{field}.prompt"), &ask.prompt, MAX_ASK_TEXT)?;
        let answer = match (ask.chosen, ask.answer) {
            (Some(chosen), None) => {
                for choice in &chosen {
                    bounded_text(&format!("{field}.chosen"), choice, MAX_ASK_TEXT)?;
                }
                AskAnswer::Chose(chosen)
            }
            (None, Some(text)) => {
                bounded_text(&format!("{field}.answer"), &text, MAX_ASK_TEXT)?;
                AskAnswer::Answered(text)
            }
            _ => {
                return Err(ApiError::invalid(format!(
                    "{field} has either chosen (the options picked) or answer (free text)"
                )));
            }
        };
        ask_responses.push(AskResponse {
            prompt: ask.prompt,
            answer,
        });
    }
    Ok(ClientNotes {
        voice_mode,
        ask_responses,
    })
}

/// The running turn's stream, or `204 No Content` when the thread has none.
pub enum Resumed {
    Idle,
    Stream(FollowStream),
}

async fn resume(
    Caller { state, user }: Caller,
    Path(thread_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Resumed> {
    let version = requested_version(&headers, &state.config.ui_stream)?;
    match state.service.follow(&user.id, &thread_id, version).await {
        Follow::Idle => Ok(Resumed::Idle),
        Follow::Stream(stream) => {
            tracing::info!(user = %user.id, thread = %thread_id, turn = %stream.turn_id, "stream resumed");
            Ok(Resumed::Stream(stream))
        }
        Follow::TooLong => Err(ApiError::new(
            ErrorCode::StreamTooLong,
            format!(
                "the running turn's stream is longer than the {} MiB this server keeps to replay; \
                 its answer so far is in GET /v1/threads/{{id}}/messages",
                MAX_FEED_BYTES >> 20
            ),
        )),
    }
}

impl IntoResponse for Resumed {
    fn into_response(self) -> Response {
        match self {
            Self::Idle => StatusCode::NO_CONTENT.into_response(),
            Self::Stream(stream) => {
                let turn_id = stream.turn_id.clone();
                ui_stream_response(
                    Body::from_stream(stream.map(Ok::<_, std::convert::Infallible>)),
                    &turn_id,
                )
            }
        }
    }
}

impl OperationOutput for Resumed {
    type Inner = ();

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<ApiResponse> {
        UiStream::operation_response(ctx, op)
    }

    fn inferred_responses(ctx: &mut GenContext, op: &mut Operation) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        UiStream::inferred_responses(ctx, op)
    }
}

#[derive(Serialize, JsonSchema)]
pub struct StopResult {
    /// False when no turn was running in the thread.
    pub stopped: bool,
}

async fn stop(Caller { state, user }: Caller, Path(thread_id): Path<String>) -> Json<StopResult> {
    let stopped = state.service.stop(&user.id, &thread_id).await;
    tracing::info!(user = %user.id, thread = %thread_id, stopped, "stop requested");
    Json(StopResult { stopped })
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

/// The headers of a UI message stream.
fn ui_stream_response(body: Body, turn_id: &str) -> Response {
    let mut res = event_stream(body);
    let headers = res.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    headers.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
    if let Ok(turn) = HeaderValue::from_str(turn_id) {
        headers.insert("x-promptgate-turn-id", turn);
    }
    res
}

/// The AI SDK UI message stream: one `data: <chunk>` event per chunk, `: keep-alive` comments while
/// tools run, then `data: [DONE]`, with the fields the client's AI SDK version accepts. Dropping the
/// body (client disconnect) stops the turn, unless `[turn] on_disconnect = "continue"`.
pub struct UiStream(SendHandle, UiStreamVersion);

impl UiStream {
    pub fn new(handle: SendHandle, version: UiStreamVersion) -> Self {
        Self(handle, version)
    }
}

impl IntoResponse for UiStream {
    fn into_response(self) -> Response {
        let Self(handle, version) = self;
        let mut watch = crate::observe::TurnWatch::start("chat", &handle.turn_id, &handle.model_id);
        let frames = handle
            .events
            .inspect(move |event| watch.see(event))
            .into_frames(version)
            .map(Ok::<_, std::convert::Infallible>);
        ui_stream_response(Body::from_stream(frames), &handle.turn_id)
    }
}

/// How a UI message stream is published: an event stream, not JSON.
fn documented_ui_stream(_ctx: &mut GenContext, _op: &mut Operation) -> Option<ApiResponse> {
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

crate::api_doc::ok_output!(UiStream, (), documented_ui_stream);
