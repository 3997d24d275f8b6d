//! The user's own collections: projects (`/v1/projects`) and skills (`/v1/skills`).

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::Path;

use promptgate_core::settings::{NewSkill, Project, Skill};
use promptgate_service::records;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::summary;
use super::validate::{bounded_text, optional_text, required_text};
use crate::api_doc::{Created, NoContent};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/projects",
            get_with(list_projects, summary("Your projects"))
                .post_with(create_project, summary("Create a project")),
        )
        .api_route(
            "/v1/projects/{id}",
            get_with(get_project, summary("One project"))
                .put_with(
                    update_project,
                    summary("Replace a project's name and instructions"),
                )
                .delete_with(
                    delete_project,
                    summary("Delete a project (its threads stay, unassigned)"),
                ),
        )
        .api_route(
            "/v1/skills",
            get_with(list_skills, summary("Your skills")).post_with(create_skill, summary("Create a skill")),
        )
        .api_route(
            "/v1/skills/{id}",
            get_with(get_skill, summary("One skill"))
                .put_with(update_skill, summary("Replace a skill"))
                .delete_with(delete_skill, summary("Delete a skill")),
        )
}

// The bodies below are the HTTP contract; the service has its own records, converted at the handlers.
// Request bodies are `Serialize` too: that is how the schema learns their defaults.

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProject {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl From<NewProject> for records::NewProject {
    fn from(body: NewProject) -> Self {
        Self {
            name: body.name,
            instructions: body.instructions,
        }
    }
}

pub(super) fn yes() -> bool {
    true
}

fn check_project(p: &NewProject) -> Result<(), ApiError> {
    required_text("name", &p.name, 200)?;
    optional_text("instructions", p.instructions.as_deref(), 20_000)
}

async fn list_projects(Caller { state, user }: Caller) -> ApiResult<Json<Vec<Project>>> {
    Ok(Json(state.service.projects(&user.id).await?))
}

async fn create_project(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<Created<Json<Project>>> {
    check_project(&body)?;
    Ok(Created(Json(
        state.service.create_project(&user.id, &body.into()).await?,
    )))
}

async fn get_project(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<Project>> {
    Ok(Json(state.service.project(&user.id, &id).await?))
}

async fn update_project(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<Json<Project>> {
    check_project(&body)?;
    Ok(Json(
        state.service.update_project(&user.id, &id, &body.into()).await?,
    ))
}

async fn delete_project(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_project(&user.id, &id).await?;
    Ok(NoContent)
}

fn check_skill(s: &NewSkill) -> Result<(), ApiError> {
    let slug_ok = !s.slug.is_empty()
        && s.slug.len() <= 64
        && s.slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !slug_ok {
        return Err(ApiError::invalid(
            "slug must be 1-64 characters of letters, digits, '-' or '_' (users type it as /slug)",
        ));
    }
    required_text("name", &s.name, 200)?;
    bounded_text("description", &s.description, 2_000)?;
    required_text("instructions", &s.instructions, 50_000)
}

async fn list_skills(Caller { state, user }: Caller) -> ApiResult<Json<Vec<Skill>>> {
    Ok(Json(state.service.skills(&user.id).await?))
}

async fn create_skill(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<NewSkill>,
) -> ApiResult<Created<Json<Skill>>> {
    check_skill(&body)?;
    Ok(Created(Json(state.service.create_skill(&user.id, &body).await?)))
}

async fn get_skill(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<Skill>> {
    Ok(Json(state.service.skill(&user.id, &id).await?))
}

async fn update_skill(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewSkill>,
) -> ApiResult<Json<Skill>> {
    check_skill(&body)?;
    Ok(Json(state.service.update_skill(&user.id, &id, &body).await?))
}

async fn delete_skill(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_skill(&user.id, &id).await?;
    Ok(NoContent)
}
