//! Gmail through a loopback server speaking the Gmail v1 JSON.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use promptgate_tools::ToolError;
use promptgate_tools::google::{DraftEmail, GoogleClient};
use serde_json::{Value, json};
use std::collections::HashMap;
use support::*;

fn b64(text: &str) -> String {
    URL_SAFE.encode(text)
}

fn unauthorized(headers: &HeaderMap) -> Option<Response> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    (auth == "Bearer stale-token").then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"code": 401, "message": "Invalid Credentials"}})),
        )
            .into_response()
    })
}

fn metadata(id: &str) -> Value {
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

fn full_message() -> Value {
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

fn html_only_message() -> Value {
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

fn original_for_reply() -> Value {
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

fn gmail_routes() -> Router {
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

async fn google(access_token: &str) -> (GoogleClient, FakeServer) {
    let server = serve(gmail_routes().merge(oauth_routes())).await;
    (google_client(&server, access_token).await, server)
}

#[tokio::test]
async fn inbox_follows_short_pages_and_reports_gmails_estimate() {
    let (client, server) = google("good-token").await;
    let inbox = client.check_inbox(None, Some(3), false).await.unwrap();

    let conversations = inbox["conversations"].as_array().unwrap();
    let ids: Vec<&str> = conversations.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["m1", "m2", "m3"]);
    assert_eq!(inbox["total_count"], 57);
    assert_eq!(inbox["has_more"], true);
    assert_eq!(
        conversations[0]["from"],
        json!({"name": "Ann Example", "email": "ann@example.com"})
    );
    assert_eq!(conversations[0]["subject"], "Subject of m1");
    assert_eq!(conversations[0]["snippet"], "Let's meet & talk");
    assert_eq!(conversations[0]["unread"], true);
    assert_eq!(conversations[0]["thread_id"], "t-m1");

    let lists = server.log.to_path("/gmail/v1/users/me/messages");
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0].query_value("labelIds"), Some("INBOX"));
    assert_eq!(lists[0].query_value("maxResults"), Some("3"));
    assert_eq!(lists[0].query_value("includeSpamTrash"), Some("false"));
    assert_eq!(lists[1].query_value("pageToken"), Some("p2"));
    assert_eq!(
        lists[1].query_value("maxResults"),
        Some("1"),
        "only what is still missing"
    );
    let meta = server.log.to_path("/gmail/v1/users/me/messages/m1");
    assert_eq!(
        meta[0].query_values("metadataHeaders"),
        ["From", "Subject", "Date"]
    );
    assert_eq!(meta[0].authorization.as_deref(), Some("Bearer good-token"));
}

#[tokio::test]
async fn inbox_caps_max_results_and_reports_an_empty_label() {
    let (client, server) = google("good-token").await;
    let empty = client.check_inbox(Some("EMPTY"), Some(500), true).await.unwrap();
    assert_eq!(
        empty,
        json!({"conversations": [], "total_count": 0, "has_more": false})
    );
    let list = &server.log.to_path("/gmail/v1/users/me/messages")[0];
    assert_eq!(list.query_value("maxResults"), Some("50"));
    assert_eq!(list.query_value("includeSpamTrash"), Some("true"));
}

#[tokio::test]
async fn search_passes_the_gmail_query_and_counts_without_estimate() {
    let (client, server) = google("good-token").await;
    let found = client
        .search_emails("from:ann has:attachment", None)
        .await
        .unwrap();
    assert_eq!(found["messages"].as_array().unwrap().len(), 1);
    assert_eq!(found["messages"][0]["id"], "m9");
    assert_eq!(found["total_count"], 1);
    assert_eq!(found["has_more"], false);
    let list = &server.log.to_path("/gmail/v1/users/me/messages")[0];
    assert_eq!(list.query_value("q"), Some("from:ann has:attachment"));
    assert_eq!(list.query_value("maxResults"), Some("20"));
    assert_eq!(list.query_value("labelIds"), None);
}

#[tokio::test]
async fn a_rejected_search_explains_why() {
    let (client, _server) = google("good-token").await;
    let err = client
        .search_emails("bad:query", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Gmail") && err.contains("Invalid search query"),
        "{err}"
    );
    assert!(!err.contains("good-token"));
    let empty = client.search_emails("  ", None).await.unwrap_err();
    assert!(matches!(empty, ToolError::InvalidArguments(_)));
}

#[tokio::test]
async fn get_email_prefers_the_plain_part_and_lists_attachments() {
    let (client, _server) = google("good-token").await;
    let email = client.get_email("m-full").await.unwrap();
    assert_eq!(email["id"], "m-full");
    assert_eq!(email["thread_id"], "t-full");
    assert_eq!(
        email["from"],
        json!({"name": "Ann Example", "email": "ann@example.com"})
    );
    assert_eq!(
        email["to"],
        json!([{"name": "", "email": "me@example.com"}, {"name": "Bob, Jr.", "email": "bob@example.com"}])
    );
    assert_eq!(email["cc"], json!([{"name": "", "email": "carol@example.com"}]));
    assert_eq!(email["subject"], "Quarterly report");
    assert_eq!(email["body_text"], "Hello Bob,\nthe numbers are in ÄÖÜ.");
    assert!(
        email.get("body_html").is_none(),
        "the markup is left out when a plain part exists"
    );
    assert_eq!(
        email["attachments"],
        json!([{"id": "att-1", "filename": "report.pdf", "mime_type": "application/pdf", "size_bytes": 52344}])
    );
    assert_eq!(email["labels"], json!(["INBOX", "UNREAD", "IMPORTANT"]));
    assert_eq!(email["is_unread"], true);
}

#[tokio::test]
async fn get_email_reduces_html_to_text_and_truncates_long_bodies() {
    let (client, _server) = google("good-token").await;
    let email = client.get_email("m-html").await.unwrap();
    let text = email["body_text"].as_str().unwrap();
    assert!(
        text.starts_with("# Headline") || text.starts_with("Headline"),
        "{}",
        &text[..40]
    );
    assert!(!text.contains("<p>"));
    assert!(text.ends_with("...[truncated]"));
    assert_eq!(text.chars().count(), 4000 + "...[truncated]".len());
    assert!(email["body_html"].as_str().unwrap().starts_with("<html>"));
    assert_eq!(email["is_unread"], false);
    assert!(email.get("cc").is_none());
}

#[tokio::test]
async fn get_email_for_an_unknown_id_says_so() {
    let (client, _server) = google("good-token").await;
    let err = client.get_email("missing").await.unwrap_err().to_string();
    assert!(err.contains("no message") && err.contains("missing"), "{err}");
}

/// Splits the raw message into header lines (unfolded) and the body.
fn parse_raw(raw: &str) -> (HashMap<String, String>, String) {
    let bytes = URL_SAFE_NO_PAD.decode(raw).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "every line ends in CRLF"
    );
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let unfolded = head.replace("\r\n ", " ");
    let headers = unfolded
        .split("\r\n")
        .map(|line| {
            let (name, value) = line.split_once(": ").unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect();
    (headers, body.to_owned())
}

fn decode_encoded_words(value: &str) -> String {
    value
        .split(' ')
        .map(|word| {
            let inner = word
                .strip_prefix("=?UTF-8?B?")
                .and_then(|w| w.strip_suffix("?="))
                .unwrap();
            STANDARD.decode(inner).unwrap()
        })
        .map(|bytes| String::from_utf8(bytes).unwrap())
        .collect()
}

#[tokio::test]
async fn a_reply_all_draft_is_threaded_and_carries_the_right_headers() {
    let (client, server) = google("good-token").await;
    let draft = DraftEmail {
        to: vec!["Ann Example <ann@example.com>".into()],
        subject: "Quarterly numbers – Grüße".into(),
        body: "Thanks!\nSee you at 10.".into(),
        cc: vec![],
        bcc: vec!["boss@example.com".into()],
        reply_to_id: Some("m-orig".into()),
        reply_all: true,
    };
    let created = client.draft_email(&draft).await.unwrap();
    assert_eq!(created["draft_id"], "r-123");
    assert_eq!(created["thread_id"], "t-orig");
    assert!(chrono::DateTime::parse_from_rfc3339(created["created_at"].as_str().unwrap()).is_ok());

    let posted = &server.log.to_path("/gmail/v1/users/me/drafts")[0];
    let body = posted.json();
    assert_eq!(body["message"]["threadId"], "t-orig");
    let (headers, text) = parse_raw(body["message"]["raw"].as_str().unwrap());
    assert_eq!(headers["To"], "\"Ann Example\" <ann@example.com>");
    assert_eq!(
        headers["Cc"], "dave@example.com, \"Carol\" <carol@example.com>",
        "everyone but me and Ann"
    );
    assert_eq!(headers["Bcc"], "boss@example.com");
    assert_eq!(
        decode_encoded_words(&headers["Subject"]),
        "Re: Quarterly numbers – Grüße"
    );
    assert_eq!(headers["In-Reply-To"], "<orig@mail.example.com>");
    assert_eq!(
        headers["References"],
        "<first@mail.example.com> <orig@mail.example.com>"
    );
    assert_eq!(headers["MIME-Version"], "1.0");
    assert_eq!(headers["Content-Type"], "text/plain; charset=UTF-8");
    assert_eq!(headers["Content-Transfer-Encoding"], "base64");
    let decoded = STANDARD.decode(text.replace("\r\n", "")).unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), "Thanks!\r\nSee you at 10.");
}

#[tokio::test]
async fn a_new_draft_has_no_thread_or_reply_headers() {
    let (client, server) = google("good-token").await;
    let draft = DraftEmail {
        to: vec!["a@example.com".into(), "b@example.com".into()],
        subject: "Hello".into(),
        body: "Hi".into(),
        ..DraftEmail::default()
    };
    let created = client.draft_email(&draft).await.unwrap();
    assert_eq!(created["thread_id"], "t-new");
    let body = server.log.to_path("/gmail/v1/users/me/drafts")[0].json();
    assert!(body["message"].get("threadId").is_none());
    let (headers, _) = parse_raw(body["message"]["raw"].as_str().unwrap());
    assert_eq!(headers["To"], "a@example.com, b@example.com");
    assert_eq!(headers["Subject"], "Hello");
    assert!(!headers.contains_key("In-Reply-To") && !headers.contains_key("References"));
    assert!(server.log.to_path("/gmail/v1/users/me/profile").is_empty());
}

#[tokio::test]
async fn drafts_with_bad_recipients_or_a_missing_original_are_refused() {
    let (client, server) = google("good-token").await;
    let no_recipient = DraftEmail {
        subject: "s".into(),
        body: "b".into(),
        ..DraftEmail::default()
    };
    assert!(matches!(
        client.draft_email(&no_recipient).await,
        Err(ToolError::InvalidArguments(_))
    ));
    let bad = DraftEmail {
        to: vec!["not an address".into()],
        ..no_recipient.clone()
    };
    assert!(matches!(
        client.draft_email(&bad).await,
        Err(ToolError::InvalidArguments(_))
    ));
    let orphan = DraftEmail {
        to: vec!["a@example.com".into()],
        reply_to_id: Some("missing".into()),
        ..no_recipient
    };
    let err = client.draft_email(&orphan).await.unwrap_err().to_string();
    assert!(err.contains("to reply to"), "{err}");
    assert!(server.log.to_path("/gmail/v1/users/me/drafts").is_empty());
}

#[tokio::test]
async fn a_rejected_token_is_renewed_once_and_the_call_retried() {
    let (client, server) = google("stale-token").await;
    let email = client.get_email("m-full").await.unwrap();
    assert_eq!(email["id"], "m-full");
    assert_eq!(server.log.to_path("/token").len(), 1);
    let calls = server.log.to_path("/gmail/v1/users/me/messages/m-full");
    let auth: Vec<_> = calls.iter().map(|c| c.authorization.clone().unwrap()).collect();
    assert_eq!(auth, ["Bearer stale-token", "Bearer fresh-token"]);
}

#[tokio::test]
async fn concurrent_calls_rejected_together_renew_the_token_once() {
    let (client, server) = google("stale-token").await;
    let (a, b, c) = tokio::join!(
        client.get_email("m-full"),
        client.get_email("m-html"),
        client.get_email("m-full")
    );
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    assert_eq!(server.log.to_path("/token").len(), 1);
}

#[tokio::test]
async fn an_unreachable_gmail_is_reported_as_a_connection_failure() {
    let server = serve(oauth_routes()).await;
    let mut client = google_client(&server, "good-token").await;
    client.gmail_base = "http://127.0.0.1:9/gmail/v1".to_owned();
    let err = client.get_email("m-full").await.unwrap_err().to_string();
    assert!(
        err.starts_with("the Gmail API request could not connect"),
        "{err}"
    );
    assert!(!err.contains("good-token"), "{err}");
}

#[tokio::test]
async fn a_token_rejected_twice_asks_to_reconnect() {
    let server = serve(
        Router::new()
            .route(
                "/gmail/v1/users/me/messages/{id}",
                get(|| async { StatusCode::UNAUTHORIZED }),
            )
            .merge(oauth_routes()),
    )
    .await;
    let client = google_client(&server, "t").await;
    let err = client.get_email("x").await.unwrap_err().to_string();
    assert!(err.contains("reconnect Google"), "{err}");
    assert_eq!(server.log.to_path("/token").len(), 1, "renewed exactly once");
    assert_eq!(server.log.to_path("/gmail/v1/users/me/messages/x").len(), 2);
}

fn rate_limited(retry_after: Option<&'static str>, status: StatusCode) -> Router {
    let calls = Arc::new(AtomicUsize::new(0));
    Router::new().route(
        "/gmail/v1/users/me/messages/{id}",
        get(move || {
            let calls = calls.clone();
            async move {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    let mut response = (status, "slow down").into_response();
                    if let Some(wait) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", wait.parse().unwrap());
                    }
                    return response;
                }
                Json(full_message()).into_response()
            }
        }),
    )
}

