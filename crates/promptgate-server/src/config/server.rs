//! The `[server]` section and `[server.cors]`: which requests are let in, how long a connection
//! may idle, and how the process shuts down.

use std::net::SocketAddr;

use serde::Deserialize;

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
