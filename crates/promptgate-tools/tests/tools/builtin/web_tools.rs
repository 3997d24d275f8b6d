//! `search` and `fetch_content` as the model sees them, against a SearXNG stand-in on loopback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use promptgate_core::sources::{SourceRegistry, SourceTool};
use promptgate_tools::builtin::{FetchContent, WebSearch};
use promptgate_tools::web::{SafeFetcher, SearchConfig};

use crate::builtin::common::*;
use crate::web_support::{init, loopback_policy, serve, site};

fn hit(title: &str, url: &str, snippet: &str) -> Value {
    json!({"title": title, "url": url, "content": snippet})
}

/// Answers like SearXNG's JSON API; what it finds depends on the query. `site` is the base URL of the
/// loopback web site, so search results can be fetched afterwards.
async fn searxng(State(site): State<String>, Query(params): Query<HashMap<String, String>>) -> Response {
    let query = params.get("q").cloned().unwrap_or_default();
    let results = match query.as_str() {
        "tides" => vec![
            json!({"title": "Tides <b>explained</b>", "url": format!("{site}/article"), "content": "Reading a tide table",
                   "img_src": "https://img.example.org/t.jpg", "publishedDate": "2025-06-14"}),
            hit("Bare page", &format!("{site}/bare"), "A bare page"),
            hit("Tide clocks", "https://example.org/clocks", ""),
        ],
        "tide tables" => vec![
            hit(
                "Almanac",
                "https://example.org/almanac",
                "Tables for every harbour",
            ),
            hit(
                "Tides again",
                &format!("{site}/article"),
                "Same page, found twice",
            ),
        ],
        "broken" => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        batch => match batch.strip_prefix("batch ") {
            Some(k) => (0..25)
                .map(|i| {
                    hit(
                        &format!("Page {k}.{i}"),
                        &format!("https://example.org/{k}/{i}"),
                        "bulk",
                    )
                })
                .collect(),
            None => Vec::new(),
        },
    };
    Json(json!({"query": query, "results": results})).into_response()
}

/// A search tool and a fetch tool sharing one registry, like the tools of one turn.
struct Turn {
    site: String,
    sources: Arc<Mutex<SourceRegistry>>,
    search: WebSearch,
    fetch: FetchContent,
}

async fn turn() -> Turn {
    init();
    let site = format!("http://{}", serve(site()).await);
    let search_app = Router::new()
        .route("/search", get(searxng))
        .with_state(site.clone());
    let base_url = format!("http://{}", serve(search_app).await);
    let backend = (SearchConfig::SearxNg { base_url }).build().unwrap();
    let sources = Arc::new(Mutex::new(SourceRegistry::new()));
    Turn {
        search: WebSearch::new(backend, sources.clone()),
        fetch: FetchContent::new(Arc::new(SafeFetcher::new(loopback_policy())), sources.clone()),
        sources,
        site,
    }
}

impl Turn {
    fn registry(&self) -> SourceRegistry {
        self.sources.lock().unwrap().clone()
    }

    async fn search(&self, query: &str) -> Vec<Value> {
        let output = run(&self.search, json!({"query": query, "max_results": 25})).await;
        output.output["results"].as_array().unwrap().clone()
    }

    async fn fetch(&self, path: &str) -> Value {
        run(&self.fetch, json!({"url": format!("{}{path}", self.site)}))
            .await
            .output
    }
}

