//! The configuration file (TOML) and its environment overrides.

use std::net::SocketAddr;
use std::path::Path;

use promptgate_core::settings::{Engine, Model, ModelProfile};
use schemars::JsonSchema;
use serde::Deserialize;

pub mod context;
#[cfg(test)]
mod keys;
pub mod quotas;

/// The configuration `make run` uses when no file is given.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../../../config/promptgate.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid config: {0}")]
    Parse(String),
    #[error("invalid config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    pub database_url: String,
    /// Model used when neither the send nor the user's settings name one.
    pub default_model: String,
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub limits: Limits,
    /// Who may connect and how: Host and Origin checks, CORS, connection limits.
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub turn: TurnConfig,
    /// Responses of the Responses API that clients ask to keep (`store: true`).
    #[serde(default)]
    pub responses: ResponsesConfig,
    /// How sends fit a thread to the model's context window.
    #[serde(default)]
    pub context: context::ContextConfig,
    /// Bounds of each thread's workspace (harness models).
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// What each user may keep in the database.
    #[serde(default)]
    pub quotas: quotas::QuotasConfig,
    /// How attached files are read for the model.
    #[serde(default)]
    pub documents: crate::documents::DocumentsConfig,
    #[serde(default)]
    pub web: WebConfig,
    #[serde(default)]
    pub mcp: McpConfig,
    /// Google and Microsoft OAuth clients; without them the integration tools are not offered.
    #[serde(default)]
    pub integrations: Option<IntegrationsConfig>,
    #[serde(default)]
    pub providers: Vec<ProviderEntry>,
    #[serde(default)]
    pub models: Vec<ModelDefinition>,
    /// The web app served at `/`.
    #[serde(default)]
    pub ui: crate::ui::UiConfig,
    /// Signed artifact links.
    #[serde(default)]
    pub artifacts: crate::routes::artifacts::ArtifactsConfig,
    /// The AI SDK release a UI message stream is written for when the request does not say.
    #[serde(default)]
    pub ui_stream: crate::ui_stream::UiStreamConfig,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    #[serde(default)]
    pub mode: AuthMode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Every request acts as the one local user; allowed only on a loopback address.
    SingleUser,
    /// Every request needs a bearer token.
    #[default]
    Tokens,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body accepted, in bytes.
    pub body_bytes: usize,
    /// Deadline for ordinary (non-streaming) requests.
    pub request_timeout_secs: u64,
    /// `tokens` mode: turns one user may have running at once; past it a send gets 429.
    pub user_turns_in_flight: usize,
    /// `tokens` mode: sends one user may start per minute; past it a send gets 429.
    pub user_sends_per_minute: u32,
    /// Threads, messages or search results one list page holds when the request names no `limit`.
    pub page_size: u32,
    /// The largest `limit` a list page honours; a larger one is lowered to it.
    pub max_page_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1024 * 1024,
            request_timeout_secs: 30,
            user_turns_in_flight: 4,
            user_sends_per_minute: 30,
            page_size: 50,
            max_page_size: 200,
        }
    }
}

/// The `[server]` section: which requests are let in at all, and how long a connection may idle.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Host names (optionally `name:port`) accepted besides the loopback ones. Checked in
    /// `single_user` mode always, in `tokens` mode only when the list is not empty.
    pub allowed_hosts: Vec<String>,
    /// A request head must arrive in full within this time of its first byte.
    pub header_read_timeout_secs: u64,
    /// A connection with no request in progress is closed after this long.
    pub idle_timeout_secs: u64,
    /// A connection that has not sent a byte of a request since it opened is closed after this long.
    pub first_request_timeout_secs: u64,
    /// A request body that sends nothing for this long is abandoned with 408.
    pub body_timeout_secs: u64,
    /// A request body that has not arrived whole this long after its request's head is abandoned
    /// with 408, however steadily it trickles.
    pub body_deadline_secs: u64,
    /// Connections open at once. At the cap a new client takes the place of the connection idle
    /// longest; when every connection has a request in progress it waits in the kernel's queue.
    pub max_connections: usize,
    pub cors: CorsConfig,
    /// After SIGTERM/SIGINT, running turns may go on this long before they are stopped.
    pub shutdown_grace_secs: u64,
    /// After the turns have ended, answers still being saved get this long before the process
    /// exits anyway (each one left is logged with its thread and turn).
    pub shutdown_flush_secs: u64,
    /// The longest `x-request-id` a client may choose (letters, digits and `-_.:+/=` only); any
    /// other is replaced by a fresh id.
    pub request_id_max_len: usize,
    /// When set, `/metrics` is served on this address only (and not on `listen`), so the scrape port
    /// can stay inside the operator's network while the API is exposed.
    pub metrics_listen: Option<SocketAddr>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            first_request_timeout_secs: 10,
            body_timeout_secs: 30,
            body_deadline_secs: 60,
            max_connections: 4096,
            cors: CorsConfig::default(),
            shutdown_grace_secs: 20,
            shutdown_flush_secs: 10,
            request_id_max_len: 128,
            metrics_listen: None,
        }
    }
}

