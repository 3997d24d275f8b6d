//! Search backends against real HTTP servers on loopback speaking SearXNG's and Brave's JSON.

// Helpers outside #[test] functions fail the test the same way an assertion does.
#![allow(clippy::panic)]

use crate::web_support as support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use promptgate_core::tools::ToolError;
use promptgate_tools::web::{SearchBackend, SearchConfig, SearchHit};
use serde_json::{Value, json};

/// What the fake backend saw: query parameters and the subscription token header.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Received>>>);

/// Query parameters and the `X-Subscription-Token` header of one request.
type Received = (HashMap<String, String>, Option<String>);

impl Seen {
    fn last(&self) -> Received {
        self.0
            .lock()
            .map(|v| v.last().cloned())
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

fn record(seen: &Seen, params: HashMap<String, String>, headers: &HeaderMap) {
    let token = headers
        .get("x-subscription-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Ok(mut log) = seen.0.lock() {
        log.push((params, token));
    }
}

fn searxng_results() -> Value {
    let mut results = vec![
        json!({"title": "The <b>Rust</b> Book", "url": "https://doc.rust-lang.org/book/",
               "content": "Learn <span class=\"highlight\">Rust</span> &amp; friends", "img_src": "https://doc.rust-lang.org/cover.png",
               "publishedDate": "2024-05-01T00:00:00"}),
        json!({"title": "FTP mirror", "url": "ftp://ftp.example.org/pub/", "content": "files"}),
        json!({"title": "Script", "url": "javascript:alert(1)", "content": "nope"}),
        json!({"title": "", "url": "http://blog.example.com:8080/post?id=3", "content": null, "img_src": "",
               "thumbnail": "https://blog.example.com/thumb.jpg", "publishedDate": null}),
    ];
    for n in 0..40 {
        results.push(json!({"title": format!("Result {n}"), "url": format!("https://example.com/{n}"), "content": "more"}));
    }
    json!({"query": "rust", "number_of_results": 44, "results": results})
}

async fn searxng_server(seen: Seen) -> String {
    let app = Router::new()
        .route(
            "/searx/search",
            get(
                |State(seen): State<Seen>,
                 Query(params): Query<HashMap<String, String>>,
                 headers: HeaderMap| async move {
                    record(&seen, params, &headers);
                    Json(searxng_results())
                },
            ),
        )
        .with_state(seen);
    format!("http://{}/searx/", support::serve(app).await)
}

async fn searxng(base_url: String) -> Arc<dyn SearchBackend> {
    match (SearchConfig::SearxNg { base_url }).build() {
        Ok(backend) => backend,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn searxng_results_are_mapped_and_cleaned() {
    let seen = Seen::default();
    let backend = searxng(searxng_server(seen.clone()).await).await;

    let hits = found(&backend, "rust & async", 10).await;

    let (params, _) = seen.last();
    assert_eq!(params.get("q").map(String::as_str), Some("rust & async"));
    assert_eq!(params.get("format").map(String::as_str), Some("json"));
    assert_eq!(hits.len(), 10);
    let book = &hits[0];
    assert_eq!(book.title, "The Rust Book");
    assert_eq!(book.url, "https://doc.rust-lang.org/book/");
    assert_eq!(book.snippet, "Learn Rust & friends");
    assert_eq!(book.image.as_deref(), Some("https://doc.rust-lang.org/cover.png"));
    assert_eq!(book.published_date.as_deref(), Some("2024-05-01T00:00:00"));
    assert_eq!(
        book.favicon.as_deref(),
        Some("https://doc.rust-lang.org/favicon.ico")
    );
    // ftp: and javascript: results are dropped; an untitled result is titled by its URL.
    let blog = &hits[1];
    assert_eq!(blog.url, "http://blog.example.com:8080/post?id=3");
    assert_eq!(blog.title, blog.url);
    assert_eq!(blog.snippet, "");
    assert_eq!(blog.image.as_deref(), Some("https://blog.example.com/thumb.jpg"));
    assert_eq!(blog.published_date, None);
    assert_eq!(
        blog.favicon.as_deref(),
        Some("http://blog.example.com:8080/favicon.ico")
    );
    assert!(hits.iter().all(|h| h.url.starts_with("http")));
}

#[tokio::test]
async fn searxng_result_count_is_clamped() {
    let backend = searxng(searxng_server(Seen::default()).await).await;
    let many = found(&backend, "rust", 100).await;
    assert_eq!(many.len(), 25);
    let none = found(&backend, "rust", 0).await;
    assert_eq!(none.len(), 1);
}

fn brave_results() -> Value {
    json!({
        "type": "search",
        "web": {"type": "search", "results": [
            {"title": "Tokio - An asynchronous <strong>Rust</strong> runtime", "url": "https://tokio.rs/",
             "description": "Build <strong>reliable</strong> network applications &#x2014; fast.",
             "profile": {"name": "Tokio", "img": "https://imgs.search.brave.com/tokio-icon.png"},
             "meta_url": {"favicon": "https://imgs.search.brave.com/other.png"},
             "thumbnail": {"src": "https://imgs.search.brave.com/tokio-thumb.jpg"},
             "page_age": "2025-11-03T08:00:00", "age": "November 3, 2025"},
            {"title": "async-std", "url": "https://async.rs/", "description": "An alternative",
             "meta_url": {"favicon": "https://imgs.search.brave.com/async-icon.png"}, "age": "2 days ago"},
            {"title": "Not a page", "url": "mailto:someone@example.com", "description": "drop me"},
            {"title": "No icon", "url": "https://plain.example.net/a/b", "description": "bare"}
        ]}
    })
}

async fn brave_server(seen: Seen, status: StatusCode) -> String {
    let app = Router::new()
        .route(
            "/res/v1/web/search",
            get(
                |State((seen, status)): State<(Seen, StatusCode)>,
                 Query(params): Query<HashMap<String, String>>,
                 headers: HeaderMap| async move {
                    record(&seen, params, &headers);
                    (status, Json(brave_results()))
                },
            ),
        )
        .with_state((seen, status));
    format!("http://{}", support::serve(app).await)
}

fn brave(base_url: String, api_key: &str) -> Arc<dyn SearchBackend> {
    match (SearchConfig::Brave {
        base_url,
        api_key: api_key.to_owned(),
    })
    .build()
    {
        Ok(backend) => backend,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn brave_results_are_mapped_with_token_and_count() {
    let seen = Seen::default();
    let backend = brave(
        brave_server(seen.clone(), StatusCode::OK).await,
        "secret-token-123",
    );

    let hits = found(&backend, "tokio runtime", 7).await;

    let (params, token) = seen.last();
    assert_eq!(params.get("q").map(String::as_str), Some("tokio runtime"));
    assert_eq!(params.get("count").map(String::as_str), Some("7"));
    assert_eq!(token.as_deref(), Some("secret-token-123"));
    assert_eq!(hits.len(), 3, "the mailto: result is dropped");
    let tokio = &hits[0];
    assert_eq!(tokio.title, "Tokio - An asynchronous Rust runtime");
    assert_eq!(
        tokio.snippet,
        "Build reliable network applications \u{2014} fast."
    );
    assert_eq!(
        tokio.favicon.as_deref(),
        Some("https://imgs.search.brave.com/tokio-icon.png")
    );
    assert_eq!(
        tokio.image.as_deref(),
        Some("https://imgs.search.brave.com/tokio-thumb.jpg")
    );
    assert_eq!(tokio.published_date.as_deref(), Some("2025-11-03T08:00:00"));
    let async_std = &hits[1];
    assert_eq!(
        async_std.favicon.as_deref(),
        Some("https://imgs.search.brave.com/async-icon.png")
    );
    assert_eq!(async_std.published_date.as_deref(), Some("2 days ago"));
    assert_eq!(async_std.image, None);
    assert_eq!(
        hits[2].favicon.as_deref(),
        Some("https://plain.example.net/favicon.ico")
    );
}

#[tokio::test]
async fn brave_count_is_clamped_to_what_brave_accepts() {
    let seen = Seen::default();
    let backend = brave(brave_server(seen.clone(), StatusCode::OK).await, "k");
    let _ = backend.search("a", 100).await;
    assert_eq!(seen.last().0.get("count").map(String::as_str), Some("20"));
    let _ = backend.search("a", 0).await;
    assert_eq!(seen.last().0.get("count").map(String::as_str), Some("1"));
}

/// What a search that must succeed found.
async fn found(backend: &Arc<dyn SearchBackend>, query: &str, count: usize) -> Vec<SearchHit> {
    backend
        .search(query, count)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn failure(result: Result<Vec<SearchHit>, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn backend_errors_are_reported_without_the_key() {
    let backend = brave(
        brave_server(Seen::default(), StatusCode::UNAUTHORIZED).await,
        "secret-token-123",
    );
    let message = failure(backend.search("rust", 5).await);
    assert_eq!(
        message,
        "Search failed: the Brave Search backend answered 401 Unauthorized (check the configured API key and its plan)"
    );
    assert!(!message.contains("secret-token-123"));

    let app = Router::new().route(
        "/search",
        get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
    );
    let backend = searxng(format!("http://{}", support::serve(app).await)).await;
    let message = failure(backend.search("rust", 5).await);
    assert_eq!(
        message,
        "Search failed: the SearXNG backend answered 500 Internal Server Error"
    );
}

#[tokio::test]
async fn a_searxng_without_json_output_gets_a_hint() {
    // SearXNG's stock settings serve HTML only and answer 403 to format=json.
    let app = Router::new().route("/search", get(|| async { (StatusCode::FORBIDDEN, "Forbidden") }));
    let backend = searxng(format!("http://{}", support::serve(app).await)).await;
    assert_eq!(
        failure(backend.search("rust", 5).await),
        "Search failed: the SearXNG backend answered 403 Forbidden (its settings must list json under search.formats)"
    );
}

#[tokio::test]
async fn a_response_that_is_not_search_json_is_a_clear_error() {
    let app = Router::new().route("/search", get(|| async { "<html>not json</html>" }));
    let backend = searxng(format!("http://{}", support::serve(app).await)).await;
    let message = failure(backend.search("rust", 5).await);
    assert!(
        message.starts_with("Search failed: the SearXNG backend sent a response that could not be read"),
        "{message}"
    );
}

#[tokio::test]
async fn an_unreachable_backend_is_a_clear_error() {
    // Bind and drop to get a port nothing listens on.
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(addr) => addr.port(),
        Err(e) => panic!("{e}"),
    };
    let backend = searxng(format!("http://127.0.0.1:{port}")).await;
    assert_eq!(
        failure(backend.search("rust", 5).await),
        "Search failed: could not connect to the SearXNG backend"
    );
}

#[tokio::test]
async fn empty_queries_are_refused_before_any_request() {
    let seen = Seen::default();
    let backend = searxng(searxng_server(seen.clone()).await).await;
    assert_eq!(
        failure(backend.search("   ", 5).await),
        "Search failed: the query is empty"
    );
    assert!(seen.0.lock().map(|v| v.is_empty()).unwrap_or(false));
}

#[test]
fn search_config_reads_from_toml_and_hides_the_key() {
    let searx: SearchConfig = toml::from_str("kind = \"searxng\"\nbase_url = \"http://searxng:8080\"")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        searx,
        SearchConfig::SearxNg {
            base_url: "http://searxng:8080".into()
        }
    );

    let brave: SearchConfig =
        toml::from_str("kind = \"brave\"\napi_key = \"BSA-secret\"").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        brave,
        SearchConfig::Brave {
            base_url: "https://api.search.brave.com".into(),
            api_key: "BSA-secret".into()
        }
    );
    assert!(!format!("{brave:?}").contains("BSA-secret"));

    assert!(toml::from_str::<SearchConfig>("kind = \"google\"\nbase_url = \"x\"").is_err());
    assert!(
        toml::from_str::<SearchConfig>("kind = \"brave\"").is_err(),
        "brave needs a key"
    );
}

#[test]
fn an_invalid_base_url_is_refused_at_build_time() {
    support::init();
    let result = (SearchConfig::SearxNg {
        base_url: "searxng:8080/no-scheme".into(),
    })
    .build();
    match result {
        Err(ToolError::Failed(message)) => assert!(
            message.starts_with("Search failed: the configured base URL"),
            "{message}"
        ),
        Err(other) => panic!("unexpected error {other:?}"),
        Ok(_) => panic!("an invalid base URL was accepted"),
    }
}
