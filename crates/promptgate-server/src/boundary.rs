//! What a request must look like before any route sees it: a Host this server answers to (DNS
//! rebinding), an Origin it trusts for anything that changes state (cross-site requests), CORS for the
//! origins the operator lists, bounded request lines and heads, and a JSON body on every error.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::config::{AuthMode, Config, ConfigError, ServerConfig};
use crate::error::{ApiError, ErrorCode};

/// Longest request target (path and query) accepted. hyper's own limit is far higher and answers
/// without a body, so ours comes first.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Largest request head (all header names and values) accepted, for the same reason.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Headers a browser script may read from our responses: the stream protocol marker `useChat`
/// checks, the request id for bug reports, and a list's link to its next page.
const EXPOSED_HEADERS: [&str; 3] = ["x-vercel-ai-ui-message-stream", "x-request-id", "link"];

/// Checks the `[server]` section where a mistake would otherwise surface only as refused requests.
pub fn validate(server: &ServerConfig) -> Result<(), ConfigError> {
    for origin in &server.cors.allowed_origins {
        parse_origin(origin).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "server.cors.allowed_origins: {origin:?} is not an origin such as http://localhost:5173 \
                 (scheme, host and optional port; no path, no wildcard)"
            ))
        })?;
    }
    for host in &server.allowed_hosts {
        let ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        if !ok {
            return Err(ConfigError::Invalid(format!(
                "server.allowed_hosts: {host:?} is not a host name (optionally with :port)"
            )));
        }
    }
    Ok(())
}

/// `scheme://host[:port]` in lower case, or `None` for anything else (paths, wildcards, `null`).
fn parse_origin(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.split_once("://")?;
    let scheme_ok = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    let rest_ok = !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    (scheme_ok && rest_ok).then(|| origin.to_ascii_lowercase())
}

/// The Host and Origin rules of one server, built once from the config.
#[derive(Debug, Clone)]
pub struct Policy {
    check_host: bool,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
}

impl Policy {
    pub fn new(config: &Config) -> Arc<Self> {
        let server = &config.server;
        Arc::new(Self {
            check_host: config.auth.mode == AuthMode::SingleUser || !server.allowed_hosts.is_empty(),
            allowed_hosts: server
                .allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            allowed_origins: server
                .cors
                .allowed_origins
                .iter()
                .filter_map(|o| parse_origin(o))
                .collect(),
        })
    }

    /// Whether a `Host` header names this server: a loopback name or address on any port, or a listed
    /// host. A page whose DNS name was rebound to 127.0.0.1 still sends its own name, so it fails here.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        if is_loopback_host(host_name(&host)) {
            return true;
        }
        self.allowed_hosts
            .iter()
            .any(|allowed| *allowed == host || allowed == host_name(&host))
    }

    /// Whether a state-changing request from a page at `origin` may proceed: the page is served by
    /// this server itself (its origin names the Host it sent to) or the operator listed it.
    pub fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if self.allowed_origins.contains(&origin) {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        let Some(host) = host.map(|h| h.trim().to_ascii_lowercase()) else {
            return false;
        };
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        authority == host
            || format!("{authority}{default_port}") == host
            || authority.strip_suffix(default_port) == Some(host.as_str())
    }
}

/// `name` of `name:port`, `[v6]` of `[v6]:port`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_loopback_host(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    name.parse::<std::net::Ipv4Addr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// The Host a reverse proxy says the client used. A page cannot forge it: a cross-origin request
/// with a custom header needs a preflight, which unlisted origins fail.
fn forwarded_host(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-forwarded-host")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
}

fn changes_state(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// Refuses requests this server must not answer, before CORS and the routes see them: those the
/// policy refuses, then those whose path or query spells U+0000.
pub async fn admit(policy: Arc<Policy>, req: Request, next: Next) -> Response {
    let refused = refusal(&policy, req.method(), req.uri(), req.headers())
        .or_else(|| crate::nul::nul_in_uri(req.uri()));
    if let Some(refusal) = refused {
        return refusal.into_response();
    }
    next.run(req).await
}

fn refusal(policy: &Policy, method: &Method, uri: &axum::http::Uri, headers: &HeaderMap) -> Option<ApiError> {
    let target = uri.path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(ApiError::new(
            ErrorCode::UriTooLong,
            format!("the request target is {target} bytes; the limit is {MAX_URI_BYTES}"),
        ));
    }
    let head: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if head > MAX_HEADER_BYTES {
        return Some(ApiError::new(
            ErrorCode::HeadersTooLarge,
            format!("the request headers are {head} bytes; the limit is {MAX_HEADER_BYTES}"),
        ));
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    if policy.check_host && !host.is_some_and(|h| policy.host_allowed(h)) {
        return Some(ApiError::new(
            ErrorCode::HostNotAllowed,
            "this server answers only to loopback names and the hosts in server.allowed_hosts",
        ));
    }
    if changes_state(method)
        && let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| {
            policy.origin_allowed(o, host) || policy.origin_allowed(o, forwarded_host(headers))
        })
    {
        return Some(ApiError::new(
            ErrorCode::OriginNotAllowed,
            "requests from this web origin are refused; list it in server.cors.allowed_origins",
        ));
    }
    None
}

