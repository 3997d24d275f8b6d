//! fetch_content against every way a URL can spell a loopback address, asked for directly and
//! reached through a redirect: each is refused and a listener on those addresses proves that no
//! connection was made.

#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "web_support.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use promptgate_tools::web::{FetchPolicy, SafeFetcher};
use support::{failure, fetch, loopback_policy, only_this_server, site};
use tokio::net::TcpListener;

/// Counts every connection accepted on one port of 127.0.0.1, 127.0.0.2 and ::1.
struct Tripwire {
    port: u16,
    hits: Arc<AtomicUsize>,
    v6: bool,
}

impl Tripwire {
    async fn start() -> Tripwire {
        let hits = Arc::new(AtomicUsize::new(0));
        let first = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = first.local_addr().unwrap().port();
        count(first, hits.clone());
        if let Ok(second) = TcpListener::bind(("127.0.0.2", port)).await {
            count(second, hits.clone());
        }
        let v6 = match TcpListener::bind(("::1", port)).await {
            Ok(listener) => {
                count(listener, hits.clone());
                true
            }
            Err(_) => false,
        };
        Tripwire { port, hits, v6 }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn urls(&self) -> Vec<String> {
        let mut hosts = vec![
            "127.0.0.1",
            "127.0.0.2",
            "2130706433",
            "0x7f.1",
            "0x7f000001",
            "0177.0.0.1",
            "127.1",
            "localhost",
            "0.0.0.0",
            "0",
            "[::ffff:127.0.0.1]",
            "[::127.0.0.1]",
            "[64:ff9b::127.0.0.1]",
            "[2002:7f00:1::]",
            "[::]",
        ];
        if self.v6 {
            hosts.push("[::1]");
        }
        hosts
            .into_iter()
            .map(|h| format!("http://{h}:{}/notes.txt", self.port))
            .collect()
    }
}

fn count(listener: TcpListener, hits: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            hits.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
}

#[tokio::test]
async fn every_loopback_form_is_refused_without_a_connection() {
    let wire = Tripwire::start().await;
    for url in wire.urls() {
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
    for target in wire.urls() {
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
    let message = failure(fetch(loopback_policy(), &url, None).await);
    assert!(!message.contains("not allowed"), "{message}");
    assert!(wire.hits() > 0);
}
