//! Where a fetch may go: redirects are followed and re-checked at every hop, and loopback,
//! private, link-local and other internal destinations are refused, literal or resolved.

// Helpers outside #[test] functions fail the test the same way an assertion does.
#![allow(clippy::panic)]

use crate::web_support as support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use promptgate_outbound::testing::Zone;
use promptgate_tools::web::{FetchPolicy, SafeFetcher};
use support::{
    failure, fetch, loaded, loopback_failure, loopback_page, loopback_policy, only_this_server, site,
};

#[tokio::test]
async fn redirects_within_loopback_are_followed_when_loopback_is_allowed() {
    let addr = support::serve(site()).await;
    let other = support::serve(site()).await;

    let page = loopback_page(&format!("http://{addr}/hops/5")).await;
    assert_eq!(page.text, "arrived");
    assert_eq!(page.final_url, format!("http://{addr}/hops/0"));
    assert_eq!(page.requested_url, format!("http://{addr}/hops/5"));

    let hop = format!("http://{addr}/go?to=http://{other}/notes.txt");
    let page = loopback_page(&hop).await;
    assert_eq!(page.final_url, format!("http://{other}/notes.txt"));
}

#[tokio::test]
async fn more_than_five_redirects_are_refused() {
    let addr = support::serve(site()).await;
    assert_eq!(
        loopback_failure(&format!("http://{addr}/hops/6")).await,
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
            "the address 169.254.169.254 is a cloud metadata address",
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
            "is a cloud metadata address",
        ),
        (
            "http://100.100.100.200/".to_owned(),
            "is a cloud metadata address",
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
    let message = loopback_failure(&format!("https://{addr}/notes.txt")).await;
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

fn fetcher_with_names(policy: FetchPolicy, names: &[(&'static str, &[&str])]) -> SafeFetcher {
    support::init();
    SafeFetcher::with_resolver(policy, Arc::new(Zone::new(names)))
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
        "Fetch content failed: mixed.test resolves to 169.254.169.254, which is a cloud metadata address and is not allowed"
    );
    assert_eq!(
        failure(fetcher.fetch("http://unknown.test/", None).await),
        "Fetch content failed: the host name unknown.test could not be resolved"
    );
}

#[tokio::test]
async fn allow_private_opens_private_ranges_but_never_cloud_metadata() {
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
        "Fetch content failed: metadata.test resolves to 169.254.169.254, which is a cloud metadata address and is not allowed"
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
