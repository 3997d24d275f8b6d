//! The user's MCP servers: `/v1/mcp-servers` and `/v1/mcp-servers/{id}` to register, read, replace and
//! delete one, and `POST /v1/mcp-servers/{id}/probe` to check it before chatting with it.

use std::collections::BTreeMap;
use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderName, header};
use axum::response::Html;
use promptgate_core::tools::McpToolHints;
use promptgate_service::records;
use promptgate_service::records::ProbeReport;
use promptgate_service::{McpAuthorization, OAuthCallback, ProbeOutcome, tool_hints};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::integrations::{AuthorizationStart, CallbackQuery};
use super::library::yes;
use super::summary;
use super::validate::required_text;
use crate::api_doc::{Created, NoContent};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

const MCP_SERVER_LIMIT: &str = "A user may register at most `[mcp] max_servers_per_user` servers (50 by \
     default), enabled or not; past it the answer is 409 `mcp_server_limit` until one is deleted.";

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/mcp-servers",
            get_with(list_mcp, summary("Your MCP servers (secrets are never returned)"))
                .post_with(create_mcp, |op| {
                op.summary("Register an MCP server (streamable HTTP)")
                    .description(MCP_SERVER_LIMIT)
            }),
        )
        .api_route(
            "/v1/mcp-servers/{id}",
            get_with(get_mcp, summary("One MCP server (secrets are never returned)"))
                .put_with(update_mcp, summary("Replace an MCP server, secrets included"))
                .delete_with(delete_mcp, summary("Delete an MCP server")),
        )
        .api_route(
            "/v1/mcp-servers/{id}/authorize",
            post_with(authorize, |op| {
                op.summary("Start authorizing an MCP server that asks for OAuth: the URL for the user's browser")
                    .description(
                        "For a server that answers `401` with an OAuth challenge (the MCP authorization spec): \
                         finds its authorization server (RFC 9728, RFC 8414), settles promptgate's client \
                         identity there (a client the operator gave, else the gateway's Client ID Metadata \
                         Document where the authorization server takes one, else RFC 7591 registration) and \
                         answers the authorization URL (PKCE S256, `state`, `resource`). The scopes asked for are \
                         the challenge's, plus those already granted and those the server asked for since \
                         (`403 insufficient_scope`), so Reconnect steps up. \
                         The authorization server sends the browser back to `GET /v1/mcp-servers/oauth/callback`, \
                         which any instance completes. Refused: metadata or endpoints the outbound address \
                         policy refuses (422 `refused_address`), an authorization server without PKCE S256, \
                         metadata for another resource or an unreachable server (422 `mcp_authorization_failed`); 503 `mcp_oauth_not_configured` \
                         without `[mcp] oauth_redirect_base_url`.",
                    )
            }),
        )
        .api_route(
            "/v1/mcp-servers/oauth/callback",
            get_with(callback, |op| {
                op.summary(
                    "Where an MCP server's authorization server redirects the browser; stores the user's \
                     tokens (no Authorization header: `state` identifies the user)",
                )
            }),
        )
        .api_route(
            crate::runtime::MCP_CLIENT_METADATA_PATH,
            get_with(client_metadata, |op| {
                op.summary(
                    "promptgate's Client ID Metadata Document: its client id at authorization servers that \
                     take one (no Authorization header; 404 without a public https base)",
                )
            }),
        )
        .api_route(
            "/v1/mcp-servers/{id}/probe",
            post_with(probe, |op| {
                op.summary("Connect to an MCP server now and list its tools").description(
                "Opens a fresh connection with the stored headers and token (nothing cached is used) within \
                 `[mcp] probe_timeout_ms`. Answers 200 either way: `ok: true` with the server's identity and \
                 tools, or `ok: false` with the reason (`error.kind` is one of `invalid_config`, \
                 `refused_address` (the outbound address policy refuses the URL's address), `connect` \
                 (unreachable), `unauthorized`, `insufficient_scope` (authorize again with `scopes`), \
                 `http_status`, `timeout`, `protocol` (not an MCP server), \
                 `rpc`, `closed`, `unavailable`). Messages never repeat what the server sent. Each user may \
                 start `[mcp] probes_per_minute` probes a minute and have `probes_in_flight` running; past \
                 either the answer is 429 `too_many_probes` with `Retry-After`, and nothing is connected.",
            )
            }),
        )
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeResponse {
    pub ok: bool,
    /// `needs_authorization` when the server refused us for want of OAuth authorization (start it
    /// with `POST /v1/mcp-servers/{id}/authorize`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    /// With `insufficient_scope`: the scopes authorizing again asks for (those granted and those
    /// the server asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ProbedServer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ProbedTool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ProbeError>,
}

