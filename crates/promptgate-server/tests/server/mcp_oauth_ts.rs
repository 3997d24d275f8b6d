//! MCP servers that ask for OAuth, against a second outside implementation: the TypeScript SDK's
//! auth router and bearer middleware (`crates/promptgate-mcp/tests/peers/ts_auth_peer.mjs`).
//! A user connects it through the API and its tools work in a turn, renewed across instances and a
//! restart and revoked when the server is removed; an authorization server that takes Client ID
//! Metadata Documents fetches the gateway's own; a tool that needs more scopes makes Reconnect ask
//! for them (step-up).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::mcp_oauth::{TOML, callback, consent, consent_back_to, peer_control, probe, stats};
use promptgate_mcp::testing::{PeerProcess, TsAuthPeer, typescript_auth_peer};

use common::{Backend, Gateway, NEWEST_UI_STREAM, scripted_config_with, tool_message, use_chat_body};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::{AuthMode, Config};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn node(scenario: &str) -> Option<&'static str> {
    common::node_peers_dir(scenario).map(|_| "node")
}

async fn register(gw: &Gateway, url: &str) -> (String, Value) {
    let created = gw.register_mcp_server("Notes", url).await;
    (created["id"].as_str().unwrap().to_owned(), created)
}

/// The TypeScript peer with its defaults and one single-user gateway (SQLite) over a scripted model.
async fn one_gateway_and_the_peer(node: &str) -> (PeerProcess, String, ScriptedUpstream, Gateway) {
    common::init();
    let (peer, url) = typescript_auth_peer(node, TsAuthPeer::default()).await;
    let (gw, upstream) = common::single_user_gateway_with(Backend::Sqlite, TOML).await;
    (peer, url, upstream, gw)
}

/// A turn on `gw` in a fresh thread that calls `tool` once; returns what the model was told.
async fn call_in_a_turn(gw: &Gateway, upstream: &ScriptedUpstream, thread: &str, tool: &str) -> String {
    call_in_a_turn_as(gw, upstream, thread, tool, NEWEST_UI_STREAM.1).await
}

/// [`call_in_a_turn`] from a client declaring the UI stream `version`.
async fn call_in_a_turn_as(
    gw: &Gateway,
    upstream: &ScriptedUpstream,
    thread: &str,
    tool: &str,
    version: &str,
) -> String {
    gw.post("/v1/threads", json!({"id": thread})).await;
    common::one_call(upstream, "c1", tool, "{}", "Done.");
    let sse = gw
        .stream_as(version, "/v1/chat", use_chat_body(thread, "go", "scripted"))
        .await;
    assert_eq!(sse.text(), "Done.");
    tool_message(&upstream.last_request().unwrap(), "c1")
}

