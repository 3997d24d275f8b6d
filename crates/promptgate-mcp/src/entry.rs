//! Everything the hub keeps about one server of one user: its session, its cached tool list, and its
//! health (when it last answered, why it failed, when to try again). A send reads the cached list and
//! never waits on a liveness check; the entry's keeper (`keeper.rs`) checks and reconnects it in the
//! background on the schedule this file keeps.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::hub::Shared;
use crate::pool::{PoolKey, SESSION_BASE_BYTES, tools_bytes};
use crate::session::{DiscoveredTool, Session};

/// The shortest wait the keeper takes, whatever the settings say, so a zero never spins it.
const MIN_WAIT: Duration = Duration::from_millis(10);

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct CachedTools {
    tools: Arc<[DiscoveredTool]>,
    expires_at: Instant,
    /// What the list takes in memory, as accounted.
    bytes: usize,
}

struct Health {
    /// When the server last answered anything (a listing, a ping, a tool call).
    verified_at: Option<Instant>,
    /// Set while the server is failing: why, and (when the background retries it) when the next
    /// attempt is due and the wait after that.
    last_error: Option<McpError>,
    retry_at: Option<Instant>,
    next_backoff: Duration,
}

/// What the entry counts in the hub's memory gauges now.
#[derive(Default)]
struct Accounted {
    session: bool,
    bytes: usize,
}

/// What the keeper should do when it wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    Reconnect,
    Check,
}

pub(crate) struct ServerEntry {
    pub shared: Arc<Shared>,
    pub config: McpServerConfig,
    pub key: PoolKey,
    /// Held across a connect, so concurrent sends share one handshake.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    tools: Mutex<Option<CachedTools>>,
    /// Set by the session when the server announces `tools/list_changed`.
    tools_changed: Arc<AtomicBool>,
    health: Mutex<Health>,
    /// Milliseconds since the hub's start when a send or call last used the server.
    last_used_ms: AtomicU64,
    /// Wakes the keeper when a failure moves its schedule.
    pub wake: Arc<Notify>,
    accounted: Mutex<Accounted>,
}

impl ServerEntry {
    pub fn new(shared: Arc<Shared>, config: McpServerConfig, key: PoolKey) -> ServerEntry {
        let next_backoff = shared.settings.reconnect_initial_backoff;
        let last_used_ms = AtomicU64::new(shared.now_ms());
        ServerEntry {
            shared,
            config,
            key,
            session: tokio::sync::Mutex::new(None),
            tools: Mutex::new(None),
            tools_changed: Arc::new(AtomicBool::new(false)),
            health: Mutex::new(Health {
                verified_at: None,
                last_error: None,
                retry_at: None,
                next_backoff,
            }),
            last_used_ms,
            wake: Arc::new(Notify::new()),
            accounted: Mutex::new(Accounted::default()),
        }
    }

    pub fn touch(&self) {
        self.last_used_ms.store(self.shared.now_ms(), Ordering::Relaxed);
    }

    pub fn last_used_ms(&self) -> u64 {
        self.last_used_ms.load(Ordering::Relaxed)
    }

    fn last_used(&self) -> Instant {
        self.shared.epoch + Duration::from_millis(self.last_used_ms())
    }

