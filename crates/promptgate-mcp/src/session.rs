//! One live connection to one MCP server: opening it in the right era, listing its tools, calling
//! one of them.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, Implementation, PaginatedRequestParams, PingRequest, ProtocolVersion,
    ServerNotification, SubscriptionFilter, Tool,
};
use rmcp::service::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::Value;

use promptgate_outbound::Outbound;

use crate::config::{HubSettings, McpServerConfig};
use crate::elicitation::{self, Elicitor, Elicitors};
use crate::era::{self, Era};
use crate::error::McpError;

/// A tool as the server describes it, ready to be offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredTool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    /// `title`, else `annotations.title` (the spec's display precedence).
    pub title: Option<String>,
    /// The behaviour hints of the tool's `annotations`, when it has any.
    pub hints: Option<ToolHints>,
}

/// The behaviour hints a server gives a tool (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
/// `openWorldHint`), as given: `None` is a hint left out, whose meaning is the spec's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

impl DiscoveredTool {
    fn from_listed(tool: Tool) -> DiscoveredTool {
        let annotations = tool.annotations.unwrap_or_default();
        let hints = ToolHints {
            read_only: annotations.read_only_hint,
            destructive: annotations.destructive_hint,
            idempotent: annotations.idempotent_hint,
            open_world: annotations.open_world_hint,
        };
        DiscoveredTool {
            name: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()),
            input_schema: Value::Object((*tool.input_schema).clone()),
            title: tool.title.or(annotations.title),
            hints: (hints != ToolHints::default()).then_some(hints),
        }
    }
}

/// What a server said about itself when the session opened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerIdentity {
    pub name: Option<String>,
    pub version: Option<String>,
    pub protocol_version: String,
    pub instructions: Option<String>,
}

/// A full tool list, with how long the server allows it to be reused when it said so.
pub(crate) struct ToolList {
    pub tools: Vec<DiscoveredTool>,
    pub server_ttl: Option<Duration>,
}

/// Receives what the server sends on its own: `tools/list_changed` marks the cached tool list
/// stale, and `elicitation/create` goes to the call that can ask the user (see `elicitation`).
#[derive(Clone)]
pub(crate) struct ChangeListener {
    pub tools_changed: Arc<AtomicBool>,
    info: ClientConfig,
    elicitors: Elicitors,
}

impl ClientHandler for ChangeListener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!("MCP server announced a changed tool list");
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.elicitors.answer(request).await)
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

pub(crate) struct Session {
    service: RunningService<RoleClient, ChangeListener>,
    pub era: Era,
    elicitors: Elicitors,
}

