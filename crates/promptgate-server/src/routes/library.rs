//! The user's own collections: projects, skills and MCP servers.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::{Path, State};
use std::collections::BTreeMap;

use promptgate_core::settings::{Project, Skill};
use promptgate_service::records;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::validate::{bounded_text, optional_text, required_text};
use crate::api_doc::{Created, NoContent};
use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

const MCP_SERVER_LIMIT: &str = "A user may register at most `[mcp] max_servers_per_user` servers (50 by \
     default), enabled or not; past it the answer is 409 `mcp_server_limit` until one is deleted.";

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/projects",
            get_with(list_projects, |op| op.summary("Your projects"))
                .post_with(create_project, |op| op.summary("Create a project")),
        )
        .api_route(
            "/v1/projects/{id}",
            get_with(get_project, |op| op.summary("One project"))
                .put_with(update_project, |op| {
                    op.summary("Replace a project's name and instructions")
                })
                .delete_with(delete_project, |op| {
                    op.summary("Delete a project (its threads stay, unassigned)")
                }),
        )
        .api_route(
            "/v1/skills",
            get_with(list_skills, |op| op.summary("Your skills"))
                .post_with(create_skill, |op| op.summary("Create a skill")),
        )
        .api_route(
            "/v1/skills/{id}",
            get_with(get_skill, |op| op.summary("One skill"))
                .put_with(update_skill, |op| op.summary("Replace a skill"))
                .delete_with(delete_skill, |op| op.summary("Delete a skill")),
        )
        .api_route(
            "/v1/mcp-servers",
            get_with(list_mcp, |op| {
                op.summary("Your MCP servers (secrets are never returned)")
            })
            .post_with(create_mcp, |op| {
                op.summary("Register an MCP server (streamable HTTP)")
                    .description(MCP_SERVER_LIMIT)
            }),
        )
        .api_route(
            "/v1/mcp-servers/{id}",
            get_with(get_mcp, |op| {
                op.summary("One MCP server (secrets are never returned)")
            })
            .put_with(update_mcp, |op| {
                op.summary("Replace an MCP server, secrets included")
            })
            .delete_with(delete_mcp, |op| op.summary("Delete an MCP server")),
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

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSkill {
    /// `[A-Za-z0-9_-]{1,64}`, unique per user.
    pub slug: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub instructions: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub renders_widgets: bool,
}

fn yes() -> bool {
    true
}

impl From<NewSkill> for records::NewSkill {
    fn from(body: NewSkill) -> Self {
        Self {
            slug: body.slug,
            name: body.name,
            description: body.description,
            instructions: body.instructions,
            enabled: body.enabled,
            renders_widgets: body.renders_widgets,
        }
    }
}

/// An MCP server as the API shows it: the secret header values and the bearer token never leave the
/// store through this type, only whether they are set.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    pub id: String,
    pub name: String,
    pub url: String,
    pub enabled: bool,
    /// Names of the configured secret headers, sorted.
    pub header_names: Vec<String>,
    pub has_bearer_token: bool,
    pub created_at: i64,
}

impl From<records::McpServer> for McpServer {
    fn from(row: records::McpServer) -> Self {
        Self {
            id: row.id,
            name: row.name,
            url: row.url,
            enabled: row.enabled,
            header_names: row.header_names,
            has_bearer_token: row.has_bearer_token,
            created_at: row.created_at,
        }
    }
}

/// Create or replace an MCP server. An update replaces the secrets too: headers and token that are
/// not sent again are removed.
// Not `Debug`: it carries the secrets.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMcpServer {
    pub name: String,
    pub url: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<String>,
}

impl From<NewMcpServer> for records::NewMcpServer {
    fn from(body: NewMcpServer) -> Self {
        Self {
            name: body.name,
            url: body.url,
            enabled: body.enabled,
            headers: body.headers,
            bearer_token: body.bearer_token,
        }
    }
}