    /// Nobody used the server within the idle limit.
    pub fn idle(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_used()) >= self.shared.settings.idle_limit
    }

    fn fresh_tools(&self) -> Option<Arc<[DiscoveredTool]>> {
        if self.tools_changed.load(Ordering::SeqCst) {
            return None;
        }
        lock(&self.tools)
            .as_ref()
            .filter(|c| c.expires_at > Instant::now())
            .map(|c| c.tools.clone())
    }

    /// The last list, however old.
    pub fn any_tools(&self) -> Option<Arc<[DiscoveredTool]>> {
        lock(&self.tools).as_ref().map(|c| c.tools.clone())
    }

    /// The last error, while the server failed and its next attempt is not due yet: such a server
    /// is skipped at once instead of making every send wait for it again.
    pub fn waiting_for_retry(&self) -> Option<McpError> {
        let health = lock(&self.health);
        match (&health.last_error, health.retry_at) {
            (Some(error), Some(at)) if at > Instant::now() => Some(error.clone()),
            _ => None,
        }
    }

    pub fn verified(&self) {
        lock(&self.health).verified_at = Some(Instant::now());
    }

    /// The server answered after failing: forget the failure, start the backoff over, and say so
    /// once.
    fn recovered(&self, tools: usize) {
        let mut health = lock(&self.health);
        health.verified_at = Some(Instant::now());
        health.retry_at = None;
        health.next_backoff = self.shared.settings.reconnect_initial_backoff;
        if health.last_error.take().is_some() {
            tracing::warn!(
                server_id = %self.config.id,
                server_name = %self.config.name,
                tools,
                "MCP server is back; its tools are offered again"
            );
        }
    }

    /// The tools a send may offer: the cached list while it is fresh, else a fresh listing. Nothing
    /// here waits on a liveness check; a server that died since is found out by the keeper's check
    /// or by the call that fails.
    pub async fn tools_for_send(&self, budget: Duration) -> Result<Arc<[DiscoveredTool]>, McpError> {
        if let Some(tools) = self.fresh_tools() {
            return Ok(tools);
        }
        if lock(&self.health).last_error.is_some() {
            // The session that failed is no use for the retry.
            self.drop_session().await;
        }
        self.refresh(budget).await
    }

    /// The pooled session, opening one when there is none or the old one closed.
    pub async fn session(&self, budget: Duration) -> Result<Arc<Session>, McpError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(session.clone());
        }
        *slot = None;
        self.account(Some(false));
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
        self.account(Some(true));
        Ok(session)
    }

    pub async fn drop_session(&self) {
        *self.session.lock().await = None;
        self.account(Some(false));
    }

    /// Lists the tools now and caches them.
    pub async fn refresh(&self, budget: Duration) -> Result<Arc<[DiscoveredTool]>, McpError> {
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
            bytes: tools_bytes(&tools),
            tools: tools.clone(),
            expires_at: Instant::now() + ttl,
        });
        self.account(None);
        self.recovered(tools.len());
        Ok(tools)
    }

    /// Pings the open session, bounded by `budget`: any answer shows the server is there (stateless
    /// servers answer "method not found"); a transport failure marks it failed.
    pub async fn check_alive(&self, budget: Duration) {
        let session = self.session.lock().await.clone();
        let Some(session) = session else { return };
        match tokio::time::timeout(budget, session.ping()).await {
            Ok(Err(error)) if error.is_connection_failure() => self.failed(&error.redacted(&self.config)),
            Err(_) => self.failed(&McpError::Timeout(budget)),
            Ok(_) => self.verified(),
        }
    }

    /// A background attempt to reach a failed server again, bounded by `budget`.
    pub async fn reconnect(&self, budget: Duration) {
        self.drop_session().await;
        let attempt = match tokio::time::timeout(budget, self.refresh(budget)).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout(budget)),
        };
        if let Err(error) = attempt {
            self.failed(&error);
        }
    }

    /// Records a failure: the cached list goes, the next attempt is scheduled (unless retrying
    /// cannot help), and the keeper is woken to follow the new schedule. Only the change from
    /// working to failing is logged at WARN; a server that stays down stays quiet.
    pub fn failed(&self, error: &McpError) {
        *lock(&self.tools) = None;
        // A session someone is using or opening right now is left to them; it fails for them too.
        let dropped = self.session.try_lock().map(|mut slot| *slot = None).is_ok();
        self.account(dropped.then_some(false));
        let mut health = lock(&self.health);
        let went_down = health.last_error.is_none();
        health.last_error = Some(error.clone());
        // Retrying cannot fix the settings (nor, most likely, the address); the next send checks
        // and reports again, before connecting.
        let retried = !matches!(error, McpError::InvalidConfig(_) | McpError::RefusedAddress(_));
        if retried {
            let wait = health.next_backoff.max(MIN_WAIT);
            health.retry_at = Some(Instant::now() + wait);
            health.next_backoff = (wait * 2).min(self.shared.settings.reconnect_max_backoff);
        } else {
            health.retry_at = None;
        }
        drop(health);
        if went_down {
            tracing::warn!(
                server_id = %self.config.id,
                server_name = %self.config.name,
                %error,
                "MCP server is down; its tools are left out of sends until it answers again"
            );
        } else {
            tracing::debug!(server_id = %self.config.id, %error, "MCP server still down");
        }
        self.wake.notify_one();
    }

    /// When the keeper has something to do next, and what.
    fn due_at(&self) -> Option<(Instant, Due)> {
        let health = lock(&self.health);
        if let Some(at) = health.retry_at {
            return Some((at, Due::Reconnect));
        }
        let verified = health.verified_at?;
        let in_use =
            health.last_error.is_none() && lock(&self.accounted).session && self.last_used() > verified;
        in_use.then(|| (verified + self.shared.settings.liveness_interval, Due::Check))
    }

    /// What is due now, if anything.
    pub fn due(&self, now: Instant) -> Option<Due> {
        self.due_at().filter(|(at, _)| *at <= now).map(|(_, due)| due)
    }

    /// When the keeper should look again: when something is due, else after a liveness interval
    /// (the server may be used meanwhile), and at the latest when the entry goes idle.
    pub fn next_wake(&self, now: Instant) -> Instant {
        let idle_at = self.last_used() + self.shared.settings.idle_limit;
        let poll = now + self.shared.settings.liveness_interval.max(MIN_WAIT);
        let at = self.due_at().map_or(poll, |(at, _)| at.max(now + MIN_WAIT));
        at.min(idle_at.max(now + MIN_WAIT))
    }

    /// Brings the hub's memory gauges in line with what the entry holds; `session` says whether a
    /// session is now open (`None`: unchanged).
    fn account(&self, session: Option<bool>) {
        let list_bytes = lock(&self.tools).as_ref().map_or(0, |c| c.bytes);
        let mut accounted = lock(&self.accounted);
        let session = session.unwrap_or(accounted.session);
        let bytes = list_bytes + if session { SESSION_BASE_BYTES } else { 0 };
        self.shared.usage.apply(
            i64::from(session) - i64::from(accounted.session),
            signed(bytes) - signed(accounted.bytes),
        );
        *accounted = Accounted { session, bytes };
    }
}

fn signed(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl Drop for ServerEntry {
    fn drop(&mut self) {
        let accounted = lock(&self.accounted);
        self.shared
            .usage
            .apply(-i64::from(accounted.session), -signed(accounted.bytes));
    }
}
