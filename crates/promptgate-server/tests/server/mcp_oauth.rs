//! MCP servers that ask for OAuth, through the API: registering one answers `needs_authorization`
//! and the URL, the authorization server's redirect completes it on another instance, the tools
//! are offered and called with the user's token, a revoked token is renewed within a send, and the
//! callbacks that must not be acted on are refused with nothing stored. The server is the Python
//! SDK's auth support (`crates/promptgate-mcp/tests/peers/py_auth_peer.py`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use promptgate_mcp::testing::python_auth_peer;

use common::{Backend, Gateway, error_code, scripted_config_with, tool_message};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The redirect base the gateway is configured with; the test carries the browser's redirect to
/// whichever instance it wants by hand.
pub(crate) const TOML: &str = "[mcp]\ndiscovery_timeout_ms = 3000\nprobe_timeout_ms = 3000\n\
    liveness_interval_ms = 600000\noauth_redirect_base_url = \"http://gw.test\"\n";

fn python() -> Option<String> {
    common::py_peer_python("the MCP OAuth scenario")
}

/// What the browser does: opens the authorization URL, and the peer (consenting at once) sends it
/// back to the gateway's callback; returns that callback's path and query.
pub(crate) async fn consent(authorization_url: &str) -> String {
    consent_back_to(authorization_url, "http://gw.test").await
}

/// [`consent`] for a gateway whose public base is `base`.
pub(crate) async fn consent_back_to(authorization_url: &str, base: &str) -> String {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(authorization_url).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::FOUND);
    let location = answer.headers()["location"].to_str().unwrap();
    let callback = location
        .strip_prefix(base)
        .unwrap_or_else(|| panic!("redirected elsewhere: {location}"));
    assert!(
        callback.starts_with("/v1/mcp-servers/oauth/callback?"),
        "{callback}"
    );
    callback.to_owned()
}

