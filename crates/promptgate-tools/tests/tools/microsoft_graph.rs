//! Outlook mail and OneDrive through a loopback server speaking the Microsoft Graph v1.0 JSON.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use promptgate_core::tools::ToolError;
use promptgate_tools::microsoft::GraphClient;
use serde_json::{Value, json};
use std::collections::HashMap;
use support::*;

fn graph_message(id: &str, with_body: bool) -> Value {
    let mut message = json!({
        "id": id, "subject": format!("About {id}"), "bodyPreview": "Short preview",
        "from": {"emailAddress": {"name": "Ann Example", "address": "ann@example.com"}},
        "toRecipients": [{"emailAddress": {"name": "Me", "address": "me@example.com"}}],
        "ccRecipients": [],
        "receivedDateTime": "2026-12-01T09:00:00Z", "isRead": false, "hasAttachments": true,
        "conversationId": "conv-1", "webLink": "https://outlook.example.com/m"
    });
    if with_body {
        message["body"] =
            json!({"contentType": "html", "content": "<html><body><p>Hello <b>there</b></p></body></html>"});
    }
    message
}

fn not_found() -> axum::response::Response {
    (StatusCode::NOT_FOUND, Json(json!({"error": {"code": "ErrorItemNotFound", "message": "The specified object was not found in the store."}})))
        .into_response()
}

fn graph_routes() -> Router {
    Router::new()
        .route(
            "/v1.0/me/messages",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                let with_body = q.get("$select").is_some_and(|s| s.split(',').any(|f| f == "body"));
                if q.get("$skip").map(String::as_str) == Some("2") {
                    return Json(json!({"value": [graph_message("m3", with_body)]}));
                }
                Json(json!({
                    "value": [graph_message("m1", with_body), graph_message("m2", with_body)],
                    "@odata.nextLink": "https://graph.microsoft.com/v1.0/me/messages?%24top=2&%24skip=2"
                }))
            }),
        )
        .route(
            "/v1.0/me/messages/{id}",
            get(|Path(id): Path<String>| async move {
                if id == "m1" { Json(graph_message("m1", true)).into_response() } else { not_found() }
            }),
        )
        .route(
            "/v1.0/me/drive/root/{search}",
            get(|Path(search): Path<String>| async move {
                Json(json!({
                    "@odata.nextLink": "https://graph.microsoft.com/v1.0/me/drive/root/search(q='x')?$skiptoken=abc",
                    "value": [
                        {"id": "f1", "name": "budget.xlsx", "size": 2048,
                         "file": {"mimeType": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
                         "createdDateTime": "2026-01-01T00:00:00Z", "lastModifiedDateTime": "2026-02-01T00:00:00Z",
                         "webUrl": "https://onedrive.example.com/f1", "parentReference": {"path": "/drive/root:/Finance"}},
                        {"id": "d1", "name": "Archive", "size": 0, "folder": {"childCount": 3},
                         "createdDateTime": "2026-01-01T00:00:00Z", "lastModifiedDateTime": "2026-01-01T00:00:00Z",
                         "webUrl": "https://onedrive.example.com/d1", "parentReference": {"path": "/drive/root:"},
                         "searchedFor": search}
                    ]
                }))
            }),
        )
        .route(
            "/v1.0/me/drive/items/{id}",
            get(|Path(id): Path<String>| async move {
                let item = |name: &str, mime: &str, size: u64| {
                    Json(json!({"id": id, "name": name, "size": size, "file": {"mimeType": mime}})).into_response()
                };
                match id.as_str() {
                    "f-text" => item("notes.txt", "text/plain", 11),
                    "f-long" => item("long.md", "application/octet-stream", 40_000),
                    "f-pdf" => item("contract.pdf", "application/pdf", 90_000),
                    "f-gone" => item("gone.txt", "text/plain", 1),
                    "f-denied" => (StatusCode::FORBIDDEN, Json(json!({"error": {"code": "accessDenied", "message": "Access denied"}})))
                        .into_response(),
                    _ => not_found(),
                }
            }),
        )
        .route(
            "/v1.0/me/drive/items/{id}/content",
            get(|Path(id): Path<String>| async move {
                match id.as_str() {
                    "f-text" => ([("content-type", "text/plain; charset=utf-8")], "hello world".to_owned()).into_response(),
                    "f-long" => ([("content-type", "text/markdown")], "ä".repeat(20_000)).into_response(),
                    _ => not_found(),
                }
            }),
        )
}

