//! `POST /v1/mcp-servers/{id}/probe`: check a registered MCP server before chatting with it.

use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use axum::Json;
use axum::extract::{Path, State};
use promptgate_mcp::{McpError, McpServerConfig, ProbeReport};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/mcp-servers/{id}/probe",
        post_with(probe, |op| {
            op.summary("Connect to an MCP server now and list its tools").description(
                "Opens a fresh connection with the stored headers and token (nothing cached is used) within \
                 `[mcp] probe_timeout_ms`. Answers 200 either way: `ok: true` with the server's identity and \
                 tools, or `ok: false` with the reason (`error.kind` is one of `invalid_config`, \
                 `refused_address` (the outbound address policy refuses the URL's address), `connect` \
                 (unreachable), `unauthorized`, `http_status`, `timeout`, `protocol` (not an MCP server), \
                 `rpc`, `closed`, `unavailable`). Messages never repeat what the server sent.",
            )
        }),
    )
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeResponse {
    pub ok: bool,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeError {
    /// Machine-readable reason, e.g. `connect`, `unauthorized` or `timeout`.
    pub kind: String,
    /// A sentence for humans; never contains the server's secrets.
    pub message: String,
}

async fn probe(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> ApiResult<Json<ProbeResponse>> {
    let server = state
        .store
        .get_mcp_server(&user.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("MCP server", &id))?;
    let secrets = state
        .store
        .mcp_server_secrets(&user.id, &id)
        .await
        .map_err(|e| ApiError::from_store(e, "MCP server", &id))?;
    let Some(hub) = state.turns.mcp_hub() else {
        return Ok(Json(failure(
            "unavailable",
            "this server was started without MCP support".to_owned(),
        )));
    };
    let config = McpServerConfig {
        id: server.id,
        user_id: user.id,
        name: server.name,
        url: server.url,
        headers: secrets.headers,
        bearer_token: secrets.bearer_token,
    };
    let timeout = Duration::from_millis(state.config.mcp.probe_timeout_ms);
    Ok(Json(match hub.probe(&config, timeout).await {
        Ok(report) => success(report),
        Err(error) => {
            tracing::info!(server_id = %config.id, %error, "MCP probe failed");
            from_error(&error)
        }
    }))
}

/// Refuses a server URL the outbound address policy would refuse at connect time (422
/// `refused_address`), so a user learns it when registering rather than at the first send. A name
/// that does not resolve now is accepted: the server may simply be down. Every connect checks again.
pub(crate) async fn check_destination(state: &AppState, url: &str) -> Result<(), ApiError> {
    let Some(hub) = state.turns.mcp_hub() else {
        return Ok(());
    };
    match hub.check_url(url).await {
        Err(McpError::RefusedAddress(reason)) => Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "refused_address",
            format!(
                "{reason}; this server does not connect there (see [mcp] allow_loopback, allow_private and allowed_addrs)"
            ),
        )),
        Err(McpError::InvalidConfig(reason)) => Err(ApiError::invalid(reason)),
        _ => Ok(()),
    }
}

fn success(report: ProbeReport) -> ProbeResponse {
    ProbeResponse {
        ok: true,
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
                    name: tool.name,
                    description: tool.description,
                    input_schema: tool.input_schema,
                })
                .collect(),
        ),
        error: None,
    }
}

fn from_error(error: &McpError) -> ProbeResponse {
    failure(error.kind(), error.to_string())
}

fn failure(kind: &str, message: String) -> ProbeResponse {
    ProbeResponse {
        ok: false,
        server: None,
        tools: None,
        error: Some(ProbeError {
            kind: kind.to_owned(),
            message,
        }),
    }
}
