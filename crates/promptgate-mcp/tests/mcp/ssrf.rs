//! Where an MCP server URL may point: every loopback and internal form is refused by the outbound
//! address policy before any connection is made, at probe, discovery and call alike; redirects are
//! never followed; and when an operator opens loopback, a real MCP server there works.

#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use common::*;
use promptgate_mcp::{DiscoveryOutcome, HubSettings, McpError, McpHub};
use promptgate_outbound::testing::{Tripwire, Zone};
use promptgate_outbound::{AddressPolicy, Outbound};
use serde_json::json;

const BUDGET: Duration = Duration::from_secs(3);

/// The hub as a `tokens`-mode gateway builds it: public addresses only.
fn public_only_hub() -> McpHub {
    init();
    McpHub::new(HubSettings::default()).unwrap()
}

fn refused(result: Result<impl std::fmt::Debug, McpError>, url: &str) -> String {
    match result {
        Err(McpError::RefusedAddress(reason)) => reason,
        other => panic!("{url}: expected a refused address, got {other:?}"),
    }
}

#[tokio::test]
async fn every_loopback_form_is_refused_before_connecting() {
    let wire = Tripwire::start().await;
    let hub = public_only_hub();
    for url in wire.urls("/mcp") {
        let server = config("s1", "Inside", &url);
        let reason = refused(hub.probe(&server, BUDGET).await, &url);
        assert!(reason.ends_with("is not allowed"), "{url}: {reason}");
        let error = match hub
            .discover(std::slice::from_ref(&server), BUDGET)
            .await
            .remove(0)
        {
            DiscoveryOutcome::Failed { error, .. } => error,
            other => panic!("{url}: discovery should fail, got {other:?}"),
        };
        assert_eq!(error.kind(), "refused_address", "{url}: {error}");
        refused(hub.call_tool(&server, "echo", json!({}), BUDGET).await, &url);
        refused(hub.check_url(&url).await, &url);
    }
    assert_eq!(wire.hits(), 0, "a refused address was connected to");

    // The tripwire does see a connection the policy lets through.
    let open = hub_with(HubSettings::default());
    let error = open
        .probe(
            &config("s1", "Open", &format!("http://127.0.0.1:{}/mcp", wire.port)),
            BUDGET,
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "connect", "{error}");
    assert!(wire.hits() > 0);
}

#[tokio::test]
async fn internal_ranges_and_metadata_are_refused_and_allow_private_keeps_metadata_closed() {
    let hub = public_only_hub();
    for url in [
        "http://10.0.0.1/mcp",
        "http://192.168.1.10:8080/mcp",
        "http://172.16.5.4/mcp",
        "http://100.64.0.1/mcp",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/mcp",
        "http://[fd12:3456::1]/mcp",
        "http://224.0.0.1/mcp",
        "http://255.255.255.255/mcp",
        "http://[64:ff9b::a00:1]/mcp",
        "http://[2002:c0a8:1::1]/mcp",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/mcp",
    ] {
        refused(hub.check_url(url).await, url);
    }
    init();
    let private = McpHub::new(HubSettings {
        addresses: AddressPolicy {
            allow_private: true,
            ..AddressPolicy::default()
        },
        ..HubSettings::default()
    })
    .unwrap();
    assert!(private.check_url("http://10.0.0.1/mcp").await.is_ok());
    assert!(private.check_url("http://[fd12:3456::1]/mcp").await.is_ok());
    let reason = refused(private.check_url("http://169.254.169.254/").await, "metadata");
    assert!(reason.contains("cloud metadata"), "{reason}");
    refused(private.check_url("http://[fd00:ec2::254]/").await, "metadata v6");
    refused(private.check_url("http://127.0.0.1/").await, "loopback");
}

