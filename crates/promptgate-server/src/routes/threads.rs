//! `/v1/threads` and their messages.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::Path;
use axum::http::Uri;
use promptgate_service::records;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::pages::{Cursor, Paged, cursor, page_limit};
use super::summary;
use super::validate::{client_id, optional_text};
use crate::api_doc::{Created, NoContent};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery};
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/threads",
            get_with(list, summary("Your threads, most recently updated first (with `q`: best match first), a page at a time"))
                .post_with(create, summary("Create a thread (optionally with your own id)")),
        )
        .api_route(
            "/v1/threads/{id}",
            get_with(get_one, summary("One thread"))
                .put_with(update, summary("Rename a thread or move it to another project"))
                .delete_with(delete, summary("Delete a thread and its messages")),
        )
        .api_route(
            "/v1/threads/{id}/messages",
            get_with(messages, summary("The thread's stored messages (UI message parts and metadata) in conversation order, the newest page first; `replaced=true` adds messages an edit or a regenerate replaced")),
        )
}

// The bodies below are the HTTP contract; the service has its own records, converted at the handlers.
// Request bodies are `Serialize` too: that is how the schema learns their defaults.

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Thread {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub created_at: i64,
    /// Bumped by renames, moves and every appended message; threads are listed by it, newest first.
    pub updated_at: i64,
}

impl From<records::Thread> for Thread {
    fn from(row: records::Thread) -> Self {
        Self {
            id: row.id,
            project_id: row.project_id,
            title: row.title,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

#[derive(Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NewThread {
    /// Client-chosen id (`[A-Za-z0-9_-]{1,128}`); a UUID v7 is generated when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl From<NewThread> for records::NewThread {
    fn from(body: NewThread) -> Self {
        Self {
            id: body.id,
            project_id: body.project_id,
            title: body.title,
        }
    }
}

/// A partial thread update: an absent field is left alone, `null` clears it.
#[derive(Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ThreadUpdate {
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Option<String>>,
}

/// Distinguishes an explicit `null` (Some(None)) from an absent field (None, via `default`).
fn present<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

impl From<ThreadUpdate> for records::ThreadUpdate {
    fn from(body: ThreadUpdate) -> Self {
        Self {
            title: body.title,
            project_id: body.project_id,
        }
    }
}

#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ThreadFilter {
    /// Only threads of this project.
    pub project_id: Option<String>,
    /// Only threads whose title, or one of whose messages, has every word of this text (as the
    /// start of a word), best match first.
    pub q: Option<String>,
    /// Threads per page (default `[limits] page_size`, 50; at most `[limits] max_page_size`, 200).
    pub limit: Option<u32>,
    /// Where the page starts: the `cursor` of the previous page's `Link` header.
    pub cursor: Option<String>,
}

async fn list(
    Caller { state, user }: Caller,
    uri: Uri,
    ApiQuery(filter): ApiQuery<ThreadFilter>,
) -> ApiResult<Paged<Thread>> {
    let query = filter.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    optional_text("q", query, 500)?;
    let limit = page_limit(&state.config.limits, filter.limit)?;
    let project = filter.project_id.as_deref();
    let (page, next) = match query {
        Some(query) => {
            let skip = cursor(filter.cursor.as_deref(), |c| match c {
                Cursor::Skip(skip) => Some(skip),
                _ => None,
            })?
            .unwrap_or(0);
            let page = state
                .service
                .search_threads(&user.id, project, query, skip, limit)
                .await?;
            let next = page.more.then(|| Cursor::Skip(skip.saturating_add(limit)));
            (page, next)
        }
        None => {
            let after = cursor(filter.cursor.as_deref(), |c| match c {
                Cursor::Threads(after) => Some(after),
                _ => None,
            })?;
            let page = state
                .service
                .threads(&user.id, project, after.as_ref(), limit)
                .await?;
            let next = page.items.last().filter(|_| page.more).map(|t| {
                Cursor::Threads(records::ThreadsAfter {
                    updated_at: t.updated_at,
                    id: t.id.clone(),
                })
            });
            (page, next)
        }
    };
    let threads = page.items.into_iter().map(Thread::from).collect();
    Ok(Paged::new(threads, &uri, next))
}

async fn create(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<NewThread>,
) -> ApiResult<Created<Json<Thread>>> {
    if let Some(id) = &body.id {
        client_id("id", id)?;
    }
    optional_text("title", body.title.as_deref(), 500)?;
    let thread = state.service.create_thread(&user.id, &body.into()).await?;
    Ok(Created(Json(thread.into())))
}

async fn get_one(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<Thread>> {
    Ok(Json(state.service.thread(&user.id, &id).await?.into()))
}

async fn update(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ThreadUpdate>,
) -> ApiResult<Json<Thread>> {
    if let Some(Some(title)) = &body.title {
        optional_text("title", Some(title), 500)?;
    }
    let thread = state.service.update_thread(&user.id, &id, &body.into()).await?;
    Ok(Json(thread.into()))
}

async fn delete(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_thread(&user.id, &id).await?;
    Ok(NoContent)
}

#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MessageFilter {
    /// Also list messages that an edit or a regenerate replaced (default: only the conversation as
    /// it reads now).
    pub replaced: bool,
    /// Messages per page (default `[limits] page_size`, 50; at most `[limits] max_page_size`, 200).
    pub limit: Option<u32>,
    /// Where the page ends: the `cursor` of the previous page's `Link` header.
    pub cursor: Option<String>,
}

async fn messages(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    uri: Uri,
    ApiQuery(filter): ApiQuery<MessageFilter>,
) -> ApiResult<Paged<records::Message>> {
    let limit = page_limit(&state.config.limits, filter.limit)?;
    let before = cursor(filter.cursor.as_deref(), |c| match c {
        Cursor::Before(seq) => Some(seq),
        _ => None,
    })?;
    let page = state
        .service
        .messages(&user.id, &id, filter.replaced, before, limit)
        .await?;
    let next = page
        .items
        .first()
        .filter(|_| page.more)
        .map(|m| Cursor::Before(m.seq));
    Ok(Paged::new(page.items, &uri, next))
}
