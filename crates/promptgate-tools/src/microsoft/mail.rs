//! Outlook mail through Graph.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{GraphClient, OUTLOOK, next_skip_token, recipients};
use crate::oauth::http::{array_field, str_field};
use crate::oauth::text::{html_to_text, truncate_marked};
use promptgate_core::tools::ToolError;

const DEFAULT_TOP: u32 = 20;
const TOP_CAP: u32 = 50;
const BODY_CHAR_LIMIT: usize = 4000;
const SUMMARY_FIELDS: &str = "id,subject,from,toRecipients,ccRecipients,receivedDateTime,bodyPreview,isRead,hasAttachments,conversationId,webLink";

impl GraphClient {
    /// A page of the mailbox, newest first unless a filter is given, as
    /// `{messages, next_skip_token, has_more}`. `skip_token` is a previous page's `next_skip_token`.
    pub async fn list_messages(
        &self,
        top: Option<u32>,
        skip_token: Option<&str>,
        filter: Option<&str>,
        include_body_html: bool,
    ) -> Result<Value, ToolError> {
        let top = top
            .filter(|t| *t > 0)
            .unwrap_or(DEFAULT_TOP)
            .min(TOP_CAP)
            .to_string();
        let select = if include_body_html {
            format!("{SUMMARY_FIELDS},body")
        } else {
            SUMMARY_FIELDS.to_owned()
        };
        let mut query = vec![("$top", top.as_str()), ("$select", select.as_str())];
        let filter = filter.map(str::trim).filter(|f| !f.is_empty());
        match filter {
            Some(filter) => query.push(("$filter", filter)),
            // Graph refuses an $orderby on a property the $filter does not mention, so order only
            // unfiltered listings.
            None => query.push(("$orderby", "receivedDateTime desc")),
        }
        if let Some(token) = skip_token.map(str::trim).filter(|t| !t.is_empty()) {
            // Mail pages continue with a numeric `$skip`; other collections with an opaque `$skiptoken`.
            let key = if token.bytes().all(|b| b.is_ascii_digit()) {
                "$skip"
            } else {
                "$skiptoken"
            };
            query.push((key, token));
        }
        let page = self
            .get_json(OUTLOOK, &["me", "messages"], &query)
            .await?
            .json(OUTLOOK)?;
        let messages: Vec<Value> = array_field(&page, "value")
            .iter()
            .map(|message| {
                let mut summary = message_summary(message);
                if include_body_html {
                    summary["body_html"] = json!(body_of(message, true).0);
                }
                summary
            })
            .collect();
        let next = next_skip_token(&page);
        Ok(json!({ "messages": messages, "has_more": next.is_some(), "next_skip_token": next }))
    }

    /// One message with its body: reduced to text unless `include_body_html`, cut at 4000 characters.
    pub async fn get_message(&self, id: &str, include_body_html: bool) -> Result<Value, ToolError> {
        let id = id.trim();
        if id.is_empty() {
            return Err(ToolError::InvalidArguments("the message id is empty".to_owned()));
        }
        let select = format!("{SUMMARY_FIELDS},body");
        let reply = self
            .get_json(OUTLOOK, &["me", "messages", id], &[("$select", &select)])
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(ToolError::Failed(format!(
                "Outlook has no message with id {id:?}"
            )));
        }
        let message = reply.json(OUTLOOK)?;
        let mut details = message_summary(&message);
        let (body, content_type) = body_of(&message, include_body_html);
        details["body"] = json!(body);
        details["body_content_type"] = json!(content_type);
        Ok(details)
    }
}

fn message_summary(message: &Value) -> Value {
    let from = message.get("from").map(super::recipient).unwrap_or(Value::Null);
    json!({
        "id": str_field(message, "id"),
        "subject": str_field(message, "subject"),
        "from": from,
        "to": recipients(message, "toRecipients"),
        "cc": recipients(message, "ccRecipients"),
        "received_at": str_field(message, "receivedDateTime"),
        "preview": str_field(message, "bodyPreview"),
        "is_read": message.get("isRead").and_then(Value::as_bool).unwrap_or(false),
        "has_attachments": message.get("hasAttachments").and_then(Value::as_bool).unwrap_or(false),
        "conversation_id": str_field(message, "conversationId"),
        "web_link": str_field(message, "webLink"),
    })
}

/// The truncated body and whether it is `"html"` or `"text"`.
fn body_of(message: &Value, keep_html: bool) -> (String, &'static str) {
    let body = message.get("body").unwrap_or(&Value::Null);
    let content = str_field(body, "content");
    let is_html = str_field(body, "contentType").eq_ignore_ascii_case("html");
    let (text, kind) = match (is_html, keep_html) {
        (true, true) => (content.to_owned(), "html"),
        (true, false) => (html_to_text(content), "text"),
        (false, _) => (content.to_owned(), "text"),
    };
    (truncate_marked(&text, BODY_CHAR_LIMIT).0, kind)
}
