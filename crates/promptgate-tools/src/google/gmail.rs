//! Listing, searching and reading Gmail messages.

use futures::StreamExt as _;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::address::{parse_mailbox, parse_mailbox_list};
use super::mime::{extract_content, header};
use super::{GMAIL, GoogleClient};
use crate::oauth::http::{array_field, str_field};
use crate::oauth::text::{decode_basic_entities, html_to_text, truncate_marked};
use promptgate_core::tools::ToolError;

pub(crate) const DEFAULT_MAX_RESULTS: u32 = 20;
pub(crate) const MAX_RESULTS_CAP: u32 = 50;
/// Email bodies handed to the model are cut here.
pub(crate) const BODY_CHAR_LIMIT: usize = 4000;
/// Gmail may return short pages; we follow `nextPageToken` at most this often.
const MAX_LIST_PAGES: usize = 5;
/// Metadata requests in flight at once for one listing.
const METADATA_CONCURRENCY: usize = 5;

/// Which messages a listing asks for.
enum Selection<'a> {
    Label {
        label: &'a str,
        include_spam_trash: bool,
    },
    Query(&'a str),
}

struct Listing {
    ids: Vec<String>,
    estimate: Option<u64>,
}

impl GoogleClient {
    /// The newest messages under `label` (default `INBOX`), as
    /// `{conversations, total_count, has_more}`.
    pub async fn check_inbox(
        &self,
        label: Option<&str>,
        max_results: Option<u32>,
        include_spam_trash: bool,
    ) -> Result<Value, ToolError> {
        let label = label.map(str::trim).filter(|l| !l.is_empty()).unwrap_or("INBOX");
        let max = clamp_max_results(max_results);
        let listing = self
            .list_ids(
                Selection::Label {
                    label,
                    include_spam_trash,
                },
                max,
            )
            .await?;
        let (summaries, total_count, has_more) = self.summarise(listing).await?;
        Ok(json!({ "conversations": summaries, "total_count": total_count, "has_more": has_more }))
    }

    /// Messages matching a Gmail search query, as `{messages, total_count, has_more}`.
    pub async fn search_emails(&self, query: &str, max_results: Option<u32>) -> Result<Value, ToolError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments(
                "the search query is empty".to_owned(),
            ));
        }
        let max = clamp_max_results(max_results);
        let listing = self.list_ids(Selection::Query(query), max).await?;
        let (summaries, total_count, has_more) = self.summarise(listing).await?;
        Ok(json!({ "messages": summaries, "total_count": total_count, "has_more": has_more }))
    }

    /// One message with its readable body, recipients, attachments and labels.
    pub async fn get_email(&self, id: &str) -> Result<Value, ToolError> {
        let id = non_empty_id(id)?;
        let reply = self
            .gmail_get(&["users", "me", "messages", id], &[("format", "full")])
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(ToolError::Failed(format!("Gmail has no message with id {id:?}")));
        }
        let message = reply.json(GMAIL)?;
        Ok(message_details(&message))
    }

    async fn list_ids(&self, selection: Selection<'_>, max: u32) -> Result<Listing, ToolError> {
        let mut ids = Vec::new();
        let mut estimate = None;
        let mut page_token: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let remaining = (max as usize - ids.len()).to_string();
            let mut query = vec![("maxResults", remaining.as_str())];
            match &selection {
                Selection::Label {
                    label,
                    include_spam_trash,
                } => {
                    query.push(("labelIds", label));
                    query.push((
                        "includeSpamTrash",
                        if *include_spam_trash { "true" } else { "false" },
                    ));
                }
                Selection::Query(q) => query.push(("q", q)),
            }
            if let Some(token) = &page_token {
                query.push(("pageToken", token));
            }
            let page = self.gmail_get_json(&["users", "me", "messages"], &query).await?;
            if estimate.is_none() {
                estimate = page.get("resultSizeEstimate").and_then(Value::as_u64);
            }
            let listed = array_field(&page, "messages");
            ids.extend(
                listed
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .take(max as usize - ids.len())
                    .map(str::to_owned),
            );
            page_token = page
                .get("nextPageToken")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if ids.len() >= max as usize || page_token.is_none() || listed.is_empty() {
                break;
            }
        }
        Ok(Listing { ids, estimate })
    }

    /// Fetches each listed message's headers and snippet; totals follow Gmail's estimate.
    async fn summarise(&self, listing: Listing) -> Result<(Vec<Value>, u64, bool), ToolError> {
        // Owned ids: a future borrowing from the iterator would not be `Send` for every lifetime.
        let summaries: Vec<Result<Option<Value>, ToolError>> = futures::stream::iter(listing.ids)
            .map(|id| async move { self.message_summary(&id).await })
            .buffered(METADATA_CONCURRENCY)
            .collect()
            .await;
        let summaries: Vec<Value> = summaries
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        let count = summaries.len() as u64;
        let total_count = listing.estimate.unwrap_or(count);
        Ok((summaries, total_count, total_count > count))
    }

    /// `None` when the message vanished (deleted or moved) between the listing and this request.
    async fn message_summary(&self, id: &str) -> Result<Option<Value>, ToolError> {
        let query = [
            ("format", "metadata"),
            ("metadataHeaders", "From"),
            ("metadataHeaders", "Subject"),
            ("metadataHeaders", "Date"),
        ];
        let reply = self.gmail_get(&["users", "me", "messages", id], &query).await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let message = reply.json(GMAIL)?;
        let payload = message.get("payload").unwrap_or(&Value::Null);
        Ok(Some(json!({
            "id": message.get("id").and_then(Value::as_str).unwrap_or(id),
            "thread_id": str_field(&message, "threadId"),
            "from": header(payload, "From").and_then(parse_mailbox).map(|m| m.to_json()).unwrap_or(Value::Null),
            "subject": header(payload, "Subject").unwrap_or_default(),
            "date": header(payload, "Date").unwrap_or_default(),
            "snippet": decode_basic_entities(str_field(&message, "snippet")),
            "unread": has_label(&message, "UNREAD"),
        })))
    }
}

