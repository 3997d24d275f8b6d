//! Microsoft's consent card end to end: a loopback Microsoft (the identity platform's token
//! endpoint and the Graph mail endpoint the Microsoft tools use) refuses to renew the user's grant
//! (`invalid_grant`, as after the user removed the app's access), so the tool call brings the
//! `data-authorization` card, waits, and runs once the user connected Microsoft again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode as AxumStatus, Uri};
use axum::response::{IntoResponse, Response};
use promptgate_server::config::{IntegrationsConfig, OAuthEntry};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use crate::common::{self, Backend, Gateway};
use crate::integrations_turn::FakeEnv;
use crate::mcp_consent::{card, parts};

/// The Authorization headers the fake Graph received, in order.
#[derive(Clone, Default)]
struct GraphCalls(Arc<Mutex<Vec<String>>>);

/// The token endpoint and Graph of the Microsoft identity platform. The code `doomed-code` yields
/// an expired access token whose refresh token Microsoft no longer accepts; `good-code` yields
/// `fresh-token`, the only token Graph accepts.
async fn microsoft_api(
    State(calls): State<GraphCalls>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json = |status: u16, value: Value| {
        (AxumStatus::from_u16(status).unwrap(), axum::Json(value)).into_response()
    };
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(&body).into_owned().collect();
    match (method.as_str(), uri.path()) {
        ("POST", "/common/oauth2/v2.0/token") => {
            let grant = form.get("grant_type").map(String::as_str);
            let code = form.get("code").map(String::as_str);
            match (grant, code) {
                (Some("authorization_code"), Some("doomed-code")) => json(
                    200,
                    json!({
                        "token_type": "Bearer", "scope": "Mail.Read offline_access", "expires_in": 0,
                        "ext_expires_in": 0, "access_token": "first-token", "refresh_token": "refresh-revoked"
                    }),
                ),
                (Some("authorization_code"), Some("good-code")) => json(
                    200,
                    json!({
                        "token_type": "Bearer", "scope": "Mail.Read offline_access", "expires_in": 3599,
                        "ext_expires_in": 3599, "access_token": "fresh-token", "refresh_token": "refresh-1"
                    }),
                ),
                _ => json(
                    400,
                    json!({
                        "error": "invalid_grant",
                        "error_description": "AADSTS70000: The provided value for the 'refresh_token' is not valid.",
                        "error_codes": [70000]
                    }),
                ),
            }
        }
        ("GET", "/v1.0/me/messages") => {
            let bearer = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            calls.0.lock().unwrap().push(bearer.clone());
            if bearer != "Bearer fresh-token" {
                return json(
                    401,
                    json!({"error": {"code": "InvalidAuthenticationToken", "message": "Access token has expired or is not yet valid."}}),
                );
            }
            json(
                200,
                json!({"value": [{
                    "id": "m1", "subject": "Quarterly numbers", "bodyPreview": "See attached",
                    "from": {"emailAddress": {"name": "Ann Example", "address": "ann@example.com"}},
                    "toRecipients": [], "ccRecipients": [],
                    "receivedDateTime": "2026-12-01T09:00:00Z", "isRead": false, "hasAttachments": false,
                    "conversationId": "conv-1", "webLink": "https://outlook.example.com/m1"
                }], "@odata.nextLink": "https://graph.microsoft.com/v1.0/me/messages?%24top=5&%24skiptoken=p2"}),
            )
        }
        _ => json(404, json!({"error": {"code": "NotFound", "message": "not here"}})),
    }
}

/// The fake Microsoft on a loopback port of its own: its base URL and the Graph calls it saw.
async fn fake_microsoft() -> (String, GraphCalls) {
    let calls = GraphCalls::default();
    let app = Router::new().fallback(microsoft_api).with_state(calls.clone());
    (format!("http://{}", common::serve_router(app).await), calls)
}

fn microsoft_integrations(microsoft: &str) -> IntegrationsConfig {
    IntegrationsConfig {
        token_key_env: "TEST_TOKEN_KEY".into(),
        redirect_base_url: "http://127.0.0.1:8080/".into(),
        google: None,
        microsoft: Some(OAuthEntry {
            client_id: "ms-client".into(),
            client_secret_env: "TEST_MICROSOFT_SECRET".into(),
            auth_url: Some(format!("{microsoft}/common/oauth2/v2.0/authorize")),
            token_url: Some(format!("{microsoft}/common/oauth2/v2.0/token")),
            revoke_url: None,
            api_base_url: Some(format!("{microsoft}/v1.0")),
            calendar_base_url: None,
        }),
    }
}

/// The `state` of the authorization URL `url`.
fn state_of(url: &str) -> String {
    common::query_param(url, "state").unwrap()
}

#[tokio::test]
async fn microsoft_whose_refresh_token_stopped_working_brings_the_card_and_the_call_runs_after_reconnecting()
{
    common::init();
    let (microsoft, graph) = fake_microsoft().await;
    let (upstream, mut config) = common::single_user_scripted("").await;
    config.integrations = Some(microsoft_integrations(&microsoft));
    let gw = Gateway::start_with_env(Backend::Sqlite, config, &FakeEnv).await;
    // Connected with a grant Microsoft will refuse to renew.
    let (status, started) = gw.get("/v1/integrations/microsoft/authorize").await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let state = state_of(started["authorization_url"].as_str().unwrap());
    gw.oauth_callback_ok("microsoft", "doomed-code", &state).await;

    common::one_call(
        &upstream,
        "c1",
        "microsoft_list_messages",
        r#"{"top": 5, "skipToken": "", "filter": "", "includeBodyHtml": false}"#,
        "One email.",
    );
    let user = async {
        let shown = card(&gw, "mail").await;
        assert_eq!(shown["kind"], "integration");
        assert_eq!(shown["provider"], "microsoft");
        assert_eq!(shown["state"], "waiting");
        let url = Url::parse(shown["url"].as_str().unwrap()).unwrap();
        assert_eq!(url.path(), "/common/oauth2/v2.0/authorize");
        // The user consents at Microsoft; it sends the browser back with a good code.
        gw.oauth_callback_ok("microsoft", "good-code", &state_of(url.as_str()))
            .await;
    };
    let (sse, ()) = tokio::join!(gw.chat("mail", "my inbox?"), user);
    assert_eq!(sse.text(), "One email.");
    assert!(sse.of_type("tool-output-error").is_empty(), "{:?}", sse.types());
    let states: Vec<&Value> = parts(&sse).iter().map(|part| &part["state"]).collect();
    assert_eq!(states, [&json!("waiting"), &json!("authorized")]);
    let output = sse.of_type("tool-output-available")[0]["output"].to_string();
    assert!(output.contains("Quarterly numbers"), "{output}");
    let seen = graph.0.lock().unwrap().clone();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Bearer fresh-token"),
        "the call ran again with the new grant: {seen:?}"
    );
}
