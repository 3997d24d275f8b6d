//! `fetch_content`: reads a public web page for the model, and nothing else.
//!
//! Each hop (the first request and every redirect) is resolved once, every resolved address is
//! checked against the policy, and the connection is pinned to exactly those addresses, so a DNS
//! answer that changes between the check and the connect cannot send us elsewhere. Redirects are
//! followed by hand for the same reason.
//!
//! Limits: the whole fetch (all hops, the body and its extraction) runs under one time cap; the
//! body is read up to `max_body_bytes` and reading stops there. Types we cannot turn into text
//! are refused from their `Content-Type` before the body is read. For a text type the part read
//! so far is used and the page is reported as truncated, since the beginning of a huge page is
//! usually what the model needs.

mod content;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use promptgate_outbound::{AddressPolicy, Outbound};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use serde::{Deserialize, Deserializer, Serialize};
use tracing::Instrument;
use url::Url;

pub use content::{DEFAULT_MAX_LENGTH, MAX_MAX_LENGTH, MIN_MAX_LENGTH, clamp_max_length};
pub use promptgate_outbound::{HostResolver, RestrictedRange, SystemResolver, classify};

use super::http::{CappedBody, describe_transport_error, is_web_url, read_capped};
use content::{Kind, MediaType};
use promptgate_core::tools::ToolError;

const ACCEPTED_TYPES: &str = "text/html,application/xhtml+xml;q=0.9,text/markdown;q=0.9,text/plain;q=0.8,application/json;q=0.8,*/*;q=0.1";

/// What a fetch may reach and how much it may read. Deserializable from the `[fetch]` config table;
/// every field has a safe default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchPolicy {
    /// Allow 127.0.0.0/8 and ::1 (and their IPv6-embedded forms). Off in production.
    pub allow_loopback: bool,
    /// Allow RFC 1918 networks, carrier-grade NAT space and IPv6 unique-local addresses.
    /// Link-local (cloud metadata services) stays refused either way.
    pub allow_private: bool,
    pub max_redirects: usize,
    pub max_body_bytes: usize,
    /// For the whole fetch, including a slow body.
    #[serde(rename = "timeout_secs", deserialize_with = "seconds")]
    pub timeout: Duration,
    pub user_agent: String,
    /// Exact `ip:port` pairs allowed whatever their range, for one known internal service
    /// (say a wiki at 10.1.2.3:443) without opening the whole private network.
    pub allowed_addrs: Vec<SocketAddr>,
    /// Send the trace context (`traceparent`) with each fetch, when traces are exported. Off: a
    /// page the model reads learns nothing of the gateway's traces unless the operator wants it to.
    pub send_trace_context: bool,
}

impl Default for FetchPolicy {
    fn default() -> Self {
        Self {
            allow_loopback: false,
            allow_private: false,
            max_redirects: 5,
            max_body_bytes: 5 * 1024 * 1024,
            timeout: Duration::from_secs(15),
            user_agent: concat!("promptgate/", env!("CARGO_PKG_VERSION"), " (fetch_content)").to_owned(),
            allowed_addrs: Vec::new(),
            send_trace_context: false,
        }
    }
}

fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(deserializer)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

/// Metadata from a page's `<head>`, used to enrich its source entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMeta {
    pub title: Option<String>,
    pub description: Option<String>,
    /// `og:image`, absolute.
    pub image: Option<String>,
    /// `og:site_name`.
    pub site_name: Option<String>,
    /// Absolute; `/favicon.ico` on the page's origin when the page names none.
    pub favicon: Option<String>,
    pub author: Option<String>,
    pub published_date: Option<String>,
}

/// A fetched page as text for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedPage {
    pub requested_url: String,
    /// After redirects.
    pub final_url: String,
    /// The `Content-Type` essence, e.g. `text/html`.
    pub content_type: String,
    pub title: Option<String>,
    /// Markdown for HTML, pretty-printed JSON, or the text as served.
    pub text: String,
    /// The text reached `max_length` characters, or the body was cut at `max_body_bytes`.
    pub is_truncated: bool,
    pub meta: PageMeta,
}

