//! `POST /v1/responses`, the OpenAI Responses API over the same engine as a send, and the responses
//! a user keeps: `GET` and `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`.
//!
//! A response asked to be kept (`store`, true unless the client says false) is stored before the
//! client hears that it ended: its terminal event, or the whole JSON, goes out after the store
//! took it. One that could not be stored ends as `failed`, so no client continues from an id that
//! leads nowhere.

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::extract::Path;
use promptgate_service::events::TurnEvent;
use promptgate_service::facade::{FacadeHistory, responses_history};
use promptgate_service::records::UsageKind;
use promptgate_service::{CompletionRequest, OutputCap, ResponseKeeper, ResponseRequest};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Instrument;

use super::summary;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::{ApiJson, ApiQuery};
use crate::facade_stream::{Answering, FacadeAnswer, FrameEncoder, answering, watched};
use crate::responses::{CreateResponse, Echo, Frames, Translator, request};
use crate::state::AppState;

/// What a kept response says when the store did not take it.
const NOT_KEPT_TEXT: &str = "The response could not be stored, so it cannot be continued; try again.";

/// `POST /v1/responses`: streams, so it sits with the streaming routes.
pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/responses",
        post_with(create, |op| {
            op.summary("OpenAI Responses API (streamed or not); the gateway's own tools run on the server")
                .description(
                    "The system prompt and tools come from your settings, as for a send; `instructions` and \
                 system or developer input messages follow them. Function tools are yours: a call to one \
                 ends the response with a `function_call` item, answered by `function_call_output` items \
                 in the next request. MCP calls show as `mcp_call` items and web searches as \
                 `web_search_call` items. Kept responses (`store`, default true) continue with \
                 `previous_response_id`.",
                )
        }),
    )
}

/// The kept responses: plain JSON routes.
pub fn kept_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/responses/{id}",
            get_with(retrieve, summary("A kept response, as its client received it"))
                .delete_with(delete, summary("Delete a kept response")),
        )
        .api_route(
            "/v1/responses/{id}/input_items",
            get_with(
                input_items,
                summary("The input items of a kept response's request, paged (`after`, `limit`, `order`)"),
            ),
        )
}

async fn create(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<CreateResponse>,
) -> ApiResult<Created> {
    let checked = request::check(&body)?;
    let store = body.store.unwrap_or(true);
    let input = responses_history(&body.input).map_err(|e| ApiError::invalid(e.to_string()))?;
    let input_items = store.then(|| body.input.clone());
    // The request's instructions come first, then its system and developer messages.
    let conversation = FacadeHistory {
        system: body.instructions.iter().cloned().chain(input.system).collect(),
        messages: input.messages,
    };
    let run = state
        .service
        .respond(ResponseRequest {
            turn: CompletionRequest {
                user_id: user.id,
                key_id: user.key_id,
                model: body.model,
                conversation,
                client_tools: checked.client_tools,
                tool_choice: checked.choice,
                extra: checked.sampling,
                parallel_tool_calls: body.parallel_tool_calls,
                output_cap: body.max_output_tokens.map(OutputCap::Chosen),
                on_end: Vec::new(),
                facade: UsageKind::Responses,
                streamed: body.stream.unwrap_or(false),
            },
            previous_response_id: body.previous_response_id.clone(),
            store,
        })
        .await?;
    let id = format!("resp_{}", run.handle.turn_id.trim_start_matches("turn_"));
    let echo = Echo {
        created_at: chrono::Utc::now().timestamp(),
        model: run.handle.model_id.clone(),
        instructions: body.instructions,
        metadata: checked.metadata,
        previous_response_id: body.previous_response_id,
        tools: checked.functions,
        tool_choice: checked.tool_choice,
        parallel_tool_calls: body.parallel_tool_calls.unwrap_or(true),
        temperature: body.temperature,
        top_p: body.top_p,
        max_output_tokens: body.max_output_tokens,
        store,
        id,
    };
    let keeping = run.keeper.map(|keeper| Keeping {
        keeper,
        input_items: with_ids(input_items.unwrap_or_default(), &echo.id),
    });
    let reading = Reading {
        translator: Translator::new(echo),
        keeping,
        ended_at: 0,
        not_kept: false,
    };
    let events = match answering(watched("response", run.handle), body.stream.unwrap_or(false)).await {
        Answering::Stream(events) => return Ok(Created::Stream(Box::new((events, Streaming::new(reading))))),
        Answering::Whole(events) => events,
    };
    let Some(mut reading) = super::completions::read_whole(&state, reading, events).await else {
        return Err(ApiError::internal());
    };
    reading.conclude(None).await;
    let translator = &reading.translator;
    if reading.not_kept {
        // The client has seen nothing of it: asking again loses nothing.
        return Err(ApiError::new(ErrorCode::NotStored, NOT_KEPT_TEXT));
    }
    if let Some(failure) = translator.failure() {
        return Err(super::completions::whole_turn_failed(failure));
    }
    Ok(Created::Whole(translator.final_json(reading.ended_at)))
}

/// A response being read from its turn, and kept at its end when asked.
struct Reading {
    translator: Translator,
    keeping: Option<Keeping>,
    /// Unix seconds at which it ended.
    ended_at: i64,
    /// It was to be kept, and the store did not take it.
    not_kept: bool,
}

struct Keeping {
    keeper: ResponseKeeper,
    input_items: Value,
}