impl Session {
    /// Opens a session. The era probe gets a slice of `budget`; if it does not answer in time the
    /// server is taken for a legacy one, whose handshake then gets whatever the caller's own timeout
    /// leaves.
    pub async fn open(
        outbound: &Outbound,
        config: &McpServerConfig,
        settings: &HubSettings,
        tools_changed: Arc<AtomicBool>,
        budget: Duration,
    ) -> Result<Session, McpError> {
        let headers = config.header_map()?;
        let http = pinned_client(outbound, config).await?;
        let era = match tokio::time::timeout(era::probe_budget(budget), era::detect(&http, config)).await {
            Ok(verdict) => verdict?,
            Err(_) => {
                tracing::debug!(server = %config.id, "server/discover probe timed out; trying initialize");
                Era::Legacy
            }
        };
        let mut transport_config = StreamableHttpClientTransportConfig::with_uri(config.url.as_str())
            .custom_headers(headers)
            .max_json_response_size(settings.max_response_bytes)
            .max_sse_event_size(settings.max_response_bytes)
            // A server restarted under us forgets our session; rmcp then re-runs the handshake.
            .reinit_on_expired_session(true);
        if let Some(token) = &config.bearer_token {
            transport_config = transport_config.auth_header(token.clone());
        }
        let transport = StreamableHttpClientTransport::with_client(
            crate::trace_header::TracedHttp(http),
            transport_config,
        );
        let client_info = Implementation::new("promptgate", env!("CARGO_PKG_VERSION"));
        let (lifecycle, protocol) = match era {
            Era::Modern => (
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
                ProtocolVersion::V_2026_07_28,
            ),
            Era::Legacy => (
                ClientLifecycleMode::Initialize,
                ProtocolVersion::LATEST_WITH_INITIALIZE,
            ),
        };
        let tools_changed_watch = tools_changed.clone();
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation::capability());
        let elicitors = Elicitors::default();
        let listener = ChangeListener {
            tools_changed,
            info: ClientConfig::new(capabilities, client_info).with_protocol_version(protocol),
            elicitors: elicitors.clone(),
        };
        let service = listener
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| McpError::from_init(&e).redacted(config))?;
        // We keep our own tool cache with our own invalidation; rmcp's would also answer from stale
        // entries when the server is down, hiding the failure from discovery.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        if era == Era::Modern && announces_tool_changes(&service) {
            tokio::spawn(watch_tool_changes(service.peer().clone(), tools_changed_watch));
        }
        Ok(Session {
            service,
            era,
            elicitors,
        })
    }

    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    pub fn identity(&self) -> ServerIdentity {
        let info = self.service.peer().peer_info();
        let info = info.as_deref();
        ServerIdentity {
            name: info.and_then(|i| i.server_info.as_ref()).map(|s| s.name.clone()),
            version: info
                .and_then(|i| i.server_info.as_ref())
                .map(|s| s.version.clone()),
            protocol_version: info.map(|i| i.protocol_version.to_string()).unwrap_or_default(),
            instructions: info.and_then(|i| i.instructions.clone()),
        }
    }

    /// Lists every page of tools, refusing cursor loops and oversized catalogues.
    pub async fn list_tools(&self, settings: &HubSettings) -> Result<ToolList, McpError> {
        let mut tools = Vec::new();
        let mut seen_cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut expires: Option<Instant> = None;
        let mut every_page_has_ttl = true;
        for _page in 0..settings.max_tool_pages {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = self
                .service
                .peer()
                .list_tools(Some(params))
                .await
                .map_err(|e| McpError::from_service(&e))?;
            match page.ttl_ms {
                Some(ms) => {
                    let page_expiry = Instant::now() + Duration::from_millis(ms);
                    expires = Some(expires.map_or(page_expiry, |e| e.min(page_expiry)));
                }
                None => every_page_has_ttl = false,
            }
            for tool in page.tools {
                if tools.len() >= settings.max_tools_per_server {
                    tracing::warn!(
                        limit = settings.max_tools_per_server,
                        "MCP server lists too many tools; keeping the first ones"
                    );
                    break;
                }
                tools.push(DiscoveredTool::from_listed(tool));
            }
            match page.next_cursor {
                None => {
                    let server_ttl = expires
                        .filter(|_| every_page_has_ttl)
                        .map(|e| e.saturating_duration_since(Instant::now()));
                    return Ok(ToolList { tools, server_ttl });
                }
                Some(next) => {
                    if !seen_cursors.insert(next.clone()) {
                        return Err(McpError::Protocol(
                            "tools/list returned a cursor it had returned before".into(),
                        ));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(McpError::Protocol(format!(
            "tools/list did not end within {} pages",
            settings.max_tool_pages
        )))
    }

    /// Asks the server whether it is there. A JSON-RPC error still proves it is; stateless-era
    /// servers answer `ping` with "method not found".
    pub async fn ping(&self) -> Result<(), McpError> {
        self.service
            .peer()
            .send_request(ClientRequest::PingRequest(PingRequest::default()))
            .await
            .map(|_| ())
            .map_err(|e| McpError::from_service(&e))
    }

    /// Calls a tool; a question the server asks meanwhile goes to `elicitor` (without one it is
    /// declined). Dropping the future abandons the request, which rmcp turns into a cancellation
    /// the server sees.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<CallToolResult, McpError> {
        let _asking = elicitor.map(|elicitor| self.elicitors.register(elicitor));
        let mut params = CallToolRequestParams::new(name.to_owned());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return Err(McpError::InvalidArguments(format!(
                    "expected a JSON object, got {}",
                    json_kind(&other)
                )));
            }
        }
        if let Some(context) = promptgate_outbound::trace_context::current() {
            // SEP-414: the trace context of an MCP request travels in its `_meta`.
            let mut meta = rmcp::model::MetaObject::new();
            meta.set_traceparent(context.traceparent);
            if let Some(state) = context.tracestate {
                meta.set_tracestate(state);
            }
            params.meta = Some(rmcp::model::RequestMetaObject(meta));
        }
        self.service
            .call_tool(params)
            .await
            .map_err(|e| McpError::from_service(&e))
    }
}

/// A client for one session, resolved and checked now and pinned to the checked addresses for the
/// session's life; the next session (a reconnect) resolves and checks again.
async fn pinned_client(outbound: &Outbound, config: &McpServerConfig) -> Result<reqwest::Client, McpError> {
    let url = config.parsed_url()?;
    let target = outbound
        .check_url(&url)
        .await
        .map_err(|e| McpError::from_outbound(e).redacted(config))?;
    outbound
        .pinned_builder(&url, &target)
        .map_err(McpError::from_outbound)?
        // Reusing a connection whose previous body was not fully read stalls on delayed ACKs;
        // MCP traffic per server is light, so fresh connections cost little.
        .pool_max_idle_per_host(0)
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("promptgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|_| McpError::Connect("the HTTP client could not be set up".to_owned()))
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn announces_tool_changes(service: &RunningService<RoleClient, ChangeListener>) -> bool {
    service
        .peer()
        .peer_info()
        .and_then(|info| {
            info.capabilities
                .tools
                .as_ref()
                .and_then(|tools| tools.list_changed)
        })
        .unwrap_or(false)
}

/// In the stateless era change notifications only flow on a `subscriptions/listen` stream; this keeps
/// one open for the session's life and marks the tool list stale on each change. It ends when the
/// session closes or the server refuses or drops the subscription (then `ttlMs` alone governs).
async fn watch_tool_changes(peer: Peer<RoleClient>, tools_changed: Arc<AtomicBool>) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match tokio::time::timeout(LISTEN_ACK_TIMEOUT, peer.listen(filter)).await {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(error)) => {
            tracing::debug!(%error, "MCP server refused a tools/list_changed subscription");
            return;
        }
        Err(_) => return,
    };
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
            tools_changed.store(true, Ordering::SeqCst);
        }
    }
}

const LISTEN_ACK_TIMEOUT: Duration = Duration::from_secs(10);

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
