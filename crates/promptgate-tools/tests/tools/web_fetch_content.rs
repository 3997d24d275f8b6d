//! What a fetch returns: Markdown and metadata from HTML, other text types, refused binary
//! types, and the length, byte and time limits, all from a real web server on loopback.

// Helpers outside #[test] functions fail the test the same way an assertion does.
#![allow(clippy::panic)]

use crate::web_support as support;

use std::net::SocketAddr;
use std::time::Duration;

use promptgate_tools::web::{FetchPolicy, FetchedPage};
use support::{failure, fetch, loaded, loopback_failure, loopback_page, loopback_policy, site};

#[tokio::test]
async fn an_article_becomes_markdown_with_its_metadata() {
    let addr = support::serve(site()).await;
    let url = format!("http://{addr}/article");

    let page = loopback_page(&url).await;

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
    let page = loopback_page(&format!("http://{addr}/bare")).await;
    assert!(page.text.contains("Only a line of text."), "{}", page.text);
    assert_eq!(page.meta.favicon, Some(format!("http://{addr}/favicon.ico")));
    assert_eq!(page.meta.image, None);
}

#[tokio::test]
async fn text_markdown_and_json_are_returned_as_text() {
    let addr = support::serve(site()).await;
    let base = format!("http://{addr}");

    let plain = loopback_page(&format!("{base}/notes.txt")).await;
    assert_eq!(plain.text, "plain notes: caf\u{e9} \u{2615}");
    assert_eq!(plain.content_type, "text/plain");
    assert_eq!(plain.title, None);

    let markdown = loopback_page(&format!("{base}/readme.md")).await;
    assert_eq!(markdown.text, "# Title\n\n- item");

    let latin1 = loopback_page(&format!("{base}/latin1.txt")).await;
    assert_eq!(latin1.text, "Smörgåsbord \u{20ac}");

    let json = loopback_page(&format!("{base}/data.json")).await;
    assert_eq!(json.content_type, "application/json");
    assert_eq!(
        json.text,
        "{\n  \"levels\": [\n    1,\n    2\n  ],\n  \"name\": \"tide\"\n}"
    );

    let untyped = loopback_page(&format!("{base}/untyped")).await;
    assert_eq!(untyped.text, "no content type, just text");
    assert_eq!(untyped.content_type, "text/plain");
}

#[tokio::test]
async fn pages_see_the_configured_user_agent() {
    let addr = support::serve(site()).await;
    let policy = FetchPolicy {
        user_agent: "ExampleBot/2.0 (+https://example.org/bot)".to_owned(),
        ..loopback_policy()
    };
    let page = loaded(fetch(policy, &format!("http://{addr}/user-agent"), None).await);
    assert_eq!(page.text, "ExampleBot/2.0 (+https://example.org/bot)");
}

#[tokio::test]
async fn binary_content_is_refused_by_type() {
    let addr = support::serve(site()).await;
    for (path, refused) in [
        (
            "archive.bin",
            "Fetch content failed: unsupported content type application/octet-stream",
        ),
        (
            "photo.png",
            "Fetch content failed: unsupported content type image/png",
        ),
    ] {
        assert_eq!(loopback_failure(&format!("http://{addr}/{path}")).await, refused);
    }
}

#[tokio::test]
async fn error_statuses_and_bad_urls_are_clear_errors() {
    let addr = support::serve(site()).await;
    for (url, refused) in [
        (
            format!("http://{addr}/missing"),
            "Fetch content failed: the server answered 404 Not Found",
        ),
        (
            "file:///etc/passwd".to_owned(),
            "Fetch content failed: only http and https URLs can be fetched, not file:",
        ),
        (
            "not a url".to_owned(),
            "Fetch content failed: \"not a url\" is not a valid URL",
        ),
    ] {
        assert_eq!(loopback_failure(&url).await, refused, "{url}");
    }
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

/// The endless body fetched with a `max_length` of 64,000 under a byte cap of `max_body_bytes`.
async fn endless_under_cap(max_body_bytes: usize) -> FetchedPage {
    let addr = support::serve(site()).await;
    let policy = FetchPolicy {
        max_body_bytes,
        ..loopback_policy()
    };
    loaded(fetch(policy, &format!("http://{addr}/endless.txt"), Some(64_000)).await)
}

#[tokio::test]
async fn a_body_over_the_byte_cap_stops_being_read() {
    let page = endless_under_cap(100_000).await;
    assert!(page.is_truncated);
    assert!(page.text.starts_with(&"x".repeat(64_000)));
}

#[tokio::test]
async fn a_body_cut_at_the_cap_below_max_length_says_so() {
    let page = endless_under_cap(5_000).await;
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
