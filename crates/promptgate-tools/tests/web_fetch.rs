//! The safe fetcher against a real web server on loopback: content types, limits, redirects,
//! and refusals of private destinations.

// Helpers outside #[test] functions fail the test the same way an assertion does.
#![allow(clippy::panic)]

#[path = "web_support.rs"]
mod support;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use promptgate_tools::ToolError;
use promptgate_tools::web::{FetchPolicy, FetchedPage, HostResolver, SafeFetcher};

const ARTICLE: &str = r#"<!DOCTYPE html>
<html lang="en"><head>
<meta charset="utf-8">
<title>Tide tables explained | Coastal Notes</title>
<meta property="og:title" content="Tide tables explained">
<meta property="og:site_name" content="Coastal Notes">
<meta property="og:image" content="/images/tides.jpg">
<meta name="description" content="How to read a tide table before a walk on the flats.">
<meta name="author" content="Mara Lindqvist">
<meta property="article:published_time" content="2025-06-14T09:30:00Z">
<link rel="icon" href="/static/icon.png" type="image/png">
</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article>
<h1>Tide tables explained</h1>
<p>A tide table lists the times and heights of high and low water for one harbour. Reading one well is
the difference between a pleasant walk across the flats and a long wait on a sandbank while the sea comes
back in around you. The first column gives the date, the next ones the times in local time.</p>
<p>Heights are measured from chart datum, which is roughly the lowest level the tide reaches in normal
conditions. A height of 0.4 metres therefore means very little water, while 5 metres means the flats are
deep under the sea. Spring tides bring the biggest range, neap tides the smallest, and the difference
matters a great deal when you plan a crossing on foot.</p>
<h2>Planning a crossing</h2>
<p>Start walking shortly after high water has turned, never before, and be back on firm ground well
before the next low water has passed. Allow for wind: a strong onshore wind can push the water in earlier
than the table says, and it rarely gives a warning before it does so.</p>
</article>
<footer>Copyright Coastal Notes</footer>
</body></html>"#;

const BARE_PAGE: &str =
    "<html><head><title>Bare</title></head><body><p>Only a line of text.</p></body></html>";

fn typed(content_type: &'static str, body: impl Into<Body>) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

fn redirect_to(location: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

/// A chunk every few milliseconds, forever: a body only a cap can end.
fn endless_body() -> Body {
    let chunks = futures::stream::unfold((), |()| async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Some((Ok::<_, io::Error>(vec![b'x'; 16 * 1024]), ()))
    });
    Body::from_stream(chunks)
}

/// Sends the start of a page, then stalls far longer than any test's time cap.
fn stalling_body() -> Body {
    let chunks = futures::stream::once(async { Ok::<_, io::Error>(b"<html><body><p>Loading".to_vec()) })
        .chain(futures::stream::once(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, io::Error>(b"</p></body></html>".to_vec())
        }));
    Body::from_stream(chunks)
}

fn site() -> Router {
    Router::new()
        .route(
            "/article",
            get(|| async { typed("text/html; charset=utf-8", ARTICLE) }),
        )
        .route("/bare", get(|| async { typed("text/html", BARE_PAGE) }))
        .route(
            "/notes.txt",
            get(|| async { typed("text/plain; charset=utf-8", "plain notes: caf\u{e9} \u{2615}") }),
        )
        .route(
            "/readme.md",
            get(|| async { typed("text/markdown", "# Title\n\n- item") }),
        )
        .route(
            "/latin1.txt",
            get(|| async {
                typed(
                    "text/plain; charset=ISO-8859-1",
                    b"Sm\xF6rg\xE5sbord \x80".as_slice(),
                )
            }),
        )
        .route(
            "/data.json",
            get(|| async { typed("application/json", r#"{"name":"tide","levels":[1,2]}"#) }),
        )
        .route(
            "/untyped",
            get(|| async { Body::from("no content type, just text") }),
        )
        .route(
            "/archive.bin",
            get(|| async { typed("application/octet-stream", vec![0u8, 159, 146, 150]) }),
        )
        .route(
            "/photo.png",
            get(|| async { typed("image/png", b"\x89PNG\r\n\x1a\n".as_slice()) }),
        )
        .route(
            "/long.txt",
            get(|| async { typed("text/plain", "\u{e9}".repeat(50_000)) }),
        )
        .route(
            "/endless.txt",
            get(|| async { typed("text/plain", endless_body()) }),
        )
        .route("/slow", get(|| async { typed("text/html", stalling_body()) }))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/hops/{n}",
            get(|Path(n): Path<u32>| async move {
                if n == 0 {
                    typed("text/plain", "arrived")
                } else {
                    redirect_to(format!("/hops/{}", n - 1))
                }
            }),
        )
        .route(
            "/go",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                redirect_to(q.get("to").cloned().unwrap_or_default())
            }),
        )
}