/// What the server says about itself; fields it left out are absent.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbedServer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub protocol_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A tool under its own name (sends offer it with the server's prefix).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbedTool {
    pub name: String,
    /// Display name, when the server gives one (`title`, else `annotations.title`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
    /// The server's behaviour hints (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`), absent when it gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpToolHints>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeError {
    /// Machine-readable reason, e.g. `connect`, `unauthorized` or `timeout`.
    pub kind: String,
    /// A sentence for humans; never contains the server's secrets.
    pub message: String,
}

async fn probe(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<ProbeResponse>> {
    let timeout = Duration::from_millis(state.config.mcp.probe_timeout_ms);
    Ok(Json(
        match state.service.probe_mcp_server(&user.id, &id, timeout).await? {
            ProbeOutcome::Reached(report) => success(report),
            ProbeOutcome::Failed {
                kind,
                message,
                scopes,
            } => failure(&kind, message, scopes),
        },
    ))
}

fn success(report: ProbeReport) -> ProbeResponse {
    ProbeResponse {
        ok: true,
        authorization: None,
        scopes: None,
        server: Some(ProbedServer {
            name: report.server_name,
            version: report.server_version,
            protocol_version: report.protocol_version,
            instructions: report.instructions,
        }),
        tools: Some(
            report
                .tools
                .into_iter()
                .map(|tool| ProbedTool {
                    annotations: tool_hints(&tool),
                    name: tool.name,
                    title: tool.title,
                    description: tool.description,
                    input_schema: tool.input_schema,
                })
                .collect(),
        ),
        error: None,
    }
}

fn failure(kind: &str, message: String, scopes: Option<String>) -> ProbeResponse {
    ProbeResponse {
        ok: false,
        authorization: matches!(kind, "unauthorized" | "insufficient_scope")
            .then(|| "needs_authorization".to_owned()),
        scopes,
        server: None,
        tools: None,
        error: Some(ProbeError {
            kind: kind.to_owned(),
            message,
        }),
    }
}

// The store's row with where the server stands with OAuth.
/// An MCP server as the API shows it: the secret header values and the bearer token never leave the
/// store through this type, only whether they are set.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    #[serde(flatten)]
    pub server: records::McpServer,
    /// Where the server stands with OAuth: `connected` once you authorized it; on registration,
    /// `needs_authorization` with the URL when it asks for OAuth. Absent for servers without OAuth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<AuthorizationState>,
}

/// Where an MCP server stands with OAuth.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AuthorizationState {
    /// `needs_authorization` (open `authorization_url`) or `connected`.
    pub state: String,
    /// With `needs_authorization`: the URL to open in the user's browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// Why no URL could be made (the server's authorization server was refused or unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `needs_authorization` of a server the user authorized that since asked for more scopes
    /// (`403 insufficient_scope`): the scopes authorizing again asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<String>,
}

