//! `POST /v1/chat/completions`: an OpenAI-compatible view of the same engine. The server's tools run
//! here, on the server, unseen; the client's own function tools come back to it as `tool_calls`.
//! Nothing of the answer is stored.

use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use futures::{Stream, StreamExt};
use promptgate_service::events::TurnError;
use promptgate_service::events::TurnEvent;
use promptgate_service::facade::{ClientToolChoice, ToolDefinition, ToolInput, client_tools, facade_history};
use promptgate_service::records::UsageKind;
use promptgate_service::{CompletionRequest, OutputCap};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::auth::Caller;
use crate::completions_api::{
    CUT_TEXT, CompletionChunks, CompletionIdentity, CompletionResponse, Unfinished,
};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiJson;
use crate::facade_stream::{Answering, FacadeAnswer, answering, watched};
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/chat/completions",
        post_with(completions, |op| {
            op.summary("OpenAI-compatible chat completions (streamed or not); the server's tools run on the server")
                .description(
                    "The system prompt and tools come from your settings, as for a send; `system` messages you \
                     include are appended to it. Function `tools` you define are offered beside the server's: \
                     a call to one ends the completion with `finish_reason: \"tool_calls\"`, and your next \
                     request, with the `tool` results, continues the turn. A tool named like one of the \
                     server's is refused (`400 tool_name_conflict`). `max_completion_tokens` (or the older \
                     `max_tokens`; the smaller when both are set) caps each model request's output, sent in the \
                     provider's own field; a value that is not a positive integer is refused with 422 \
                     `invalid_body`. Other fields pass through to the provider \
                     when they are sampling or format fields (temperature, top_p, seed, stop, response_format, \
                     ...) or fields the operator allows for the provider; any other field is refused with 422 \
                     `field_not_allowed`, as the request goes out on the operator's key.",
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
    /// Function tools you run yourself: `[{"type": "function", "function": {name, description?, parameters?}}]`.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `"auto"` (default), `"none"` (your tools are not offered), `"required"`, or
    /// `{"type": "function", "function": {"name": …}}`; it applies to the model's first step.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize, JsonSchema)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// Fields for what this endpoint does not do; refused rather than ignored.
const REFUSED: [(&str, &str); 2] = [
    (
        "functions",
        "the deprecated `functions` are not supported; define them as `tools` of type `function`",
    ),
    ("n", "only one choice (n = 1) is supported"),
];

async fn completions(
    Caller { state, user }: Caller,
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
    let max_output_tokens = output_cap(&mut body.extra)?;
    let include_usage = body.stream_options.as_ref().is_some_and(|o| o.include_usage);
    let conversation = facade_history(&body.messages).map_err(|e| ApiError::invalid(e.to_string()))?;
    let (client_tools, tool_choice) = client_tools_of(body.tools.as_deref(), body.tool_choice.as_ref())?;
    let handle = state
        .service
        .complete(CompletionRequest {
            user_id: user.id,
            key_id: user.key_id,
            model: body.model,
            conversation,
            client_tools,
            tool_choice,
            extra: body.extra,
            parallel_tool_calls: None,
            output_cap: max_output_tokens.map(OutputCap::Chosen),
            on_end: Vec::new(),
            facade: UsageKind::ChatCompletions,
            streamed: body.stream,
        })
        .await?;
    let identity = CompletionIdentity {
        id: format!("chatcmpl-{}", handle.turn_id.trim_start_matches("turn_")),
        created: chrono::Utc::now().timestamp(),
        model: handle.model_id.clone(),
    };
    let events = match answering(watched("completion", handle), body.stream).await {
        Answering::Stream(events) => {
            let chunks = CompletionChunks::new(identity, include_usage);
            return Ok(Completion::Stream(Box::new((events, chunks))));
        }
        Answering::Whole(events) => events,
    };
    let Some(response) = read_whole(&state, CompletionResponse::new(identity), events).await else {
        return Err(ApiError::internal());
    };
    response
        .finish_json()
        .map(Completion::Whole)
        .map_err(|unfinished| match unfinished {
            Unfinished::Failed(err) => whole_turn_failed(err),
            Unfinished::Cut => ApiError::new(ErrorCode::Interrupted, CUT_TEXT),
        })
}

/// The answer's length cap: `max_completion_tokens`, or the older `max_tokens` that many clients
/// send on every request (the smaller when both are set; `null` is no cap). Taken out of the fields
/// that pass through, it reaches the provider in the provider's own field, as the Responses API's
/// `max_output_tokens` does. Anything but a positive integer is refused.
fn output_cap(extra: &mut Map<String, Value>) -> Result<Option<u64>, ApiError> {
    let mut cap: Option<u64> = None;
    for field in ["max_tokens", "max_completion_tokens"] {
        match extra.remove(field) {
            None | Some(Value::Null) => {}
            Some(value) => {
                let tokens = value
                    .as_u64()
                    .filter(|tokens| *tokens >= 1)
                    .ok_or_else(|| ApiError::invalid(format!("{field} must be a positive integer")))?;
                cap = Some(cap.map_or(tokens, |other| other.min(tokens)));
            }
        }
    }
    Ok(cap)
}

/// The error a facade answers when the turn it read whole failed.
pub(crate) fn whole_turn_failed(err: TurnError) -> ApiError {
    let failed = ApiError::new(ErrorCode::of_turn(&err), err.to_string());
    match err.retry_after() {
        Some(secs) => failed.with_retry_after_wait(std::time::Duration::from_secs(secs)),
        None => failed,
    }
}

/// The request's function tools and its tool choice. `none` offers none of them: the client
/// wants no calls it would have to run (the server's own tools still serve the answer).
fn client_tools_of(
    tools: Option<&[Value]>,
    choice: Option<&Value>,
) -> Result<(Vec<ToolDefinition>, ClientToolChoice), ApiError> {
    let tools = tools.unwrap_or_default();
    let inputs = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let function = tool.get("function").filter(|_| tool["type"] == "function");
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            match (function, name) {
                (Some(function), Some(name)) => Ok(ToolInput {
                    name,
                    description: function.get("description").and_then(Value::as_str),
                    parameters: function.get("parameters"),
                }),
                _ => Err(ApiError::invalid(format!(
                    "tools[{index}]: only tools of type `function` with a `function.name` are supported"
                ))),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let definitions = client_tools("tools", &inputs).map_err(|e| ApiError::invalid(e.to_string()))?;
    let named = |name: &str| {
        if definitions.iter().any(|tool| tool.name == name) {
            Ok(ClientToolChoice::Named(name.to_owned()))
        } else {
            Err(ApiError::invalid(format!(
                "tool_choice names `{name}`, which is not one of `tools`"
            )))
        }
    };
    let choice = match choice {
        None | Some(Value::Null) => ClientToolChoice::Auto,
        Some(Value::String(mode)) if mode == "auto" => ClientToolChoice::Auto,
        Some(Value::String(mode)) if mode == "none" => return Ok((Vec::new(), ClientToolChoice::Auto)),
        Some(Value::String(mode)) if mode == "required" && !definitions.is_empty() => {
            ClientToolChoice::Required
        }
        Some(choice) => match choice.pointer("/function/name").and_then(Value::as_str) {
            Some(name) if choice["type"] == "function" => named(name)?,
            _ => {
                return Err(ApiError::invalid(
                    "tool_choice must be \"auto\", \"none\", \"required\" (with tools) or {\"type\": \"function\", \"function\": {\"name\": …}}",
                ));
            }
        },
    };
    Ok((definitions, choice))
}

/// A whole response built from a turn's events (a completion, a message, a response).
pub(crate) trait Fold: Send + 'static {
    fn push(&mut self, event: &TurnEvent);
}

impl Fold for CompletionResponse {
    fn push(&mut self, event: &TurnEvent) {
        CompletionResponse::push(self, event);
    }
}

/// Reads the whole turn into `response` (each event through [`Fold::push`]) on a task of its own.
/// The handler's task is polled through every layer of the server, and waking it for each chunk of
/// the upstream's stream cost more than the chunk itself (docs/benchmarks.md); this task is woken
/// for the chunks and the handler once, at the end. A client that leaves drops the receiver, which
/// ends the task and so the turn. `None` only if the task failed.
pub(crate) async fn read_whole<F: Fold>(
    state: &AppState,
    mut response: F,
    events: impl Stream<Item = TurnEvent> + Send + 'static,
) -> Option<F> {
    let (mut done, whole) = tokio::sync::oneshot::channel();
    let read = async move {
        let mut events = std::pin::pin!(events);
        let read_all = async move {
            while let Some(event) = events.next().await {
                response.push(&event);
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
    state
        .service
        .spawn(promptgate_service::trace::Scope::current().instrument(read));
    let whole = whole.await.ok();
    if whole.is_none() {
        tracing::error!("the task reading a completion ended without it");
    }
    whole
}

type Completion = FacadeAnswer<CompletionChunks>;

crate::api_doc::json_or_event_stream_output!(
    Completion,
    "A `chat.completion` object, or with `stream: true` a stream of `chat.completion.chunk` \
         events ending with `data: [DONE]` (an answer the server cut short ends with an \
         `{\"error\": ...}` event instead)"
);