fn loopback_policy() -> FetchPolicy {
    FetchPolicy {
        allow_loopback: true,
        ..FetchPolicy::default()
    }
}

/// Loopback stays forbidden, except for exactly this one server: the first hop is allowed and
/// every other loopback destination must be refused.
fn only_this_server(addr: SocketAddr) -> FetchPolicy {
    FetchPolicy {
        allowed_addrs: vec![addr],
        ..FetchPolicy::default()
    }
}

async fn fetch(policy: FetchPolicy, url: &str, max_length: Option<usize>) -> Result<FetchedPage, ToolError> {
    support::init();
    SafeFetcher::new(policy).fetch(url, max_length).await
}

fn loaded(result: Result<FetchedPage, ToolError>) -> FetchedPage {
    result.unwrap_or_else(|e| panic!("fetch failed: {e}"))
}

fn failure(result: Result<FetchedPage, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn an_article_becomes_markdown_with_its_metadata() {
    let addr = support::serve(site()).await;
    let url = format!("http://{addr}/article");

    let page = loaded(fetch(loopback_policy(), &url, None).await);

    assert_eq!(page.requested_url, url);
    assert_eq!(page.final_url, url);
    assert_eq!(page.content_type, "text/html");
    assert!(!page.is_truncated);
    assert!(
        page.text.contains("A tide table lists the times and heights"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("## Planning a crossing"),
        "headings become Markdown: {}",
        page.text
    );
    assert!(!page.text.contains("<p>"));
    assert!(
        !page.text.contains("Copyright Coastal Notes"),
        "page furniture is dropped: {}",
        page.text
    );
    assert_eq!(page.title.as_deref(), Some("Tide tables explained"));
    let meta = &page.meta;
    assert_eq!(meta.title.as_deref(), Some("Tide tables explained"));
    assert_eq!(meta.site_name.as_deref(), Some("Coastal Notes"));
    assert_eq!(
        meta.description.as_deref(),
        Some("How to read a tide table before a walk on the flats.")
    );
    assert_eq!(meta.image, Some(format!("http://{addr}/images/tides.jpg")));
    assert_eq!(meta.favicon, Some(format!("http://{addr}/static/icon.png")));
    assert_eq!(meta.author.as_deref(), Some("Mara Lindqvist"));
    assert_eq!(meta.published_date.as_deref(), Some("2025-06-14T09:30:00Z"));
}

#[tokio::test]
async fn a_page_too_thin_for_extraction_still_gives_its_text_and_a_default_favicon() {
    let addr = support::serve(site()).await;
    let page = loaded(fetch(loopback_policy(), &format!("http://{addr}/bare"), None).await);
    assert!(page.text.contains("Only a line of text."), "{}", page.text);
    assert_eq!(page.meta.favicon, Some(format!("http://{addr}/favicon.ico")));
    assert_eq!(page.meta.image, None);
}

#[tokio::test]
async fn text_markdown_and_json_are_returned_as_text() {
    let addr = support::serve(site()).await;
    let base = format!("http://{addr}");

    let plain = loaded(fetch(loopback_policy(), &format!("{base}/notes.txt"), None).await);
    assert_eq!(plain.text, "plain notes: caf\u{e9} \u{2615}");
    assert_eq!(plain.content_type, "text/plain");
    assert_eq!(plain.title, None);

    let markdown = loaded(fetch(loopback_policy(), &format!("{base}/readme.md"), None).await);
    assert_eq!(markdown.text, "# Title\n\n- item");

    let latin1 = loaded(fetch(loopback_policy(), &format!("{base}/latin1.txt"), None).await);
    assert_eq!(latin1.text, "Smörgåsbord \u{20ac}");

    let json = loaded(fetch(loopback_policy(), &format!("{base}/data.json"), None).await);
    assert_eq!(json.content_type, "application/json");
    assert_eq!(
        json.text,
        "{\n  \"levels\": [\n    1,\n    2\n  ],\n  \"name\": \"tide\"\n}"
    );

    let untyped = loaded(fetch(loopback_policy(), &format!("{base}/untyped"), None).await);
    assert_eq!(untyped.text, "no content type, just text");
    assert_eq!(untyped.content_type, "text/plain");
}

#[tokio::test]
async fn binary_content_is_refused_by_type() {
    let addr = support::serve(site()).await;
    assert_eq!(
        failure(fetch(loopback_policy(), &format!("http://{addr}/archive.bin"), None).await),
        "Fetch content failed: unsupported content type application/octet-stream"
    );
    assert_eq!(
        failure(fetch(loopback_policy(), &format!("http://{addr}/photo.png"), None).await),
        "Fetch content failed: unsupported content type image/png"
    );
}

#[tokio::test]
async fn error_statuses_and_bad_urls_are_clear_errors() {
    let addr = support::serve(site()).await;
    assert_eq!(
        failure(fetch(loopback_policy(), &format!("http://{addr}/missing"), None).await),
        "Fetch content failed: the server answered 404 Not Found"
    );
    assert_eq!(
        failure(fetch(loopback_policy(), "file:///etc/passwd", None).await),
        "Fetch content failed: only http and https URLs can be fetched, not file:"
    );
    assert_eq!(
        failure(fetch(loopback_policy(), "not a url", None).await),
        "Fetch content failed: \"not a url\" is not a valid URL"
    );
}

#[tokio::test]
async fn long_text_is_cut_by_characters_with_a_hint_to_read_more() {
    let addr = support::serve(site()).await;
    let page = loaded(fetch(loopback_policy(), &format!("http://{addr}/long.txt"), Some(2_000)).await);
    assert!(page.is_truncated);
    assert!(page.text.starts_with(&"\u{e9}".repeat(2_000)));
    assert!(!page.text.starts_with(&"\u{e9}".repeat(2_001)));
    assert!(
        page.text.contains("max_length = 4000"),
        "{}",
        &page.text[page.text.len() - 200..]
    );

    // Below the minimum the request is raised to 1000 characters.
    let page = page_at(addr, Some(10)).await;
    assert!(
        page.text.starts_with(&"\u{e9}".repeat(1_000)) && !page.text.starts_with(&"\u{e9}".repeat(1_001))
    );

    // The default is 16000, and 50000 characters fit within the maximum.
    let page = page_at(addr, None).await;
    assert!(page.text.contains("max_length = 32000"));
    let whole = page_at(addr, Some(60_000)).await;
    assert!(!whole.is_truncated);
    assert_eq!(whole.text.chars().count(), 50_000);
}

async fn page_at(addr: SocketAddr, max_length: Option<usize>) -> FetchedPage {
    loaded(fetch(loopback_policy(), &format!("http://{addr}/long.txt"), max_length).await)
}

#[tokio::test]
async fn a_body_over_the_byte_cap_stops_being_read() {
    let addr = support::serve(site()).await;
    let policy = FetchPolicy {
        max_body_bytes: 100_000,
        ..loopback_policy()
    };
    let page = loaded(fetch(policy, &format!("http://{addr}/endless.txt"), Some(64_000)).await);
    assert!(page.is_truncated);
    assert!(page.text.starts_with(&"x".repeat(64_000)));
}

#[tokio::test]
async fn a_body_cut_at_the_cap_below_max_length_says_so() {
    let addr = support::serve(site()).await;
    let policy = FetchPolicy {
        max_body_bytes: 5_000,
        ..loopback_policy()
    };
    let page = loaded(fetch(policy, &format!("http://{addr}/endless.txt"), Some(64_000)).await);
    assert!(page.is_truncated);
    assert!(page.text.starts_with(&"x".repeat(5_000)));
    assert!(
        page.text
            .ends_with("[Only the first 5000 bytes of this page were read.]"),
        "{}",
        &page.text[5_000..]
    );
}

#[tokio::test]
async fn a_stalling_body_hits_the_time_cap() {
    let addr = support::serve(site()).await;
    let policy = FetchPolicy {
        timeout: Duration::from_millis(500),
        ..loopback_policy()
    };
    assert_eq!(
        failure(fetch(policy, &format!("http://{addr}/slow"), None).await),
        "Fetch content failed: the page did not load within 0.5 s (timed out)"
    );
}

#[tokio::test]
async fn redirects_within_loopback_are_followed_when_loopback_is_allowed() {
    let addr = support::serve(site()).await;
    let other = support::serve(site()).await;

    let page = loaded(fetch(loopback_policy(), &format!("http://{addr}/hops/5"), None).await);
    assert_eq!(page.text, "arrived");
    assert_eq!(page.final_url, format!("http://{addr}/hops/0"));
    assert_eq!(page.requested_url, format!("http://{addr}/hops/5"));

    let hop = format!("http://{addr}/go?to=http://{other}/notes.txt");
    let page = loaded(fetch(loopback_policy(), &hop, None).await);
    assert_eq!(page.final_url, format!("http://{other}/notes.txt"));
}

#[tokio::test]
async fn more_than_five_redirects_are_refused() {
    let addr = support::serve(site()).await;
    assert_eq!(
        failure(fetch(loopback_policy(), &format!("http://{addr}/hops/6"), None).await),
        "Fetch content failed: too many redirects (more than 5)"
    );
}

#[tokio::test]
async fn loopback_is_refused_by_default() {
    let addr = support::serve(site()).await;
    assert_eq!(
        failure(fetch(FetchPolicy::default(), &format!("http://{addr}/notes.txt"), None).await),
        "Fetch content failed: the address 127.0.0.1 is a loopback address and is not allowed"
    );
    let message = failure(
        fetch(
            FetchPolicy::default(),
            &format!("http://localhost:{}/", addr.port()),
            None,
        )
        .await,
    );
    assert!(
        message.starts_with("Fetch content failed: localhost resolves to"),
        "{message}"
    );
    assert!(
        message.contains("loopback address and is not allowed"),
        "{message}"
    );
}

#[tokio::test]
async fn redirects_to_internal_addresses_are_refused_at_every_hop() {
    let addr = support::serve(site()).await;
    // A live server on another loopback port, so a refusal cannot be mistaken for a dead port.
    let other = support::serve(site()).await;
    let port = other.port();
    let cases = [
        (
            format!("http://127.0.0.1:{port}/notes.txt"),
            "the address 127.0.0.1 is a loopback address",
        ),
        (
            format!("http://localhost:{port}/notes.txt"),
            "localhost resolves to",
        ),
        (
            "http://10.0.0.1/".to_owned(),
            "the address 10.0.0.1 is a private network address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "the address 169.254.169.254 is a link-local address",
        ),
        (
            format!("http://[::1]:{port}/"),
            "the address ::1 is a loopback address",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "the address ::ffff:127.0.0.1 is a loopback address",
        ),
        (
            "http://[64:ff9b::a9fe:a9fe]/".to_owned(),
            "is a link-local address",
        ),
        (
            "http://100.100.100.200/".to_owned(),
            "is a carrier-grade NAT address",
        ),
        (
            "http://0x7f.1/".to_owned(),
            "the address 127.0.0.1 is a loopback address",
        ),
    ];
    let fetcher = SafeFetcher::new(only_this_server(addr));
    for (target, expected) in cases {
        // The first hop is the one allowed server; it then redirects inward.
        let url = format!("http://{addr}/go?to={target}");
        let message = failure(fetcher.fetch(&url, None).await);
        assert!(message.starts_with("Fetch content failed: "), "{message}");
        assert!(message.contains(expected), "{target}: {message}");
        assert!(message.ends_with("and is not allowed"), "{target}: {message}");
    }
    // The allowed server itself is reachable, so the refusals above come from the redirect target.
    let page = loaded(fetcher.fetch(&format!("http://{addr}/notes.txt"), None).await);
    assert!(page.text.starts_with("plain notes"));
}

#[tokio::test]
async fn https_to_a_server_that_does_not_speak_tls_is_a_clear_error() {
    let addr = support::serve(site()).await;
    let message = failure(fetch(loopback_policy(), &format!("https://{addr}/notes.txt"), None).await);
    assert!(
        message.starts_with("Fetch content failed: could not set up a secure connection to 127.0.0.1 ("),
        "{message}"
    );
}

#[tokio::test]
async fn redirects_to_other_schemes_are_refused() {
    let addr = support::serve(site()).await;
    assert_eq!(
        failure(
            fetch(
                loopback_policy(),
                &format!("http://{addr}/go?to=file:///etc/passwd"),
                None
            )
            .await
        ),
        "Fetch content failed: the server redirected to file:///etc/passwd, which is not an http(s) URL"
    );
}

/// Answers fixed addresses for the names it knows, like a zone file.
struct FixedResolver(HashMap<&'static str, Vec<IpAddr>>);

#[async_trait]
impl HostResolver for FixedResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match self.0.get(host) {
            Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "unknown name")),
        }
    }
}

