//! The process-wide MCP hub: pooled sessions, cached tool lists, discovery for a send, tool calls,
//! and quiet background reconnects for servers that failed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use promptgate_outbound::Outbound;
use serde_json::Value;

use crate::config::{HubSettings, McpServerConfig};
use crate::error::McpError;
use crate::result::McpToolResult;
use crate::session::{DiscoveredTool, Session};

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
}

impl DiscoveryOutcome {
    pub fn server(&self) -> &McpServerConfig {
        match self {
            DiscoveryOutcome::Ready { server, .. } | DiscoveryOutcome::Failed { server, .. } => server,
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
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &lock(&self.pool).entries.len())
            .field("settings", &self.shared.settings)
            .finish()
    }
}

struct Shared {
    outbound: Arc<Outbound>,
    settings: HubSettings,
    /// Background reconnects, so a shutdown can end them and wait until they have.
    background: tokio_util::task::TaskTracker,
    stopping: tokio_util::sync::CancellationToken,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    user_id: String,
    server_id: String,
    fingerprint: u64,
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
    /// Ends the background reconnects and waits for them, at most `deadline`; no new ones start.
    pub async fn shutdown(&self, deadline: Duration) {
        self.shared.stopping.cancel();
        self.shared.background.close();
        let _ = tokio::time::timeout(deadline, self.shared.background.wait()).await;
    }

