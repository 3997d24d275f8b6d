//! Google end to end: connect through the OAuth flow against a loopback Google (token endpoint,
//! revocation, Gmail), run a turn whose scripted model uses the Gmail tools, then disable and
//! disconnect. Every request the fake Google receives is recorded for assertions.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode as AxumStatus, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use common::{Backend, Gateway, error_code, preview_tools, scripted_config};
use promptgate_core::settings::IntegrationProvider;
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::{AuthMode, Env, IntegrationsConfig, OAuthEntry};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

/// 32 bytes of 0x07, base64.
const TOKEN_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

pub(crate) struct FakeEnv;

impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "TEST_TOKEN_KEY" => Some(TOKEN_KEY.to_owned()),
            "TEST_GOOGLE_SECRET" => Some("google-secret".to_owned()),
            "TEST_MICROSOFT_SECRET" => Some("microsoft-secret".to_owned()),
            _ => None,
        }
    }
}

/// One request as the fake Google saw it.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    method: String,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Hit {
    fn form(&self) -> HashMap<String, String> {
        let text = String::from_utf8_lossy(&self.body);
        Url::parse(&format!("http://form/?{text}"))
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect()
    }

    pub(crate) fn bearer(&self) -> Option<&str> {
        self.headers.get("authorization")?.to_str().ok()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Hits(Arc<Mutex<Vec<Hit>>>);

impl Hits {
    fn to(&self, path: &str) -> Vec<Hit> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path == path)
            .cloned()
            .collect()
    }

    pub(crate) fn gmail(&self) -> Vec<Hit> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path.starts_with("/gmail/"))
            .cloned()
            .collect()
    }
}

fn message(id: &str) -> Value {
    json!({
        "id": id, "threadId": format!("t-{id}"), "labelIds": ["INBOX", "UNREAD"],
        "snippet": "shall we meet on Friday?",
        "payload": {
            "mimeType": "text/plain", "filename": "",
            "headers": [
                {"name": "From", "value": "Ann Example <ann@example.com>"},
                {"name": "To", "value": "me@example.com"},
                {"name": "Subject", "value": "Friday"},
                {"name": "Date", "value": "Tue, 1 Dec 2026 09:00:00 +0000"},
                {"name": "Message-ID", "value": format!("<{id}@mail.example.com>")}
            ],
            // "Hi,\nshall we meet on Friday at 10?\nAnn"
            "body": {"size": 38, "data": "SGksCnNoYWxsIHdlIG1lZXQgb24gRnJpZGF5IGF0IDEwPwpBbm4="}
        }
    })
}

/// Google's token, revocation and Gmail endpoints. The authorization code `good-code` yields an
/// access token that has already expired; refreshing `refresh-1` yields `fresh-token`, the only
/// token Gmail accepts. The code `doomed-code` yields an expired access token whose refresh token
/// Google no longer accepts (`invalid_grant`), as after the user removed the app's access.
async fn google_api(
    State(hits): State<Hits>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hit = Hit {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers,
        body,
    };
    hits.0.lock().unwrap().push(hit.clone());
    let json = |status: u16, value: Value| {
        (AxumStatus::from_u16(status).unwrap(), axum::Json(value)).into_response()
    };
    match (hit.method.as_str(), hit.path.as_str()) {
        ("POST", "/token") => {
            let form = hit.form();
            match (
                form["grant_type"].as_str(),
                form.get("code").or(form.get("refresh_token")),
            ) {
                ("authorization_code", Some(code)) if code == "good-code" => json(
                    200,
                    json!({
                        "access_token": "first-token", "refresh_token": "refresh-1", "expires_in": 0,
                        "token_type": "Bearer"
                    }),
                ),
                ("authorization_code", Some(code)) if code == "doomed-code" => json(
                    200,
                    json!({
                        "access_token": "first-token", "refresh_token": "refresh-revoked",
                        "expires_in": 0, "token_type": "Bearer"
                    }),
                ),
                ("refresh_token", Some(token)) if token == "refresh-1" => json(
                    200,
                    json!({
                        "access_token": "fresh-token", "expires_in": 3599, "token_type": "Bearer"
                    }),
                ),
                _ => json(
                    400,
                    json!({"error": "invalid_grant", "error_description": "Malformed auth code."}),
                ),
            }
        }
        ("POST", "/revoke") => json(200, json!({})),
        (_, path) if path.starts_with("/gmail/v1/") => {
            if hit.bearer() != Some("Bearer fresh-token") {
                return json(
                    401,
                    json!({"error": {"code": 401, "message": "Invalid Credentials"}}),
                );
            }
            match (hit.method.as_str(), path) {
                ("GET", "/gmail/v1/users/me/messages") => json(
                    200,
                    json!({
                        "messages": [{"id": "m1", "threadId": "t-m1"}, {"id": "m2", "threadId": "t-m2"}],
                        "nextPageToken": "p2", "resultSizeEstimate": 12
                    }),
                ),
                ("GET", "/gmail/v1/users/me/profile") => json(200, json!({"emailAddress": "me@example.com"})),
                ("POST", "/gmail/v1/users/me/drafts") => json(
                    200,
                    json!({
                        "id": "r-1", "message": {"id": "m-draft", "threadId": "t-m1", "labelIds": ["DRAFT"]}
                    }),
                ),
                ("GET", path) if path.starts_with("/gmail/v1/users/me/messages/") => {
                    json(200, message(path.rsplit('/').next().unwrap()))
                }
                _ => json(
                    404,
                    json!({"error": {"code": 404, "message": "Requested entity was not found."}}),
                ),
            }
        }
        _ => json(404, json!({})),
    }
}