impl super::completions::Fold for Reading {
    fn push(&mut self, event: &TurnEvent) {
        self.translator.push(event, None);
    }
}

impl Reading {
    /// Ends the response: keeps it when asked (failing it when the store does not take it), then
    /// writes its terminal event onto `out`.
    async fn conclude(&mut self, out: Option<&mut Frames>) {
        self.translator.cut_short();
        self.ended_at = chrono::Utc::now().timestamp();
        if let Some(Keeping { keeper, input_items }) = self.keeping.take() {
            let id = self.translator.echo().id.clone();
            let body = self.translator.final_response(self.ended_at);
            let calls = self.translator.client_call_ids();
            if let Err(err) = keeper.keep(&id, body, input_items, &calls).await {
                tracing::warn!(response = %id, error = %err, "a response asked to be kept was not stored");
                self.translator.fail(NOT_KEPT_TEXT);
                self.not_kept = true;
            }
        }
        self.translator.finish(self.ended_at, out);
    }
}

/// The request's input as the list `input_items` pages through: every item with an id (the
/// client's, else one made from the response's), a string as the one user message it stands for.
fn with_ids(input: Value, response_id: &str) -> Value {
    let stem = response_id.trim_start_matches("resp_");
    let items = match input {
        Value::String(text) => vec![json!({
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        Value::Array(items) => items,
        _ => Vec::new(),
    };
    let items = items
        .into_iter()
        .enumerate()
        .map(|(index, mut item)| {
            if let Some(object) = item.as_object_mut()
                && !object.get("id").is_some_and(Value::is_string)
            {
                object.insert("id".into(), format!("in_{stem}_{index}").into());
            }
            item
        })
        .collect();
    Value::Array(items)
}

type Created = FacadeAnswer<Streaming>;

/// A response being streamed: its events as SSE, the terminal one written once it is kept.
struct Streaming {
    reading: Reading,
    frames: Frames,
    /// The request's span, entered only to conclude, so that what the end of the stream logs
    /// carries the request's id. Entering it around every frame cost each stream tens of
    /// microseconds of subscriber bookkeeping for nothing logged.
    request_span: tracing::Span,
}

impl Streaming {
    fn new(reading: Reading) -> Self {
        Self {
            reading,
            frames: Frames::default(),
            request_span: tracing::Span::current(),
        }
    }
}

impl FrameEncoder for Streaming {
    type Close = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send>>;

    fn push(&mut self, event: &TurnEvent, out: &mut Vec<u8>) -> bool {
        self.frames.swap_buffer(out);
        let ended = self.reading.translator.push(event, Some(&mut self.frames));
        self.frames.swap_buffer(out);
        ended
    }

    fn close(self, mut out: Vec<u8>) -> Self::Close {
        let Self {
            mut reading,
            mut frames,
            request_span,
        } = self;
        Box::pin(async move {
            frames.swap_buffer(&mut out);
            reading.conclude(Some(&mut frames)).instrument(request_span).await;
            frames.take()
        })
    }
}

crate::api_doc::json_or_event_stream_output!(
    Created,
    "A `Response` object, or with `stream: true` its events as SSE (`event:` and `data:` \
         lines), from `response.created` to `response.completed`, `response.incomplete` or \
         `response.failed`"
);

#[derive(Deserialize, JsonSchema)]
pub struct RetrieveQuery {
    /// Only `false`: a kept response is read whole, its stream is not replayed.
    #[serde(default)]
    pub stream: Option<bool>,
}

async fn retrieve(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<RetrieveQuery>,
) -> ApiResult<Json<Value>> {
    if query.stream == Some(true) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "a kept response is read whole; replaying its stream is not supported",
        ));
    }
    let kept = state.service.kept_response(&user.id, &id).await?;
    Ok(Json(kept.body))
}

async fn delete(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    state.service.delete_response(&user.id, &id).await?;
    Ok(Json(json!({"id": id, "object": "response", "deleted": true})))
}

/// The most input items one page holds.
const MAX_PAGE: usize = 100;

#[derive(Default, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ItemsQuery {
    /// The id of the item the page starts after.
    pub after: Option<String>,
    /// 1 to 100 (default 20).
    pub limit: Option<usize>,
    /// `desc` (the default: the last item first) or `asc`.
    pub order: Option<String>,
}

async fn input_items(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<ItemsQuery>,
) -> ApiResult<Json<Value>> {
    let limit = query.limit.unwrap_or(20);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let descending = match query.order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(_) => {
            return Err(ApiError::new(
                ErrorCode::InvalidQuery,
                "order must be asc or desc",
            ));
        }
    };
    let kept = state.service.kept_response(&user.id, &id).await?;
    let mut items = match kept.input_items {
        Value::Array(items) => items,
        _ => Vec::new(),
    };
    if descending {
        items.reverse();
    }
    let start = match &query.after {
        Some(after) => items
            .iter()
            .position(|item| item["id"].as_str() == Some(after.as_str()))
            .map(|at| at + 1)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidQuery,
                    "after names no input item of this response",
                )
            })?,
        None => 0,
    };
    let page: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let has_more = start + page.len() < items.len();
    let first_id = page.first().map(|item| item["id"].clone());
    let last_id = page.last().map(|item| item["id"].clone());
    Ok(Json(json!({
        "object": "list", "data": page, "first_id": first_id, "last_id": last_id, "has_more": has_more,
    })))
}