    pub fn with_outbound(outbound: Arc<Outbound>, settings: HubSettings) -> McpHub {
        McpHub {
            shared: Arc::new(Shared {
                outbound,
                settings,
                background: tokio_util::task::TaskTracker::new(),
                stopping: tokio_util::sync::CancellationToken::new(),
            }),
            pool: Arc::new(Mutex::new(Pool {
                entries: HashMap::new(),
                swept_at: Instant::now(),
            })),
        }
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

    pub fn settings(&self) -> &HubSettings {
        &self.shared.settings
    }

    /// Finds the tools of every server at once, each bounded by `timeout`. Outcomes come back in the
    /// order of `servers`. A server that fails is reported, logged and reconnected in the background;
    /// while that reconnect is pending, the server is reported failed at once instead of being waited
    /// for again.
    pub async fn discover(&self, servers: &[McpServerConfig], timeout: Duration) -> Vec<DiscoveryOutcome> {
        futures::future::join_all(servers.iter().map(|server| self.discover_one(server, timeout))).await
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
    /// returned future cancels the call.
    pub async fn call_tool(
        &self,
        config: &McpServerConfig,
        tool_name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<McpToolResult, McpError> {
        let entry = self.entry(config);
        entry.touch();
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
            session.call_tool(tool_name, arguments).await
        };
        let outcome = match tokio::time::timeout(timeout, call).await {
            Ok(outcome) => outcome.map_err(|e| e.redacted(config)),
            Err(_) => return Err(McpError::Timeout(timeout)),
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
                if error.is_connection_failure() {
                    entry.failed(&error);
                }
                Err(error)
            }
        }
    }

    /// Connects to `config` afresh (no pooled session, no cache) and reports what the server says
    /// about itself, so a user can check a server before chatting.
    pub async fn probe(&self, config: &McpServerConfig, timeout: Duration) -> Result<ProbeReport, McpError> {
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
        lock(&self.pool)
            .entries
            .retain(|key, _| !(key.user_id == user_id && key.server_id == server_id));
    }

    fn entry(&self, config: &McpServerConfig) -> Arc<ServerEntry> {
        let key = PoolKey {
            user_id: config.user_id.clone(),
            server_id: config.id.clone(),
            fingerprint: config.connection_fingerprint(),
        };
        let mut pool = lock(&self.pool);
        pool.sweep_idle(self.shared.settings.idle_limit);
        if let Some(entry) = pool.entries.get(&key) {
            return entry.clone();
        }
        // Settings changed: the sessions opened with the old ones must not serve this server again.
        pool.entries
            .retain(|old, _| !(old.user_id == key.user_id && old.server_id == key.server_id));
        let entry = Arc::new(ServerEntry::new(self.shared.clone(), config.clone()));
        pool.entries.insert(key, entry.clone());
        entry
    }
}

struct Pool {
    entries: HashMap<PoolKey, Arc<ServerEntry>>,
    swept_at: Instant,
}

impl Pool {
    /// Closes the sessions of servers nobody used within `idle_limit`, so idle users do not keep
    /// connections open. Runs at most once per tenth of the limit.
    fn sweep_idle(&mut self, idle_limit: Duration) {
        if self.swept_at.elapsed() < idle_limit / 10 {
            return;
        }
        self.swept_at = Instant::now();
        self.entries
            .retain(|_, entry| lock(&entry.health).last_used.elapsed() <= idle_limit);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct CachedTools {
    tools: Arc<[DiscoveredTool]>,
    expires_at: Instant,
}

struct Health {
    last_used: Instant,
    /// When the server last answered anything; a cached list older than the liveness interval is
    /// only trusted after the server answers again.
    verified_at: Option<Instant>,
    /// A background reconnect task is running for this entry.
    reconnecting: bool,
    /// Set while the server is failing: why, when the next attempt is due, and the wait after that.
    last_error: Option<McpError>,
    retry_at: Option<Instant>,
    next_backoff: Duration,
}

/// Everything the hub keeps about one server of one user.
struct ServerEntry {
    shared: Arc<Shared>,
    config: McpServerConfig,
    /// Held across a connect, so concurrent sends share one handshake.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    tools: Mutex<Option<CachedTools>>,
    /// Set by the session when the server announces `tools/list_changed`.
    tools_changed: Arc<AtomicBool>,
    health: Mutex<Health>,
}

impl ServerEntry {
    fn new(shared: Arc<Shared>, config: McpServerConfig) -> ServerEntry {
        let next_backoff = shared.settings.reconnect_initial_backoff;
        ServerEntry {
            shared,
            config,
            session: tokio::sync::Mutex::new(None),
            tools: Mutex::new(None),
            tools_changed: Arc::new(AtomicBool::new(false)),
            health: Mutex::new(Health {
                last_used: Instant::now(),
                verified_at: None,
                reconnecting: false,
                last_error: None,
                retry_at: None,
                next_backoff,
            }),
        }
    }

    fn touch(&self) {
        lock(&self.health).last_used = Instant::now();
    }

    fn fresh_tools(&self) -> Option<Arc<[DiscoveredTool]>> {
        if self.tools_changed.load(Ordering::SeqCst) {
            return None;
        }
        let cached = lock(&self.tools);
        cached
            .as_ref()
            .filter(|c| c.expires_at > Instant::now())
            .map(|c| c.tools.clone())
    }

    /// The last list, however old.
    fn any_tools(&self) -> Option<Arc<[DiscoveredTool]>> {
        lock(&self.tools).as_ref().map(|c| c.tools.clone())
    }

    /// The last error, while the server failed and its next attempt is not due yet: such a server
    /// is skipped at once instead of making every send wait for it again.
    fn waiting_for_retry(&self) -> Option<McpError> {
        let health = lock(&self.health);
        match (&health.last_error, health.retry_at) {
            (Some(error), Some(at)) if at > Instant::now() => Some(error.clone()),
            _ => None,
        }
    }

    fn verified(&self) {
        lock(&self.health).verified_at = Some(Instant::now());
    }

    /// The server answered after failing: forget the failure and start the backoff over.
    fn recovered(&self) {
        let mut health = lock(&self.health);
        health.verified_at = Some(Instant::now());
        health.last_error = None;
        health.retry_at = None;
        health.next_backoff = self.shared.settings.reconnect_initial_backoff;
    }

    /// The tools a send may offer: the cached list while the server is known to be alive, else a
    /// fresh one. A cached list older than the liveness interval costs one `ping`; any answer to
    /// it, even "method not found", shows the server is there.
    async fn tools_for_send(&self, budget: Duration) -> Result<Arc<[DiscoveredTool]>, McpError> {
        if let Some(tools) = self.fresh_tools() {
            let checked_recently = lock(&self.health)
                .verified_at
                .is_some_and(|at| at.elapsed() < self.shared.settings.liveness_interval);
            if checked_recently {
                return Ok(tools);
            }
            let session = self.session(budget).await?;
            return match session.ping().await {
                Err(error) if error.is_connection_failure() => {
                    self.drop_session().await;
                    Err(error.redacted(&self.config))
                }
                _ => {
                    self.verified();
                    Ok(tools)
                }
            };
        }
        if lock(&self.health).last_error.is_some() {
            // The session that failed is no use for the retry.
            self.drop_session().await;
        }
        self.refresh(budget).await
    }

    /// The pooled session, opening one when there is none or the old one closed.
    async fn session(&self, budget: Duration) -> Result<Arc<Session>, McpError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(session.clone());
        }
        *slot = None;
        let session = Session::open(
            &self.shared.outbound,
            &self.config,
            &self.shared.settings,
            self.tools_changed.clone(),
            budget,
        )
        .await?;
        tracing::debug!(server = %self.config.id, era = ?session.era, "opened MCP session");
        let session = Arc::new(session);
        *slot = Some(session.clone());
        Ok(session)
    }

