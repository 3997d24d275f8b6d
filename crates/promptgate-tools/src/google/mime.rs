//! Reading Gmail's `format=full` payload tree: headers, the readable body and the attachments.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT;
use serde_json::{Value, json};

/// Multipart trees nest a few levels in practice; this bounds a hostile one.
const MAX_DEPTH: usize = 16;
/// More attachments than this are summarised by count only.
const MAX_ATTACHMENTS: usize = 50;

#[derive(Debug, Default)]
pub(crate) struct MessageContent {
    pub plain: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<Value>,
}

/// Walks the payload depth-first; the first `text/plain` and `text/html` parts that are not
/// attachments become the bodies.
pub(crate) fn extract_content(payload: &Value) -> MessageContent {
    let mut content = MessageContent::default();
    walk(payload, 0, &mut content);
    content
}

fn walk(part: &Value, depth: usize, content: &mut MessageContent) {
    if depth > MAX_DEPTH {
        return;
    }
    let mime_type = part
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let filename = part.get("filename").and_then(Value::as_str).unwrap_or_default();
    let body = part.get("body");
    if !filename.is_empty() {
        if content.attachments.len() < MAX_ATTACHMENTS {
            content.attachments.push(json!({
                "id": body.and_then(|b| b.get("attachmentId")).and_then(Value::as_str).unwrap_or_default(),
                "filename": filename,
                "mime_type": mime_type,
                "size_bytes": body.and_then(|b| b.get("size")).and_then(Value::as_u64).unwrap_or(0),
            }));
        }
        return;
    }
    let data = || {
        body.and_then(|b| b.get("data"))
            .and_then(Value::as_str)
            .and_then(decode_body)
    };
    if mime_type == "text/plain" && content.plain.is_none() {
        content.plain = data();
    } else if mime_type == "text/html" && content.html.is_none() {
        content.html = data();
    }
    if let Some(parts) = part.get("parts").and_then(Value::as_array) {
        for child in parts {
            walk(child, depth + 1, content);
        }
    }
}

/// Gmail bodies are base64url, sometimes padded. Text is read as UTF-8 (Gmail converts to it).
fn decode_body(data: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD_INDIFFERENT.decode(data.trim()).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The value of the first header named `name` (case-insensitive) in a payload's `headers` list.
pub(crate) fn header<'a>(payload: &'a Value, name: &str) -> Option<&'a str> {
    payload
        .get("headers")?
        .as_array()?
        .iter()
        .find(|h| {
            h.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })?
        .get("value")?
        .as_str()
}