pub(crate) async fn probe(gw: &Gateway, id: &str) -> Value {
    let (status, body) = gw.post(&format!("/v1/mcp-servers/{id}/probe"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

pub(crate) async fn callback(gw: &Gateway, path: &str) -> (StatusCode, String) {
    let answer = gw.response(Method::GET, path, None, None).await;
    (answer.status(), answer.text().await.unwrap())
}

/// A turn on `gw`, in a new `thread`, in which the model calls the peer's `whoami` tool as `call`:
/// the answer comes, and the tool answered as the peer does for an authorized user.
async fn whoami_turn(gw: &Gateway, upstream: &ScriptedUpstream, thread: &str, call: &str) {
    gw.post("/v1/threads", json!({"id": thread})).await;
    common::one_call(upstream, call, "notes_whoami", "{}", "It is the auth peer.");
    let sse = gw.chat(thread, "who is it?").await;
    assert_eq!(sse.text(), "It is the auth peer.");
    assert_eq!(
        tool_message(&upstream.last_request().unwrap(), call),
        "py-auth-peer"
    );
}

/// A call of one of the auth peer's test controls (`/test/{control}` beside its `/mcp`).
pub(crate) fn peer_control(mcp_url: &str, control: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new().post(mcp_url.replace("/mcp", &format!("/test/{control}")))
}

/// The authorization server revokes every access token it issued (refresh tokens stay good).
async fn revoke_access_tokens(mcp_url: &str) {
    peer_control(mcp_url, "revoke-access-tokens")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_user_connects_an_oauth_mcp_server_and_its_tools_work_across_instances() {
    let Some(python) = python() else { return };
    common::init();
    let (_peer, url) = python_auth_peer(&python, 3600).await;
    let (upstream, config) = common::single_user_scripted(TOML).await;
    let first = Gateway::start(Backend::Sqlite, config.clone()).await;
    let second = first.another_instance(config).await;

    // Registering the server says it needs authorization, and where to go.
    let created = first.register_mcp_server("Notes", &url).await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["authorization"]["state"], "needs_authorization",
        "{created}"
    );
    let authorization_url = created["authorization"]["authorization_url"].as_str().unwrap();
    assert!(
        authorization_url.contains("code_challenge_method=S256"),
        "{authorization_url}"
    );
    let (_, listed) = first.get("/v1/mcp-servers").await;
    assert!(
        listed[0].get("authorization").is_none(),
        "not connected yet: {listed}"
    );
    let before = probe(&first, &id).await;
    assert_eq!(before["ok"], false, "{before}");
    assert_eq!(before["authorization"], "needs_authorization", "{before}");

    // A callback whose state is not one we issued is refused, and connects nothing.
    let path = consent(authorization_url).await;
    let forged = path.replace("state=", "state=x");
    let (status, body) = callback(&second, &forged).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(probe(&first, &id).await["ok"], false);

    // The browser comes back to the other instance, which completes it; the same callback again is
    // refused (the pending authorization is used up, and the code with it).
    let (status, page) = callback(&second, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Notes is connected"), "{page}");
    let (status, body) = callback(&first, &path).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("invalid_state"), "{body}");

    let after = probe(&first, &id).await;
    assert_eq!(after["ok"], true, "{after}");
    let (_, listed) = first.get("/v1/mcp-servers").await;
    assert_eq!(listed[0]["authorization"]["state"], "connected", "{listed}");
    let (_, one) = second.get(&format!("/v1/mcp-servers/{id}")).await;
    assert_eq!(one["authorization"]["state"], "connected", "{one}");
    assert_eq!(after["tools"][0]["name"], "whoami");

    // A turn on the first instance calls the tool with the user's token.
    whoami_turn(&first, &upstream, "t1", "c1").await;

    // The authorization server revokes the access token; the next send renews the grant when the
    // server refuses the old token, and the tool still works, on the other instance too.
    revoke_access_tokens(&url).await;
    whoami_turn(&second, &upstream, "t2", "c2").await;
    let counts = stats(&url).await;
    assert_eq!(counts["refreshes"], 1, "{counts}");

    // A token revoked after a send listed the tools is refused at the tool call itself: the call
    // renews the grant and is made once more, within the same turn.
    for (thread, call) in [("t3", "c3"), ("t4", "c4")] {
        whoami_turn(&first, &upstream, thread, call).await;
        revoke_access_tokens(&url).await;
    }
    assert_eq!(stats(&url).await["refreshes"], 2, "renewed once, at the call");

    // Removing the server forgets the grant.
    let (status, _) = first.delete(&format!("/v1/mcp-servers/{id}")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        first
            .store
            .get_mcp_grant(promptgate_server::state::LOCAL_USER_ID, &id)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn authorizing_is_refused_without_a_callback_url_or_for_a_server_on_a_refused_address() {
    let Some(python) = python() else { return };
    common::init();
    let (_peer, url) = python_auth_peer(&python, 3600).await;
    let (unconfigured, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    let (_, created) = unconfigured
        .post("/v1/mcp-servers", json!({"name": "Notes", "url": url}))
        .await;
    let id = created["id"].as_str().unwrap();
    let (status, body) = unconfigured
        .post(&format!("/v1/mcp-servers/{id}/authorize"), json!({}))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(error_code(&body), "mcp_oauth_not_configured");

    // With loopback closed after registration, the authorization server is never asked.
    let mut config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), TOML);
    config.mcp.allow_loopback = Some(false);
    let closed = unconfigured.another_instance(config).await;
    let (status, body) = closed
        .post(&format!("/v1/mcp-servers/{id}/authorize"), json!({}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "refused_address");
}

pub(crate) async fn stats(url: &str) -> Value {
    reqwest::get(url.replace("/mcp", "/test/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_token_about_to_lapse_is_renewed_before_it_is_used() {
    let Some(python) = python() else { return };
    common::init();
    // Tokens that lapse within the minute the gateway keeps in hand.
    let (_peer, url) = python_auth_peer(&python, 30).await;
    let (gw, _upstream) = common::single_user_gateway_with(Backend::Sqlite, TOML).await;
    let (_, created) = gw
        .post("/v1/mcp-servers", json!({"name": "Notes", "url": url}))
        .await;
    let id = created["id"].as_str().unwrap();
    let path = consent(created["authorization"]["authorization_url"].as_str().unwrap()).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    assert_eq!(stats(&url).await["refreshes"], 0);

    assert_eq!(probe(&gw, id).await["ok"], true);
    assert_eq!(
        stats(&url).await["refreshes"],
        1,
        "renewed before the probe used it"
    );
    assert_eq!(
        probe(&gw, id).await["ok"],
        true,
        "the rotated refresh token was kept"
    );
    assert_eq!(stats(&url).await["refreshes"], 2);
}

/// The process environment, with the operator's client secret beside it.
struct WithSecret(String);

impl promptgate_server::config::Env for WithSecret {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "NOTES_CLIENT_SECRET" => Some(self.0.clone()),
            other => std::env::var(other).ok(),
        }
    }
}

#[tokio::test]
async fn a_client_the_operator_registered_is_used_instead_of_registering_one() {
    let Some(python) = python() else { return };
    common::init();
    let (_peer, url) = python_auth_peer(&python, 3600).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    // The operator registers a confidential client with the authorization server by hand.
    let registered = common::json_of(
        reqwest::Client::new()
            .post(format!("{base}/register"))
            .json(&json!({
                "client_name": "promptgate (by hand)",
                "redirect_uris": ["http://gw.test/v1/mcp-servers/oauth/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_post",
            })),
    )
    .await;
    let client_id = registered["client_id"].as_str().unwrap();
    let secret = registered["client_secret"].as_str().unwrap().to_owned();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let toml = format!(
        "{TOML}oauth_clients = [{{ issuer = \"{base}\", client_id = \"{client_id}\", client_secret_env = \"NOTES_CLIENT_SECRET\" }}]\n"
    );
    let config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), &toml);
    let gw = Gateway::start_with_env(Backend::Sqlite, config, &WithSecret(secret)).await;

    let (_, created) = gw
        .post("/v1/mcp-servers", json!({"name": "Notes", "url": url}))
        .await;
    let id = created["id"].as_str().unwrap();
    let authorization_url = created["authorization"]["authorization_url"].as_str().unwrap();
    assert!(
        authorization_url.contains(&format!("client_id={client_id}")),
        "{authorization_url}"
    );
    let path = consent(authorization_url).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    assert_eq!(probe(&gw, id).await["ok"], true);
    assert_eq!(
        stats(&url).await["registrations"],
        1,
        "only the operator's registration"
    );
}