struct Setup {
    gw: Gateway,
    /// What `gw` was started with, for a second instance beside it.
    config: promptgate_server::config::Config,
    upstream: ScriptedUpstream,
    google: String,
    hits: Hits,
}

async fn setup(backend: Backend) -> Setup {
    setup_with(backend, AuthMode::SingleUser).await
}

async fn setup_with(backend: Backend, mode: AuthMode) -> Setup {
    common::init();
    let (google, hits) = fake_google().await;
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = scripted_config(mode, &upstream.base_url());
    config.integrations = Some(google_integrations(&google));
    let gw = Gateway::start_with_env(backend, config.clone(), &FakeEnv).await;
    Setup {
        gw,
        config,
        upstream,
        google,
        hits,
    }
}

/// The fake Google on a loopback port of its own: its base URL and what it receives.
pub(crate) async fn fake_google() -> (String, Hits) {
    let hits = Hits::default();
    let app = Router::new().fallback(google_api).with_state(hits.clone());
    (format!("http://{}", common::serve_router(app).await), hits)
}

/// The integrations section for the fake Google at `google` (secrets read from [`FakeEnv`]).
pub(crate) fn google_integrations(google: &str) -> IntegrationsConfig {
    IntegrationsConfig {
        token_key_env: "TEST_TOKEN_KEY".into(),
        redirect_base_url: "http://127.0.0.1:8080/".into(),
        google: Some(OAuthEntry {
            client_id: "client-1".into(),
            client_secret_env: "TEST_GOOGLE_SECRET".into(),
            auth_url: Some(format!("{google}/authorize")),
            token_url: Some(format!("{google}/token")),
            revoke_url: Some(format!("{google}/revoke")),
            api_base_url: Some(format!("{google}/gmail/v1")),
            calendar_base_url: Some(format!("{google}/calendar/v3")),
        }),
        microsoft: None,
    }
}

/// Starts an authorization and returns the `state` of the URL handed out.
pub(crate) async fn authorize(gw: &Gateway) -> String {
    let (status, body) = gw.get("/v1/integrations/google/authorize").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = Url::parse(body["authorization_url"].as_str().unwrap()).unwrap();
    let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
    query["state"].clone()
}

pub(crate) async fn connect(gw: &Gateway) {
    let state = authorize(gw).await;
    gw.oauth_callback_ok("google", "good-code", &state).await;
}

/// The local user's Google tokens as the store keeps them (sealed), if any.
async fn sealed_google_tokens(gw: &Gateway) -> Option<String> {
    gw.store
        .get_integration_secret(
            promptgate_server::state::LOCAL_USER_ID,
            IntegrationProvider::Google,
        )
        .await
        .unwrap()
}

fn google_tools(preview: &Value) -> Vec<String> {
    preview_tools(preview)
        .into_iter()
        .filter(|n| n.starts_with("google_"))
        .collect()
}

