//! Consent in the middle of a turn: a tool call whose MCP server no longer accepts the user's grant
//! (revoked, and renewing fails) brings a `data-authorization` card and waits; the browser's
//! consent, whose callback may land on another instance (even one restarted meanwhile), wakes the
//! call, which runs again with the new grant. Past the wait, on Stop, or for a client that cannot
//! show the card, the model reads that the user did not connect the server. The server is the
//! Python SDK's auth peer; Google's refresh failing with `invalid_grant` brings the same card.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common;
use crate::integrations_turn::{FakeEnv, fake_google, google_integrations};
use crate::mcp_oauth::{TOML, callback, consent, peer_control};
use promptgate_mcp::testing::{PeerProcess, python_auth_peer};

use common::{Backend, Gateway, Sse, scripted_config_with, tool_message, use_chat_body};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::AuthMode;
use promptgate_server::state::LOCAL_USER_ID;
use reqwest::StatusCode;
use serde_json::{Value, json};

pub(crate) const WHOAMI: &str = "notes_whoami";

/// The process environment with a key for secrets at rest (32 bytes of 7s), which a gateway on
/// Postgres needs to keep grants.
pub(crate) struct WithKey;

impl promptgate_server::config::Env for WithKey {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "PROMPTGATE_TOKEN_KEY" => Some("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=".to_owned()),
            other => std::env::var(other).ok(),
        }
    }
}

pub(crate) struct Setup {
    pub gw: Gateway,
    pub upstream: ScriptedUpstream,
    pub url: String,
    pub _peer: PeerProcess,
}

/// A gateway with the auth peer registered as "Notes" and authorized by the user, and the peer
/// armed to revoke every grant the moment the next tool call arrives: the send lists the tools
/// with a good token, and its call meets `401` with renewing refused. The model is scripted to make
/// that call ([`call_whoami`]).
async fn setup(backend: Backend, extra_toml: &str) -> Option<Setup> {
    let setup = authorized(backend, extra_toml).await?;
    arm(&setup.url).await;
    call_whoami(&setup.upstream);
    Some(setup)
}

/// The user authorizes the server `id` in their browser (the peer consents at once).
pub(crate) async fn authorize(gw: &Gateway, id: &str) {
    let path = consent(&gw.authorization_url(id).await).await;
    assert_eq!(callback(gw, &path).await.0, StatusCode::OK);
}

/// Arms the peer to forget every grant when the next tool call arrives.
async fn arm(url: &str) {
    peer_control(url, "revoke-grants-on-next-call")
        .send()
        .await
        .unwrap();
}

/// A gateway with the auth peer registered as "Notes" and authorized by the user.
pub(crate) async fn authorized(backend: Backend, extra_toml: &str) -> Option<Setup> {
    let (setup, id) = registered(backend, extra_toml).await?;
    authorize(&setup.gw, &id).await;
    Some(setup)
}

/// A gateway with the auth peer registered as "Notes", not authorized yet; and the server's id.
pub(crate) async fn registered(backend: Backend, extra_toml: &str) -> Option<(Setup, String)> {
    let python = common::py_peer_python("the MCP consent scenario")?;
    common::init();
    let (peer, url) = python_auth_peer(&python, 3600).await;
    let upstream = ScriptedUpstream::start().await.unwrap();
    let toml = format!("{TOML}{extra_toml}");
    let gw = Gateway::start_with_env(
        backend,
        scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), &toml),
        &WithKey,
    )
    .await;
    let created = gw.register_mcp_server("Notes", &url).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let setup = Setup {
        gw,
        upstream,
        url,
        _peer: peer,
    };
    Some((setup, id))
}

/// The model calls the server's tool once, then answers "Done." with what it read.
pub(crate) fn call_whoami(upstream: &ScriptedUpstream) {
    common::one_call(upstream, "c1", WHOAMI, "{}", "Done.");
}

pub(crate) fn send<'a>(gw: &'a Gateway, thread: &'a str) -> impl std::future::Future<Output = Sse> + 'a {
    gw.chat(thread, "who is it?")
}