fn message_details(message: &Value) -> Value {
    let payload = message.get("payload").unwrap_or(&Value::Null);
    let content = extract_content(payload);
    let mailboxes = |name: &str| -> Vec<Value> {
        header(payload, name)
            .map(parse_mailbox_list)
            .unwrap_or_default()
            .iter()
            .map(|m| m.to_json())
            .collect()
    };
    let body_text = match (&content.plain, &content.html) {
        (Some(plain), _) => plain.clone(),
        (None, Some(html)) => html_to_text(html),
        (None, None) => String::new(),
    };
    let mut details = json!({
        "id": str_field(message, "id"),
        "thread_id": str_field(message, "threadId"),
        "from": header(payload, "From").and_then(parse_mailbox).map(|m| m.to_json()).unwrap_or(Value::Null),
        "to": mailboxes("To"),
        "subject": header(payload, "Subject").unwrap_or_default(),
        "date": header(payload, "Date").unwrap_or_default(),
        "body_text": truncate_marked(&body_text, BODY_CHAR_LIMIT).0,
        "attachments": content.attachments,
        "labels": message.get("labelIds").cloned().unwrap_or_else(|| json!([])),
        "is_unread": has_label(message, "UNREAD"),
    });
    let cc = mailboxes("Cc");
    if !cc.is_empty() {
        details["cc"] = Value::Array(cc);
    }
    // The markup only matters when there was no plain part: the text above was derived from it.
    if content.plain.is_none()
        && let Some(html) = &content.html
    {
        details["body_html"] = Value::String(truncate_marked(html, BODY_CHAR_LIMIT).0);
    }
    details
}

pub(crate) fn clamp_max_results(requested: Option<u32>) -> u32 {
    requested.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_CAP)
}

pub(crate) fn non_empty_id(id: &str) -> Result<&str, ToolError> {
    let id = id.trim();
    if id.is_empty() {
        return Err(ToolError::InvalidArguments("the message id is empty".to_owned()));
    }
    Ok(id)
}

fn has_label(message: &Value, label: &str) -> bool {
    message
        .get("labelIds")
        .and_then(Value::as_array)
        .is_some_and(|labels| labels.iter().any(|l| l.as_str() == Some(label)))
}
