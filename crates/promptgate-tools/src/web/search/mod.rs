//! Web search through a configured backend.

mod brave;
mod bundled;
mod searxng;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, RequestBuilder, StatusCode};
use serde::{Deserialize, Serialize};
use tracing::Instrument;
use url::Url;

pub use brave::BraveSearch;
pub use bundled::BundledSearch;
pub use searxng::SearxNg;

use super::fetch::FetchedPage;
use super::http::{describe_transport_error, read_capped};
use crate::oauth::text::without_tags;
use promptgate_core::tools::ToolError;
use promptgate_outbound::ensure_tls_provider;

/// Results a caller may ask for; a backend is never asked for more.
pub const MAX_RESULTS_LIMIT: usize = 25;
const SEARCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Search responses are a few KiB; anything near this is not a search response.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Long enough for any real query, short enough that a runaway model cannot send a page of text.
const MAX_QUERY_CHARS: usize = 1000;

/// One search result, in the shape the source registry consumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    /// Plain text: backends' highlight markup is removed.
    pub snippet: String,
    pub favicon: Option<String>,
    pub image: Option<String>,
    pub published_date: Option<String>,
}

#[async_trait]
pub trait SearchBackend: Send + Sync {
    /// Runs one query. `max_results` is clamped to 1..=25. Errors read `Search failed: <reason>`.
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError>;

    /// A page the backend carries itself (the offline demo's bundle), cut to `max_chars`; `None`
    /// for every address of the real web, which `fetch_content` fetches under the address policy.
    fn bundled_page(&self, _url: &str, _max_chars: usize) -> Option<FetchedPage> {
        None
    }
}

/// Which backend to search with, as written in the config file.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SearchConfig {
    /// A SearXNG instance with the `json` output format enabled.
    SearxNg { base_url: String },
    /// Brave Search's web search API.
    Brave {
        #[serde(default = "brave::default_base_url")]
        base_url: String,
        api_key: String,
    },
    /// The offline demo's few bundled pages; no network.
    Demo,
}

impl fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SearxNg { base_url } => f.debug_struct("SearxNg").field("base_url", base_url).finish(),
            Self::Brave { base_url, .. } => f
                .debug_struct("Brave")
                .field("base_url", base_url)
                .field("api_key", &"<redacted>")
                .finish(),
            Self::Demo => f.write_str("Demo"),
        }
    }
}

impl SearchConfig {
    pub fn build(&self) -> Result<Arc<dyn SearchBackend>, ToolError> {
        Ok(match self {
            Self::SearxNg { base_url } => Arc::new(SearxNg::new(base_url)?),
            Self::Brave { base_url, api_key } => Arc::new(BraveSearch::new(base_url, api_key)?),
            Self::Demo => Arc::new(BundledSearch),
        })
    }
}

pub(crate) fn search_failed(reason: impl fmt::Display) -> ToolError {
    ToolError::Failed(format!("Search failed: {reason}"))
}