#[tokio::test]
async fn the_authorize_url_carries_state_and_an_s256_challenge() {
    let Setup { gw, google, .. } = setup(Backend::Sqlite).await;
    let (status, body) = gw.get("/v1/integrations/google/authorize").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = Url::parse(body["authorization_url"].as_str().unwrap()).unwrap();
    assert_eq!(format!("{}://{}", url.scheme(), url.authority()), google);
    assert_eq!(url.path(), "/authorize");
    let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "client-1");
    assert_eq!(
        query["redirect_uri"],
        "http://127.0.0.1:8080/v1/integrations/google/callback"
    );
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(
        URL_SAFE_NO_PAD.decode(&query["code_challenge"]).unwrap().len(),
        32,
        "a SHA-256 digest"
    );
    assert!(query["state"].len() >= 32);
    assert_eq!(query["access_type"], "offline");

    // Two authorizations never share a state.
    assert_ne!(authorize(&gw).await, query["state"]);
}

#[tokio::test]
async fn an_unconfigured_provider_cannot_be_authorized() {
    let Setup { gw, .. } = setup(Backend::Sqlite).await;
    let (status, body) = gw.get("/v1/integrations/microsoft/authorize").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error_code(&body), "integration_not_configured");
}

#[tokio::test]
async fn the_callback_stores_sealed_tokens_and_connects() {
    let Setup { gw, hits, .. } = setup(Backend::Sqlite).await;
    let state = authorize(&gw).await;
    let res = gw
        .response(
            Method::GET,
            &format!("/v1/integrations/google/callback?code=good-code&state={state}"),
            None,
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    assert!(page.contains("Google is connected"), "{page}");
    assert!(!page.contains("first-token") && !page.contains("refresh-1"));

    // The code was traded with the verifier whose challenge the URL carried.
    let exchange = hits.to("/token")[0].form();
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(exchange["client_secret"], "google-secret");
    assert!(exchange["code_verifier"].len() >= 43);

    let sealed = sealed_google_tokens(&gw).await.expect("tokens are stored");
    assert!(sealed.starts_with("v1."), "{sealed}");
    assert!(
        !sealed.contains("first-token") && !sealed.contains("refresh-1"),
        "the store holds no plaintext token"
    );
    connected_and_state_used(&gw, &state).await;
}

/// Google shows as connected, and `state` no longer works: a state works once.
async fn connected_and_state_used(gw: &Gateway, state: &str) {
    let (_, view) = gw.get("/v1/integrations/google").await;
    assert_eq!(
        view,
        json!({"provider": "google", "connected": true, "enabled": true})
    );
    let (status, body) = gw.oauth_callback("google", "good-code", state).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "invalid_state");
}

#[tokio::test]
async fn the_callback_may_land_on_another_instance() {
    let Setup { gw, config, .. } = setup(Backend::Postgres).await;
    let other = gw.another_instance_with_env(config, &FakeEnv).await;
    let state = authorize(&gw).await;
    other.oauth_callback_ok("google", "good-code", &state).await;
    // Seen from the instance that started it, whichever instance completed it.
    connected_and_state_used(&gw, &state).await;
}