    async fn drop_session(&self) {
        *self.session.lock().await = None;
    }

    /// Lists the tools now and caches them.
    async fn refresh(&self, budget: Duration) -> Result<Arc<[DiscoveredTool]>, McpError> {
        let session = self.session(budget).await?;
        // Cleared before listing: a change announced while we list marks the new list stale again.
        self.tools_changed.store(false, Ordering::SeqCst);
        let list = match session.list_tools(&self.shared.settings).await {
            Ok(list) => list,
            Err(error) => {
                if error.is_connection_failure() {
                    self.drop_session().await;
                }
                return Err(error.redacted(&self.config));
            }
        };
        let ttl = list.server_ttl.unwrap_or(self.shared.settings.tool_list_ttl);
        let tools: Arc<[DiscoveredTool]> = list.tools.into();
        *lock(&self.tools) = Some(CachedTools {
            tools: tools.clone(),
            expires_at: Instant::now() + ttl,
        });
        self.recovered();
        Ok(tools)
    }

    /// Records a failure, schedules the next attempt and makes sure a background reconnect runs.
    fn failed(self: &Arc<Self>, error: &McpError) {
        *lock(&self.tools) = None;
        if matches!(error, McpError::InvalidConfig(_) | McpError::RefusedAddress(_)) {
            // Retrying cannot fix the settings (nor, most likely, the address); the next discovery
            // checks and reports again.
            tracing::warn!(server_id = %self.config.id, server_name = %self.config.name, %error, "MCP server skipped");
            return;
        }
        tracing::warn!(
            server_id = %self.config.id,
            server_name = %self.config.name,
            %error,
            "MCP server unavailable; it is skipped and will be reconnected in the background"
        );
        let mut health = lock(&self.health);
        schedule_retry(&mut health, error, &self.shared.settings);
        if health.reconnecting {
            return;
        }
        health.reconnecting = true;
        drop(health);
        let stopping = self.shared.stopping.clone();
        let entry = Arc::downgrade(self);
        self.shared.background.spawn(async move {
            tokio::select! {
                () = stopping.cancelled() => {}
                () = reconnect(entry) => {}
            }
        });
    }
}

/// Notes a failure and pushes the next attempt out by the current backoff, doubling it.
fn schedule_retry(health: &mut Health, error: &McpError, settings: &HubSettings) {
    let wait = health.next_backoff;
    health.last_error = Some(error.clone());
    health.retry_at = Some(Instant::now() + wait);
    health.next_backoff = (wait * 2).min(settings.reconnect_max_backoff);
}

/// Retries a failed server on its backoff schedule until it answers (here, or in a send that got to
/// it first), its entry is dropped, or nobody asked for it in a while.
async fn reconnect(entry: Weak<ServerEntry>) {
    // No user waits on a background attempt, so it may take longer than a send's budget.
    let attempt_budget = crate::config::DEFAULT_DISCOVERY_TIMEOUT * 3;
    loop {
        let due = {
            let Some(entry) = entry.upgrade() else { return };
            let mut health = lock(&entry.health);
            match health.retry_at {
                Some(at) => at,
                None => {
                    health.reconnecting = false;
                    return;
                }
            }
        };
        tokio::time::sleep_until(due.into()).await;
        let Some(entry) = entry.upgrade() else { return };
        {
            let mut health = lock(&entry.health);
            if health.last_used.elapsed() > entry.shared.settings.idle_limit {
                health.reconnecting = false;
                tracing::debug!(server_id = %entry.config.id, "stopped reconnecting to an unused MCP server");
                return;
            }
            // A send failed again meanwhile and moved the attempt out; wait for the new time.
            if health.retry_at.is_some_and(|at| at > Instant::now()) {
                continue;
            }
        }
        entry.drop_session().await;
        let attempt = match tokio::time::timeout(attempt_budget, entry.refresh(attempt_budget)).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout(attempt_budget)),
        };
        match attempt {
            Ok(tools) => {
                tracing::info!(server_id = %entry.config.id, tools = tools.len(), "MCP server is back");
            }
            Err(error) => {
                tracing::debug!(server_id = %entry.config.id, %error, "MCP reconnect failed");
                let mut health = lock(&entry.health);
                schedule_retry(&mut health, &error, &entry.shared.settings);
            }
        }
    }
}
