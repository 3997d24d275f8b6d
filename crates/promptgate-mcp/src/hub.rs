//! The process-wide MCP hub: pooled sessions (capped, least recently used closed first), cached tool
//! lists, discovery for a send, tool calls, and per-user limits on probes. Liveness checks and
//! reconnects happen in the background (`keeper.rs`), never on a send's path.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use promptgate_outbound::{Outbound, call_time};
use serde_json::Value;
use tracing::Instrument;

use crate::config::{HubSettings, McpServerConfig};
use crate::elicitation::Elicitor;
use crate::entry::{ServerEntry, lock};
use crate::error::McpError;
use crate::pool::{HubUsage, Pool, PoolKey, Usage};
use crate::probes::{ProbeLimits, ProbePermit};
use crate::result::McpToolResult;
use crate::session::{DiscoveredTool, Session};

/// How many tools a server the hub has not listed yet is taken to have when deciding which servers a
/// send needs: a first send connects the servers in waves of about this many tools each until the
/// toolset is full, instead of connecting every server at once.
const UNKNOWN_SERVER_TOOLS: usize = 8;

/// How one server fared in a send's discovery.
#[derive(Debug, Clone)]
pub enum DiscoveryOutcome {
    Ready {
        server: McpServerConfig,
        tools: Arc<[DiscoveredTool]>,
    },
    /// The server is skipped for this send; unless its settings are invalid, a background reconnect
    /// is under way.
    Failed {
        server: McpServerConfig,
        error: McpError,
    },
    /// The server was not connected: the servers before it already list enough tools to fill the
    /// send's toolset, or it is past the number of servers a send uses.
    Unused { server: McpServerConfig },
}

impl DiscoveryOutcome {
    pub fn server(&self) -> &McpServerConfig {
        match self {
            DiscoveryOutcome::Ready { server, .. }
            | DiscoveryOutcome::Failed { server, .. }
            | DiscoveryOutcome::Unused { server } => server,
        }
    }
}

/// What a server reports about itself, from a fresh connection (see [`McpHub::probe`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub protocol_version: String,
    pub instructions: Option<String>,
    pub tools: Vec<DiscoveredTool>,
}

/// One per process; cheap to clone. Sessions are pooled per user, server and connection settings.
#[derive(Clone)]
pub struct McpHub {
    shared: Arc<Shared>,
    pool: Arc<Mutex<Pool>>,
    probes: Arc<ProbeLimits>,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("usage", &self.usage())
            .field("settings", &self.shared.settings)
            .finish()
    }
}

/// What every entry of a hub shares.
pub(crate) struct Shared {
    pub outbound: Arc<Outbound>,
    pub settings: HubSettings,
    /// The entries' keepers, so a shutdown can end them and wait until they have.
    pub background: tokio_util::task::TaskTracker,
    pub stopping: tokio_util::sync::CancellationToken,
    pub usage: Usage,
    /// What entries measure their last use from.
    pub epoch: Instant,
}

impl Shared {
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl PoolKey {
    fn of(config: &McpServerConfig) -> PoolKey {
        PoolKey {
            user_id: config.user_id.clone(),
            server_id: config.id.clone(),
            fingerprint: config.connection_fingerprint(),
        }
    }
}

impl McpHub {
    /// Builds the hub, its connections checked by `settings.addresses`. The process must have
    /// installed its rustls crypto provider before this is called.
    pub fn new(settings: HubSettings) -> Result<McpHub, McpError> {
        let outbound = Arc::new(Outbound::new(settings.addresses.clone()));
        Ok(McpHub::with_outbound(outbound, settings))
    }

    /// Builds the hub on a caller's outbound policy (a custom resolver, say); `settings.addresses`
    /// is then not consulted.
    pub fn with_outbound(outbound: Arc<Outbound>, settings: HubSettings) -> McpHub {
        let probes = ProbeLimits::new(settings.probes_per_minute, settings.probes_in_flight);
        McpHub {
            shared: Arc::new(Shared {
                outbound,
                settings,
                background: tokio_util::task::TaskTracker::new(),
                stopping: tokio_util::sync::CancellationToken::new(),
                usage: Usage::default(),
                epoch: Instant::now(),
            }),
            pool: Arc::new(Mutex::new(Pool::default())),
            probes,
        }
    }

    /// Ends the background checks and reconnects and waits for them, at most `deadline`; no new
    /// ones start.
    pub async fn shutdown(&self, deadline: Duration) {
        self.shared.stopping.cancel();
        self.shared.background.close();
        let _ = tokio::time::timeout(deadline, self.shared.background.wait()).await;
    }

    /// Checks a server URL against the outbound policy without connecting, for registration: a
    /// host name is resolved and each of its addresses checked. Every later connect checks again.
    pub async fn check_url(&self, url: &str) -> Result<(), McpError> {
        let parsed = crate::config::parse_server_url(url)?;
        self.shared
            .outbound
            .check_url(&parsed)
            .await
            .map(|_| ())
            .map_err(McpError::from_outbound)
    }