/// The base URL without a trailing slash, so `{base}/path` joins cleanly under a sub-path.
fn parse_base_url(base_url: &str) -> Result<String, ToolError> {
    let parsed = Url::parse(base_url.trim())
        .map_err(|_| search_failed(format!("the configured base URL {base_url:?} is not a valid URL")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(search_failed(
            "the configured base URL must start with http:// or https://",
        ));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// `{base}{path}?{params}`, with the parameters percent-encoded.
fn endpoint(base_url: &str, path: &str, params: &[(&str, &str)]) -> Result<Url, ToolError> {
    let mut url = Url::parse(&format!("{base_url}{path}"))
        .map_err(|_| search_failed("the configured base URL cannot be extended with a path"))?;
    url.query_pairs_mut().extend_pairs(params);
    Ok(url)
}

fn http_client() -> Result<Client, ToolError> {
    ensure_tls_provider();
    Client::builder()
        .timeout(SEARCH_TIMEOUT)
        .build()
        .map_err(|_| search_failed("could not set up the HTTP client"))
}

/// A query the backend will accept, or the reason it is refused.
fn checked_query(query: &str) -> Result<&str, ToolError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(search_failed("the query is empty"));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(search_failed(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    Ok(query)
}

pub(crate) fn clamp_max_results(max_results: usize) -> usize {
    max_results.clamp(1, MAX_RESULTS_LIMIT)
}

/// How a backend is named in errors, and what to check when it refuses us.
pub(crate) struct BackendLabel {
    pub name: &'static str,
    /// Appended to 401/403 answers, the ones an operator fixes in configuration.
    pub refusal_hint: &'static str,
}

/// Sends the request and decodes a JSON body of bounded size, with reasons fit for the model.
async fn fetch_json<T: serde::de::DeserializeOwned>(
    request: RequestBuilder,
    backend: &BackendLabel,
) -> Result<T, ToolError> {
    let peer = format!("the {} backend", backend.name);
    let span = tracing::info_span!(
        target: "promptgate::otel",
        "web_search",
        otel.name = format!("search {}", backend.name),
        otel.kind = "client",
        "promptgate.search.backend" = backend.name,
        "http.response.status_code" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let sent = request.send().instrument(span.clone()).await;
    let response = sent.map_err(|e| {
        span.record("otel.status_code", "error");
        search_failed(describe_transport_error(&e, &peer))
    })?;
    let status = response.status();
    // Signed: the exporter sends unsigned values as strings.
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Err(search_failed(format!(
            "{peer} answered {status} ({})",
            backend.refusal_hint
        )));
    }
    if !status.is_success() {
        return Err(search_failed(format!("{peer} answered {status}")));
    }
    let body = read_capped(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| search_failed(describe_transport_error(&e, &peer)))?;
    if body.cut_at_cap {
        return Err(search_failed(format!(
            "{peer} sent a response larger than {MAX_RESPONSE_BYTES} bytes"
        )));
    }
    serde_json::from_slice(&body.bytes)
        .map_err(|e| search_failed(format!("{peer} sent a response that could not be read ({e})")))
}

/// A backend's list of results under `results` (Brave's `web`, SearXNG's whole answer); a list
/// left out is an empty one.
#[derive(Deserialize)]
struct ResultList<T> {
    // `Vec::new` rather than `default`, which would ask the items to have a default too.
    #[serde(default = "Vec::new")]
    results: Vec<T>,
}

/// The parts a backend found for one result, before the common clean-up.
struct RawHit {
    title: Option<String>,
    url: Option<String>,
    snippet: Option<String>,
    favicon: Option<String>,
    image: Option<String>,
    published_date: Option<String>,
}

/// Keeps only web results, strips markup, fills a missing favicon and stops at `limit`.
fn finish_hits(raw: impl IntoIterator<Item = RawHit>, limit: usize) -> Vec<SearchHit> {
    raw.into_iter()
        .filter_map(|hit| {
            let url = Url::parse(hit.url?.trim()).ok().filter(super::http::is_web_url)?;
            let title = hit.title.map(|t| strip_html(&t)).filter(|t| !t.is_empty());
            let favicon = non_empty(hit.favicon).or_else(|| super::http::default_favicon(&url));
            Some(SearchHit {
                title: title.unwrap_or_else(|| url.to_string()),
                snippet: hit.snippet.map(|s| strip_html(&s)).unwrap_or_default(),
                favicon,
                image: non_empty(hit.image),
                published_date: non_empty(hit.published_date),
                url: url.into(),
            })
        })
        .take(limit)
        .collect()
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Snippets come with `<strong>` highlights and entities; the model and the UI want plain text.
pub(crate) fn strip_html(text: &str) -> String {
    let decoded = decode_entities(&without_tags(text));
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let decoded = after
            .find(';')
            .filter(|end| *end <= 10)
            .and_then(|end| decode_entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    let code = |digits: &str, radix| u32::from_str_radix(digits, radix).ok().and_then(char::from_u32);
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => match name.strip_prefix('#')? {
            hex if hex.starts_with(['x', 'X']) => code(&hex[1..], 16),
            dec => code(dec, 10),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_markup_and_decodes_entities() {
        assert_eq!(
            strip_html(
                "The <strong>Rust</strong> &amp; <em>async</em>\n  book &#39;24 &#x2014; &lt;ok&gt; &bogus; AT&T"
            ),
            "The Rust & async book '24 \u{2014} <ok> &bogus; AT&T"
        );
    }

    #[test]
    fn clamps_result_counts() {
        assert_eq!(clamp_max_results(0), 1);
        assert_eq!(clamp_max_results(7), 7);
        assert_eq!(clamp_max_results(500), 25);
    }
}
