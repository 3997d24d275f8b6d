//! The `[web]` section: the search backend and the fetcher behind the web tools.

use serde::Deserialize;

/// Web tools: `search` needs a backend, `fetch_content` the fetcher policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// `{ kind = "searxng", base_url = "..." }` or `{ kind = "brave", api_key_env = "..." }`. Without it
    /// the web tools are not offered.
    pub search: Option<SearchEntry>,
    pub fetch: promptgate_service::deployment::FetchPolicy,
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