#[tokio::test]
async fn the_typescript_sdk_peer_is_connected_used_renewed_and_revoked_across_instances_and_a_restart() {
    let Some(node) = node("the TypeScript MCP OAuth scenario") else {
        return;
    };
    common::init();
    // Tokens that lapse within the minute the gateway keeps in hand: every use renews first.
    let options = TsAuthPeer {
        access_seconds: 30,
        ..TsAuthPeer::default()
    };
    let (_peer, url) = typescript_auth_peer(node, options).await;
    let (upstream, config) = common::single_user_scripted(TOML).await;
    let first = Gateway::start(Backend::Sqlite, config.clone()).await;
    let second = first.another_instance(config.clone()).await;

    let (id, created) = register(&first, &url).await;
    assert_eq!(
        created["authorization"]["state"], "needs_authorization",
        "{created}"
    );
    let authorization_url = created["authorization"]["authorization_url"].as_str().unwrap();
    assert_eq!(
        common::query_param(authorization_url, "scope").as_deref(),
        Some("notes:read"),
        "the challenge's scope"
    );
    assert_eq!(
        common::query_param(authorization_url, "resource").as_deref(),
        Some(url.as_str())
    );
    assert_eq!(stats(&url).await["registrations"], 1, "registered (RFC 7591)");
    assert_eq!(probe(&first, &id).await["authorization"], "needs_authorization");

    // The browser comes back to the other instance, which completes it (the peer sends `iss`).
    let path = consent(authorization_url).await;
    assert!(path.contains("iss="), "{path}");
    let (status, page) = callback(&second, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Notes is connected"), "{page}");
    let (status, _) = callback(&first, &path).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a replayed callback is refused");

    let probed = probe(&first, &id).await;
    assert_eq!(probed["ok"], true, "{probed}");
    let tools: Vec<&str> = common::strings_at(&probed["tools"], "name");
    assert_eq!(tools, ["whoami", "add_note"]);
    let renewed = stats(&url).await["refreshes"].as_u64().unwrap();
    assert!(renewed >= 1, "renewed before the probe used it");

    // Turns on both instances call the tool; each renews with the refresh token the other rotated.
    assert_eq!(
        call_in_a_turn(&first, &upstream, "t1", "notes_whoami").await,
        "ts-auth-peer"
    );
    assert_eq!(
        call_in_a_turn(&second, &upstream, "t2", "notes_whoami").await,
        "ts-auth-peer"
    );
    assert!(stats(&url).await["refreshes"].as_u64().unwrap() > renewed);

    // A restart: an instance goes and a fresh one (nothing in memory) on the same database still
    // holds the grant. (The first stays up: it owns the test's database directory.)
    drop(second);
    let restarted = first.another_instance(config).await;
    assert_eq!(probe(&restarted, &id).await["ok"], true);
    assert_eq!(
        call_in_a_turn(&restarted, &upstream, "t3", "notes_whoami").await,
        "ts-auth-peer"
    );

    // Removing the server revokes both tokens at the authorization server and forgets them.
    let (status, _) = restarted.delete(&format!("/v1/mcp-servers/{id}")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(stats(&url).await["revocations"], 2);
    let user = promptgate_server::state::LOCAL_USER_ID;
    assert_eq!(restarted.store.get_mcp_grant(user, &id).await.unwrap(), None);
}

/// A gateway whose public base is its own loopback address, allowed (for the test) to serve its
/// client metadata document over plain http.
fn cimd_config(upstream: &ScriptedUpstream, base: &str) -> Config {
    let toml = TOML.replace("http://gw.test", base) + "oauth_client_metadata_over_http = true\n";
    scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), &toml)
}

#[tokio::test]
async fn an_authorization_server_that_takes_client_metadata_documents_reads_the_gateways_own() {
    let Some(node) = node("the client metadata document scenario") else {
        return;
    };
    common::init();
    let options = TsAuthPeer {
        cimd: true,
        ..TsAuthPeer::default()
    };
    let (_peer, url) = typescript_auth_peer(node, options).await;
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start_at(Backend::Sqlite, |base| cimd_config(&upstream, base)).await;
    let base = gw.url("");
    let client_id = format!("{base}/v1/mcp-servers/oauth/client.json");

    // The document is served without a token, and names its own URL and the callback.
    let document: Value = reqwest::get(&client_id).await.unwrap().json().await.unwrap();
    assert_eq!(document["client_id"], client_id.as_str());
    assert_eq!(
        document["redirect_uris"],
        json!([format!("{base}/v1/mcp-servers/oauth/callback")])
    );
    assert_eq!(document["token_endpoint_auth_method"], "none");

    let (id, created) = register(&gw, &url).await;
    let authorization_url = created["authorization"]["authorization_url"].as_str().unwrap();
    assert_eq!(
        common::query_param(authorization_url, "client_id").as_deref(),
        Some(client_id.as_str())
    );
    let path = consent_back_to(authorization_url, &base).await;
    let (status, page) = callback(&gw, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(probe(&gw, &id).await["ok"], true);
    let counts = stats(&url).await;
    assert_eq!(counts["registrations"], 0, "no registration: {counts}");
    assert!(counts["metadata_documents"].as_u64().unwrap() >= 1, "{counts}");

    // On a plain http base without the test allowance the gateway serves no document and
    // registers instead.
    let mut plain = cimd_config(&upstream, &base);
    plain.mcp.oauth_client_metadata_over_http = false;
    let production = gw.another_instance(plain).await;
    let answer = reqwest::get(production.url("/v1/mcp-servers/oauth/client.json"))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    let registered = common::query_param(&production.authorization_url(&id).await, "client_id");
    assert_ne!(registered.as_deref(), Some(client_id.as_str()));
    assert_eq!(stats(&url).await["registrations"], 1);
}

#[tokio::test]
async fn a_tool_that_needs_more_scopes_makes_reconnect_ask_for_them() {
    let Some(node) = node("the step-up scenario") else {
        return;
    };
    let (_peer, url, upstream, gw) = one_gateway_and_the_peer(node).await;
    let (id, created) = register(&gw, &url).await;
    let path = consent(created["authorization"]["authorization_url"].as_str().unwrap()).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    assert_eq!(
        call_in_a_turn(&gw, &upstream, "t1", "notes_whoami").await,
        "ts-auth-peer"
    );

    // The write tool answers 403 insufficient_scope. A client that cannot show the consent card
    // (AI SDK 5) gets the call's failure at once, and the server now says it needs authorization,
    // for the granted scope and the one it asked for.
    let told = call_in_a_turn_as(&gw, &upstream, "t2", "notes_add_note", "v5").await;
    assert!(told.contains("did not connect Notes"), "{told}");
    let (_, server) = gw.get(&format!("/v1/mcp-servers/{id}")).await;
    assert_eq!(
        server["authorization"]["state"], "needs_authorization",
        "{server}"
    );
    assert_eq!(server["authorization"]["scopes"], "notes:read notes:write");

    // Reconnect asks for the union; once granted, the tool works and the server is connected.
    let authorization_url = &gw.authorization_url(&id).await;
    assert_eq!(
        common::query_param(authorization_url, "scope").as_deref(),
        Some("notes:read notes:write")
    );
    let path = consent(authorization_url).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    let (_, listed) = gw.get("/v1/mcp-servers").await;
    assert_eq!(listed[0]["authorization"]["state"], "connected", "{listed}");
    assert_eq!(
        call_in_a_turn(&gw, &upstream, "t3", "notes_add_note").await,
        "note kept"
    );
}

/// Runs `sql` on the gateway's database and returns the first column of the first row.
async fn scalar(gw: &Gateway, sql: &'static str) -> i64 {
    use sqlx::Row;
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&gw.database_url).await.unwrap();
    let value = match sqlx::query(sql).fetch_optional(&pool).await.unwrap() {
        Some(row) => row.try_get::<i64, _>(0).unwrap_or(0),
        None => 0,
    };
    pool.close().await;
    value
}