/// CORS for the configured origins only: bearer tokens in `Authorization`, JSON bodies, and the stream
/// headers readable. No credentials mode (the API uses no cookies), so never a wildcard either.
pub fn cors(config: &Config) -> CorsLayer {
    let origins: Vec<HeaderValue> = config
        .server
        .cors
        .allowed_origins
        .iter()
        .filter_map(|o| parse_origin(o))
        .filter_map(|o| HeaderValue::from_str(&o).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            // A browser client on another origin names itself for the harness prompt, and its
            // AI SDK major for the stream's fields.
            HeaderName::from_static(crate::routes::chat::CLIENT_HEADER),
            HeaderName::from_static(crate::ui_stream::UI_STREAM_HEADER),
        ])
        .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(Duration::from_secs(600))
}

/// Error bodies that are not JSON yet (axum's own rejections, timeouts, limits) become
/// `{"error": {"code", "message"}}`, keeping a short prefix of what they said.
pub async fn json_errors(res: Response) -> Response {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let said = axum::body::to_bytes(body, 2048)
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .filter(|s| !s.is_empty());
    let message = said.unwrap_or_else(|| {
        status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_owned()
    });
    let mut fresh = ApiError::new(ErrorCode::for_status(status), message).into_response();
    // Keep what the producer set (Allow, Retry-After, CORS headers) besides the body's own.
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            fresh.headers_mut().insert(name.clone(), value.clone());
        }
    }
    *fresh.status_mut() = status;
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: AuthMode, hosts: &[&str], origins: &[&str]) -> Policy {
        let mut config = Config::parse(crate::config::EMBEDDED_DEFAULT).unwrap();
        config.auth.mode = mode;
        config.server.allowed_hosts = hosts.iter().map(|h| (*h).to_owned()).collect();
        config.server.cors.allowed_origins = origins.iter().map(|o| (*o).to_owned()).collect();
        Policy::new(&config).as_ref().clone()
    }

    #[test]
    fn loopback_hosts_pass_with_any_port_and_others_need_listing() {
        let p = policy(AuthMode::SingleUser, &["gw.lan"], &[]);
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "app.localhost:3000",
            "127.0.0.1",
            "127.8.9.10:1",
            "[::1]:8080",
            "[::1]",
            "gw.lan",
            "gw.lan:8080",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for refused in [
            "attacker.example",
            "attacker.example:8080",
            "127.0.0.1.attacker.example",
            "localhost.attacker.example",
            "0.0.0.0:8080",
            "[::ffff:127.0.0.1]:80",
            "10.0.0.1",
            "",
        ] {
            assert!(!p.host_allowed(refused), "{refused}");
        }
    }

    #[test]
    fn own_and_listed_origins_pass_and_others_do_not() {
        let p = policy(AuthMode::Tokens, &[], &["http://localhost:5173"]);
        assert!(p.origin_allowed("http://localhost:5173", Some("127.0.0.1:8080")));
        assert!(p.origin_allowed("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
        assert!(p.origin_allowed("https://gw.example", Some("gw.example")));
        assert!(p.origin_allowed("https://gw.example", Some("gw.example:443")));
        assert!(!p.origin_allowed("http://localhost:5174", Some("127.0.0.1:8080")));
        assert!(!p.origin_allowed("http://attacker.example", Some("127.0.0.1:8080")));
        assert!(!p.origin_allowed("null", Some("127.0.0.1:8080")));
        assert!(!p.origin_allowed("http://127.0.0.1:8080", None));
    }

    /// The commented `[server]` example of the embedded file, uncommented.
    fn server_example() -> String {
        crate::config::EMBEDDED_DEFAULT
            .lines()
            .skip_while(|l| !l.starts_with("# [server]"))
            .take_while(|l| l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("# "))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_documented_server_example_parses_with_the_defaults_it_shows() {
        let example = server_example();
        assert!(example.contains("[server.cors]"), "{example}");
        let text = format!("{}\n{example}\n", crate::config::EMBEDDED_DEFAULT);
        let config = Config::parse(&text).unwrap();
        config.validate().unwrap();
        let defaults = ServerConfig::default();
        assert_eq!(
            config.server.header_read_timeout_secs,
            defaults.header_read_timeout_secs
        );
        assert_eq!(config.server.idle_timeout_secs, defaults.idle_timeout_secs);
        assert_eq!(config.server.body_timeout_secs, defaults.body_timeout_secs);
        assert_eq!(config.server.max_connections, defaults.max_connections);
        assert!(config.server.cors.allowed_origins.is_empty());
        let zero = text.replace("max_connections = 4096", "max_connections = 0");
        let err = Config::parse(&zero).unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("server.max_connections"), "{err}");
    }

    #[test]
    fn origins_in_the_config_must_be_exact() {
        let mut server = ServerConfig::default();
        for bad in ["*", "http://*.example", "localhost:5173", "http://x/path", "null"] {
            server.cors.allowed_origins = vec![bad.to_owned()];
            assert!(validate(&server).is_err(), "{bad}");
        }
        server.cors.allowed_origins = vec!["http://localhost:5173".into(), "https://app.example".into()];
        assert!(validate(&server).is_ok());
    }
}
