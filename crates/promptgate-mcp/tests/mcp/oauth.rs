//! OAuth for protected MCP servers: the whole flow against a server built on the Python SDK's auth
//! support (`tests/peers/py_auth_peer.py`, authorization and resource server in one), and the
//! refusals against loopback servers that serve just enough metadata to be refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::peers::peer_setting;

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use common::*;
use promptgate_mcp::oauth::{AuthServer, Challenge, ClientCredentials, McpOAuth, TokenSet, check_issuer};
use promptgate_mcp::testing::{PeerProcess, python_auth_peer};
use promptgate_mcp::{AddressPolicy, HubSettings, McpError, McpHub};
use serde_json::{Value, json};

const BUDGET: Duration = Duration::from_secs(3);
const REDIRECT: &str = "http://127.0.0.1:9/v1/mcp/oauth/callback";
const VERIFIER: &str = "promptgate-test-verifier-0123456789-abcdefghijklmnop";
/// `BASE64URL(SHA256(VERIFIER))`.
const CHALLENGE: &str = "hiQhSI7Ma9VPoXjGAOsahz2EipV8HoMNVQsLumzhMrQ";
const OTHER_VERIFIER: &str = "promptgate-other-verifier-0123456789-abcdefghijklmno";

/// The Python auth peer, up and challenging tokenless requests; `None` when no Python is set up.
async fn auth_peer(access_seconds: u64) -> Option<(PeerProcess, String)> {
    let python = peer_setting("PROMPTGATE_TEST_PY_PEER_PYTHON")?;
    Some(python_auth_peer(&python, access_seconds).await)
}

