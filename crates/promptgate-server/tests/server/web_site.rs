//! A small web on loopback for the web-tool tests: a search backend speaking SearXNG's JSON API whose
//! results point at a site with real HTML pages, both on ports of their own.

#![allow(dead_code, clippy::panic, clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::Query;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::{AuthMode, Config};
use promptgate_service::deployment::FetchPolicy;
use serde_json::json;

const TIDES: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Reading a tide table | Coastal Notes</title>
<meta property="og:site_name" content="Coastal Notes">
<meta name="author" content="Mara Lindqvist">
</head><body><article>
<h1>Reading a tide table</h1>
<p>Heights in a tide table are measured from chart datum, roughly the lowest level the sea reaches in
ordinary conditions. A height near zero means the flats are almost dry; five metres means they are deep
under water. Spring tides have the largest range and neap tides the smallest.</p>
<p>Start a crossing on foot only after high water has turned, and be back well before the next low water
has passed, allowing for an onshore wind that can bring the sea in early.</p>
</article></body></html>"#;

const HARBOUR: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Harbour opening hours</title>
</head><body><main>
<h1>Harbour opening hours</h1>
<p>The harbour office opens at eight in the morning and closes at dusk from April to October. Outside the
season the gates are opened on request; call the harbour master a day ahead to arrange it.</p>
</main></body></html>"#;

/// The site and the search backend, each on its own loopback port.
pub struct Web {
    pub site: SocketAddr,
    pub search: SocketAddr,
    searches: Arc<AtomicUsize>,
}

impl Web {
    pub async fn start() -> Web {
        let site = crate::common::serve_router(site()).await;
        let searches = Arc::new(AtomicUsize::new(0));
        let search = crate::common::serve_router(searxng(site, Arc::clone(&searches))).await;
        Web {
            site,
            search,
            searches,
        }
    }

    /// Queries the search backend has answered.
    pub fn searches(&self) -> usize {
        self.searches.load(Ordering::SeqCst)
    }

    pub fn page(&self, path: &str) -> String {
        format!("http://{}{path}", self.site)
    }

    /// Fetching may reach the site and nothing else on loopback.
    pub fn policy(&self) -> FetchPolicy {
        FetchPolicy {
            allowed_addrs: vec![self.site],
            ..FetchPolicy::default()
        }
    }

    /// The `[web]` section pointing `search` at the backend and `fetch` at the site only.
    pub fn config_section(&self) -> String {
        format!(
            "[web]\nsearch = {{ kind = \"searxng\", base_url = \"http://{}\" }}\n\n[web.fetch]\nallowed_addrs = [\"{}\"]\n",
            self.search, self.site
        )
    }
}

/// A single-user gateway on SQLite whose one model is a scripted upstream and whose search backend
/// and site are this web.
pub async fn scripted_web_gateway() -> (crate::common::Gateway, ScriptedUpstream, Web) {
    scripted_web_gateway_with("").await
}

/// As [`scripted_web_gateway`], with `more` (whole TOML sections) added to its config.
pub async fn scripted_web_gateway_with(more: &str) -> (crate::common::Gateway, ScriptedUpstream, Web) {
    crate::common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let web = Web::start().await;
    let text = format!(
        "{}\n[[providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\n\n[[models]]\nid = \"scripted\"\nname = \"Scripted\"\n\
         provider = \"scripted\"\nupstream_model = \"upstream-model\"\n\n{}\n{more}",
        promptgate_server::config::EMBEDDED_DEFAULT,
        upstream.base_url(),
        web.config_section()
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    let gw = crate::common::Gateway::start(crate::common::Backend::Sqlite, config).await;
    (gw, upstream, web)
}

fn html(body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body)
}

fn site() -> Router {
    Router::new()
        .route("/tides", get(|| async { html(TIDES) }))
        .route("/harbour", get(|| async { html(HARBOUR) }))
}

/// Every query finds the same two pages, the way a real SearXNG answers `format=json`; the snippet
/// of the first says how many queries came before, so a repeated search shows whether it was asked.
fn searxng(site: SocketAddr, searches: Arc<AtomicUsize>) -> Router {
    Router::new().route(
        "/search",
        get(move |Query(q): Query<HashMap<String, String>>| async move {
            if q.get("format").map(String::as_str) != Some("json") {
                return (axum::http::StatusCode::FORBIDDEN, "json only").into_response();
            }
            let asked = searches.fetch_add(1, Ordering::SeqCst) + 1;
            let query = q.get("q").cloned().unwrap_or_default();
            axum::Json(json!({
                "query": query,
                "number_of_results": 2,
                "results": [
                    {"title": "Reading a tide table", "url": format!("http://{site}/tides"),
                     "content": format!("How chart datum and spring tides decide a crossing (query {asked})."),
                     "engine": "duckduckgo"},
                    {"title": "Harbour opening hours", "url": format!("http://{site}/harbour"),
                     "content": "When the harbour office is open.", "engine": "bing",
                     "publishedDate": "2025-04-01T00:00:00"}
                ],
                "answers": [], "suggestions": [], "unresponsive_engines": []
            }))
            .into_response()
        }),
    )
}
