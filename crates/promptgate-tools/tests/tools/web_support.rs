//! Shared by the web tests: TLS provider set-up, a real HTTP server on loopback, and a small
//! web site to fetch from it.
#![allow(dead_code, clippy::panic)]

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use promptgate_core::tools::ToolError;
use promptgate_tools::web::{FetchPolicy, FetchedPage, SafeFetcher};

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Serves `app` on 127.0.0.1 at a free port until the test's runtime ends.
pub async fn serve(app: Router) -> SocketAddr {
    init();
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => panic!("cannot bind a loopback port: {e}"),
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => panic!("no local address: {e}"),
    };
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

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

pub fn site() -> Router {
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
            "/user-agent",
            get(|headers: HeaderMap| async move {
                let agent = headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                typed("text/plain", agent.to_owned())
            }),
        )
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

pub fn loopback_policy() -> FetchPolicy {
    FetchPolicy {
        allow_loopback: true,
        ..FetchPolicy::default()
    }
}

/// Loopback stays forbidden, except for exactly this one server: the first hop is allowed and
/// every other loopback destination must be refused.
pub fn only_this_server(addr: SocketAddr) -> FetchPolicy {
    FetchPolicy {
        allowed_addrs: vec![addr],
        ..FetchPolicy::default()
    }
}

pub async fn fetch(
    policy: FetchPolicy,
    url: &str,
    max_length: Option<usize>,
) -> Result<FetchedPage, ToolError> {
    init();
    SafeFetcher::new(policy).fetch(url, max_length).await
}

/// `url` fetched under [`loopback_policy`] at the default length; the fetch must succeed.
pub async fn loopback_page(url: &str) -> FetchedPage {
    loaded(fetch(loopback_policy(), url, None).await)
}

/// Why fetching `url` under [`loopback_policy`] at the default length failed; it must fail.
pub async fn loopback_failure(url: &str) -> String {
    failure(fetch(loopback_policy(), url, None).await)
}

pub fn loaded(result: Result<FetchedPage, ToolError>) -> FetchedPage {
    result.unwrap_or_else(|e| panic!("fetch failed: {e}"))
}

pub fn failure(result: Result<FetchedPage, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}