async fn graph() -> (GraphClient, FakeServer) {
    let server = serve(graph_routes()).await;
    (graph_client(&server, "ms-token").await, server)
}

#[tokio::test]
async fn listing_messages_pages_with_the_token_graph_returns() {
    let (client, server) = graph().await;
    let first = client.list_messages(Some(2), None, None, false).await.unwrap();
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0]["from"],
        json!({"name": "Ann Example", "email": "ann@example.com"})
    );
    assert_eq!(messages[0]["preview"], "Short preview");
    assert_eq!(messages[0]["is_read"], false);
    assert!(messages[0].get("body_html").is_none());
    assert_eq!(first["has_more"], true);
    assert_eq!(first["next_skip_token"], "2");

    let second = client
        .list_messages(Some(2), Some("2"), None, false)
        .await
        .unwrap();
    assert_eq!(second["messages"][0]["id"], "m3");
    assert_eq!(second["has_more"], false);

    let requests = server.log.to_path("/v1.0/me/messages");
    assert_eq!(requests[0].query_value("$top"), Some("2"));
    assert_eq!(requests[0].query_value("$orderby"), Some("receivedDateTime desc"));
    assert_eq!(requests[1].query_value("$skip"), Some("2"));
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer ms-token"));
}

#[tokio::test]
async fn a_filtered_listing_with_bodies_caps_top_and_drops_the_ordering() {
    let (client, server) = graph().await;
    let result = client
        .list_messages(Some(500), Some("opaque-token"), Some("isRead eq false"), true)
        .await
        .unwrap();
    assert!(
        result["messages"][0]["body_html"]
            .as_str()
            .unwrap()
            .contains("<b>there</b>")
    );
    let request = &server.log.to_path("/v1.0/me/messages")[0];
    assert_eq!(request.query_value("$top"), Some("50"));
    assert_eq!(request.query_value("$filter"), Some("isRead eq false"));
    assert_eq!(request.query_value("$orderby"), None);
    assert_eq!(request.query_value("$skiptoken"), Some("opaque-token"));
}

#[tokio::test]
async fn a_message_body_is_text_unless_html_is_asked_for() {
    let (client, _server) = graph().await;
    let text = client.get_message("m1", false).await.unwrap();
    assert_eq!(text["body_content_type"], "text");
    let body = text["body"].as_str().unwrap();
    assert!(
        body.contains("Hello") && body.contains("there") && !body.contains('<'),
        "{body}"
    );
    assert_eq!(text["subject"], "About m1");

    let html = client.get_message("m1", true).await.unwrap();
    assert_eq!(html["body_content_type"], "html");
    assert!(html["body"].as_str().unwrap().contains("<b>there</b>"));

    let err = client.get_message("nope", false).await.unwrap_err().to_string();
    assert!(err.contains("no message"), "{err}");
}

#[tokio::test]
async fn onedrive_search_quotes_the_query_and_shapes_files() {
    let (client, server) = graph().await;
    let found = client.search_onedrive("budget 2026's", Some(80)).await.unwrap();
    let files = found["files"].as_array().unwrap();
    assert_eq!(
        files[0],
        json!({
            "id": "f1", "name": "budget.xlsx",
            "mime_type": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "size_bytes": 2048, "created_time": "2026-01-01T00:00:00Z", "modified_time": "2026-02-01T00:00:00Z",
            "web_url": "https://onedrive.example.com/f1", "is_folder": false, "path": "/Finance/budget.xlsx"
        })
    );
    assert_eq!(files[1]["is_folder"], true);
    assert_eq!(files[1]["path"], "/Archive");
    assert_eq!(found["total_count"], 2);
    assert_eq!(found["has_more"], true);

    let request = &server.log.all()[0];
    assert_eq!(request.path, "/v1.0/me/drive/root/search(q='budget%202026''s')");
    assert_eq!(request.query_value("$top"), Some("50"));
}

#[tokio::test]
async fn a_text_file_comes_back_as_content() {
    let (client, _server) = graph().await;
    let file = client.get_onedrive_file_content("f-text").await.unwrap();
    assert_eq!(file["content"], "hello world");
    assert_eq!(file["isTruncated"], false);
    assert_eq!(file["extraction_failed"], false);
    assert_eq!(file["name"], "notes.txt");
    assert_eq!(file["mime_type"], "text/plain");
    assert_eq!(file["size_bytes"], 11);
}

#[tokio::test]
async fn a_long_text_file_is_truncated_with_the_marker() {
    let (client, _server) = graph().await;
    let file = client.get_onedrive_file_content("f-long").await.unwrap();
    let content = file["content"].as_str().unwrap();
    assert_eq!(content, format!("{}...[truncated]", "ä".repeat(16_000)));
    assert_eq!(file["isTruncated"], true);
}

