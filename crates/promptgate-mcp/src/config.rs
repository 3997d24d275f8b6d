//! What the gateway knows about one of a user's MCP servers, and the knobs of the hub.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use promptgate_outbound::AddressPolicy;
use reqwest::header::{HeaderName, HeaderValue};

use crate::error::McpError;

/// One MCP server as the user registered it. `headers` and `bearer_token` come from the user's stored
/// secrets, so `Debug` never prints their values.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub id: String,
    pub user_id: String,
    /// The display name the user gave the server (not unique).
    pub name: String,
    pub url: String,
    pub headers: BTreeMap<String, String>,
    /// Sent as `Authorization: Bearer <token>`; without the `Bearer ` prefix.
    pub bearer_token: Option<String>,
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Headers the MCP transport sets itself; letting a user override them would break the protocol.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

impl McpServerConfig {
    /// A fingerprint of everything that shapes the connection. Pooled sessions are keyed by it, so
    /// editing the url, headers or token never reuses a session opened with the old values.
    pub(crate) fn connection_fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.url.hash(&mut hasher);
        self.headers.hash(&mut hasher);
        self.bearer_token.hash(&mut hasher);
        hasher.finish()
    }

    /// The user's extra headers in the form the transport wants, each marked sensitive.
    pub(crate) fn header_map(&self) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
        let mut map = HashMap::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let header_name = HeaderName::try_from(name.as_str())
                .map_err(|_| McpError::InvalidConfig(format!("`{name}` is not a valid HTTP header name")))?;
            if RESERVED_HEADERS.contains(&header_name.as_str()) {
                return Err(McpError::InvalidConfig(format!(
                    "the header `{name}` is set by the MCP transport and cannot be overridden"
                )));
            }
            if header_name == reqwest::header::AUTHORIZATION && self.bearer_token.is_some() {
                return Err(McpError::InvalidConfig(
                    "set either a bearer token or an Authorization header, not both".to_owned(),
                ));
            }
            let mut header_value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                McpError::InvalidConfig(format!(
                    "the value of header `{name}` is not a valid header value"
                ))
            })?;
            header_value.set_sensitive(true);
            map.insert(header_name, header_value);
        }
        Ok(map)
    }

    /// The URL as reqwest will read it, so the address we check is the one it connects to.
    pub(crate) fn parsed_url(&self) -> Result<url::Url, McpError> {
        parse_server_url(&self.url)
    }

    /// Replaces every secret value that might have been echoed into `text` (by a server's error
    /// body, say) so no message built from it leaks the user's credentials.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        let secrets = self
            .headers
            .values()
            .map(String::as_str)
            .chain(self.bearer_token.as_deref());
        for secret in secrets {
            // Very short values would blank out ordinary words; such values are no real secret.
            if secret.len() >= 4 && out.contains(secret) {
                out = out.replace(secret, "<redacted>");
            }
        }
        out
    }
}

/// Parses an MCP server URL; only http(s) URLs with a host are accepted.
pub(crate) fn parse_server_url(raw: &str) -> Result<url::Url, McpError> {
    let bad_scheme = || McpError::InvalidConfig("the server url must start with http:// or https://".into());
    let lower = raw.trim_start().to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(bad_scheme());
    }
    let url = url::Url::parse(raw)
        .map_err(|_| McpError::InvalidConfig("the server url is not a valid URL".into()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad_scheme());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(McpError::InvalidConfig("the server url has no host".into()));
    }
    Ok(url)
}

/// Tuning of an [`crate::McpHub`]. `Default` gives the production values.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// How long a server's tool list is reused when the server does not say (`ttlMs`).
    pub tool_list_ttl: Duration,
    /// How often a server in use is pinged in the background: once this long after it last
    /// answered, if a send or call used it since. Sends never ping; they take the cached list and
    /// learn of a dead server from this check or from a failing call.
    pub liveness_interval: Duration,
    /// First wait before reconnecting to a server that failed; doubled after each failure.
    pub reconnect_initial_backoff: Duration,
    /// Ceiling of the reconnect wait: a server that stays down is tried this rarely.
    pub reconnect_max_backoff: Duration,
    /// A server nobody asked for in this long loses its session and cached tools, and is no
    /// longer checked or reconnected; the next use starts afresh.
    pub idle_limit: Duration,
    /// Sessions (user × server) this hub keeps at once; past it the least recently used is closed
    /// and opened again on its next use.
    pub max_sessions: usize,
    /// Servers one send connects to, in the user's order; the rest are left out of it.
    pub max_servers_per_user: usize,
    /// Probes one user may start per minute (a burst of this many, refilled evenly).
    pub probes_per_minute: u32,
    /// Probes of one user running at once.
    pub probes_in_flight: usize,
    /// Cap on the model-facing text of one tool result, in characters.
    pub max_result_chars: usize,
    /// Cap on the JSON of one tool result shown to the UI and stored with the message, in bytes.
    pub max_ui_output_bytes: usize,
    /// Cap on one JSON response or SSE event from a server, in bytes.
    pub max_response_bytes: usize,
    /// Cap on the pages of one `tools/list`.
    pub max_tool_pages: usize,
    /// Cap on the tools taken from one server.
    pub max_tools_per_server: usize,
    /// Which addresses a server URL may point at. Checked at every connect (a probe, a discovery,
    /// a background reconnect), since what a name resolves to may change.
    pub addresses: AddressPolicy,
}