/// `[server.cors]`: the web origins whose pages may call this server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorsConfig {
    /// Exact origins such as `http://localhost:5173`; no wildcards.
    pub allowed_origins: Vec<String>,
}

/// Bounds on one turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TurnConfig {
    /// Upstream attempts per logical turn (the first answer and empty-response retries).
    pub max_upstream_requests: u32,
    /// A turn's whole life; past it the turn is cut wherever it is.
    pub wall_clock_secs: u64,
    /// The most model steps of one attempt, whatever a model's profile asks for.
    pub max_steps: u32,
    pub tool_timeout_secs: u64,
    /// A `: keep-alive` comment is written when nothing else was sent for this long.
    pub keep_alive_secs: u64,
    /// Turns (sends and facade completions) running at once on this server; past it, 503 `overloaded`.
    pub max_in_flight: usize,
    /// The end of a stream waits this long for its answer to be stored; past it the stream says the
    /// answer is not stored yet (the save goes on in the background).
    pub save_grace_secs: u64,
    /// How long a failed save of an answer keeps being retried while the database is unavailable.
    pub save_retry_secs: u64,
    /// While text streams, the answer so far is stored at most this often (and at every step end).
    pub checkpoint_interval_ms: u64,
    /// `stop`: a client that goes away stops its turn. `continue`: the turn runs to its end and is
    /// stored, and `GET /v1/chat/{id}/stream` resumes it.
    pub on_disconnect: promptgate_service::settings::OnDisconnect,
    /// A running turn's claim on its thread holds this long without renewal; past it, the instance
    /// running the turn is taken for dead: the thread is freed and the answer marked `interrupted`.
    pub lease_secs: u64,
    /// How often an instance renews the leases of its running turns (well under `lease_secs`).
    pub heartbeat_secs: u64,
    /// How long after a turn ended an automatic retry of it (`retry_of`) is accepted.
    pub retry_window_secs: u64,
    /// Threads whose harness transcript (harness models) this instance keeps in memory.
    pub kept_harnesses: usize,
    /// Bytes of those transcripts kept in memory, all threads together.
    pub kept_harness_bytes: usize,
}

impl Default for TurnConfig {
    // The engine's and the service's own defaults, in the units of the file.
    fn default() -> Self {
        let limits = promptgate_service::settings::TurnLimits::default();
        Self {
            max_upstream_requests: limits.max_upstream_requests,
            wall_clock_secs: limits.wall_clock.as_secs(),
            max_steps: limits.max_steps,
            tool_timeout_secs: limits.tool_timeout.as_secs(),
            keep_alive_secs: limits.keep_alive.as_secs(),
            max_in_flight: promptgate_service::settings::DEFAULT_TURNS_IN_FLIGHT,
            save_grace_secs: limits.save_grace.as_secs(),
            save_retry_secs: promptgate_service::settings::DEFAULT_SAVE_RETRY.as_secs(),
            checkpoint_interval_ms: millis(limits.checkpoint_every),
            on_disconnect: promptgate_service::settings::OnDisconnect::default(),
            lease_secs: promptgate_service::settings::DEFAULT_LEASE.as_secs(),
            heartbeat_secs: promptgate_service::settings::DEFAULT_HEARTBEAT.as_secs(),
            retry_window_secs: promptgate_service::settings::DEFAULT_RETRY_WINDOW.as_secs(),
            kept_harnesses: promptgate_service::settings::DEFAULT_KEPT_HARNESSES,
            kept_harness_bytes: promptgate_service::settings::DEFAULT_KEPT_HARNESS_BYTES,
        }
    }
}

/// Kept responses of `POST /v1/responses`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponsesConfig {
    /// How long a kept response can be read and continued; older ones are deleted.
    pub retention_days: u64,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            retention_days: promptgate_service::settings::DEFAULT_RESPONSE_RETENTION.as_secs() / 86_400,
        }
    }
}

/// Bounds of each thread's workspace; every key defaults to `WorkspaceLimits::default()`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceConfig {
    pub max_file_bytes: usize,
    pub max_total_bytes: usize,
    pub max_entries: usize,
    pub max_output_bytes: usize,
    pub max_output_lines: usize,
    pub bash_timeout_ms: u64,
    pub max_commands: usize,
    pub max_loop_iterations: usize,
    pub max_total_loop_iterations: usize,
    pub max_shell_memory_bytes: usize,
    /// `bash` calls running at once on this server, each on a thread of its own.
    pub shell_threads: usize,
    /// `bash` calls that may wait for a thread; past it a call is refused with a tool error.
    pub shell_queue: usize,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        let limits = promptgate_service::settings::WorkspaceLimits::default();
        let pool = promptgate_service::settings::ShellPoolSize::default();
        Self {
            max_file_bytes: limits.max_file_bytes,
            max_total_bytes: limits.max_total_bytes,
            max_entries: limits.max_entries,
            max_output_bytes: limits.max_output_bytes,
            max_output_lines: limits.max_output_lines,
            bash_timeout_ms: u64::try_from(limits.bash_timeout.as_millis()).unwrap_or(u64::MAX),
            max_commands: limits.max_commands,
            max_loop_iterations: limits.max_loop_iterations,
            max_total_loop_iterations: limits.max_total_loop_iterations,
            max_shell_memory_bytes: limits.max_shell_memory_bytes,
            shell_threads: pool.threads,
            shell_queue: pool.queue,
        }
    }
}

