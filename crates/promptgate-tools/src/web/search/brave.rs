//! Brave Search's web API: `GET {base}/res/v1/web/search?q=...&count=N`.

use async_trait::async_trait;
use reqwest::Client;
use serde::Deserialize;

use super::{
    BackendLabel, RawHit, ResultList, SearchBackend, SearchHit, checked_query, clamp_max_results, endpoint,
    fetch_json, finish_hits, http_client, parse_base_url,
};
use promptgate_core::tools::ToolError;

/// Brave rejects `count` above 20, so larger requests are served with 20 results.
const BRAVE_MAX_COUNT: usize = 20;

const BRAVE: BackendLabel = BackendLabel {
    name: "Brave Search",
    refusal_hint: "check the configured API key and its plan",
};

pub(super) fn default_base_url() -> String {
    "https://api.search.brave.com".to_owned()
}

pub struct BraveSearch {
    base_url: String,
    api_key: String,
    client: Client,
}

impl std::fmt::Debug for BraveSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BraveSearch")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl BraveSearch {
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, ToolError> {
        Ok(Self {
            base_url: parse_base_url(base_url)?,
            api_key: api_key.to_owned(),
            client: http_client()?,
        })
    }
}

#[derive(Deserialize)]
struct Response {
    web: Option<ResultList<ResultItem>>,
}

#[derive(Deserialize)]
struct ResultItem {
    title: Option<String>,
    url: Option<String>,
    description: Option<String>,
    profile: Option<Profile>,
    meta_url: Option<MetaUrl>,
    thumbnail: Option<Thumbnail>,
    page_age: Option<String>,
    age: Option<String>,
}

#[derive(Deserialize)]
struct Profile {
    img: Option<String>,
}

#[derive(Deserialize)]
struct MetaUrl {
    favicon: Option<String>,
}

#[derive(Deserialize)]
struct Thumbnail {
    src: Option<String>,
}

#[async_trait]
impl SearchBackend for BraveSearch {
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        let query = checked_query(query)?;
        let wanted = clamp_max_results(max_results);
        let count = wanted.min(BRAVE_MAX_COUNT).to_string();
        let url = endpoint(
            &self.base_url,
            "/res/v1/web/search",
            &[("q", query), ("count", count.as_str())],
        )?;
        let request = self
            .client
            .get(url)
            .header("Accept", "application/json")
            .header("X-Subscription-Token", &self.api_key);
        let response: Response = fetch_json(request, &BRAVE).await?;
        let items = response.web.map(|web| web.results).unwrap_or_default();
        let raw = items.into_iter().map(|item| RawHit {
            title: item.title,
            url: item.url,
            snippet: item.description,
            favicon: item
                .profile
                .and_then(|p| p.img)
                .filter(|s| !s.trim().is_empty())
                .or(item.meta_url.and_then(|m| m.favicon)),
            image: item.thumbnail.and_then(|t| t.src),
            published_date: item.page_age.filter(|s| !s.trim().is_empty()).or(item.age),
        });
        Ok(finish_hits(raw, wanted))
    }
}