async fn misbehave(url: &str, how: &str) {
    peer_control(url, "misbehave")
        .json(&json!({"as": how}))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn what_a_client_must_refuse_is_refused_with_a_clear_error_and_nothing_stored() {
    let Some(node) = node("the MCP OAuth refusals scenario") else {
        return;
    };
    let (_peer, url, _upstream, gw) = one_gateway_and_the_peer(node).await;
    let user = promptgate_server::state::LOCAL_USER_ID;

    // Metadata a client must not act on: the authorization is refused before any client is
    // registered or any pending authorization kept, at registration and on Connect alike.
    for (how, status, code, words) in [
        ("no-s256", 422, "mcp_authorization_failed", "PKCE with S256"),
        ("private-endpoints", 422, "refused_address", ""),
        (
            "other-resource",
            422,
            "mcp_authorization_failed",
            "another resource",
        ),
    ] {
        misbehave(&url, how).await;
        let (id, created) = register(&gw, &url).await;
        assert_eq!(
            created["authorization"]["state"], "needs_authorization",
            "{how}: {created}"
        );
        assert!(
            created["authorization"]["authorization_url"].is_null(),
            "{how}: {created}"
        );
        let (answer, body) = gw
            .post(&format!("/v1/mcp-servers/{id}/authorize"), json!({}))
            .await;
        assert_eq!(answer.as_u16(), status, "{how}: {body}");
        assert_eq!(common::error_code(&body), code, "{how}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(words),
            "{how}: {body}"
        );
        gw.delete(&format!("/v1/mcp-servers/{id}")).await;
    }
    assert_eq!(stats(&url).await["registrations"], 0);
    assert_eq!(scalar(&gw, "SELECT COUNT(*) FROM oauth_pending").await, 0);

    // A pending authorization that outlived its life is refused at the callback; the code is
    // never traded for tokens and nothing is stored.
    misbehave(&url, "none").await;
    let (id, created) = register(&gw, &url).await;
    let path = consent(created["authorization"]["authorization_url"].as_str().unwrap()).await;
    assert_eq!(scalar(&gw, "SELECT COUNT(*) FROM oauth_pending").await, 1);
    scalar(&gw, "UPDATE oauth_pending SET expires_at = 0").await;
    let (status, body) = callback(&gw, &path).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("invalid_state"), "{body}");
    assert_eq!(stats(&url).await["codes"], 0, "the code was never exchanged");
    assert_eq!(gw.store.get_mcp_grant(user, &id).await.unwrap(), None);
}