impl WorkspaceConfig {
    pub fn limits(&self) -> promptgate_service::settings::WorkspaceLimits {
        promptgate_service::settings::WorkspaceLimits {
            max_file_bytes: self.max_file_bytes,
            max_total_bytes: self.max_total_bytes,
            max_entries: self.max_entries,
            max_output_bytes: self.max_output_bytes,
            max_output_lines: self.max_output_lines,
            bash_timeout: std::time::Duration::from_millis(self.bash_timeout_ms),
            max_commands: self.max_commands,
            max_loop_iterations: self.max_loop_iterations,
            max_total_loop_iterations: self.max_total_loop_iterations,
            max_shell_memory_bytes: self.max_shell_memory_bytes,
        }
    }

    /// The server's pool for `bash` calls.
    pub fn shell_pool(&self) -> promptgate_service::settings::ShellPool {
        promptgate_service::settings::ShellPool::new(promptgate_service::settings::ShellPoolSize {
            threads: self.shell_threads,
            queue: self.shell_queue,
        })
    }

    /// The keys by name, for `PROMPTGATE_WORKSPACE_<KEY>` and the positivity check.
    fn fields(&mut self) -> [(&'static str, &mut dyn WorkspaceValue); 12] {
        [
            ("max_file_bytes", &mut self.max_file_bytes),
            ("max_total_bytes", &mut self.max_total_bytes),
            ("max_entries", &mut self.max_entries),
            ("max_output_bytes", &mut self.max_output_bytes),
            ("max_output_lines", &mut self.max_output_lines),
            ("bash_timeout_ms", &mut self.bash_timeout_ms),
            ("max_commands", &mut self.max_commands),
            ("max_loop_iterations", &mut self.max_loop_iterations),
            ("max_total_loop_iterations", &mut self.max_total_loop_iterations),
            ("max_shell_memory_bytes", &mut self.max_shell_memory_bytes),
            ("shell_threads", &mut self.shell_threads),
            ("shell_queue", &mut self.shell_queue),
        ]
    }

    fn apply_env(&mut self, env: &dyn Env) -> Result<(), ConfigError> {
        for (key, value) in self.fields() {
            let name = format!("PROMPTGATE_WORKSPACE_{}", key.to_ascii_uppercase());
            if let Some(text) = env.var(&name) {
                value
                    .set(&text)
                    .map_err(|()| ConfigError::Invalid(format!("{name}={text} is not a whole number")))?;
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let mut copy = self.clone();
        match copy.fields().into_iter().find(|(_, value)| value.is_zero()) {
            // A zero bound would make every workspace call fail, which reads as a broken model.
            Some((key, _)) => Err(ConfigError::Invalid(format!("workspace.{key} must be positive"))),
            None => Ok(()),
        }
    }
}

/// A workspace bound, whichever integer type it has.
trait WorkspaceValue {
    fn set(&mut self, text: &str) -> Result<(), ()>;
    fn is_zero(&self) -> bool;
}

impl WorkspaceValue for usize {
    fn set(&mut self, text: &str) -> Result<(), ()> {
        *self = text.trim().parse().map_err(|_| ())?;
        Ok(())
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl WorkspaceValue for u64 {
    fn set(&mut self, text: &str) -> Result<(), ()> {
        *self = text.trim().parse().map_err(|_| ())?;
        Ok(())
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

/// Web tools: `search` needs a backend, `fetch_content` the fetcher policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// `{ kind = "searxng", base_url = "..." }` or `{ kind = "brave", api_key_env = "..." }`. Without it
    /// the web tools are not offered.
    pub search: Option<SearchEntry>,
    pub fetch: promptgate_service::settings::FetchPolicy,
    /// Loading the `research` skill widens an auto budget (5) to the research cap (30).
    pub budget_promotion: bool,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            search: None,
            fetch: Default::default(),
            budget_promotion: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum SearchEntry {
    Searxng {
        base_url: String,
    },
    Brave {
        #[serde(default)]
        base_url: Option<String>,
        /// Environment variable holding the subscription token.
        api_key_env: String,
    },
    /// The offline demo's bundled pages (`make run`); any real backend replaces it.
    Demo,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// A server that has not listed its tools within this time is skipped for the send.
    pub discovery_timeout_ms: u64,
    pub call_timeout_secs: u64,
    /// Budget of `POST /v1/mcp-servers/{id}/probe`, which connects afresh.
    pub probe_timeout_ms: u64,
    /// A server in use is pinged in the background this long after it last answered; sends never
    /// ping.
    pub liveness_interval_ms: u64,
    /// Waits between reconnect attempts to a failed server start here and double up to the max,
    /// where they stay while anyone still uses the server.
    pub reconnect_initial_backoff_ms: u64,
    pub reconnect_max_backoff_ms: u64,
    /// MCP servers one user may register; a send uses at most this many.
    pub max_servers_per_user: usize,
    /// Sessions (user × server) this instance keeps open; past it the least recently used closes.
    pub max_sessions: usize,
    /// A session nobody used for this long closes, and its server is no longer checked.
    pub session_idle_secs: u64,
    /// Probes one user may start per minute, and have running at once.
    pub probes_per_minute: u32,
    pub probes_in_flight: usize,
    /// MCP server URLs may point at loopback. Unset: allowed in `single_user` mode (local MCP servers
    /// are the common case there), refused in `tokens` mode.
    pub allow_loopback: Option<bool>,
    /// MCP server URLs may point at private networks (RFC 1918, CGNAT, IPv6 unique-local).
    pub allow_private: bool,
    /// Exact `ip:port` pairs an MCP server URL may point at whatever their range.
    pub allowed_addrs: Vec<SocketAddr>,
}

impl McpConfig {
    /// Where users' MCP server URLs may point, given the auth mode the defaults depend on.
    pub fn address_policy(&self, mode: AuthMode) -> promptgate_service::settings::AddressPolicy {
        promptgate_service::settings::AddressPolicy {
            allow_loopback: self.allow_loopback.unwrap_or(mode == AuthMode::SingleUser),
            allow_private: self.allow_private,
            allowed_addrs: self.allowed_addrs.clone(),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("mcp.discovery_timeout_ms", self.discovery_timeout_ms),
            ("mcp.call_timeout_secs", self.call_timeout_secs),
            ("mcp.probe_timeout_ms", self.probe_timeout_ms),
            ("mcp.liveness_interval_ms", self.liveness_interval_ms),
            ("mcp.session_idle_secs", self.session_idle_secs),
            ("mcp.probes_per_minute", u64::from(self.probes_per_minute)),
            ("mcp.max_servers_per_user", self.max_servers_per_user as u64),
            ("mcp.max_sessions", self.max_sessions as u64),
            ("mcp.probes_in_flight", self.probes_in_flight as u64),
            // A zero backoff would retry a dead server in a tight loop.
            (
                "mcp.reconnect_initial_backoff_ms",
                self.reconnect_initial_backoff_ms,
            ),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{key} must be positive")));
        }
        if self.reconnect_max_backoff_ms < self.reconnect_initial_backoff_ms {
            return Err(ConfigError::Invalid(
                "mcp.reconnect_max_backoff_ms must not be below mcp.reconnect_initial_backoff_ms".into(),
            ));
        }
        Ok(())
    }
}

impl Default for McpConfig {
    // The MCP client's own defaults, in the units of the file.
    fn default() -> Self {
        let hub = promptgate_service::settings::HubSettings::default();
        Self {
            discovery_timeout_ms: millis(promptgate_service::settings::DEFAULT_DISCOVERY_TIMEOUT),
            call_timeout_secs: promptgate_service::settings::DEFAULT_CALL_TIMEOUT.as_secs(),
            // The probe is the server's own route; its budget has no other owner.
            probe_timeout_ms: 10_000,
            liveness_interval_ms: millis(hub.liveness_interval),
            reconnect_initial_backoff_ms: millis(hub.reconnect_initial_backoff),
            reconnect_max_backoff_ms: millis(hub.reconnect_max_backoff),
            max_servers_per_user: hub.max_servers_per_user,
            max_sessions: hub.max_sessions,
            session_idle_secs: hub.idle_limit.as_secs(),
            probes_per_minute: hub.probes_per_minute,
            probes_in_flight: hub.probes_in_flight,
            allow_loopback: None,
            allow_private: false,
            allowed_addrs: Vec::new(),
        }
    }
}

/// A default duration in whole milliseconds, as the file states it.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The `[integrations]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegrationsConfig {
    /// Environment variable holding the base64 of the 32-byte key that seals tokens at rest.
    pub token_key_env: String,
    /// Where browsers reach this server; the callback is `{this}/v1/integrations/{provider}/callback`.
    pub redirect_base_url: String,
    #[serde(default)]
    pub google: Option<OAuthEntry>,
    #[serde(default)]
    pub microsoft: Option<OAuthEntry>,
}

/// One provider's OAuth client registration. The endpoint overrides exist for tests and proxies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthEntry {
    pub client_id: String,
    /// Environment variable holding the client secret.
    pub client_secret_env: String,
    #[serde(default)]
    pub auth_url: Option<String>,
    #[serde(default)]
    pub token_url: Option<String>,
    #[serde(default)]
    pub revoke_url: Option<String>,
    /// Google: the Gmail API base (`.../gmail/v1`). Microsoft: the Graph base (`.../v1.0`).
    #[serde(default)]
    pub api_base_url: Option<String>,
    /// Google only: the Calendar API base (`.../calendar/v3`).
    #[serde(default)]
    pub calendar_base_url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    pub name: String,
    pub kind: ProviderKind,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (the key itself never goes in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The provider works without a key (a local server): an unset `api_key_env` variable is not an
    /// error then.
    #[serde(default)]
    pub keyless: bool,
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    #[serde(default)]
    pub first_byte_timeout_secs: Option<u64>,
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Anthropic only: the answer's length limit (`max_tokens`, which its API requires).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Anthropic only: how a model's `reasoning` setting turns into thinking.
    #[serde(default)]
    pub thinking: Option<ThinkingStyle>,
    /// Upstream request fields users (a model's `provider_options`) and facade callers may set on
    /// this provider beyond the open ones (`promptgate_core::request_fields::OPEN_FIELDS`).
    #[serde(default)]
    pub allow_request_fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat-completions endpoint.
    Openai,
    /// Anthropic's Messages API, with prompt caching.
    Anthropic,
    /// The built-in deterministic offline model.
    Demo,
}

/// How an Anthropic provider asks for thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingStyle {
    /// The model decides how much to think; the reasoning setting is its effort (current models).
    Adaptive,
    /// A fixed thinking budget per reasoning level (models before adaptive thinking).
    Budget,
}

/// A model as a user defines it. Omitted fields take their defaults.
// The one definition of a model's fields: `[[models]]` in the config file (seeded as read-only system
// models) and the body of `POST`/`PUT /v1/models` read the same shape with the same defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelInput")]
pub struct ModelDefinition {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// A provider name from the config file.
    pub provider: String,
    #[serde(default)]
    pub upstream_model: Option<String>,
    #[serde(default)]
    pub tool_usage: Option<i32>,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub context_window: Option<i64>,
    #[serde(default)]
    pub supports_images: bool,
    #[serde(default)]
    pub supports_parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub extract_think_tags: bool,
    #[serde(default)]
    pub start_with_reasoning: bool,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub profile: ModelProfile,
}

impl ModelDefinition {
    /// The model with every default filled in; `system` marks a model of the config file, which
    /// users can read but not change.
    pub fn into_model(self, system: bool) -> Model {
        Model {
            name: self.name.unwrap_or_else(|| self.id.clone()),
            upstream_model: self.upstream_model.unwrap_or_else(|| self.id.clone()),
            id: self.id,
            provider: self.provider,
            tool_usage: self.tool_usage.unwrap_or(1),
            engine: self.engine,
            context_window: self.context_window,
            supports_images: self.supports_images,
            supports_parallel_tool_calls: self.supports_parallel_tool_calls.unwrap_or(true),
            extract_think_tags: self.extract_think_tags,
            start_with_reasoning: self.start_with_reasoning,
            reasoning: self.reasoning,
            profile: self.profile,
            system,
        }
    }

    /// A system model seeded from the config file.
    pub fn to_model(&self) -> Model {
        self.clone().into_model(true)
    }
}

/// Reads a variable from the environment; an injectable seam so tests never mutate the process env.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    /// Loads the file named by `path`, else `PROMPTGATE_CONFIG`, else the embedded default, then applies the
    /// environment overrides and validates.
    pub fn load(path: Option<&Path>, env: &dyn Env) -> Result<Config, ConfigError> {
        let from_env = env.var("PROMPTGATE_CONFIG");
        let path = path.map(Path::to_path_buf).or(from_env.map(Into::into));
        let text = match &path {
            Some(p) => std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.display().to_string(),
                source,
            })?,
            None => EMBEDDED_DEFAULT.to_owned(),
        };
        let mut config = Config::parse(&text)?;
        config.apply_env(env)?;
        config.validate()?;
        Ok(config)
    }

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    fn apply_env(&mut self, env: &dyn Env) -> Result<(), ConfigError> {
        if let Some(listen) = env.var("PROMPTGATE_LISTEN") {
            self.listen = listen.parse().map_err(|_| {
                ConfigError::Invalid(format!("PROMPTGATE_LISTEN={listen} is not an address:port"))
            })?;
        }
        if let Some(listen) = env.var("PROMPTGATE_METRICS_LISTEN") {
            self.server.metrics_listen = Some(listen.parse().map_err(|_| {
                ConfigError::Invalid(format!(
                    "PROMPTGATE_METRICS_LISTEN={listen} is not an address:port"
                ))
            })?);
        }
        if let Some(url) = env.var("DATABASE_URL") {
            self.database_url = url;
        }
        if let Some(model) = env.var("PROMPTGATE_DEFAULT_MODEL") {
            self.default_model = model;
        }
        if let Some(value) = env.var(promptgate_core::budget::PROMOTION_SETTING) {
            self.web.budget_promotion = promptgate_core::budget::parse_promotion_setting(Some(&value))
                .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        }
        self.workspace.apply_env(env)?;
        if let Some(mode) = env.var("PROMPTGATE_AUTH_MODE") {
            self.auth.mode = match mode.as_str() {
                "single_user" => AuthMode::SingleUser,
                "tokens" => AuthMode::Tokens,
                other => {
                    return Err(ConfigError::Invalid(format!(
                        "PROMPTGATE_AUTH_MODE={other}: expected single_user or tokens"
                    )));
                }
            };
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.auth.mode == AuthMode::SingleUser && !self.listen.ip().is_loopback() {
            // Single-user mode has no authentication at all: exposing it beyond this machine would hand
            // the user's data and integrations to anyone who can reach the port.
            return Err(ConfigError::Invalid(format!(
                "auth.mode = \"single_user\" needs a loopback listen address, not {}; use mode = \"tokens\"",
                self.listen
            )));
        }
        if self.server.metrics_listen == Some(self.listen) {
            return Err(ConfigError::Invalid(format!(
                "server.metrics_listen is the API's own address {}; leave it unset to serve /metrics there",
                self.listen
            )));
        }
        self.mcp.validate()?;
        self.workspace.validate()?;
        let model_ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
        self.context.validate(&model_ids)?;
        if self.limits.body_bytes == 0 {
            return Err(ConfigError::Invalid("limits.body_bytes must be positive".into()));
        }
        crate::boundary::validate(&self.server)?;
        let positive = [
            (
                "limits.user_turns_in_flight",
                self.limits.user_turns_in_flight as u64,
            ),
            (
                "limits.user_sends_per_minute",
                u64::from(self.limits.user_sends_per_minute),
            ),
            (
                "server.header_read_timeout_secs",
                self.server.header_read_timeout_secs,
            ),
            ("server.idle_timeout_secs", self.server.idle_timeout_secs),
            (
                "server.first_request_timeout_secs",
                self.server.first_request_timeout_secs,
            ),
            ("server.body_timeout_secs", self.server.body_timeout_secs),
            ("server.body_deadline_secs", self.server.body_deadline_secs),
            ("server.max_connections", self.server.max_connections as u64),
            ("server.request_id_max_len", self.server.request_id_max_len as u64),
            ("turn.lease_secs", self.turn.lease_secs),
            ("turn.heartbeat_secs", self.turn.heartbeat_secs),
            ("limits.page_size", u64::from(self.limits.page_size)),
        ];
        let documents = self.documents.positive();
        if let Some((key, _)) = positive.iter().chain(&documents).find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{key} must be positive")));
        }
        if self.turn.heartbeat_secs >= self.turn.lease_secs {
            // A lease that runs out between two renewals would hand a live turn's thread to a
            // second instance.
            return Err(ConfigError::Invalid(
                "turn.heartbeat_secs must be shorter than turn.lease_secs".into(),
            ));
        }
        if self.turn.max_in_flight == 0 {
            return Err(ConfigError::Invalid("turn.max_in_flight must be positive".into()));
        }
        if self.limits.max_page_size < self.limits.page_size {
            return Err(ConfigError::Invalid(
                "limits.max_page_size must be at least limits.page_size".into(),
            ));
        }
        let mut names = std::collections::HashSet::new();
        for provider in &self.providers {
            if !names.insert(provider.name.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "provider {} is defined twice",
                    provider.name
                )));
            }
            if provider.kind == ProviderKind::Openai && provider.base_url.is_none() {
                return Err(ConfigError::Invalid(format!(
                    "provider {} needs a base_url",
                    provider.name
                )));
            }
            if provider.kind != ProviderKind::Anthropic
                && (provider.max_tokens.is_some() || provider.thinking.is_some())
            {
                // Silently ignoring them would leave the operator believing they apply.
                return Err(ConfigError::Invalid(format!(
                    "provider {}: max_tokens and thinking apply to kind = \"anthropic\" only",
                    provider.name
                )));
            }
            if provider.max_tokens == Some(0) {
                return Err(ConfigError::Invalid(format!(
                    "provider {}: max_tokens must be positive",
                    provider.name
                )));
            }
        }
        if !self.models.iter().any(|m| m.id == self.default_model) {
            // Every send that names no model would answer 404 otherwise.
            let known: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
            return Err(ConfigError::Invalid(format!(
                "default_model = \"{}\" is not a configured model; configured: {}",
                self.default_model,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        let mut ids = std::collections::HashSet::new();
        for model in &self.models {
            if !ids.insert(model.id.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "model {} is defined twice",
                    model.id
                )));
            }
            if !names.contains(model.provider.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "model {} names provider {}, which is not defined",
                    model.id, model.provider
                )));
            }
        }
        Ok(())
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderEntry> {
        self.providers.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct FakeEnv(HashMap<&'static str, &'static str>);

    impl Env for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| (*v).to_owned())
        }
    }

    #[test]
    fn embedded_default_is_single_user_on_loopback_with_the_demo_model() {
        let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.auth.mode, AuthMode::SingleUser);
        assert_eq!(config.default_model, "demo");
        assert!(config.database_url.starts_with("sqlite://data/"));
        assert_eq!(config.models[0].to_model().provider, "demo");
    }

    #[test]
    fn environment_overrides_listen_and_database() {
        let env = FakeEnv(HashMap::from([
            ("PROMPTGATE_LISTEN", "127.0.0.1:9999"),
            ("DATABASE_URL", "postgres://x@127.0.0.1/db"),
        ]));
        let config = Config::load(None, &env).unwrap();
        assert_eq!(config.listen.port(), 9999);
        assert_eq!(config.database_url, "postgres://x@127.0.0.1/db");
    }

    #[test]
    fn budget_promotion_can_be_switched_from_the_environment() {
        let off = FakeEnv(HashMap::from([("PROMPTGATE_WEB_BUDGET_PROMOTION", "off")]));
        assert!(!Config::load(None, &off).unwrap().web.budget_promotion);
        let bad = FakeEnv(HashMap::from([("PROMPTGATE_WEB_BUDGET_PROMOTION", "maybe")]));
        let err = Config::load(None, &bad).unwrap_err().to_string();
        assert!(err.contains("PROMPTGATE_WEB_BUDGET_PROMOTION"), "{err}");
        assert!(
            Config::load(None, &FakeEnv(HashMap::new()))
                .unwrap()
                .web
                .budget_promotion
        );
    }

    #[test]
    fn workspace_limits_default_to_the_workspace_crate_and_follow_file_and_environment() {
        let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
        assert_eq!(
            config.workspace.limits(),
            promptgate_service::settings::WorkspaceLimits::default()
        );
        let mut config = Config::parse(&format!(
            "{EMBEDDED_DEFAULT}\n[workspace]\nmax_file_bytes = 1024\nbash_timeout_ms = 2500\n"
        ))
        .unwrap();
        let env = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_ENTRIES", "50")]));
        config.apply_env(&env).unwrap();
        let limits = config.workspace.limits();
        assert_eq!(limits.max_file_bytes, 1024);
        assert_eq!(limits.bash_timeout, std::time::Duration::from_millis(2500));
        assert_eq!(limits.max_entries, 50);

        let bad = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_COMMANDS", "lots")]));
        let err = Config::load(None, &bad).unwrap_err().to_string();
        assert!(err.contains("PROMPTGATE_WORKSPACE_MAX_COMMANDS"), "{err}");
        let zero = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_TOTAL_BYTES", "0")]));
        let err = Config::load(None, &zero).unwrap_err().to_string();
        assert!(
            err.contains("workspace.max_total_bytes must be positive"),
            "{err}"
        );
    }

    #[test]
    fn single_user_mode_refuses_a_public_address() {
        let env = FakeEnv(HashMap::from([("PROMPTGATE_LISTEN", "0.0.0.0:8080")]));
        let err = Config::load(None, &env).unwrap_err().to_string();
        assert!(err.contains("loopback"), "{err}");
        let env = FakeEnv(HashMap::from([
            ("PROMPTGATE_LISTEN", "0.0.0.0:8080"),
            ("PROMPTGATE_AUTH_MODE", "tokens"),
        ]));
        assert!(Config::load(None, &env).is_ok());
    }

    #[test]
    fn a_model_must_name_a_defined_provider() {
        let text = EMBEDDED_DEFAULT.replace(
            "provider = \"demo\"\nupstream_model",
            "provider = \"nope\"\nupstream_model",
        );
        let err = Config::parse(&text).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("provider nope"), "{err}");
    }

    #[test]
    fn an_anthropic_provider_needs_no_base_url_and_alone_takes_max_tokens_and_thinking() {
        let anthropic = format!(
            "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\n\
             api_key_env = \"ANTHROPIC_API_KEY\"\nmax_tokens = 4096\nthinking = \"budget\"\n"
        );
        let config = Config::parse(&anthropic).unwrap();
        assert!(config.validate().is_ok());
        let entry = config.provider("claude").unwrap();
        assert_eq!(entry.kind, ProviderKind::Anthropic);
        assert_eq!(entry.base_url, None);
        assert_eq!(entry.max_tokens, Some(4096));
        assert_eq!(entry.thinking, Some(ThinkingStyle::Budget));

        let misplaced = format!(
            "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"local\"\nkind = \"openai\"\n\
             base_url = \"http://127.0.0.1:1/v1\"\nthinking = \"adaptive\"\n"
        );
        let err = Config::parse(&misplaced)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("anthropic"), "{err}");
        let unknown = format!(
            "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nthinking = \"lots\"\n"
        );
        assert!(Config::parse(&unknown).is_err());
    }

    #[test]
    fn mcp_loopback_follows_the_auth_mode_unless_set() {
        let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
        assert!(config.mcp.address_policy(AuthMode::SingleUser).allow_loopback);
        assert!(!config.mcp.address_policy(AuthMode::Tokens).allow_loopback);
        assert!(!config.mcp.address_policy(AuthMode::SingleUser).allow_private);

        let text = format!(
            "{EMBEDDED_DEFAULT}\n[mcp]\nallow_loopback = false\nallow_private = true\nallowed_addrs = [\"10.1.2.3:8000\"]\n"
        );
        let config = Config::parse(&text).unwrap();
        let single = config.mcp.address_policy(AuthMode::SingleUser);
        assert!(!single.allow_loopback, "an explicit setting wins over the mode");
        assert!(single.allow_private);
        assert_eq!(single.allowed_addrs, vec!["10.1.2.3:8000".parse().unwrap()]);
        let opened = Config::parse(&format!("{EMBEDDED_DEFAULT}\n[mcp]\nallow_loopback = true\n")).unwrap();
        assert!(opened.mcp.address_policy(AuthMode::Tokens).allow_loopback);
    }

    #[test]
    fn mcp_timings_must_be_usable() {
        let zero = format!("{EMBEDDED_DEFAULT}\n[mcp]\nreconnect_initial_backoff_ms = 0\n");
        let err = Config::parse(&zero).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("mcp.reconnect_initial_backoff_ms"), "{err}");
        let inverted = format!(
            "{EMBEDDED_DEFAULT}\n[mcp]\nreconnect_initial_backoff_ms = 500\nreconnect_max_backoff_ms = 100\n"
        );
        let err = Config::parse(&inverted)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("mcp.reconnect_max_backoff_ms"), "{err}");
        // Liveness is checked in the background now: a zero interval would ping without pause.
        let zero = format!("{EMBEDDED_DEFAULT}\n[mcp]\nliveness_interval_ms = 0\n");
        let err = Config::parse(&zero).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("mcp.liveness_interval_ms"), "{err}");
        let none = format!("{EMBEDDED_DEFAULT}\n[mcp]\nmax_sessions = 0\n");
        let err = Config::parse(&none).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("mcp.max_sessions"), "{err}");
        let tuned = format!(
            "{EMBEDDED_DEFAULT}\n[mcp]\ndiscovery_timeout_ms = 500\nliveness_interval_ms = 50\nmax_servers_per_user = 3\n"
        );
        let config = Config::parse(&tuned).unwrap();
        assert_eq!(config.mcp.max_servers_per_user, 3);
        assert!(config.validate().is_ok());
        assert_eq!(config.mcp.discovery_timeout_ms, 500);
        assert_eq!(
            config.mcp.probe_timeout_ms, 10_000,
            "unset keys keep their defaults"
        );
    }

    #[test]
    fn turns_in_flight_must_be_positive() {
        let zero = format!("{EMBEDDED_DEFAULT}\n[turn]\nmax_in_flight = 0\n");
        let err = Config::parse(&zero).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("turn.max_in_flight"), "{err}");
        let two = Config::parse(&format!("{EMBEDDED_DEFAULT}\n[turn]\nmax_in_flight = 2\n")).unwrap();
        assert!(two.validate().is_ok());
        assert_eq!(two.turn.max_in_flight, 2);
        assert_eq!(
            Config::parse(EMBEDDED_DEFAULT).unwrap().turn.max_in_flight,
            promptgate_service::settings::DEFAULT_TURNS_IN_FLIGHT
        );
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let err = Config::parse(&format!("{EMBEDDED_DEFAULT}\nlisten_port = 3\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("listen_port"), "{err}");
    }

    #[test]
    fn a_missing_config_file_is_a_clear_error() {
        let err = Config::load(
            Some(Path::new("/nonexistent/promptgate.toml")),
            &FakeEnv(HashMap::new()),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/promptgate.toml"), "{err}");
    }

    /// The commented `[integrations]` example of the embedded file, uncommented.
    fn integrations_example() -> String {
        EMBEDDED_DEFAULT
            .lines()
            .skip_while(|l| !l.starts_with("# [integrations]"))
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_documented_integrations_example_parses_and_needs_its_secrets() {
        let config = Config::parse(&format!("{EMBEDDED_DEFAULT}\n{}", integrations_example())).unwrap();
        let section = config.integrations.clone().unwrap();
        assert_eq!(section.token_key_env, "PROMPTGATE_TOKEN_KEY");
        let google = section.google.unwrap();
        assert_eq!(google.client_secret_env, "GOOGLE_CLIENT_SECRET");
        assert_eq!(
            google.calendar_base_url.as_deref(),
            Some("https://www.googleapis.com/calendar/v3")
        );
        assert!(section.microsoft.is_some());

        let err = crate::runtime::integrations(&config, &FakeEnv(HashMap::new()))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("PROMPTGATE_TOKEN_KEY"), "{err}");
        let short_key = FakeEnv(HashMap::from([("PROMPTGATE_TOKEN_KEY", "c2hvcnQ=")]));
        let err = format!(
            "{:#}",
            crate::runtime::integrations(&config, &short_key).err().unwrap()
        );
        assert!(err.contains("32 bytes"), "{err}");
        let no_secret = FakeEnv(HashMap::from([(
            "PROMPTGATE_TOKEN_KEY",
            "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
        )]));
        let err = crate::runtime::integrations(&config, &no_secret)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("GOOGLE_CLIENT_SECRET"), "{err}");
    }
}
