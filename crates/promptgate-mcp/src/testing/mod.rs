//! Real MCP servers on loopback for tests (cargo feature `testing`): an in-process rmcp server with
//! tools that echo, stall, fail and overflow, a host for any other rmcp handler, and plain HTTP
//! handlers that misbehave in the ways real servers do.
//!
//! Setup failures panic: this module only runs inside tests, where a panic is the failure report.
//! [`Logs`] records what the code under test logs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_peer;
mod logs;

pub use auth_peer::{
    PeerProcess, TsAuthPeer, python_auth_peer, python_auth_peer_with, python_elicit_peer,
    typescript_auth_peer,
};
pub use logs::{LogLine, Logs};

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, Resource, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Peer, RoleServer, ServerHandler};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How the in-process server behaves.
#[derive(Clone)]
pub struct ServerOptions {
    /// Refuse the 2026-07-28 protocol so clients must use the `initialize` handshake.
    pub legacy_only: bool,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Always answer with the same next cursor.
    pub looping_cursor: bool,
    /// `ttlMs` on list results.
    pub ttl_ms: Option<u64>,
    /// Delay of the `slow` tool.
    pub slow_for: Duration,
    /// Never answer `server/discover` (some servers ignore methods they do not know).
    pub hang_on_discover: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            legacy_only: false,
            page_size: 3,
            looping_cursor: false,
            ttl_ms: None,
            slow_for: Duration::from_secs(30),
            hang_on_discover: false,
        }
    }
}

/// State shared by every session of one in-process server, visible to the test.
#[derive(Default)]
pub struct ServerState {
    pub extra_tools: Mutex<Vec<Tool>>,
    pub peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Open `subscriptions/listen` streams of stateless-era clients.
    pub subscriptions: Mutex<Vec<SubscriptionSink>>,
    pub list_calls: AtomicUsize,
    pub cancelled_calls: AtomicUsize,
    /// `ping` requests answered (legacy era; the stateless era has no `ping`).
    pub pings: AtomicUsize,
    /// How long each `ping` waits before it answers, in milliseconds.
    pub ping_delay_ms: AtomicU64,
    /// While set, every HTTP request is answered 503 (a server that is down behind its proxy).
    pub down: AtomicBool,
    /// Requests answered 503 because the server was down.
    pub refused_while_down: AtomicUsize,
}

impl ServerState {
    /// Adds a tool and tells every connected client that the list changed.
    pub async fn add_tool(&self, name: &'static str) {
        self.extra_tools
            .lock()
            .unwrap()
            .push(Tool::new(name, "added at runtime", object_schema()));
        let peers: Vec<_> = self.peers.lock().unwrap().clone();
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
        let sinks: Vec<_> = self.subscriptions.lock().unwrap().clone();
        for sink in sinks {
            let _ = sink.notify_tool_list_changed().await;
        }
    }
}

#[derive(Clone)]
struct TestServer {
    options: ServerOptions,
    state: Arc<ServerState>,
}

fn object_schema() -> Arc<JsonObject> {
    let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}});
    Arc::new(schema.as_object().cloned().unwrap())
}

pub const BASE_TOOLS: &[&str] = &["echo", "slow", "fail", "media", "big", "whoami", "seventh"];

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = BASE_TOOLS
            .iter()
            .map(|name| Tool::new(*name, format!("the {name} tool"), object_schema()))
            .collect();
        // Annotated as server-everything annotates its echo; `fail` keeps the spec's defaults.
        tools[0] = tools[0].clone().with_title("Echo back").with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        );
        tools.extend(self.state.extra_tools.lock().unwrap().iter().cloned());
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("promptgate-test-server", "1.2.3"))
        .with_instructions("Use echo to test.");
        if self.options.legacy_only {
            info.with_protocol_version(ProtocolVersion::V_2025_11_25)
        } else {
            info
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.options.legacy_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.state
            .subscriptions
            .lock()
            .unwrap()
            .push(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.state.pings.fetch_add(1, Ordering::SeqCst);
        let delay = self.state.ping_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.state.peers.lock().unwrap().push(context.peer.clone());
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.state.list_calls.fetch_add(1, Ordering::SeqCst);
        let tools = self.tools();
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + self.options.page_size).min(tools.len());
        let mut page = ListToolsResult::with_all_items(tools[start.min(end)..end].to_vec());
        if self.options.looping_cursor {
            page.next_cursor = Some("0".into());
        } else if end < tools.len() {
            page.next_cursor = Some(end.to_string());
        }
        if let Some(ttl) = self.options.ttl_ms {
            page = page.with_ttl_ms(ttl);
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_owned();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(format!("echo: {message}"))]),
            "slow" => {
                tokio::select! {
                    _ = tokio::time::sleep(self.options.slow_for) => {}
                    _ = context.ct.cancelled() => {
                        self.state.cancelled_calls.fetch_add(1, Ordering::SeqCst);
                    }
                }
                CallToolResult::success(vec![ContentBlock::text("finally done")])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the disk is full")]),
            "media" => {
                let mut result = CallToolResult::success(vec![
                    ContentBlock::text(r#"{"pages": 3}"#),
                    ContentBlock::text("The report has three pages."),
                    ContentBlock::image("iVBORw0KGgo=", "image/png"),
                    ContentBlock::resource_link(
                        Resource::new("https://example.com/report.pdf", "report.pdf")
                            .with_mime_type("application/pdf"),
                    ),
                ]);
                result.structured_content = Some(json!({"pages": 3}));
                result
            }
            "big" => CallToolResult::success(vec![ContentBlock::text("x".repeat(250_000))]),
            "whoami" => CallToolResult::success(vec![ContentBlock::text("promptgate-test-server")]),
            other if self.tools().iter().any(|t| t.name == other) => {
                CallToolResult::success(vec![ContentBlock::text(format!("{other} ran"))])
            }
            other => return Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        };
        Ok(result.into())
    }
}

