//! `POST /v1/chat/completions`: an OpenAI-compatible view of the same engine. Tools run here, on the
//! server; the client sees one clean completion. Nothing is stored.

use aide::OperationOutput;
use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as ApiResponse, StatusCode as ApiStatus};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use promptgate_service::events::TurnError;
use promptgate_service::events::TurnEvent;
use promptgate_service::facade::{ClientToolChoice, facade_history};
use promptgate_service::{CompletionRequest, SendHandle};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiJson;
use crate::facade::{CompletionChunks, CompletionIdentity, CompletionResponse};
use crate::sse::{KEEP_ALIVE_FRAME, SSE_DONE};
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/chat/completions",
        post_with(completions, |op| {
            op.summary("OpenAI-compatible chat completions (streamed or not); tools run on the server").description(
                "The system prompt and tools come from your settings, as for a send; `system` messages you \
                 include are appended to it. Client-defined `tools` are not accepted. Other fields pass \
                 through to the provider when they are sampling or format fields (temperature, top_p, seed, \
                 stop, response_format, ...) or fields the operator allows for the provider; any other \
                 field is refused with 422 `field_not_allowed`, as the request goes out on the operator's key.",
            )
        }),
    )
}

/// The fields we interpret; the open request fields (and those the operator allows) pass through to
/// the provider, any other is refused.
#[derive(Deserialize, JsonSchema)]
pub struct CompletionBody {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize, JsonSchema)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// Fields that only make sense for client-side tools or several choices; refused rather than ignored.
const REFUSED: [(&str, &str); 4] = [
    (
        "tools",
        "this endpoint runs its own tools; client-defined tools are not supported",
    ),
    (
        "functions",
        "this endpoint runs its own tools; client-defined functions are not supported",
    ),
    (
        "tool_choice",
        "tool_choice is decided by the server, which runs the tools",
    ),
    ("n", "only one choice (n = 1) is supported"),
];

async fn completions(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(mut body): ApiJson<CompletionBody>,
) -> ApiResult<Completion> {
    for (field, reason) in REFUSED {
        if let Some(value) = body.extra.get(field) {
            let harmless = field == "n" && value.as_u64() == Some(1);
            if !harmless {
                return Err(ApiError::new(ErrorCode::UnsupportedParameter, reason));
            }
        }
    }
    body.extra.remove("n");
    body.extra.remove("parallel_tool_calls");
    let include_usage = body.stream_options.as_ref().is_some_and(|o| o.include_usage);
    let conversation = facade_history(&body.messages).map_err(|e| ApiError::invalid(e.to_string()))?;
    let handle = state
        .service
        .complete(CompletionRequest {
            user_id: user.id,
            model: body.model,
            conversation,
            client_tools: Vec::new(),
            tool_choice: ClientToolChoice::Auto,
            extra: body.extra,
            parallel_tool_calls: None,
            max_output_tokens: None,
            on_end: Vec::new(),
        })
        .await?;
    let identity = CompletionIdentity {
        id: format!("chatcmpl-{}", handle.turn_id.trim_start_matches("turn_")),
        created: chrono::Utc::now().timestamp(),
        model: handle.model_id.clone(),
    };
    if body.stream {
        return Ok(Completion::Stream(Box::new((
            handle,
            CompletionChunks::new(identity, include_usage),
        ))));
    }
    let watch = crate::observe::TurnWatch::start("completion", &handle.turn_id, &handle.model_id);
    let events = crate::observe::watch_turn(watch, handle.events);
    let Some(response) = read_whole(
        &state,
        CompletionResponse::new(identity),
        CompletionResponse::push,
        events,
    )
    .await
    else {
        return Err(ApiError::internal());
    };
    match response.finish_json() {
        Ok(body) => Ok(Completion::Whole(body)),
        // The client's conversation is what does not fit: its request, not the upstream, is at fault.
        Err(err @ TurnError::ContextTooLong(_)) => {
            Err(ApiError::new(ErrorCode::ContextTooLong, err.to_string()))
        }
        Err(err) => Err(ApiError::new(ErrorCode::UpstreamError, err.to_string())),
    }
}

/// Reads the whole turn into `response` (each event through `push`) on a task of its own. The
/// handler's task is polled through every layer of the server, and waking it for each chunk of the
/// upstream's stream cost more than the chunk itself (docs/benchmarks.md); this task is woken for
/// the chunks and the handler once, at the end. A client that leaves drops the receiver, which ends
/// the task and so the turn. `None` only if the task failed.
pub(super) async fn read_whole<R: Send + 'static>(
    state: &AppState,
    mut response: R,
    push: fn(&mut R, &TurnEvent),
    events: impl Stream<Item = TurnEvent> + Send + 'static,
) -> Option<R> {
    let (mut done, whole) = tokio::sync::oneshot::channel();
    let read = async move {
        let mut events = std::pin::pin!(events);
        let read_all = async move {
            while let Some(event) = events.next().await {
                push(&mut response, &event);
            }
            response
        };
        let outcome = tokio::select! {
            biased;
            () = done.closed() => None,
            response = read_all => Some(response),
        };
        if let Some(response) = outcome {
            let _ = done.send(response);
        }
    };
    state.service.spawn(read.in_current_span());
    let whole = whole.await.ok();
    if whole.is_none() {
        tracing::error!("the task reading a completion ended without it");
    }
    whole
}

pub enum Completion {
    /// The `chat.completion` object's JSON bytes.
    Whole(Vec<u8>),
    /// Boxed: the handle is large and a JSON completion need not carry its size.
    Stream(Box<(SendHandle, CompletionChunks)>),
}

impl IntoResponse for Completion {
    fn into_response(self) -> Response {
        match self {
            Self::Whole(body) => {
                ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
            }
            Self::Stream(stream) => {
                let (handle, mut chunks) = *stream;
                let watch = crate::observe::TurnWatch::start("completion", &handle.turn_id, &handle.model_id);
                let frames = crate::observe::watch_turn(watch, handle.events)
                    .map(move |event: TurnEvent| match &event {
                        TurnEvent::KeepAlive => KEEP_ALIVE_FRAME.as_bytes().to_vec(),
                        TurnEvent::Chunk(_) | TurnEvent::ClientToolCall(_) => {
                            let mut frames = Vec::new();
                            chunks.push_sse(&event, &mut frames);
                            frames
                        }
                    })
                    // Most engine chunks have no counterpart in a completion stream.
                    .filter(|frames| std::future::ready(!frames.is_empty()))
                    .chain(futures::stream::once(async { SSE_DONE.as_bytes().to_vec() }))
                    .map(Ok::<_, std::convert::Infallible>);
                super::chat::event_stream(Body::from_stream(frames))
            }
        }
    }
}

impl OperationOutput for Completion {
    type Inner = Value;

    fn inferred_responses(
        _ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        crate::api_doc::json_or_event_stream(
            "A `chat.completion` object, or with `stream: true` a stream of `chat.completion.chunk` \
             events ending with `data: [DONE]`",
        )
    }
}