fn hub_with_zone(policy: AddressPolicy, names: &[(&'static str, &[&str])]) -> McpHub {
    init();
    let outbound = Outbound::with_resolver(policy, Arc::new(Zone::new(names)));
    McpHub::with_outbound(Arc::new(outbound), HubSettings::default())
}

#[tokio::test]
async fn names_are_checked_by_what_they_resolve_to() {
    let wire = Tripwire::start().await;
    let hub = hub_with_zone(
        AddressPolicy::default(),
        &[
            ("rebind.test", &["127.0.0.1"]),
            ("mixed.test", &["93.184.215.14", "127.0.0.1"]),
        ],
    );
    for name in ["rebind.test", "mixed.test"] {
        let url = format!("http://{name}:{}/mcp", wire.port);
        let reason = refused(hub.probe(&config("s1", "Name", &url), BUDGET).await, &url);
        assert!(
            reason.contains("resolves to 127.0.0.1, which is a loopback address"),
            "{reason}"
        );
    }
    assert_eq!(wire.hits(), 0);
}

#[tokio::test]
async fn with_loopback_open_a_real_server_works_through_the_checked_address() {
    let server = McpTestServer::start(ServerOptions::default()).await;
    let port: u16 = server
        .url()
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    // No real DNS knows mcp.test: the session can only reach the server over the pinned address.
    let hub = hub_with_zone(
        AddressPolicy {
            allow_loopback: true,
            ..AddressPolicy::default()
        },
        &[("mcp.test", &["127.0.0.1"])],
    );
    let by_name = config("s1", "Named", &format!("http://mcp.test:{port}/mcp"));
    let report = hub.probe(&by_name, BUDGET).await.unwrap();
    assert_eq!(report.server_name.as_deref(), Some("promptgate-test-server"));
    let outcomes = hub.discover(std::slice::from_ref(&by_name), BUDGET).await;
    assert_eq!(tool_names(&outcomes[0]).len(), BASE_TOOLS.len());
    let result = hub
        .call_tool(&by_name, "echo", json!({"message": "hi"}), BUDGET)
        .await
        .unwrap();
    assert_eq!(result.model_text, "echo: hi");

    // Opening loopback does not open the rest.
    refused(hub.check_url("http://10.0.0.1/mcp").await, "private");
}

#[tokio::test]
async fn redirects_are_never_followed() {
    let wire = Tripwire::start().await;
    let target = format!("http://127.0.0.1:{}/mcp", wire.port);
    let redirecting = serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(move || {
            let target = target.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [("location", target)]).into_response() }
        }),
    ))
    .await;
    // Loopback is open here, so only the redirect rule keeps the client from the tripwire.
    let hub = hub();
    let error = hub
        .probe(&config("s1", "Redirecting", &redirecting), BUDGET)
        .await
        .unwrap_err();
    assert_eq!(error, McpError::HttpStatus(307));
    let outcomes = hub
        .discover(&[config("s1", "Redirecting", &redirecting)], BUDGET)
        .await;
    assert!(matches!(outcomes[0], DiscoveryOutcome::Failed { .. }));
    assert_eq!(wire.hits(), 0, "the redirect was followed");
}

#[tokio::test]
async fn failures_say_their_category_and_never_echo_what_the_target_sent() {
    const SECRET: &str = "internal-service-secret-7731";
    let not_found = serve_plain(Router::new().route(
        "/mcp",
        axum::routing::any(|| async { (StatusCode::NOT_FOUND, SECRET).into_response() }),
    ))
    .await;
    // A 200 whose body is not the protocol, with the secret in it.
    let answering = |content_type: &'static str, body: String| {
        serve_plain(Router::new().route(
            "/mcp",
            axum::routing::any(move || async move {
                (StatusCode::OK, [("content-type", content_type)], body).into_response()
            }),
        ))
    };
    let html = answering("text/html", format!("<html><body>{SECRET}</body></html>")).await;
    let json_ish = answering("application/json", format!("{{\"config\": \"{SECRET}\"")).await;
    let hub = hub();
    let cases = [
        (not_found, "http_status"),
        (html, "protocol"),
        (json_ish, "protocol"),
    ];
    for (url, kind) in cases {
        let error = hub.probe(&config("s1", "Odd", &url), BUDGET).await.unwrap_err();
        assert_eq!(error.kind(), kind, "{url}: {error}");
        let text = format!("{error} {error:?}");
        assert!(!text.contains(SECRET), "{url}: {text}");
    }

    // A closed port and a port that accepts and hangs up read the same: no port map from errors.
    let closed = dead_url().await;
    let wire = Tripwire::start().await;
    let hangs_up = format!("http://127.0.0.1:{}/mcp", wire.port);
    let a = hub
        .probe(&config("s1", "Closed", &closed), BUDGET)
        .await
        .unwrap_err();
    let b = hub
        .probe(&config("s1", "Hangs up", &hangs_up), BUDGET)
        .await
        .unwrap_err();
    assert_eq!(a.kind(), "connect", "{a}");
    assert_eq!(a, b);
    assert!(!a.to_string().contains("refused"), "{a}");
}
