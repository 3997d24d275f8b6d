//! What one pooled session costs in memory, the number behind the hub's `promptgate_mcp_session_bytes`
//! gauge: the growth of this process's resident memory while the hub opens `SESSIONS` sessions (one per
//! user) to one server, divided by their number.
//!
//! The server should live in another process, or its own per-session state is counted too:
//! `PROMPTGATE_BENCH_MCP_URL=http://127.0.0.1:PORT/mcp cargo bench -p promptgate-mcp --bench
//! session_memory` (e.g. the Python peer of `tests/peers`, `python py_peer.py PORT`, for the stateless
//! era, or `server-everything streamableHttp` for sessions). Without it an in-process server is used
//! and the figure is an upper bound.

// A bench fixture that fails should stop the run loudly; its report goes to the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

#[path = "../tests/mcp/common.rs"]
mod common;

use std::time::Duration;

use common::{McpTestServer, ServerOptions, config, hub_with};
use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpServerConfig};

const SESSIONS: usize = 300;

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (url, _local) = match std::env::var("PROMPTGATE_BENCH_MCP_URL") {
            Ok(url) => (url, None),
            Err(_) => {
                let server = McpTestServer::start(ServerOptions::default()).await;
                println!("no PROMPTGATE_BENCH_MCP_URL: the in-process server's sessions are counted too");
                (server.url(), Some(server))
            }
        };
        let hub = hub_with(HubSettings {
            max_sessions: SESSIONS * 2,
            ..HubSettings::default()
        });
        let of_user = |i: usize| McpServerConfig {
            user_id: format!("user-{i}"),
            ..config("s1", "Measured", &url)
        };
        // Warm up the allocator and the lazily built parts (TLS roots, the runtime's timers).
        for i in 0..20 {
            hub.discover(&[of_user(i)], Duration::from_secs(10)).await;
        }
        for i in 0..20 {
            hub.forget(&format!("user-{i}"), "s1");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = resident_bytes();
        for i in 100..100 + SESSIONS {
            let outcome = hub.discover(&[of_user(i)], Duration::from_secs(10)).await;
            assert!(matches!(outcome[0], DiscoveryOutcome::Ready { .. }), "{outcome:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let grown = resident_bytes().saturating_sub(before);
        let usage = hub.usage();
        println!(
            "{SESSIONS} sessions: resident memory +{} KiB, {} KiB per session; the hub counts {} KiB ({} KiB per session)",
            grown / 1024,
            grown / SESSIONS / 1024,
            usage.bytes / 1024,
            usage.bytes / usage.sessions.max(1) / 1024,
        );
    });
}
