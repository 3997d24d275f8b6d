//! Reading Gmail, and the request discipline (renewal, rate limits), through a loopback Gmail.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use promptgate_core::tools::ToolError;
use promptgate_tools::google::GoogleClient;
use serde_json::json;
use support::gmail::*;
use support::*;

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

#[tokio::test]
async fn a_message_deleted_after_listing_is_left_out() {
    let (client, _server) = google("good-token").await;
    let inbox = client.check_inbox(Some("VANISHING"), None, false).await.unwrap();
    let ids: Vec<&str> = inbox["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1"]);
    assert_eq!(inbox["total_count"], 2);
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
    use promptgate_core::tools::ToolExecutor;
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
}