#[tokio::test]
async fn unreadable_files_say_why() {
    let (client, _server) = graph().await;
    let pdf = client.get_onedrive_file_content("f-pdf").await.unwrap();
    assert_eq!(pdf["content"], Value::Null);
    assert_eq!(pdf["extraction_failed"], true);
    assert_eq!(pdf["failure_reason"], "unsupported_type");
    assert_eq!(pdf["file_category"], "pdf");

    let denied = client.get_onedrive_file_content("f-denied").await.unwrap();
    assert_eq!(denied["failure_reason"], "access_denied");
    assert_eq!(denied["content"], Value::Null);

    let missing = client.get_onedrive_file_content("f-missing").await.unwrap();
    assert_eq!(missing["failure_reason"], "not_found");

    let vanished = client.get_onedrive_file_content("f-gone").await.unwrap();
    assert_eq!(
        vanished["failure_reason"], "not_found",
        "content gone between metadata and download"
    );

    assert!(matches!(
        client.get_onedrive_file_content(" ").await,
        Err(ToolError::InvalidArguments(_))
    ));
}

#[tokio::test]
async fn an_id_cannot_reach_another_graph_path() {
    let (client, server) = graph().await;
    let _ = client
        .get_onedrive_file_content("../../me/messages")
        .await
        .unwrap();
    let request = &server.log.all()[0];
    // The slash stays inside the id segment.
    assert!(
        request.path.starts_with("/v1.0/me/drive/items/") && request.path.contains("%2F"),
        "{}",
        request.path
    );
}

#[tokio::test]
async fn graph_rejecting_the_token_gets_one_renewal_and_a_retry() {
    let router = Router::new()
        .route(
            "/v1.0/me/messages/{id}",
            get(|headers: axum::http::HeaderMap| async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                if auth == "Bearer fresh-token" {
                    Json(graph_message("m1", true)).into_response()
                } else {
                    (
                        StatusCode::UNAUTHORIZED,
                        Json(json!({"error": {"code": "InvalidAuthenticationToken"}})),
                    )
                        .into_response()
                }
            }),
        )
        .merge(oauth_routes());
    let server = serve(router).await;
    let client = graph_client(&server, "stale-token").await;
    let message = client.get_message("m1", false).await.unwrap();
    assert_eq!(message["id"], "m1");
    let renewals = server.log.to_path("/token");
    assert_eq!(renewals.len(), 1);
    assert_eq!(renewals[0].form()["refresh_token"], "refresh-1");
    let auth: Vec<_> = server
        .log
        .to_path("/v1.0/me/messages/m1")
        .iter()
        .map(|r| r.authorization.clone().unwrap())
        .collect();
    assert_eq!(auth, ["Bearer stale-token", "Bearer fresh-token"]);
}

mod as_tools {
    use super::*;
    use promptgate_core::tools::ToolExecutor;
    use promptgate_tools::microsoft::MicrosoftExecutor;
    use std::sync::Arc;

    async fn tools() -> (HashMap<&'static str, Arc<dyn ToolExecutor>>, FakeServer) {
        let (client, server) = graph().await;
        (
            MicrosoftExecutor::all(Arc::new(client)).into_iter().collect(),
            server,
        )
    }

    #[tokio::test]
    async fn the_listing_tool_treats_empty_strings_as_absent() {
        let (tools, server) = tools().await;
        let output = tools["microsoft_list_messages"]
            .call(json!({"top": "5", "skipToken": "", "filter": "", "includeBodyHtml": false}))
            .await
            .unwrap();
        assert_eq!(output.output["messages"].as_array().unwrap().len(), 2);
        let request = &server.log.to_path("/v1.0/me/messages")[0];
        assert_eq!(request.query_value("$top"), Some("5"));
        assert_eq!(request.query_value("$filter"), None);
        assert_eq!(request.query_value("$skiptoken"), None);
    }

    #[tokio::test]
    async fn the_file_tool_returns_the_failure_shape_for_a_pdf() {
        let (tools, _server) = tools().await;
        let output = tools["microsoft_get_onedrive_file_content"]
            .call(json!({"file_id": "f-pdf"}))
            .await
            .unwrap();
        assert_eq!(output.output["file_category"], "pdf");
        let err = tools["microsoft_search_onedrive"]
            .call(json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(ref reason) if reason.contains("query")),
            "{err}"
        );
    }
}