/// Fetches pages under a `FetchPolicy`. Build one and share it: it holds the TLS set-up that
/// every hop's pinned client reuses. Where a hop may connect is decided by the gateway-wide
/// outbound policy (`promptgate_outbound`), the same one MCP connections go through.
pub struct SafeFetcher {
    policy: FetchPolicy,
    outbound: Outbound,
}

fn fetch_failed(reason: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("Fetch content failed: {reason}"))
}

impl FetchPolicy {
    /// The address part of this policy, in the shape every outbound connection shares.
    pub fn addresses(&self) -> AddressPolicy {
        AddressPolicy {
            allow_loopback: self.allow_loopback,
            allow_private: self.allow_private,
            allowed_addrs: self.allowed_addrs.clone(),
        }
    }
}

impl SafeFetcher {
    pub fn new(policy: FetchPolicy) -> Self {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// Uses `resolver` for host names. Its answers get the same checks as the system's.
    pub fn with_resolver(policy: FetchPolicy, resolver: Arc<dyn HostResolver>) -> Self {
        let outbound = Outbound::with_resolver(policy.addresses(), resolver);
        Self { policy, outbound }
    }

    pub fn policy(&self) -> &FetchPolicy {
        &self.policy
    }

    /// Fetches `url` and returns its text cut to `max_length` characters (default 16000,
    /// clamped to 1000..=64000). Errors read `Fetch content failed: <reason>`.
    pub async fn fetch(&self, url: &str, max_length: Option<usize>) -> Result<FetchedPage, ToolError> {
        let start = parse_web_url(url)?;
        let max_chars = clamp_max_length(max_length);
        match tokio::time::timeout(
            self.policy.timeout,
            self.fetch_following_redirects(start, max_chars),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(fetch_failed(format!(
                "the page did not load within {} s (timed out)",
                self.policy.timeout.as_secs_f64()
            ))),
        }
    }

    async fn fetch_following_redirects(
        &self,
        start: Url,
        max_chars: usize,
    ) -> Result<FetchedPage, ToolError> {
        let requested_url = start.to_string();
        let mut current = start;
        let mut redirects = 0;
        loop {
            let response = self.send_pinned(&current).await?;
            let status = response.status();
            if status.is_redirection() {
                let Some(location) = response.headers().get(LOCATION) else {
                    return Err(fetch_failed(format!(
                        "the server answered {status} without saying where to go"
                    )));
                };
                if redirects == self.policy.max_redirects {
                    return Err(fetch_failed(format!(
                        "too many redirects (more than {})",
                        self.policy.max_redirects
                    )));
                }
                redirects += 1;
                let location = location
                    .to_str()
                    .map_err(|_| fetch_failed("the server redirected to an unreadable address"))?;
                let next = current.join(location).map_err(|_| {
                    fetch_failed(format!("the server redirected to an invalid URL {location:?}"))
                })?;
                if !is_web_url(&next) {
                    return Err(fetch_failed(format!(
                        "the server redirected to {next}, which is not an http(s) URL"
                    )));
                }
                current = next;
                continue;
            }
            if !status.is_success() {
                return Err(fetch_failed(format!("the server answered {status}")));
            }
            return self.read_page(requested_url, current, response, max_chars).await;
        }
    }

    /// Sends one GET whose connection can only go to addresses the policy allows.
    async fn send_pinned(&self, url: &Url) -> Result<reqwest::Response, ToolError> {
        let target = self.outbound.check_url(url).await.map_err(fetch_failed)?;
        let client = self
            .outbound
            .pinned_builder(url, &target)
            .map_err(fetch_failed)?
            .user_agent(self.policy.user_agent.as_str())
            .connect_timeout(self.policy.timeout)
            .build()
            .map_err(|_| fetch_failed("could not set up the HTTP client"))?;
        let host = url.host_str().unwrap_or_default();
        let span = tracing::info_span!(
            target: "promptgate::otel",
            "web_fetch",
            otel.name = "GET",
            otel.kind = "client",
            "http.request.method" = "GET",
            "server.address" = host,
            // Signed: the exporter sends unsigned values as strings.
            "server.port" = url.port_or_known_default().map(i64::from),
            "http.response.status_code" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let mut request = client.get(url.clone()).header(ACCEPT, ACCEPTED_TYPES);
        if self.policy.send_trace_context {
            request = span.in_scope(|| promptgate_outbound::trace_context::inject(request));
        }
        let sent = request.send().instrument(span.clone()).await;
        match &sent {
            Ok(response) => {
                span.record("http.response.status_code", i64::from(response.status().as_u16()));
            }
            Err(_) => {
                span.record("otel.status_code", "error");
            }
        }
        sent.map_err(|e| fetch_failed(describe_transport_error(&e, host)))
    }

    async fn read_page(
        &self,
        requested_url: String,
        final_url: Url,
        response: reqwest::Response,
        max_chars: usize,
    ) -> Result<FetchedPage, ToolError> {
        let media = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(MediaType::parse)
            .filter(|m| !m.essence.is_empty());
        let declared_kind = match &media {
            Some(media) => Some(
                media
                    .kind()
                    .ok_or_else(|| fetch_failed(format!("unsupported content type {}", media.essence)))?,
            ),
            None => None,
        };
        let host = final_url.host_str().unwrap_or_default().to_owned();
        let CappedBody { bytes, cut_at_cap } = read_capped(response, self.policy.max_body_bytes)
            .await
            .map_err(|e| fetch_failed(describe_transport_error(&e, &host)))?;
        let kind = declared_kind
            .or_else(|| content::sniff_kind(&bytes))
            .ok_or_else(|| fetch_failed("unsupported content type (none given, and the body is not text)"))?;
        let content_type = media
            .as_ref()
            .map_or_else(|| sniffed_type_name(kind), |m| m.essence.clone());
        let charset = media.and_then(|m| m.charset);
        let page_url = final_url.clone();
        // Parsing a few MiB of HTML is CPU work; keep it off the async workers.
        let (title, text, meta) = tokio::task::spawn_blocking(move || {
            let decoded = content::decode_text(&bytes, kind, charset.as_deref());
            match kind {
                Kind::Html => {
                    let page = content::extract_html(&decoded, &page_url);
                    (page.title, page.text, page.meta)
                }
                Kind::Json => (None, content::json_text(decoded), PageMeta::default()),
                Kind::PlainText => (None, decoded, PageMeta::default()),
            }
        })
        .await
        .map_err(|_| fetch_failed("the page could not be processed"))?;
        let (mut text, reached_max) = content::fit_to_length(&text, max_chars);
        if cut_at_cap && !reached_max {
            text.push_str(&format!(
                "\n\n[Only the first {} bytes of this page were read.]",
                self.policy.max_body_bytes
            ));
        }
        Ok(FetchedPage {
            requested_url,
            final_url: final_url.into(),
            content_type,
            title,
            text,
            is_truncated: reached_max || cut_at_cap,
            meta,
        })
    }
}

fn sniffed_type_name(kind: Kind) -> String {
    match kind {
        Kind::Html => "text/html",
        Kind::PlainText => "text/plain",
        Kind::Json => "application/json",
    }
    .to_owned()
}

fn parse_web_url(raw: &str) -> Result<Url, ToolError> {
    let url = Url::parse(raw.trim()).map_err(|_| fetch_failed(format!("{raw:?} is not a valid URL")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(fetch_failed(format!(
            "only http and https URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(fetch_failed("the URL has no host"));
    }
    Ok(url)
}