#[tokio::test]
async fn callback_failures_say_what_went_wrong() {
    let Setup { gw, .. } = setup(Backend::Sqlite).await;
    let (status, body) = gw
        .get("/v1/integrations/google/callback?code=good-code&state=made-up")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "invalid_state");

    // A state started for Google does not complete Microsoft.
    let state = authorize(&gw).await;
    let (status, _) = gw.oauth_callback("microsoft", "good-code", &state).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let state = authorize(&gw).await;
    let (status, body) = gw.oauth_callback("google", "stale-code", &state).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(error_code(&body), "provider_error");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("Google"),
        "{body}"
    );

    let state = authorize(&gw).await;
    let (status, body) = gw
        .get(&format!(
            "/v1/integrations/google/callback?error=access_denied&state={state}"
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(common::error_message(&body).contains("access_denied"), "{body}");

    let (_, view) = gw.get("/v1/integrations/google").await;
    assert_eq!(view["connected"], false, "nothing failed half-way into connected");

    // Only a completed authorization connects.
    let (status, body) = gw
        .put("/v1/integrations/google", json!({"connected": true}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("/authorize"),
        "{body}"
    );
}

async fn a_turn_reads_the_inbox_and_drafts_a_reply(backend: Backend) {
    let Setup {
        gw, upstream, hits, ..
    } = setup(backend).await;
    connect(&gw).await;

    upstream.push(tool_calls(&[(
        "call_inbox",
        "google_check_inbox",
        &["{\"max_results\":", " 2}"],
    )]));
    upstream.push(tool_calls(&[(
        "call_get",
        "google_get_email",
        &["{\"id\": \"m1\"}"],
    )]));
    upstream.push(tool_calls(&[(
        "call_draft",
        "google_draft_email",
        &[
            "{\"to\": [\"ann@example.com\"], \"subject\": \"Friday\", ",
            "\"body\": \"Friday at 10 works.\", \"reply_to_id\": \"m1\"}",
        ],
    )]));
    upstream.push(text(["Drafted a reply to Ann."]));
    let sse = gw.chat("mail", "Reply to Ann's latest email").await;
    assert_eq!(upstream.calls(), 4);
    assert!(sse.of_type("tool-output-error").is_empty(), "{:?}", sse.events);
    let outputs: HashMap<&str, &Value> = sse
        .of_type("tool-output-available")
        .into_iter()
        .map(|e| (e["toolCallId"].as_str().unwrap(), &e["output"]))
        .collect();
    assert_eq!(outputs.len(), 3, "{:?}", sse.types());

    let inbox = outputs["call_inbox"];
    assert_eq!(inbox["total_count"], 12);
    assert_eq!(inbox["has_more"], true);
    let conversations = inbox["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 2);
    assert_eq!(conversations[0]["id"], "m1");
    assert_eq!(conversations[0]["thread_id"], "t-m1");
    assert_eq!(
        conversations[0]["from"],
        json!({"name": "Ann Example", "email": "ann@example.com"})
    );
    assert_eq!(conversations[0]["subject"], "Friday");
    assert_eq!(conversations[0]["unread"], true);

    let email = outputs["call_get"];
    assert_eq!(email["id"], "m1");
    assert_eq!(email["body_text"], "Hi,\nshall we meet on Friday at 10?\nAnn");
    assert_eq!(email["to"][0]["email"], "me@example.com");
    assert_eq!(email["is_unread"], true);

    let draft = outputs["call_draft"];
    assert_eq!(draft["draft_id"], "r-1");
    assert_eq!(draft["thread_id"], "t-m1");
    assert!(draft["created_at"].is_string());
    assert_eq!(sse.text(), "Drafted a reply to Ann.");

    // The model saw the same results.
    let last = upstream.last_request().unwrap();
    let tool_messages: Vec<&Value> = common::where_eq(&last["messages"], "role", "tool");
    assert_eq!(tool_messages.len(), 3);

    // The draft request: JSON, the fresh bearer token, a threaded RFC 5322 message.
    let posted = &hits.to("/gmail/v1/users/me/drafts")[0];
    assert_eq!(posted.bearer(), Some("Bearer fresh-token"));
    assert!(
        posted.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = serde_json::from_slice(&posted.body).unwrap();
    assert_eq!(body["message"]["threadId"], "t-m1");
    let raw = String::from_utf8(
        URL_SAFE_NO_PAD
            .decode(body["message"]["raw"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert!(raw.contains("To: ann@example.com\r\n"), "{raw}");
    assert!(raw.contains("Subject: Re: Friday\r\n"), "{raw}");
    assert!(raw.contains("In-Reply-To: <m1@mail.example.com>\r\n"), "{raw}");
    assert!(raw.contains("References: <m1@mail.example.com>\r\n"), "{raw}");
    assert!(raw.contains("Content-Transfer-Encoding: base64\r\n"), "{raw}");
    let (_, encoded_body) = raw.split_once("\r\n\r\n").unwrap();
    let body_text = STANDARD.decode(encoded_body.replace("\r\n", "")).unwrap();
    assert_eq!(String::from_utf8(body_text).unwrap(), "Friday at 10 works.");

    // The code exchange gave an already expired token: it was renewed once, before any Gmail call,
    // and every Gmail call carried the renewed one.
    let refreshes: Vec<_> = hits
        .to("/token")
        .into_iter()
        .filter(|h| h.form()["grant_type"] == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1);
    let gmail = hits.gmail();
    assert!(gmail.len() >= 5, "listing, two summaries, the message, the draft");
    assert!(gmail.iter().all(|h| h.bearer() == Some("Bearer fresh-token")));
}

common::on_both_backends!(a_turn_reads_the_inbox_and_drafts_a_reply);

#[tokio::test]
async fn disabling_hides_the_tools_and_disconnecting_revokes() {
    let Setup { gw, hits, .. } = setup(Backend::Sqlite).await;
    gw.post("/v1/threads", json!({"id": "t"})).await;
    let (_, preview) = gw.get("/v1/threads/t/prompt").await;
    assert!(google_tools(&preview).is_empty(), "not connected yet");

    connect(&gw).await;
    let (_, preview) = gw.get("/v1/threads/t/prompt").await;
    assert_eq!(
        google_tools(&preview),
        [
            "google_check_inbox",
            "google_search_emails",
            "google_get_email",
            "google_draft_email",
            "google_check_calendar"
        ]
    );

    // Connected but disabled: no tools, and the model is told why.
    let (status, view) = gw.put("/v1/integrations/google", json!({"enabled": false})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        view,
        json!({"provider": "google", "connected": true, "enabled": false})
    );
    let (_, preview) = gw.get("/v1/threads/t/prompt").await;
    assert!(google_tools(&preview).is_empty(), "{:?}", preview_tools(&preview));
    let stable = preview["stable"].as_str().unwrap();
    let context = &stable[stable.find("# Context").unwrap()..stable.find("# Tools").unwrap()];
    assert!(context.contains("GOOGLE_DISABLED"), "{context}");

    // Disconnecting revokes the grant at Google and forgets the tokens; the choice to disable stays.
    let (status, view) = gw.delete("/v1/integrations/google").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        view,
        json!({"provider": "google", "connected": false, "enabled": false})
    );
    let revoked = hits.to("/revoke");
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].form()["token"], "refresh-1");
    let sealed = sealed_google_tokens(&gw).await;
    assert_eq!(sealed, None);
    gw.put("/v1/integrations/google", json!({"enabled": true})).await;
    let (_, preview) = gw.get("/v1/threads/t/prompt").await;
    assert!(google_tools(&preview).is_empty(), "{:?}", preview_tools(&preview));
    assert!(!preview["stable"].as_str().unwrap().contains("GOOGLE_DISABLED"));
}

#[tokio::test]
async fn disconnecting_through_put_also_revokes() {
    let Setup { gw, hits, .. } = setup(Backend::Sqlite).await;
    connect(&gw).await;
    let (status, view) = gw
        .put("/v1/integrations/google", json!({"connected": false}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        view,
        json!({"provider": "google", "connected": false, "enabled": true})
    );
    assert_eq!(hits.to("/revoke").len(), 1);
}

#[tokio::test]
async fn with_tokens_the_state_names_the_user_who_authorized() {
    let Setup { gw, .. } = setup_with(Backend::Sqlite, AuthMode::Tokens).await;
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let user = gw.store.create_user(name).await.unwrap();
        tokens.push(gw.store.issue_token(&user.id).await.unwrap());
    }
    let (alice, bob) = (&tokens[0], &tokens[1]);

    let (status, _) = gw.get("/v1/integrations/google/authorize").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = gw
        .get_as("/v1/integrations/google/authorize", alice.as_str())
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let state = common::query_param(body["authorization_url"].as_str().unwrap(), "state").unwrap();

    // The browser arrives without any Authorization header.
    gw.oauth_callback_ok("google", "good-code", &state).await;

    let (_, view) = gw.get_as("/v1/integrations/google", alice.as_str()).await;
    assert_eq!(view["connected"], true);
    let (_, view) = gw.get_as("/v1/integrations/google", bob.as_str()).await;
    assert_eq!(
        view["connected"], false,
        "only the user who authorized is connected"
    );
}

#[tokio::test]
async fn a_user_holds_a_bounded_number_of_pending_authorizations() {
    let Setup { gw, .. } = setup(Backend::Sqlite).await;
    let first = authorize(&gw).await;
    let mut latest = String::new();
    for _ in 0..8 {
        latest = authorize(&gw).await;
    }
    let (status, _) = gw
        .get(&format!(
            "/v1/integrations/google/callback?code=good-code&state={first}"
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the oldest was dropped");
    let (status, body) = gw
        .get(&format!(
            "/v1/integrations/google/callback?code=good-code&state={latest}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