fn fetcher_with_names(policy: FetchPolicy, names: &[(&'static str, &[&str])]) -> SafeFetcher {
    support::init();
    let table = names
        .iter()
        .map(|(name, ips)| (*name, ips.iter().filter_map(|ip| ip.parse().ok()).collect()))
        .collect();
    SafeFetcher::with_resolver(policy, Arc::new(FixedResolver(table)))
}

#[tokio::test]
async fn the_connection_goes_to_the_resolved_and_checked_address() {
    let addr = support::serve(site()).await;
    let fetcher = fetcher_with_names(loopback_policy(), &[("pages.test", &["127.0.0.1"])]);
    // No real DNS knows pages.test: the page can only arrive over the pinned address.
    let page = loaded(
        fetcher
            .fetch(&format!("http://pages.test:{}/notes.txt", addr.port()), None)
            .await,
    );
    assert_eq!(
        page.final_url,
        format!("http://pages.test:{}/notes.txt", addr.port())
    );
    assert!(page.text.starts_with("plain notes"));
}

#[tokio::test]
async fn resolved_addresses_are_checked_like_literal_ones() {
    let fetcher = fetcher_with_names(
        FetchPolicy::default(),
        &[
            ("inside.test", &["10.1.2.3"]),
            ("mixed.test", &["93.184.215.14", "169.254.169.254"]),
        ],
    );
    assert_eq!(
        failure(fetcher.fetch("http://inside.test/", None).await),
        "Fetch content failed: inside.test resolves to 10.1.2.3, which is a private network address and is not allowed"
    );
    assert_eq!(
        failure(fetcher.fetch("http://mixed.test/", None).await),
        "Fetch content failed: mixed.test resolves to 169.254.169.254, which is a link-local address and is not allowed"
    );
    assert_eq!(
        failure(fetcher.fetch("http://unknown.test/", None).await),
        "Fetch content failed: the host name unknown.test could not be resolved"
    );
}

#[tokio::test]
async fn allow_private_opens_private_ranges_but_never_link_local() {
    let fetcher = fetcher_with_names(
        FetchPolicy {
            allow_private: true,
            timeout: Duration::from_secs(2),
            ..FetchPolicy::default()
        },
        &[("metadata.test", &["169.254.169.254"])],
    );
    assert_eq!(
        failure(fetcher.fetch("http://metadata.test/", None).await),
        "Fetch content failed: metadata.test resolves to 169.254.169.254, which is a link-local address and is not allowed"
    );
    let message = failure(fetcher.fetch("http://127.0.0.1:9/", None).await);
    assert!(
        message.contains("loopback address and is not allowed"),
        "{message}"
    );
}

#[test]
fn fetch_policy_reads_from_toml_with_safe_defaults() {
    let policy: FetchPolicy =
        toml::from_str("allow_private = true\ntimeout_secs = 2.5\nallowed_addrs = [\"10.1.2.3:443\"]")
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(policy.allow_private);
    assert!(!policy.allow_loopback);
    assert_eq!(policy.timeout, Duration::from_millis(2_500));
    assert_eq!(policy.allowed_addrs, vec![SocketAddr::from(([10, 1, 2, 3], 443))]);
    assert_eq!(policy.max_redirects, 5);
    assert_eq!(policy.max_body_bytes, 5 * 1024 * 1024);

    let defaults: FetchPolicy = toml::from_str("").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(defaults, FetchPolicy::default());
    assert_eq!(defaults.timeout, Duration::from_secs(15));
    assert!(toml::from_str::<FetchPolicy>("allow_everything = true").is_err());
}
