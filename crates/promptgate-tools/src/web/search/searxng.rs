//! SearXNG's JSON API: `GET {base}/search?q=...&format=json`.

use async_trait::async_trait;
use reqwest::Client;
use serde::Deserialize;

use super::{
    BackendLabel, RawHit, ResultList, SearchBackend, SearchHit, checked_query, clamp_max_results, endpoint,
    fetch_json, finish_hits, http_client, parse_base_url,
};
use promptgate_core::tools::ToolError;

const SEARXNG: BackendLabel = BackendLabel {
    name: "SearXNG",
    refusal_hint: "its settings must list json under search.formats",
};

/// A SearXNG instance. Its settings must list `json` under `search.formats`, or it answers 403.
#[derive(Debug, Clone)]
pub struct SearxNg {
    base_url: String,
    client: Client,
}

impl SearxNg {
    pub fn new(base_url: &str) -> Result<Self, ToolError> {
        Ok(Self {
            base_url: parse_base_url(base_url)?,
            client: http_client()?,
        })
    }
}

#[derive(Deserialize)]
struct ResultItem {
    title: Option<String>,
    url: Option<String>,
    content: Option<String>,
    img_src: Option<String>,
    thumbnail: Option<String>,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
}

#[async_trait]
impl SearchBackend for SearxNg {
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        let query = checked_query(query)?;
        // SearXNG has no result-count parameter; one page is ample for 25 results.
        let url = endpoint(&self.base_url, "/search", &[("q", query), ("format", "json")])?;
        let request = self.client.get(url);
        let response: ResultList<ResultItem> = fetch_json(request, &SEARXNG).await?;
        let raw = response.results.into_iter().map(|item| RawHit {
            title: item.title,
            url: item.url,
            snippet: item.content,
            favicon: None,
            image: item.img_src.filter(|s| !s.trim().is_empty()).or(item.thumbnail),
            published_date: item.published_date,
        });
        Ok(finish_hits(raw, clamp_max_results(max_results)))
    }
}