/// Follows the authorization URL as a browser would (the peer consents at once) and returns the
/// callback's query.
async fn consent(url: &str) -> Vec<(String, String)> {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = browser.get(url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FOUND, "{url}");
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

async fn authorize(oauth: &McpOAuth, server: &AuthServer, client: &ClientCredentials, state: &str) -> String {
    let url = oauth
        .authorization_url(server, client, REDIRECT, state, CHALLENGE)
        .unwrap();
    let query = consent(&url).await;
    assert_eq!(param(&query, "state"), Some(state));
    check_issuer(server, param(&query, "iss")).unwrap();
    param(&query, "code").unwrap().to_owned()
}

async fn tools_with(hub: &McpHub, url: &str, tokens: &TokenSet) -> Result<Vec<String>, McpError> {
    let mut cfg = config("auth", "Auth", url);
    cfg.bearer_token = Some(tokens.access_token.clone());
    let report = hub.probe(&cfg, BUDGET).await?;
    Ok(report.tools.into_iter().map(|t| t.name).collect())
}

#[tokio::test]
async fn a_user_authorizes_with_the_python_sdk_auth_server_and_its_tokens_refresh() {
    let hub = hub();
    let Some((_peer, url)) = auth_peer(3600).await else {
        return;
    };
    let oauth = hub.oauth();

    // Discovery starts from the challenge's resource_metadata.
    let challenge = oauth.challenge(&url).await.unwrap().expect("a challenge");
    assert!(
        challenge
            .resource_metadata
            .as_deref()
            .is_some_and(|m| m.ends_with("/.well-known/oauth-protected-resource/mcp")),
        "{challenge:?}"
    );
    let server = oauth.discover(&url, &challenge).await.unwrap();
    let base = url.trim_end_matches("/mcp");
    assert_eq!(server.resource, url);
    assert_eq!(server.issuer, base);
    assert_eq!(server.token_endpoint, format!("{base}/token"));
    assert_eq!(server.scope.as_deref(), Some("notes"));

    // Without a challenge header, the well-known URLs lead to the same place.
    let found = oauth.discover(&url, &Challenge::default()).await.unwrap();
    assert_eq!(found, server);

    let client = oauth.register(&server, REDIRECT, "promptgate").await.unwrap();
    assert!(!client.client_id.is_empty());

    let code = authorize(&oauth, &server, &client, "state-1").await;
    let tokens = oauth
        .exchange_code(&server, &client, REDIRECT, &code, VERIFIER, 0)
        .await
        .unwrap();
    assert_eq!(
        tools_with(&hub, &url, &tokens).await.unwrap(),
        ["whoami", "write_note"]
    );

    // A code is good once.
    let replayed = oauth
        .exchange_code(&server, &client, REDIRECT, &code, VERIFIER, 0)
        .await
        .unwrap_err();
    assert_eq!(replayed.kind(), "authorization", "{replayed}");
    assert!(replayed.to_string().contains("invalid_grant"), "{replayed}");

    // A code is good only with the verifier whose challenge went into the authorization URL.
    let second = authorize(&oauth, &server, &client, "state-2").await;
    let wrong = oauth
        .exchange_code(&server, &client, REDIRECT, &second, OTHER_VERIFIER, 0)
        .await
        .unwrap_err();
    assert_eq!(wrong.kind(), "authorization", "{wrong}");

    // The server revokes the access token; the refresh token brings a working one, and rotates.
    reqwest::Client::new()
        .post(format!("{base}/test/revoke-access-tokens"))
        .send()
        .await
        .unwrap();
    let refused = tools_with(&hub, &url, &tokens).await.unwrap_err();
    assert_eq!(refused, McpError::Unauthorized { status: 401 });
    let renewed = oauth.refresh(&server, &client, &tokens, 0).await.unwrap();
    assert_ne!(renewed.access_token, tokens.access_token);
    assert_ne!(
        renewed.refresh_token, tokens.refresh_token,
        "refresh tokens rotate"
    );
    assert_eq!(
        tools_with(&hub, &url, &renewed).await.unwrap(),
        ["whoami", "write_note"]
    );
    let stale = oauth.refresh(&server, &client, &tokens, 0).await.unwrap_err();
    assert_eq!(stale.kind(), "authorization", "{stale}");

    let stats: Value = reqwest::get(format!("{base}/test/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats, json!({"codes": 1, "refreshes": 1, "registrations": 1}));
}

#[tokio::test]
async fn a_token_asked_for_another_resource_is_refused_by_the_resource() {
    let hub = hub();
    let Some((_peer, url)) = auth_peer(3600).await else {
        return;
    };
    let oauth = hub.oauth();
    let challenge = oauth.challenge(&url).await.unwrap().unwrap();
    let mut server = oauth.discover(&url, &challenge).await.unwrap();
    let client = oauth.register(&server, REDIRECT, "promptgate").await.unwrap();
    server.resource = format!("{}/elsewhere", url.trim_end_matches("/mcp"));
    let code = authorize(&oauth, &server, &client, "s").await;
    let tokens = oauth
        .exchange_code(&server, &client, REDIRECT, &code, VERIFIER, 0)
        .await
        .unwrap();
    assert_eq!(
        tools_with(&hub, &url, &tokens).await.unwrap_err(),
        McpError::Unauthorized { status: 401 }
    );
}

/// A loopback server answering 401 with a challenge at `/mcp` and the given documents at their
/// paths; returns the MCP URL.
async fn metadata_server(documents: Vec<(&'static str, Value)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut app = Router::new().route(
        "/mcp",
        axum::routing::any({
            let base = base.clone();
            move || async move {
                let header =
                    format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
                (StatusCode::UNAUTHORIZED, [("www-authenticate", header)]).into_response()
            }
        }),
    );
    for (path, document) in documents {
        let text = document.to_string().replace("BASE", &base);
        app = app.route(
            path,
            axum::routing::get(move || async move {
                ([("content-type", "application/json")], text).into_response()
            }),
        );
    }
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("{base}/mcp")
}

fn protected_resource(resource: &str, issuer: &str) -> (&'static str, Value) {
    (
        "/.well-known/oauth-protected-resource/mcp",
        json!({"resource": resource, "authorization_servers": [issuer]}),
    )
}

fn as_metadata(extra: Value) -> (&'static str, Value) {
    let mut document = json!({
        "issuer": "BASE", "authorization_endpoint": "BASE/authorize", "token_endpoint": "BASE/token",
        "code_challenge_methods_supported": ["S256"],
    });
    for (key, value) in extra.as_object().unwrap() {
        document[key] = value.clone();
    }
    ("/.well-known/oauth-authorization-server", document)
}

async fn discovery_error(hub: &McpHub, url: &str) -> McpError {
    let challenge = hub.oauth().challenge(url).await.unwrap().expect("a challenge");
    hub.oauth().discover(url, &challenge).await.unwrap_err()
}

#[tokio::test]
async fn metadata_and_endpoints_on_refused_addresses_are_refused() {
    let hub = hub();
    // Metadata that sends the client to a private address or the cloud metadata service.
    for issuer in ["http://10.0.0.7", "http://169.254.169.254/latest"] {
        let url = metadata_server(vec![protected_resource("BASE/mcp", issuer)]).await;
        let err = discovery_error(&hub, &url).await;
        assert_eq!(err.kind(), "refused_address", "{issuer}: {err}");
    }
    // An authorization server whose token endpoint is on a private address.
    let url = metadata_server(vec![
        protected_resource("BASE/mcp", "BASE"),
        as_metadata(json!({"token_endpoint": "http://192.168.1.20/token"})),
    ])
    .await;
    let err = discovery_error(&hub, &url).await;
    assert_eq!(err.kind(), "refused_address", "{err}");

    // With loopback closed, the challenge's own metadata URL is refused before any request.
    let closed = McpHub::new(HubSettings {
        addresses: AddressPolicy::public_only(),
        ..HubSettings::default()
    })
    .unwrap();
    let good = metadata_server(vec![
        protected_resource("BASE/mcp", "BASE"),
        as_metadata(json!({})),
    ])
    .await;
    let challenge = hub.oauth().challenge(&good).await.unwrap().unwrap();
    let err = closed.oauth().discover(&good, &challenge).await.unwrap_err();
    assert_eq!(err.kind(), "refused_address", "{err}");
    assert!(hub.oauth().discover(&good, &challenge).await.is_ok());
}

#[tokio::test]
async fn servers_without_s256_for_another_resource_or_issuer_are_refused() {
    let hub = hub();
    let cases = [
        (
            vec![
                protected_resource("BASE/mcp", "BASE"),
                as_metadata(json!({"code_challenge_methods_supported": ["plain"]})),
            ],
            "PKCE with S256",
        ),
        (
            vec![
                protected_resource("https://other.example/mcp", "BASE"),
                as_metadata(json!({})),
            ],
            "another resource",
        ),
        (
            vec![
                protected_resource("BASE/mcp", "BASE"),
                as_metadata(json!({"issuer": "https://auth.example"})),
            ],
            "another issuer",
        ),
        (
            vec![protected_resource("BASE/mcp", "BASE")],
            "no authorization server metadata",
        ),
    ];
    for (documents, expected) in cases {
        let url = metadata_server(documents).await;
        let err = discovery_error(&hub, &url).await;
        assert_eq!(err.kind(), "authorization", "{err}");
        assert!(err.to_string().contains(expected), "{expected}: {err}");
    }
}