fn numbers(results: &[Value]) -> Vec<u64> {
    results
        .iter()
        .map(|r| r["sourceIndex"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn search_results_are_numbered_and_labelled_in_order() {
    let turn = turn().await;

    let results = turn.search("tides").await;

    assert_eq!(numbers(&results), [1, 2, 3]);
    assert_eq!(
        results[0],
        json!({
            "sourceLabel": "[Source 1] (cite as [1])", "sourceIndex": 1,
            "title": "Tides explained", "url": format!("{}/article", turn.site), "snippet": "Reading a tide table",
            "favicon": format!("{}/favicon.ico", turn.site), "image": "https://img.example.org/t.jpg",
            "publishedDate": "2025-06-14",
        })
    );
    assert_eq!(results[2]["sourceLabel"], json!("[Source 3] (cite as [3])"));
    let registry = turn.registry();
    assert_eq!(registry.len(), 3);
    let clocks = registry.get(3).unwrap();
    assert_eq!(
        (clocks.url.as_str(), clocks.title.as_str()),
        ("https://example.org/clocks", "Tide clocks")
    );
    assert_eq!(clocks.tool_name, SourceTool::Search);
    assert_eq!(clocks.site_name.as_deref(), Some("example.org"));
}

#[tokio::test]
async fn a_url_found_again_keeps_its_number() {
    let turn = turn().await;
    turn.search("tides").await;

    let results = turn.search("tide tables").await;

    assert_eq!(numbers(&results), [4, 1]);
    assert_eq!(results[1]["sourceLabel"], json!("[Source 1] (cite as [1])"));
    assert_eq!(turn.registry().len(), 4);
    // The repeat does not overwrite what the first search recorded.
    assert_eq!(turn.registry().get(1).unwrap().title, "Tides explained");
}

#[tokio::test]
async fn fetching_a_known_page_enriches_its_source_and_a_new_page_gets_the_next_number() {
    let turn = turn().await;
    turn.search("tides").await;

    let article = turn.fetch("/article").await;

    assert_eq!(article["sourceIndex"], json!(1));
    assert_eq!(article["sourceLabel"], json!("[Source 1] (cite as [1])"));
    assert_eq!(article["title"], json!("Tide tables explained"));
    assert_eq!(article["isTruncated"], json!(false));
    assert!(
        article["text"].as_str().unwrap().contains("chart datum"),
        "{article}"
    );
    let registry = turn.registry();
    assert_eq!(registry.len(), 3, "enriched in place, not added");
    let source = registry.get(1).unwrap();
    assert_eq!(source.title, "Tide tables explained");
    assert_eq!(source.site_name.as_deref(), Some("Coastal Notes"));
    assert_eq!(source.author.as_deref(), Some("Mara Lindqvist"));
    assert_eq!(
        source.image.as_deref(),
        Some(format!("{}/images/tides.jpg", turn.site).as_str())
    );
    assert_eq!(
        source.tool_name,
        SourceTool::Search,
        "it stays the search result it was"
    );
    assert!(
        source
            .description
            .as_deref()
            .unwrap()
            .starts_with("A tide table lists the times"),
        "{source:?}"
    );

    let notes = turn.fetch("/notes.txt").await;

    assert_eq!(notes["sourceIndex"], json!(4));
    assert_eq!(notes["text"], json!("plain notes: caf\u{e9} \u{2615}"));
    let registry = turn.registry();
    let source = registry.get(4).unwrap();
    assert_eq!(source.url, format!("{}/notes.txt", turn.site));
    assert_eq!(
        source.title, source.url,
        "a page without a title is titled by its URL"
    );
    assert_eq!(source.tool_name, SourceTool::FetchContent);
}

#[tokio::test]
async fn a_fetched_page_arrives_read_for_the_citation_check_and_a_snippet_does_not() {
    let turn = turn().await;
    turn.search("tides").await;
    let snippet = turn.registry().seen(2).cloned().unwrap();
    assert!(!snippet.fetched && snippet.read.is_none(), "{snippet:?}");

    turn.fetch("/article").await;
    let seen = turn.registry().seen(1).cloned().unwrap();
    assert!(seen.fetched);
    assert_eq!(
        seen.read,
        Some(promptgate_core::citations::passages::ReadText::new(&seen.text)),
        "the page the check will read is the page the model saw"
    );
}

#[tokio::test]
async fn a_redirect_to_a_known_page_enriches_that_page() {
    let turn = turn().await;
    turn.search("tides").await;

    let page = turn.fetch("/go?to=/bare").await;

    assert_eq!(page["sourceIndex"], json!(2));
    assert_eq!(page["url"], json!(format!("{}/bare", turn.site)));
    assert_eq!(turn.registry().len(), 3);
    assert_eq!(turn.registry().get(2).unwrap().title, "Bare");

    // A redirect to a page nobody registered is registered under the URL that was asked for.
    let fresh = turn.fetch("/hops/1").await;
    assert_eq!(fresh["sourceIndex"], json!(4));
    assert_eq!(fresh["url"], json!(format!("{}/hops/1", turn.site)));
    assert_eq!(fresh["finalUrl"], json!(format!("{}/hops/0", turn.site)));
    assert_eq!(
        turn.registry().index_of(&format!("{}/hops/1", turn.site)),
        Some(4)
    );
}

#[tokio::test]
async fn failed_calls_register_nothing() {
    let turn = turn().await;
    turn.search("tides").await;

    let error = refused(&turn.fetch, json!({"url": format!("{}/missing", turn.site)})).await;
    assert_eq!(
        error.to_string(),
        "Fetch content failed: the server answered 404 Not Found"
    );
    let error = refused(&turn.fetch, json!({"url": format!("{}/photo.png", turn.site)})).await;
    assert!(
        error
            .to_string()
            .starts_with("Fetch content failed: unsupported content type image/png"),
        "{error}"
    );
    let error = refused(&turn.search, json!({"query": "broken", "max_results": 5})).await;
    assert!(error.to_string().starts_with("Search failed: "), "{error}");

    assert_eq!(turn.registry().len(), 3);
    // No number was used up by the failures.
    assert_eq!(turn.fetch("/bare?x=1").await["sourceIndex"], json!(4));
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_any_request() {
    let turn = turn().await;
    let error = refused(
        &turn.search,
        json!({"query": "tides", "max_results": 5, "page": 2}),
    )
    .await;
    assert!(
        matches!(&error, ToolError::InvalidArguments(m) if m.contains("page")),
        "{error}"
    );
    let error = refused(&turn.fetch, json!({"max_length": 2000})).await;
    assert!(
        matches!(&error, ToolError::InvalidArguments(m) if m.contains("url")),
        "{error}"
    );
    assert!(turn.registry().is_empty());
}

#[tokio::test]
async fn past_two_hundred_sources_numbers_are_burned_not_reused() {
    let turn = turn().await;
    for k in 0..8 {
        turn.search(&format!("batch {k}")).await;
    }
    assert_eq!(turn.registry().len(), 200);

    let overflow = turn.search("batch 8").await;

    assert_eq!(numbers(&overflow), (201..=225).collect::<Vec<_>>());
    assert_eq!(overflow[0]["sourceLabel"], json!("[Source 201] (cite as [201])"));
    let registry = turn.registry();
    assert_eq!(registry.len(), 200);
    assert!(registry.get(201).is_none(), "a burned number has no source");
    // Stored sources keep their numbers; a fetched new page takes the next unburned number and is
    // not stored either.
    assert_eq!(
        numbers(&turn.search("batch 0").await),
        (1..=25).collect::<Vec<_>>()
    );
    assert_eq!(turn.fetch("/bare").await["sourceIndex"], json!(226));
    assert_eq!(turn.registry().len(), 200);
}

#[tokio::test]
async fn max_results_bounds_how_many_results_are_numbered() {
    let turn = turn().await;
    let count = |max_results: Value| {
        let search = &turn.search;
        async move {
            let output = run(search, json!({"query": "batch 3", "max_results": max_results})).await;
            output.output["results"].as_array().unwrap().len()
        }
    };
    assert_eq!(count(json!(2)).await, 2);
    assert_eq!(count(json!("4")).await, 4, "a numeric string is accepted");
    assert_eq!(count(json!(0)).await, 10, "zero means the default");
    assert_eq!(count(json!(500)).await, 25, "never more than 25");
    assert_eq!(turn.registry().len(), 25, "repeated URLs kept their numbers");
}
