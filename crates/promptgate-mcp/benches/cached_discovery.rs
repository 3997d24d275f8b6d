//! What MCP costs a send once the servers are known: discovery served from the hub's tool-list
//! cache, against the in-process rmcp server the tests use (three tools over three pages,
//! loopback). The design's budget is 0.2 ms per send.
//!
//! Both servers allow their lists to be reused for a minute (`ttlMs`). A modern-era server that
//! sends `ttlMs: 0` (rmcp's default when a handler sets none) makes every send list again, which is
//! what the protocol asks and costs a round trip per page (~0.8 ms here).

// A bench fixture that fails should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/mcp/common.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{McpTestServer, ServerOptions, config, hub};
use criterion::{Criterion, criterion_group, criterion_main};
use promptgate_mcp::DiscoveryOutcome;

const TIMEOUT: Duration = Duration::from_secs(3);

fn cached_discovery(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (hub, servers, _running) = runtime.block_on(async {
        let reusable = ServerOptions {
            ttl_ms: Some(60_000),
            ..ServerOptions::default()
        };
        let first = McpTestServer::start(reusable.clone()).await;
        let second = McpTestServer::start(reusable).await;
        let hub = hub();
        let servers = vec![
            config("s1", "first", &first.url()),
            config("s2", "second", &second.url()),
        ];
        // The first discovery connects and lists; every later one is what a send pays.
        for outcome in hub.discover(&servers, TIMEOUT).await {
            assert!(
                matches!(outcome, DiscoveryOutcome::Ready { .. }),
                "the test servers answer"
            );
        }
        (hub, servers, (first, second))
    });

    let mut group = c.benchmark_group("cached_discovery");
    group.bench_function("one_server", |b| {
        b.iter(|| runtime.block_on(hub.discover(black_box(&servers[..1]), TIMEOUT)))
    });
    group.bench_function("two_servers", |b| {
        b.iter(|| runtime.block_on(hub.discover(black_box(&servers), TIMEOUT)))
    });
    group.finish();
}

criterion_group!(benches, cached_discovery);
criterion_main!(benches);
