//! A loopback Gmail: listings with pages and estimates, metadata and full messages, drafts.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use promptgate_tools::google::GoogleClient;
use serde_json::{Value, json};

use super::{FakeServer, google_client, oauth_routes, serve};

pub fn b64(text: &str) -> String {
    URL_SAFE.encode(text)
}

pub fn unauthorized(headers: &HeaderMap) -> Option<Response> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    (auth == "Bearer stale-token").then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"code": 401, "message": "Invalid Credentials"}})),
        )
            .into_response()
    })
}

pub fn metadata(id: &str) -> Value {
    json!({
        "id": id, "threadId": format!("t-{id}"), "labelIds": ["INBOX", "UNREAD"],
        "snippet": "Let&#39;s meet &amp; talk",
        "payload": {"headers": [
            {"name": "From", "value": "\"Ann Example\" <ann@example.com>"},
            {"name": "Subject", "value": format!("Subject of {id}")},
            {"name": "Date", "value": "Tue, 1 Dec 2026 09:00:00 +0000"}
        ]}
    })
}

pub fn full_message() -> Value {
    json!({
        "id": "m-full", "threadId": "t-full", "labelIds": ["INBOX", "UNREAD", "IMPORTANT"],
        "payload": {
            "mimeType": "multipart/mixed", "filename": "",
            "headers": [
                {"name": "From", "value": "Ann Example <ann@example.com>"},
                {"name": "To", "value": "me@example.com, \"Bob, Jr.\" <bob@example.com>"},
                {"name": "Cc", "value": "carol@example.com"},
                {"name": "Subject", "value": "Quarterly report"},
                {"name": "Date", "value": "Tue, 1 Dec 2026 09:00:00 +0000"}
            ],
            "body": {"size": 0},
            "parts": [
                {"mimeType": "multipart/alternative", "filename": "", "body": {"size": 0}, "parts": [
                    {"mimeType": "text/plain", "filename": "", "body": {"size": 30, "data": b64("Hello Bob,\nthe numbers are in ÄÖÜ.")}},
                    {"mimeType": "text/html", "filename": "", "body": {"size": 60, "data": b64("<p>Hello Bob,</p><p>the numbers are in.</p>")}}
                ]},
                {"mimeType": "application/pdf", "filename": "report.pdf", "body": {"attachmentId": "att-1", "size": 52344}}
            ]
        }
    })
}

pub fn html_only_message() -> Value {
    let long = "word ".repeat(1200);
    json!({
        "id": "m-html", "threadId": "t-html", "labelIds": ["INBOX"],
        "payload": {
            "mimeType": "text/html", "filename": "",
            "headers": [{"name": "From", "value": "news@example.com"}, {"name": "Subject", "value": "News"}],
            "body": {"data": b64(&format!("<html><body><h1>Headline</h1><p>{long}</p></body></html>"))}
        }
    })
}

pub fn original_for_reply() -> Value {
    json!({
        "id": "m-orig", "threadId": "t-orig",
        "payload": {"headers": [
            {"name": "Message-ID", "value": "<orig@mail.example.com>"},
            {"name": "References", "value": "<first@mail.example.com>"},
            {"name": "From", "value": "Ann Example <ann@example.com>"},
            {"name": "To", "value": "me@example.com, dave@example.com"},
            {"name": "Cc", "value": "Carol <carol@example.com>, ME@example.com"}
        ]}
    })
}

pub fn gmail_routes() -> Router {
    Router::new()
        .route(
            "/gmail/v1/users/me/messages",
            get(|headers: HeaderMap, Query(q): Query<Vec<(String, String)>>| async move {
                if let Some(denied) = unauthorized(&headers) {
                    return denied;
                }
                let q: HashMap<_, _> = q.into_iter().collect();
                let page = match (q.get("labelIds").map(String::as_str), q.get("pageToken").map(String::as_str)) {
                    (Some("EMPTY"), _) => json!({"resultSizeEstimate": 0}),
                    (Some("VANISHING"), _) => json!({"messages": [{"id": "m1"}, {"id": "missing"}], "resultSizeEstimate": 2}),
                    (Some(_), None) => json!({"messages": [{"id": "m1", "threadId": "t-m1"}, {"id": "m2", "threadId": "t-m2"}],
                                              "nextPageToken": "p2", "resultSizeEstimate": 57}),
                    (Some(_), Some("p2")) => json!({"messages": [{"id": "m3", "threadId": "t-m3"}, {"id": "m4", "threadId": "t-m4"}],
                                                    "nextPageToken": "p3", "resultSizeEstimate": 57}),
                    _ if q.get("q").map(String::as_str) == Some("bad:query") => {
                        return (StatusCode::BAD_REQUEST, Json(json!({"error": {"code": 400, "message": "Invalid search query"}})))
                            .into_response();
                    }
                    _ => json!({"messages": [{"id": "m9", "threadId": "t-m9"}]}),
                };
                Json(page).into_response()
            }),
        )
        .route(
            "/gmail/v1/users/me/messages/{id}",
            get(|headers: HeaderMap, Path(id): Path<String>, Query(q): Query<Vec<(String, String)>>| async move {
                if let Some(denied) = unauthorized(&headers) {
                    return denied;
                }
                let format = q.iter().find(|(k, _)| k == "format").map(|(_, v)| v.as_str());
                match (id.as_str(), format) {
                    ("m-full", Some("full")) => Json(full_message()).into_response(),
                    ("m-html", Some("full")) => Json(html_only_message()).into_response(),
                    ("m-orig", Some("metadata")) => Json(original_for_reply()).into_response(),
                    (id, Some("metadata")) if id.starts_with('m') && id != "missing" => Json(metadata(id)).into_response(),
                    _ => (StatusCode::NOT_FOUND, Json(json!({"error": {"code": 404, "message": "Requested entity was not found."}})))
                        .into_response(),
                }
            }),
        )
        .route("/gmail/v1/users/me/profile", get(|| async { Json(json!({"emailAddress": "me@example.com"})) }))
        .route(
            "/gmail/v1/users/me/drafts",
            post(|Json(body): Json<Value>| async move {
                let thread = body["message"]["threadId"].as_str().unwrap_or("t-new").to_owned();
                Json(json!({"id": "r-123", "message": {"id": "m-new", "threadId": thread, "labelIds": ["DRAFT"]}}))
            }),
        )
}

/// Gmail and the token endpoint on one server, with a client whose access token is `access_token`;
/// `stale-token` is answered with 401.
pub async fn google(access_token: &str) -> (GoogleClient, FakeServer) {
    let server = serve(gmail_routes().merge(oauth_routes())).await;
    (google_client(&server, access_token).await, server)
}