    /// OAuth for the servers that are protected resources, through the hub's outbound policy.
    pub fn oauth(&self) -> crate::oauth::McpOAuth {
        crate::oauth::McpOAuth::new(self.shared.outbound.clone())
    }

    pub fn settings(&self) -> &HubSettings {
        &self.shared.settings
    }

    /// The sessions this hub holds now and about how much memory they take.
    pub fn usage(&self) -> HubUsage {
        let entries = lock(&self.pool).len();
        self.shared.usage.snapshot(entries)
    }

    /// Finds the tools of every server (up to `max_servers_per_user`), each bounded by `timeout`.
    /// Outcomes come back in the order of `servers`. See [`McpHub::discover_within`].
    pub async fn discover(&self, servers: &[McpServerConfig], timeout: Duration) -> Vec<DiscoveryOutcome> {
        self.discover_within(servers, usize::MAX, timeout).await
    }

    /// Finds the tools of the servers a send with room for `tool_room` more tools needs, in order:
    /// the servers at the front until their tools fill the room. Servers whose tool count is known
    /// are counted as such; the others as [`UNKNOWN_SERVER_TOOLS`], in waves, so that servers past
    /// the toolset's cap are neither connected nor checked (they come back `Unused`, and a session
    /// they still had is closed). Each server is bounded by `timeout`; one that fails is reported
    /// and reconnected in the background, and until that attempt is due it is reported failed at
    /// once instead of being waited for again.
    pub async fn discover_within(
        &self,
        servers: &[McpServerConfig],
        tool_room: usize,
        timeout: Duration,
    ) -> Vec<DiscoveryOutcome> {
        let usable = servers.len().min(self.shared.settings.max_servers_per_user);
        let mut outcomes = Vec::with_capacity(servers.len());
        let mut listed = 0usize;
        while outcomes.len() < usable && listed < tool_room {
            let start = outcomes.len();
            let mut end = start;
            let mut expected = listed;
            while end < usable && expected < tool_room {
                expected = expected.saturating_add(
                    self.known_tool_count(&servers[end])
                        .unwrap_or(UNKNOWN_SERVER_TOOLS),
                );
                end += 1;
            }
            let wave = servers[start..end]
                .iter()
                .map(|server| self.discover_one(server, timeout));
            for outcome in futures::future::join_all(wave).await {
                if let DiscoveryOutcome::Ready { tools, .. } = &outcome {
                    listed = listed.saturating_add(tools.len());
                }
                outcomes.push(outcome);
            }
        }
        for server in &servers[outcomes.len()..] {
            self.release(server);
            outcomes.push(DiscoveryOutcome::Unused {
                server: server.clone(),
            });
        }
        outcomes
    }

    /// How many tools the server listed last time, if the hub still knows.
    fn known_tool_count(&self, config: &McpServerConfig) -> Option<usize> {
        let entry = lock(&self.pool).get(&PoolKey::of(config)).cloned()?;
        entry.any_tools().map(|tools| tools.len())
    }