/// Waits until the thread's call waits for an authorization, and returns what its card shows.
pub(crate) async fn card(gw: &Gateway, thread: &str) -> Value {
    for _ in 0..200 {
        let waiting = gw.store.pending_questions(LOCAL_USER_ID, thread).await.unwrap();
        if let Some(question) = waiting.iter().find(|q| q.asked.kind == "authorization") {
            return serde_json::from_str(&question.asked.question).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no call waited for an authorization");
}

/// The `data` of the stream's authorization parts, in order.
pub(crate) fn parts(sse: &Sse) -> Vec<&Value> {
    sse.of_type("data-authorization")
        .into_iter()
        .map(|part| &part["data"])
        .collect()
}

pub(crate) fn result_the_model_read(upstream: &ScriptedUpstream) -> String {
    tool_message(&upstream.last_request().unwrap(), "c1")
}

#[tokio::test]
async fn a_revoked_grant_brings_the_card_and_the_call_completes_once_authorized_on_a_restarted_instance() {
    let Some(Setup {
        gw: a,
        upstream,
        _peer,
        ..
    }) = setup(Backend::Postgres, "").await
    else {
        return;
    };
    let config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), TOML);
    let b = a.another_instance_with_env(config.clone(), &WithKey).await;
    let user = async {
        let shown = card(&a, "t1").await;
        assert_eq!(shown["kind"], "mcp");
        assert_eq!(shown["server"], "Notes");
        assert_eq!(shown["toolCallId"], "c1");
        assert_eq!(shown["state"], "waiting");
        assert_eq!(shown["scopes"], json!(["notes"]));
        assert_eq!(shown["expiresInSecs"], 120);
        let url = shown["url"].as_str().unwrap();
        assert!(url.contains("code_challenge_method=S256"), "{url}");
        // The other instance restarts between the card and the consent: what the callback needs
        // is in the database, not in its memory.
        b.shut_down().await;
        let restarted = a.another_instance_with_env(config, &WithKey).await;
        let path = consent(url).await;
        let (status, page) = callback(&restarted, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        shown
    };
    let (sse, shown) = tokio::join!(send(&a, "t1"), user);
    assert_eq!(sse.text(), "Done.");
    assert!(sse.of_type("tool-output-error").is_empty(), "{:?}", sse.types());
    assert_eq!(result_the_model_read(&upstream), "py-auth-peer");
    let states: Vec<&Value> = parts(&sse).iter().map(|part| &part["state"]).collect();
    assert_eq!(states, [&json!("waiting"), &json!("authorized")]);
    assert!(
        parts(&sse)
            .iter()
            .all(|part| part["authorizationId"] == shown["authorizationId"])
    );
    // The answer keeps the card in its last state.
    let stored = a.stored_messages("t1", 2).await;
    let kept: Vec<&Value> = common::where_eq(&stored[1]["parts"], "type", "data-authorization");
    assert_eq!(kept.len(), 1, "{stored}");
    assert_eq!(kept[0]["data"]["state"], "authorized");
}

#[tokio::test]
async fn without_an_authorization_in_time_the_model_reads_that_the_user_did_not_connect_it() {
    let toml = "authorization_wait_secs = 1\n";
    let Some(Setup {
        gw, upstream, _peer, ..
    }) = setup(Backend::Sqlite, toml).await
    else {
        return;
    };
    let sse = send(&gw, "t1").await;
    assert_eq!(sse.text(), "Done.");
    assert_eq!(parts(&sse).last().unwrap()["state"], "expired");
    let result = result_the_model_read(&upstream);
    assert!(result.contains("the user did not connect Notes"), "{result}");
    let errors = sse.of_type("tool-output-error");
    assert_eq!(errors.len(), 1, "{:?}", sse.types());
}

#[tokio::test]
async fn stop_ends_the_wait_and_a_later_consent_still_connects() {
    let Some(Setup {
        gw, upstream, _peer, ..
    }) = setup(Backend::Sqlite, "").await
    else {
        return;
    };
    let user = async {
        let shown = card(&gw, "t1").await;
        let (status, body) = gw.post("/v1/chat/t1/stop", json!({})).await;
        assert_eq!((status, &body["stopped"]), (StatusCode::OK, &json!(true)));
        shown
    };
    let (sse, shown) = tokio::join!(send(&gw, "t1"), user);
    assert!(sse.done, "{:?}", sse.types());
    let stored = gw.stored_messages("t1", 2).await;
    assert_eq!(stored[1]["status"], "stopped");
    assert_eq!(upstream.calls(), 1, "the model was not asked again");
    // The authorization is the user's to finish: it connects the server, and wakes nothing.
    let path = consent(shown["url"].as_str().unwrap()).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    let (_, listed) = gw.get("/v1/mcp-servers").await;
    assert_eq!(listed[0]["authorization"]["state"], "connected", "{listed}");
}

#[tokio::test]
async fn a_client_that_cannot_show_the_card_gets_the_error_at_once() {
    let Some(Setup {
        gw,
        upstream,
        url,
        _peer,
    }) = setup(Backend::Sqlite, "").await
    else {
        return;
    };
    let sse = gw
        .stream_as("v5", "/v1/chat", use_chat_body("t1", "who is it?", "scripted"))
        .await;
    assert!(sse.of_type("data-authorization").is_empty(), "{:?}", sse.types());
    let result = result_the_model_read(&upstream);
    assert!(result.contains("the user did not connect Notes"), "{result}");
    assert!(result.contains("cannot ask"), "{result}");

    // Nor can the OpenAI-compatible facade, once the user authorized the server again and the
    // grant is revoked again under the next call.
    let (_, listed) = gw.get("/v1/mcp-servers").await;
    authorize(&gw, listed[0]["id"].as_str().unwrap()).await;
    arm(&url).await;
    call_whoami(&upstream);
    let (status, body) = gw.complete("who?").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = result_the_model_read(&upstream);
    assert!(result.contains("the user did not connect Notes"), "{result}");
}

#[tokio::test]
async fn a_call_the_grant_is_too_narrow_for_asks_for_the_wider_scopes_and_runs_with_them() {
    let Some(Setup {
        gw, upstream, _peer, ..
    }) = authorized(Backend::Sqlite, "").await
    else {
        return;
    };
    common::one_call(&upstream, "c1", "notes_write_note", r#"{"text": "hi"}"#, "Noted.");
    let user = async {
        let shown = card(&gw, "t1").await;
        // The step-up asks for what was granted and what the server's challenge names.
        assert_eq!(shown["scopes"], json!(["notes", "notes:write"]));
        let url = shown["url"].as_str().unwrap();
        assert!(url.contains("scope=notes+notes%3Awrite"), "{url}");
        let path = consent(url).await;
        assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    };
    let (sse, ()) = tokio::join!(send(&gw, "t1"), user);
    assert_eq!(sse.text(), "Noted.");
    assert_eq!(result_the_model_read(&upstream), "noted: hi");
    assert_eq!(parts(&sse).last().unwrap()["state"], "authorized");
}

#[tokio::test]
async fn google_whose_refresh_token_stopped_working_brings_the_card_and_the_call_runs_after_reconnecting() {
    common::init();
    let (google, hits) = fake_google().await;
    let (upstream, mut config) = common::single_user_scripted("").await;
    config.integrations = Some(google_integrations(&google));
    let gw = Gateway::start_with_env(Backend::Sqlite, config, &FakeEnv).await;
    // Connected with a grant Google will refuse to renew.
    let state = crate::integrations_turn::authorize(&gw).await;
    gw.oauth_callback_ok("google", "doomed-code", &state).await;

    common::one_call(
        &upstream,
        "c1",
        "google_check_inbox",
        "{\"max_results\": 2}",
        "Two emails.",
    );
    let user = async {
        let shown = card(&gw, "mail").await;
        assert_eq!(shown["kind"], "integration");
        assert_eq!(shown["provider"], "google");
        assert_eq!(shown["server"], "Google");
        let url = reqwest::Url::parse(shown["url"].as_str().unwrap()).unwrap();
        assert_eq!(url.path(), "/authorize");
        let state = common::query_param(url.as_str(), "state").unwrap();
        // The user consents at Google; it sends the browser back with a good code.
        gw.oauth_callback_ok("google", "good-code", &state).await;
    };
    let (sse, ()) = tokio::join!(gw.chat("mail", "my inbox?"), user);
    assert_eq!(sse.text(), "Two emails.");
    assert!(sse.of_type("tool-output-error").is_empty(), "{:?}", sse.types());
    let states: Vec<&Value> = parts(&sse).iter().map(|part| &part["state"]).collect();
    assert_eq!(states, [&json!("waiting"), &json!("authorized")]);
    let inbox = &sse.of_type("tool-output-available")[0]["output"];
    assert_eq!(inbox["total_count"], 12, "{inbox}");
    assert!(
        hits.gmail()
            .iter()
            .any(|hit| hit.bearer() == Some("Bearer fresh-token")),
        "the call ran again with the new grant"
    );
}