/// Builds the app one run of a server serves; called again on restart, with that run's stop token.
type MakeApp = Arc<dyn Fn(CancellationToken) -> Router + Send + Sync>;

/// An in-process rmcp server on loopback that can be stopped and started again on its port.
pub struct McpTestServer {
    pub addr: SocketAddr,
    /// What the built-in handler has seen; stays empty for a server started [`with_handler`].
    ///
    /// [`with_handler`]: McpTestServer::with_handler
    pub state: Arc<ServerState>,
    make_app: MakeApp,
    stop: Option<CancellationToken>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl McpTestServer {
    /// The built-in server: [`BASE_TOOLS`] plus whatever the test adds, behaving as `options` say.
    pub async fn start(options: ServerOptions) -> McpTestServer {
        let state = Arc::new(ServerState::default());
        let handler = TestServer {
            options: options.clone(),
            state: state.clone(),
        };
        let switch = state.clone();
        let make_app: MakeApp = Arc::new(move |stop| {
            let app = mcp_app(handler.clone(), stop);
            let app = if options.hang_on_discover {
                app.layer(axum::middleware::from_fn(hang_on_discover))
            } else {
                app
            };
            let switch = switch.clone();
            app.layer(axum::middleware::from_fn(move |request, next| {
                answer_unless_down(switch.clone(), request, next)
            }))
        });
        Self::serve_first(state, make_app).await
    }

    /// Any rmcp handler, served at `/mcp` the same way.
    pub async fn with_handler<H>(handler: H) -> McpTestServer
    where
        H: ServerHandler + Clone + Send + Sync + 'static,
    {
        let make_app: MakeApp = Arc::new(move |stop| mcp_app(handler.clone(), stop));
        Self::serve_first(Arc::new(ServerState::default()), make_app).await
    }

    async fn serve_first(state: Arc<ServerState>, make_app: MakeApp) -> McpTestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut server = McpTestServer {
            addr: listener.local_addr().unwrap(),
            state,
            make_app,
            stop: None,
            task: None,
        };
        server.serve(listener);
        server
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn serve(&mut self, listener: TcpListener) {
        let stop = CancellationToken::new();
        let app = (self.make_app)(stop.child_token());
        let shutdown = stop.clone();
        self.task = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await;
        }));
        self.stop = Some(stop);
    }

    /// Stops accepting and drops every session; the port is free afterwards.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Starts again on the same port, with fresh sessions.
    pub async fn restart(&mut self) {
        let listener = TcpListener::bind(self.addr).await.unwrap();
        self.serve(listener);
    }
}

impl Drop for McpTestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// `handler` behind rmcp's streamable HTTP transport at `/mcp`, its sessions ending with `stop`.
fn mcp_app<H>(handler: H, stop: CancellationToken) -> Router
where
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    let service: StreamableHttpService<H, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Default::default(),
        StreamableHttpServerConfig::default()
            .with_cancellation_token(stop)
            // `mcp.test` is the name the address-policy tests resolve to this server themselves.
            .with_allowed_hosts(["localhost", "127.0.0.1", "::1", "mcp.test"]),
    );
    Router::new().nest_service("/mcp", service)
}

async fn answer_unless_down(
    state: Arc<ServerState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if state.down.load(Ordering::SeqCst) {
        state.refused_while_down.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    next.run(request).await
}

async fn hang_on_discover(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    if String::from_utf8_lossy(&bytes).contains("\"server/discover\"") {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// Serves `app` on a loopback port until the test ends; returns the MCP url.
pub async fn serve_plain(app: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/mcp")
}

pub async fn unauthorized_server() -> String {
    serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(|| async { (StatusCode::UNAUTHORIZED, "missing or bad token").into_response() }),
    ))
    .await
}

pub async fn failing_server() -> String {
    serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response() }),
    ))
    .await
}

/// Accepts every request and never answers.
pub async fn silent_server() -> String {
    serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(|| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK
        }),
    ))
    .await
}

/// Answers 200 with a JSON content type and a body that is not JSON.
pub async fn garbage_server() -> String {
    serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(|| async {
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                "{this is not json",
            )
                .into_response()
        }),
    ))
    .await
}

/// A loopback port nobody listens on.
pub async fn dead_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/mcp")
}