impl Default for HubSettings {
    fn default() -> Self {
        Self {
            tool_list_ttl: Duration::from_secs(5 * 60),
            liveness_interval: Duration::from_secs(30),
            reconnect_initial_backoff: Duration::from_secs(1),
            reconnect_max_backoff: Duration::from_secs(5 * 60),
            idle_limit: Duration::from_secs(10 * 60),
            max_sessions: 2_000,
            max_servers_per_user: 50,
            probes_per_minute: 20,
            probes_in_flight: 2,
            max_result_chars: 100_000,
            max_ui_output_bytes: 1024 * 1024,
            max_response_bytes: 16 * 1024 * 1024,
            max_tool_pages: 64,
            max_tools_per_server: 1_000,
            addresses: AddressPolicy::public_only(),
        }
    }
}

/// Default budget for discovering one server's tools during a send.
pub const DEFAULT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(3);
/// Default budget for one tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> McpServerConfig {
        McpServerConfig {
            id: "s1".into(),
            user_id: "u1".into(),
            name: "Files".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: BTreeMap::from([("X-Api-Key".to_owned(), "key-secret-123".to_owned())]),
            bearer_token: Some("tok-secret-456".into()),
        }
    }

    #[test]
    fn debug_output_hides_secret_values() {
        let printed = format!("{:?}", config());
        assert!(!printed.contains("key-secret-123"), "{printed}");
        assert!(!printed.contains("tok-secret-456"), "{printed}");
        assert!(printed.contains("X-Api-Key"));
    }

    #[test]
    fn fingerprint_changes_with_url_headers_and_token() {
        let base = config();
        let mut url = base.clone();
        url.url.push('/');
        let mut header = base.clone();
        header.headers.insert("X-Api-Key".into(), "other".into());
        let mut token = base.clone();
        token.bearer_token = None;
        let mut renamed = base.clone();
        renamed.name = "Renamed".into();
        let fp = base.connection_fingerprint();
        assert_ne!(fp, url.connection_fingerprint());
        assert_ne!(fp, header.connection_fingerprint());
        assert_ne!(fp, token.connection_fingerprint());
        assert_eq!(
            fp,
            renamed.connection_fingerprint(),
            "the display name does not shape a connection"
        );
    }

    #[test]
    fn reserved_and_malformed_headers_are_refused() {
        let mut reserved = config();
        reserved.headers.insert("Mcp-Session-Id".into(), "x".into());
        assert!(matches!(reserved.header_map(), Err(McpError::InvalidConfig(_))));

        let mut both = config();
        both.headers.insert("Authorization".into(), "Basic abc".into());
        assert!(matches!(both.header_map(), Err(McpError::InvalidConfig(_))));

        let mut bad = config();
        bad.headers.insert("bad header".into(), "x".into());
        let err = bad.header_map().unwrap_err();
        assert!(err.to_string().contains("bad header"));

        let mut bad_value = config();
        bad_value.headers.insert("X-Other".into(), "line\nbreak".into());
        assert!(matches!(bad_value.header_map(), Err(McpError::InvalidConfig(_))));
    }

    #[test]
    fn redact_removes_every_secret() {
        let text = "server said: key-secret-123 and Bearer tok-secret-456";
        let redacted = config().redact(text);
        assert_eq!(redacted, "server said: <redacted> and Bearer <redacted>");
    }

    #[test]
    fn only_http_urls_are_accepted() {
        let mut c = config();
        c.url = "file:///etc/passwd".into();
        assert!(matches!(c.parsed_url(), Err(McpError::InvalidConfig(_))));
        c.url = "http://".into();
        assert!(matches!(c.parsed_url(), Err(McpError::InvalidConfig(_))));
        c.url = "HTTPS://example.com/mcp".into();
        assert!(c.parsed_url().is_ok());
    }
}
