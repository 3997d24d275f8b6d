//! An OAuth client the user gives with one MCP server: an authorization server that offers neither
//! registration nor Client ID Metadata Documents (the Python SDK's auth support with registration
//! turned off, promptgate registered there by hand) is connected with the user's client id and
//! secret, which is never shown again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, Backend, Gateway, error_code};
use crate::mcp_oauth::{TOML, callback, consent, peer_control, probe, stats};
use promptgate_mcp::testing::python_auth_peer_with;
use reqwest::StatusCode;
use serde_json::json;

const CLIENT_ID: &str = "promptgate-by-hand";
const CLIENT_SECRET: &str = "hand-made secret";

/// Registers promptgate with the peer's authorization server by hand, as a confidential client
/// that sends its secret in the form (the peer lists both methods; promptgate takes the form then).
async fn register_by_hand(url: &str) {
    let answer = peer_control(url, "clients")
        .json(&json!({
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uri": "http://gw.test/v1/mcp-servers/oauth/callback",
            "token_endpoint_auth_method": "client_secret_post",
        }))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
}

#[tokio::test]
async fn a_server_without_registration_is_connected_with_the_client_the_user_gave() {
    let Some(python) = common::py_peer_python("the MCP OAuth client scenario") else {
        return;
    };
    common::init();
    let (_peer, url) = python_auth_peer_with(&python, 3600, &["--no-registration"]).await;
    register_by_hand(&url).await;
    let (_upstream, config) = common::single_user_scripted(TOML).await;
    let gw = Gateway::start(Backend::Sqlite, config).await;

    // Without a client of its own the server cannot be authorized: nothing to register with.
    let plain = gw.register_mcp_server("Notes", &url).await;
    let error = plain["authorization"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("registration"), "{plain}");
    assert!(plain["authorization"].get("authorization_url").is_none());

    // With the client the user gives, replacing the server's settings.
    let id = plain["id"].as_str().unwrap();
    let body = json!({"name": "Notes", "url": url, "oauth_client_id": CLIENT_ID, "oauth_client_secret": CLIENT_SECRET});
    let (status, replaced) = gw.put(&format!("/v1/mcp-servers/{id}"), body).await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    assert_eq!(replaced["oauth_client_id"], CLIENT_ID);
    assert_eq!(replaced["oauth_client_secret_set"], true);
    let authorization_url = &gw.authorization_url(id).await;
    assert!(
        authorization_url.contains(&format!("client_id={CLIENT_ID}")),
        "{authorization_url}"
    );
    let path = consent(authorization_url).await;
    let (status, page) = callback(&gw, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let probed = probe(&gw, id).await;
    assert_eq!(probed["ok"], true, "{probed}");
    assert_eq!(stats(&url).await["registrations"], 0);

    // The secret is never shown.
    let (_, listed) = gw.get("/v1/mcp-servers").await;
    assert_eq!(listed[0]["oauth_client_secret_set"], true, "{listed}");
    assert!(!listed.to_string().contains(CLIENT_SECRET), "{listed}");
    let (_, one) = gw.get(&format!("/v1/mcp-servers/{id}")).await;
    assert!(!one.to_string().contains(CLIENT_SECRET), "{one}");
}

#[tokio::test]
async fn an_oauth_client_out_of_bounds_is_refused_with_a_clear_error() {
    common::init();
    let (_upstream, config) = common::single_user_scripted(TOML).await;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let url = "https://mcp.example.com/mcp";
    for (body, said) in [
        (json!({"oauth_client_secret": "s"}), "needs oauth_client_id"),
        (
            json!({"oauth_client_id": "x".repeat(2_049)}),
            "oauth_client_id must be",
        ),
        (json!({"oauth_client_id": "a\nb"}), "oauth_client_id must be"),
        (
            json!({"oauth_client_id": "c", "oauth_client_secret": "s".repeat(1_025)}),
            "oauth_client_secret must be",
        ),
    ] {
        let mut body = body;
        body["name"] = json!("Notes");
        body["url"] = json!(url);
        let (status, answer) = gw.post("/v1/mcp-servers", body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(error_code(&answer), "invalid_body", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(said), "{message}");
    }
    let (_, listed) = gw.get("/v1/mcp-servers").await;
    assert_eq!(listed, json!([]), "nothing is stored");
}
