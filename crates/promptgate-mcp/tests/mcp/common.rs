//! Hub set-up and checks shared by the mcp tests.
//! The servers themselves are `promptgate_mcp::testing`; the helpers here drive the hub at them.
#![allow(dead_code)]
// Test support: a broken fixture should stop the test loudly.
#![allow(clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Once;
use std::time::Duration;

use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpHub, McpServerConfig};

pub use promptgate_mcp::testing::*;

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The built-in server refusing the stateless era, so the hub uses sessions (which the server counts).
pub fn legacy() -> ServerOptions {
    ServerOptions {
        legacy_only: true,
        ..ServerOptions::default()
    }
}

/// The built-in server with `options`, its tool list cached for `ttl_ms`.
pub async fn start_with_ttl(ttl_ms: u64, options: ServerOptions) -> McpTestServer {
    McpTestServer::start(ServerOptions {
        ttl_ms: Some(ttl_ms),
        ..options
    })
    .await
}

pub fn hub() -> McpHub {
    hub_with(HubSettings::default())
}

/// A hub for the test servers, which all live on loopback: loopback is opened here, as an
/// operator would for local MCP servers. The address policy itself is tested in `ssrf.rs`.
pub fn hub_with(mut settings: HubSettings) -> McpHub {
    init();
    settings.addresses.allow_loopback = true;
    McpHub::new(settings).expect("hub")
}

pub fn config(id: &str, name: &str, url: &str) -> McpServerConfig {
    McpServerConfig {
        id: id.into(),
        user_id: "user-1".into(),
        name: name.into(),
        url: url.into(),
        headers: BTreeMap::new(),
        bearer_token: None,
    }
}

/// The tool names of a successful discovery.
pub fn tool_names(outcome: &DiscoveryOutcome) -> Vec<String> {
    match outcome {
        DiscoveryOutcome::Ready { tools, .. } => tools.iter().map(|t| t.name.clone()).collect(),
        DiscoveryOutcome::Failed { error, .. } => panic!("discovery failed: {error}"),
        DiscoveryOutcome::Unused { server } => panic!("{} was left unused", server.id),
    }
}

/// Polls `check` until it holds, for at most `attempts` rounds of `every`.
pub async fn eventually<F, Fut>(attempts: usize, every: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..attempts {
        if check().await {
            return true;
        }
        tokio::time::sleep(every).await;
    }
    false
}
