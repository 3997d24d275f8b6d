//! `/v1/threads` and their messages.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, State};
use promptgate_store::{Message, NewThread, Thread, ThreadUpdate, current_conversation};
use schemars::JsonSchema;
use serde::Deserialize;

use super::validate::{client_id, optional_text};
use crate::api_doc::{Created, NoContent};
use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/threads",
            get_with(list, |op| op.summary("Your threads, newest first")).post_with(create, |op| {
                op.summary("Create a thread (optionally with your own id)")
            }),
        )
        .api_route(
            "/v1/threads/{id}",
            get_with(get_one, |op| op.summary("One thread"))
                .put_with(update, |op| {
                    op.summary("Rename a thread or move it to another project")
                })
                .delete_with(delete, |op| op.summary("Delete a thread and its messages")),
        )
        .api_route(
            "/v1/threads/{id}/messages",
            get_with(messages, |op| {
                op.summary("The thread's stored messages (UI message parts and metadata); `replaced=true` adds answers a regenerate replaced")
            }),
        )
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadFilter {
    /// Only threads of this project.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Only threads whose title, or one of whose messages, contains every word of this text.
    #[serde(default)]
    pub q: Option<String>,
}

/// How many matching messages a thread search looks at; enough for a search box's list.
const SEARCH_HITS: u32 = 50;

async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiQuery(filter): ApiQuery<ThreadFilter>,
) -> ApiResult<Json<Vec<Thread>>> {
    let threads = state
        .store
        .list_threads(&user.id, filter.project_id.as_deref())
        .await?;
    let Some(query) = filter.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(Json(threads));
    };
    optional_text("q", Some(query), 500)?;
    let ids: Vec<String> = threads.iter().map(|t| t.id.clone()).collect();
    let hits = state
        .store
        .search_messages(&user.id, &ids, query, SEARCH_HITS)
        .await?;
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let title_matches = |t: &Thread| {
        let title = t.title.as_deref().unwrap_or_default().to_lowercase();
        words.iter().all(|w| title.contains(w.as_str()))
    };
    Ok(Json(
        threads
            .into_iter()
            .filter(|t| title_matches(t) || hits.iter().any(|h| h.thread_id == t.id))
            .collect(),
    ))
}

async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<NewThread>,
) -> ApiResult<Created<Json<Thread>>> {
    if let Some(id) = &body.id {
        client_id("id", id)?;
    }
    optional_text("title", body.title.as_deref(), 500)?;
    if let Some(project) = &body.project_id
        && state.store.get_project(&user.id, project).await?.is_none()
    {
        return Err(ApiError::not_found("project", project));
    }
    Ok(Created(Json(state.store.create_thread(&user.id, &body).await?)))
}

async fn get_one(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Thread>> {
    state
        .store
        .get_thread(&user.id, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("thread", &id))
}

async fn update(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ThreadUpdate>,
) -> ApiResult<Json<Thread>> {
    if let Some(Some(title)) = &body.title {
        optional_text("title", Some(title), 500)?;
    }
    if let Some(Some(project)) = &body.project_id
        && state.store.get_project(&user.id, project).await?.is_none()
    {
        return Err(ApiError::not_found("project", project));
    }
    let thread = state
        .store
        .update_thread(&user.id, &id, &body)
        .await
        .map_err(|e| ApiError::from_store(e, "thread", &id))?;
    Ok(Json(thread))
}

async fn delete(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
    state
        .store
        .delete_thread(&user.id, &id)
        .await
        .map_err(|e| ApiError::from_store(e, "thread", &id))?;
    Ok(NoContent)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageFilter {
    /// Also list answers that a regenerate replaced (default: only the conversation as it reads now).
    #[serde(default)]
    pub replaced: bool,
}

async fn messages(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiQuery(filter): ApiQuery<MessageFilter>,
) -> ApiResult<Json<Vec<Message>>> {
    let messages = state
        .store
        .list_messages(&user.id, &id)
        .await
        .map_err(|e| ApiError::from_store(e, "thread", &id))?;
    Ok(Json(if filter.replaced {
        messages
    } else {
        current_conversation(messages)
    }))
}