impl From<records::McpServer> for McpServer {
    fn from(server: records::McpServer) -> Self {
        Self {
            server,
            authorization: None,
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
    /// For a server that asks for OAuth: the client id to authorize it with, where you registered
    /// promptgate with its authorization server yourself (it is used before the operator's client,
    /// the gateway's Client ID Metadata Document and registration). At most 2048 printable ASCII
    /// characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_client_id: Option<String>,
    /// That client's secret, if it has one: stored sealed, never returned (`oauth_client_secret_set`
    /// says it is there), sent as the token endpoint takes it (the form where its metadata lists `client_secret_post`, else HTTP Basic). At most 1024
    /// printable ASCII characters; needs `oauth_client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_client_secret: Option<String>,
}

impl From<NewMcpServer> for records::NewMcpServer {
    fn from(body: NewMcpServer) -> Self {
        Self {
            name: body.name,
            url: body.url,
            enabled: body.enabled,
            headers: body.headers,
            bearer_token: body.bearer_token,
            oauth_client_id: body.oauth_client_id,
            oauth_client_secret: body.oauth_client_secret,
        }
    }
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

async fn list_mcp(Caller { state, user }: Caller) -> ApiResult<Json<Vec<McpServer>>> {
    let servers = state.service.mcp_servers(&user.id).await?;
    let grants = Grants::of(&state, &user.id).await?;
    Ok(Json(
        servers.into_iter().map(|server| grants.show(server)).collect(),
    ))
}

/// Which of the user's servers they authorized with OAuth, and which of those asked for more since.
struct Grants {
    authorized: Vec<String>,
    step_ups: Vec<(String, String)>,
}

impl Grants {
    async fn of(state: &AppState, user_id: &str) -> ApiResult<Grants> {
        Ok(Grants {
            authorized: state.service.authorized_mcp_servers(user_id).await?,
            step_ups: state.service.mcp_step_ups(user_id).await?,
        })
    }

    /// The server as shown: `connected` when the user authorized it with OAuth, `needs_authorization`
    /// with the scopes when it asked for more since.
    fn show(&self, server: records::McpServer) -> McpServer {
        let step_up = self.step_ups.iter().find(|(id, _)| *id == server.id);
        let authorization = match step_up {
            Some((_, scopes)) => Some(AuthorizationState {
                state: "needs_authorization".into(),
                authorization_url: None,
                error: None,
                scopes: Some(scopes.clone()),
            }),
            None => self.authorized.contains(&server.id).then(|| AuthorizationState {
                state: "connected".into(),
                authorization_url: None,
                error: None,
                scopes: None,
            }),
        };
        McpServer {
            authorization,
            ..server.into()
        }
    }
}

async fn create_mcp(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<NewMcpServer>,
) -> ApiResult<Created<Json<McpServer>>> {
    check_mcp(&body)?;
    let server = state.service.create_mcp_server(&user.id, &body.into()).await?;
    let authorization = authorization_state(&state, &user.id, &server.id).await;
    Ok(Created(Json(McpServer {
        authorization,
        ..server.into()
    })))
}

/// Whether a server just registered asks for OAuth, and where to go when it does.
async fn authorization_state(state: &AppState, user_id: &str, id: &str) -> Option<AuthorizationState> {
    match state.service.mcp_authorization(user_id, id).await {
        Ok(McpAuthorization::NotNeeded) => None,
        Ok(McpAuthorization::Connected) => Some(AuthorizationState {
            state: "connected".into(),
            authorization_url: None,
            error: None,
            scopes: None,
        }),
        Ok(McpAuthorization::NeedsAuthorization { url }) => Some(AuthorizationState {
            state: "needs_authorization".into(),
            authorization_url: Some(url),
            error: None,
            scopes: None,
        }),
        Err(error) => Some(AuthorizationState {
            state: "needs_authorization".into(),
            authorization_url: None,
            error: Some(error.to_string()),
            scopes: None,
        }),
    }
}

async fn authorize(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AuthorizationStart>> {
    let authorization_url = state.service.start_mcp_authorization(&user.id, &id).await?;
    Ok(Json(AuthorizationStart { authorization_url }))
}

async fn callback(
    State(state): State<AppState>,
    Query(query): Query<CallbackQuery>,
) -> ApiResult<Html<String>> {
    let name = state
        .service
        .complete_mcp_authorization(&OAuthCallback::from(query))
        .await?;
    let name = html_escape(&name);
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} connected</title></head>\
         <body><p>The MCP server {name} is connected. You can close this window.</p></body></html>"
    )))
}

/// The Client ID Metadata Document; the authorization server fetching it caches it for an hour.
async fn client_metadata(
    State(state): State<AppState>,
) -> ApiResult<([(HeaderName, &'static str); 1], Json<Value>)> {
    let document = state
        .service
        .mcp_client_metadata_document()
        .ok_or_else(|| ApiError::not_found("client metadata document", "client.json"))?;
    Ok(([(header::CACHE_CONTROL, "public, max-age=3600")], Json(document)))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

async fn get_mcp(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<McpServer>> {
    let server = state.service.mcp_server(&user.id, &id).await?;
    Ok(Json(Grants::of(&state, &user.id).await?.show(server)))
}

async fn update_mcp(
    Caller { state, user }: Caller,
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

async fn delete_mcp(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_mcp_server(&user.id, &id).await?;
    Ok(NoContent)
}
