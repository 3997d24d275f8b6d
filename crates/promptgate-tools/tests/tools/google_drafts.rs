//! Gmail drafts through a loopback Gmail: the raw message is decoded and checked header by header.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use promptgate_core::tools::{ToolError, ToolExecutor};
use promptgate_tools::google::{DraftEmail, GoogleExecutor};
use serde_json::json;
use support::gmail::*;

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
async fn the_draft_tool_accepts_a_single_address_and_refuses_unknown_keys() {
    let (client, server) = google("good-token").await;
    let tools: HashMap<&str, Arc<dyn ToolExecutor>> =
        GoogleExecutor::all(Arc::new(client)).into_iter().collect();
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