async fn client_for(router: Router) -> (GoogleClient, FakeServer) {
    let server = serve(router).await;
    (google_client(&server, "t").await, server)
}

#[tokio::test]
async fn a_short_retry_after_is_waited_out_once() {
    let (client, server) = client_for(rate_limited(Some("1"), StatusCode::TOO_MANY_REQUESTS)).await;
    let email = client.get_email("m-full").await.unwrap();
    assert_eq!(email["id"], "m-full");
    assert_eq!(server.log.to_path("/gmail/v1/users/me/messages/m-full").len(), 2);
}

#[tokio::test]
async fn a_long_retry_after_fails_at_once_with_the_wait() {
    let (client, server) = client_for(rate_limited(Some("120"), StatusCode::TOO_MANY_REQUESTS)).await;
    let err = client.get_email("m-full").await.unwrap_err().to_string();
    assert_eq!(err, "Gmail is rate limiting requests; try again in 120 s");
    assert_eq!(server.log.to_path("/gmail/v1/users/me/messages/m-full").len(), 1);
}

#[tokio::test]
async fn unavailable_without_retry_after_is_a_clear_error() {
    let (client, _server) = client_for(rate_limited(None, StatusCode::SERVICE_UNAVAILABLE)).await;
    let err = client.get_email("m-full").await.unwrap_err().to_string();
    assert_eq!(err, "Gmail is temporarily unavailable; try again later");
}