    async fn discover_one(&self, config: &McpServerConfig, timeout: Duration) -> DiscoveryOutcome {
        let entry = self.entry(config);
        entry.touch();
        if let Some(error) = entry.waiting_for_retry() {
            metrics::counter!("promptgate_mcp_discovery_failures_total", "kind" => "backing_off")
                .increment(1);
            return DiscoveryOutcome::Failed {
                server: config.clone(),
                error,
            };
        }
        let outcome = match tokio::time::timeout(timeout, entry.tools_for_send(timeout)).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout(timeout)),
        };
        match outcome {
            Ok(tools) => DiscoveryOutcome::Ready {
                server: config.clone(),
                tools,
            },
            Err(error) => {
                // `kind` = `timeout` counts the servers that cost a send their whole discovery budget.
                metrics::counter!("promptgate_mcp_discovery_failures_total", "kind" => error.kind())
                    .increment(1);
                entry.failed(&error);
                DiscoveryOutcome::Failed {
                    server: config.clone(),
                    error,
                }
            }
        }
    }

    /// Calls `tool_name` on the pooled session of `config`, bounded by `timeout`. Dropping the
    /// returned future cancels the call. A server that turns out to be gone is marked failed here,
    /// so the next send leaves it out.
    pub async fn call_tool(
        &self,
        config: &McpServerConfig,
        tool_name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<McpToolResult, McpError> {
        self.call_tool_asking(config, tool_name, arguments, timeout, None)
            .await
    }

    /// [`McpHub::call_tool`] for a call whose server may ask the user a question: `elicitor` puts
    /// it to them, and the time spent waiting for them does not count against `timeout`.
    pub async fn call_tool_asking(
        &self,
        config: &McpServerConfig,
        tool_name: &str,
        arguments: Value,
        timeout: Duration,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<McpToolResult, McpError> {
        let entry = self.entry(config);
        entry.touch();
        let span = call_span(config, tool_name);
        let user_time = elicitor.clone();
        let call = async {
            let known = match entry.any_tools() {
                Some(tools) => tools,
                None => entry.refresh(timeout).await?,
            };
            if !known.iter().any(|t| t.name == tool_name) {
                // The list may predate the tool; look once more before giving up.
                let current = entry.refresh(timeout).await?;
                if !current.iter().any(|t| t.name == tool_name) {
                    return Err(McpError::ToolNotFound(tool_name.to_owned()));
                }
            }
            let session = entry.session(timeout).await?;
            session.call_tool(tool_name, arguments, elicitor).await
        };
        let user_time = move || user_time.as_ref().map_or(Duration::ZERO, |e| e.user_time());
        let outcome = match call_time::within(timeout, user_time, call.instrument(span.clone())).await {
            Some(outcome) => outcome.map_err(|e| e.redacted(config)),
            None => {
                span.record("error.type", "timeout");
                return Err(McpError::Timeout(timeout));
            }
        };
        match outcome {
            Ok(result) => {
                entry.verified();
                Ok(McpToolResult::from_call_result(
                    &result,
                    self.shared.settings.max_result_chars,
                    self.shared.settings.max_ui_output_bytes,
                ))
            }
            Err(error) => {
                span.record("error.type", error.kind());
                if error.is_connection_failure() {
                    entry.failed(&error);
                }
                Err(error)
            }
        }
    }

    /// A place among `user`'s probes for other work that reaches a server of theirs on demand (an
    /// authorization's discovery and client registration), held until the permit is dropped; refused
    /// as a probe is.
    pub fn admit_probe(&self, user: &str) -> Result<ProbePermit, McpError> {
        self.probes.admit(user, Instant::now())
    }

    /// Connects to `config` afresh (no pooled session, no cache) and reports what the server says
    /// about itself, so a user can check a server before chatting. Each user may have
    /// `probes_in_flight` probes running and start `probes_per_minute`; past either the probe is
    /// refused with [`McpError::TooManyProbes`] before anything connects.
    pub async fn probe(&self, config: &McpServerConfig, timeout: Duration) -> Result<ProbeReport, McpError> {
        let _permit = self.probes.admit(&config.user_id, Instant::now())?;
        let settings = &self.shared.settings;
        let probe = async {
            let session = Session::open(
                &self.shared.outbound,
                config,
                settings,
                Arc::new(AtomicBool::new(false)),
                timeout,
            )
            .await?;
            let tools = session.list_tools(settings).await?;
            let identity = session.identity();
            Ok(ProbeReport {
                server_name: identity.name,
                server_version: identity.version,
                protocol_version: identity.protocol_version,
                instructions: identity.instructions,
                tools: tools.tools,
            })
        };
        match tokio::time::timeout(timeout, probe).await {
            Ok(result) => result.map_err(|e: McpError| e.redacted(config)),
            Err(_) => Err(McpError::Timeout(timeout)),
        }
    }

    /// Drops every pooled session of a server (deleted, or its user signed out).
    pub fn forget(&self, user_id: &str, server_id: &str) {
        lock(&self.pool).remove_server(user_id, server_id);
    }

    /// Drops a server's entry, and so closes its session, if it has one.
    fn release(&self, config: &McpServerConfig) {
        lock(&self.pool).remove(&PoolKey::of(config));
    }

    fn entry(&self, config: &McpServerConfig) -> Arc<ServerEntry> {
        let key = PoolKey::of(config);
        let mut pool = lock(&self.pool);
        if let Some(entry) = pool.get(&key) {
            return entry.clone();
        }
        let entry = Arc::new(ServerEntry::new(self.shared.clone(), config.clone(), key.clone()));
        pool.insert(key, entry.clone(), self.shared.settings.max_sessions);
        drop(pool);
        crate::keeper::spawn(&entry, &self.pool);
        entry
    }
}

/// The client span of a `tools/call` request, with the MCP semantic conventions' attributes.
fn call_span(config: &McpServerConfig, tool_name: &str) -> tracing::Span {
    let address = url::Url::parse(&config.url).ok();
    tracing::info_span!(
        target: "promptgate::otel",
        "mcp_call",
        otel.name = format!("tools/call {tool_name}"),
        otel.kind = "client",
        "mcp.method.name" = "tools/call",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool_name,
        "promptgate.mcp.server" = config.name.as_str(),
        "server.address" = address.as_ref().and_then(url::Url::host_str),
        // Signed: the exporter sends unsigned values as strings.
        "server.port" = address.as_ref().and_then(url::Url::port_or_known_default).map(i64::from),
        "network.transport" = "tcp",
        "error.type" = tracing::field::Empty,
    )
}
