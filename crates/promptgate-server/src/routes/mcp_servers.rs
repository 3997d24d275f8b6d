//! `POST /v1/mcp-servers/{id}/probe`: check a registered MCP server before chatting with it.

use std::time::Duration;

use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use axum::Json;
use axum::extract::{Path, State};
use promptgate_service::ProbeOutcome;
use promptgate_service::records::ProbeReport;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::auth::CurrentUser;
use crate::error::ApiResult;
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
    let timeout = Duration::from_millis(state.config.mcp.probe_timeout_ms);
    Ok(Json(
        match state.service.probe_mcp_server(&user.id, &id, timeout).await? {
            ProbeOutcome::Reached(report) => success(report),
            ProbeOutcome::Failed { kind, message } => failure(&kind, message),
        },
    ))
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