mod as_tools {
    use super::*;
    use promptgate_tools::ToolExecutor;
    use promptgate_tools::google::GoogleExecutor;

    async fn tools() -> (HashMap<&'static str, Arc<dyn ToolExecutor>>, FakeServer) {
        let (client, server) = google("good-token").await;
        (
            GoogleExecutor::all(Arc::new(client)).into_iter().collect(),
            server,
        )
    }

    #[tokio::test]
    async fn every_google_tool_is_offered_under_its_catalogue_name() {
        let (tools, _server) = tools().await;
        let mut names: Vec<_> = tools.keys().copied().collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "google_check_calendar",
                "google_check_inbox",
                "google_draft_email",
                "google_get_email",
                "google_search_emails"
            ]
        );
    }

    #[tokio::test]
    async fn the_inbox_tool_applies_the_documented_defaults() {
        let (tools, server) = tools().await;
        let output = tools["google_check_inbox"].call(json!({})).await.unwrap();
        assert_eq!(output.output["total_count"], 57);
        let list = &server.log.to_path("/gmail/v1/users/me/messages")[0];
        assert_eq!(list.query_value("labelIds"), Some("INBOX"));
        assert_eq!(list.query_value("maxResults"), Some("20"));
        assert_eq!(list.query_value("includeSpamTrash"), Some("false"));
    }

    #[tokio::test]
    async fn the_draft_tool_accepts_a_single_address_and_refuses_unknown_keys() {
        let (tools, server) = tools().await;
        let output = tools["google_draft_email"]
            .call(json!({"to": "a@example.com", "subject": "Hi", "body": "Hello", "cc": ["c@example.com"]}))
            .await
            .unwrap();
        assert_eq!(output.output["draft_id"], "r-123");
        let raw = server.log.to_path("/gmail/v1/users/me/drafts")[0].json()["message"]["raw"]
            .as_str()
            .unwrap()
            .to_owned();
        let (headers, _) = parse_raw(&raw);
        assert_eq!(headers["To"], "a@example.com");
        assert_eq!(headers["Cc"], "c@example.com");

        let err = tools["google_get_email"]
            .call(json!({"id": "m-full", "format": "raw"}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(ref reason) if reason.contains("format")),
            "{err}"
        );
    }
}
