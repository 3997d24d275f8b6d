//! The `[mcp]` section: timings and limits of the MCP client, and where users' MCP servers may point.

use std::net::SocketAddr;

use serde::Deserialize;

use super::{AuthMode, ConfigError, millis};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// A server that has not listed its tools within this time is skipped for the send.
    pub discovery_timeout_ms: u64,
    pub call_timeout_secs: u64,
    /// How long a tool call waits for the user's answer to its server's question (elicitation);
    /// then the server is told `cancel`. Waiting does not count against `call_timeout_secs`.
    pub elicitation_timeout_secs: u64,
    /// How long a tool call whose server (or integration) needs the user to authorize it again
    /// waits for that, mid-turn; then the call ends with an error the model reads.
    pub authorization_wait_secs: u64,
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
    /// Where browsers reach this server, for the OAuth callback of MCP servers that ask for it
    /// (`{this}/v1/mcp-servers/oauth/callback`). Unset: `[integrations] redirect_base_url`; without
    /// either, such servers cannot be authorized.
    pub oauth_redirect_base_url: Option<String>,
    /// Serve the Client ID Metadata Document (and use it as the client id) on a plain `http` base
    /// too. For tests on loopback only: authorization servers must fetch it over https.
    pub oauth_client_metadata_over_http: bool,
    /// Clients the operator registered by hand with authorization servers of MCP servers, used
    /// instead of registering one (for authorization servers without client registration).
    pub oauth_clients: Vec<McpOAuthClient>,
}

/// A client registered by hand with one authorization server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthClient {
    /// The authorization server's issuer, exactly as its metadata gives it.
    pub issuer: String,
    pub client_id: String,
    /// Environment variable holding the client secret; absent for a public client.
    #[serde(default)]
    pub client_secret_env: Option<String>,
}

impl McpConfig {
    /// Where users' MCP server URLs may point, given the auth mode the defaults depend on.
    pub fn address_policy(&self, mode: AuthMode) -> promptgate_service::deployment::AddressPolicy {
        promptgate_service::deployment::AddressPolicy {
            allow_loopback: self.allow_loopback.unwrap_or(mode == AuthMode::SingleUser),
            allow_private: self.allow_private,
            allowed_addrs: self.allowed_addrs.clone(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("mcp.discovery_timeout_ms", self.discovery_timeout_ms),
            ("mcp.call_timeout_secs", self.call_timeout_secs),
            ("mcp.elicitation_timeout_secs", self.elicitation_timeout_secs),
            ("mcp.authorization_wait_secs", self.authorization_wait_secs),
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
        let hub = promptgate_service::deployment::HubSettings::default();
        Self {
            discovery_timeout_ms: millis(promptgate_service::deployment::DEFAULT_DISCOVERY_TIMEOUT),
            call_timeout_secs: promptgate_service::deployment::DEFAULT_CALL_TIMEOUT.as_secs(),
            elicitation_timeout_secs: promptgate_service::deployment::DEFAULT_ELICITATION_TIMEOUT.as_secs(),
            authorization_wait_secs: promptgate_service::deployment::DEFAULT_AUTHORIZATION_WAIT.as_secs(),
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
            oauth_redirect_base_url: None,
            oauth_client_metadata_over_http: false,
            oauth_clients: Vec::new(),
        }
    }
}
