//! fetch_content against every way a URL can spell a loopback address, asked for directly and
//! reached through a redirect: each is refused and a listener on those addresses proves that no
//! connection was made.

#![allow(clippy::unwrap_used, clippy::panic)]

use crate::web_support as support;

use promptgate_outbound::testing::Tripwire;
use promptgate_tools::web::{FetchPolicy, SafeFetcher};
use support::{failure, fetch, loopback_failure, only_this_server, site};

#[tokio::test]
async fn every_loopback_form_is_refused_without_a_connection() {
    let wire = Tripwire::start().await;
    for url in wire.urls("/notes.txt") {
        let message = failure(fetch(FetchPolicy::default(), &url, None).await);
        assert!(message.ends_with("is not allowed"), "{url}: {message}");
    }
    assert_eq!(wire.hits(), 0, "a refused address was connected to");
}

#[tokio::test]
async fn every_loopback_form_is_refused_after_a_redirect_without_a_connection() {
    let wire = Tripwire::start().await;
    let site = support::serve(site()).await;
    // Only the redirecting site itself is open; its redirects point at the tripwire.
    let fetcher = SafeFetcher::new(only_this_server(site));
    for target in wire.urls("/notes.txt") {
        let url = format!("http://{site}/go?to={target}");
        let message = failure(fetcher.fetch(&url, None).await);
        assert!(message.ends_with("is not allowed"), "{target}: {message}");
    }
    assert_eq!(wire.hits(), 0, "a redirect reached a refused address");
}

#[tokio::test]
async fn the_tripwire_sees_a_connection_the_policy_allows() {
    let wire = Tripwire::start().await;
    let url = format!("http://127.0.0.1:{}/notes.txt", wire.port);
    let message = loopback_failure(&url).await;
    assert!(!message.contains("not allowed"), "{message}");
    assert!(wire.hits() > 0);
}