fn check_project(p: &NewProject) -> Result<(), ApiError> {
    required_text("name", &p.name, 200)?;
    optional_text("instructions", p.instructions.as_deref(), 20_000)
}

async fn list_projects(State(state): State<AppState>, user: CurrentUser) -> ApiResult<Json<Vec<Project>>> {
    Ok(Json(state.service.projects(&user.id).await?))
}

async fn create_project(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<Created<Json<Project>>> {
    check_project(&body)?;
    Ok(Created(Json(
        state.service.create_project(&user.id, &body.into()).await?,
    )))
}

async fn get_project(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Project>> {
    Ok(Json(state.service.project(&user.id, &id).await?))
}

async fn update_project(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<Json<Project>> {
    check_project(&body)?;
    Ok(Json(
        state.service.update_project(&user.id, &id, &body.into()).await?,
    ))
}

async fn delete_project(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
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

async fn list_skills(State(state): State<AppState>, user: CurrentUser) -> ApiResult<Json<Vec<Skill>>> {
    Ok(Json(state.service.skills(&user.id).await?))
}

async fn create_skill(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<NewSkill>,
) -> ApiResult<Created<Json<Skill>>> {
    check_skill(&body)?;
    Ok(Created(Json(
        state.service.create_skill(&user.id, &body.into()).await?,
    )))
}

async fn get_skill(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Skill>> {
    Ok(Json(state.service.skill(&user.id, &id).await?))
}

async fn update_skill(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewSkill>,
) -> ApiResult<Json<Skill>> {
    check_skill(&body)?;
    Ok(Json(
        state.service.update_skill(&user.id, &id, &body.into()).await?,
    ))
}

async fn delete_skill(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
    state.service.delete_skill(&user.id, &id).await?;
    Ok(NoContent)
}

fn check_mcp(s: &NewMcpServer) -> Result<(), ApiError> {
    required_text("name", &s.name, 100)?;
    let url = url_ok(&s.url);
    if !url {
        return Err(ApiError::invalid(format!(
            "url {} must be an http:// or https:// URL",
            crate::error::preview(&s.url)
        )));
    }
    if s.headers.len() > 32 {
        return Err(ApiError::invalid("at most 32 headers"));
    }
    for (name, value) in &s.headers {
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
        if !name_ok {
            return Err(ApiError::invalid(format!(
                "header name {} is not a valid HTTP header name",
                crate::error::preview(name)
            )));
        }
        if value.len() > 8_192 || value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(ApiError::invalid(format!(
                "the value of header {} is too long or has a line break",
                crate::error::preview(name)
            )));
        }
    }
    if let Some(token) = &s.bearer_token
        && (token.len() > 8_192 || token.bytes().any(|b| b.is_ascii_whitespace()))
    {
        return Err(ApiError::invalid(
            "bearer_token must be a single token of at most 8192 characters",
        ));
    }
    Ok(())
}

fn url_ok(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= 2_048
        && !url.contains(char::is_whitespace)
}

async fn list_mcp(State(state): State<AppState>, user: CurrentUser) -> ApiResult<Json<Vec<McpServer>>> {
    let servers = state.service.mcp_servers(&user.id).await?;
    Ok(Json(servers.into_iter().map(McpServer::from).collect()))
}

async fn create_mcp(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<NewMcpServer>,
) -> ApiResult<Created<Json<McpServer>>> {
    check_mcp(&body)?;
    let server = state.service.create_mcp_server(&user.id, &body.into()).await?;
    Ok(Created(Json(server.into())))
}

async fn get_mcp(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Json<McpServer>> {
    Ok(Json(state.service.mcp_server(&user.id, &id).await?.into()))
}

async fn update_mcp(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewMcpServer>,
) -> ApiResult<Json<McpServer>> {
    check_mcp(&body)?;
    let server = state
        .service
        .update_mcp_server(&user.id, &id, &body.into())
        .await?;
    Ok(Json(server.into()))
}

async fn delete_mcp(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
    state.service.delete_mcp_server(&user.id, &id).await?;
    Ok(NoContent)
}
