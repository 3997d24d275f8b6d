//! A tool call's result in the two shapes the gateway needs: text for the model, JSON for the UI.

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::Value;

/// The outcome of one MCP tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolResult {
    /// What goes back to the model as the tool message.
    pub model_text: String,
    /// The whole `CallToolResult` as the server sent it, for the UI stream.
    pub ui_output: Value,
    /// The server flagged the call as failed (`isError`); the text explains why.
    pub is_error: bool,
}

impl McpToolResult {
    /// Converts a server result, capping the model text at `max_chars` characters. A result whose
    /// JSON is larger than `max_ui_bytes` reaches the UI (and the stored message) as the capped text
    /// alone, marked `truncated`.
    pub fn from_call_result(result: &CallToolResult, max_chars: usize, max_ui_bytes: usize) -> McpToolResult {
        let model_text = truncate_chars(model_text(result), max_chars);
        let is_error = result.is_error.unwrap_or(false);
        let ui_output = match serde_json::to_string(result) {
            Ok(json) if json.len() <= max_ui_bytes => serde_json::from_str(&json).unwrap_or(Value::Null),
            _ => serde_json::json!({
                "content": [{"type": "text", "text": truncate_chars(model_text.clone(), max_ui_bytes / 4)}],
                "isError": is_error,
                "truncated": true,
            }),
        };
        McpToolResult {
            model_text,
            ui_output,
            is_error,
        }
    }
}

/// The model's reading of a result. Structured content comes first, as JSON: it is the result's
/// exact data. Text blocks follow, except one that only repeats the structured content (servers are
/// asked to mirror it in a text block for older clients). Links and embedded resources become lines
/// the model can cite or read; media become notes, since a tool message carries text only.
fn model_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len() + 1);
    let structured = result
        .structured_content
        .as_ref()
        .filter(|value| !wraps_the_text(value, &result.content));
    if let Some(value) = structured {
        parts.push(value.to_string());
    }
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                if !mirrors(&text.text, structured) {
                    parts.push(text.text.clone());
                }
            }
            ContentBlock::Image(image) => parts.push(media_note("image", &image.mime_type, &image.data)),
            ContentBlock::Audio(audio) => parts.push(media_note("audio", &audio.mime_type, &audio.data)),
            ContentBlock::ResourceLink(link) => parts.push(link_line(link)),
            ContentBlock::Resource(embedded) => parts.push(embedded_text(&embedded.resource)),
            #[allow(unreachable_patterns)]
            _ => parts.push("[unsupported content]".to_owned()),
        }
    }
    parts.join("\n")
}

/// The structured content only wraps what the text already says: SDKs turn a tool's plain return
/// value into `{"result": value}` beside the value as text, and the wrapper tells the model nothing.
fn wraps_the_text(structured: &Value, content: &[ContentBlock]) -> bool {
    let Some(object) = structured.as_object().filter(|o| o.len() == 1) else {
        return false;
    };
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    let [text] = texts.as_slice() else {
        return false;
    };
    object.values().all(|value| match value {
        Value::String(s) => s == text,
        other => serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == other),
    })
}

/// The text block is the structured content again, as JSON.
fn mirrors(text: &str, structured: Option<&Value>) -> bool {
    structured.is_some_and(|value| serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == value))
}

/// `[resource link: Title <uri> (text/plain, 120 bytes)] description`: everything the server said
/// about a resource it did not include, so the model can name it or pass the URI on.
fn link_line(link: &Resource) -> String {
    let label = link.title.as_deref().unwrap_or(&link.name);
    let mut facts: Vec<String> = Vec::new();
    if let Some(mime) = &link.mime_type {
        facts.push(mime.clone());
    }
    if let Some(size) = link.size {
        facts.push(format!("{size} bytes"));
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" ({})", facts.join(", "))
    };
    let description = link
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map_or_else(String::new, |d| format!(" {d}"));
    format!("[resource link: {label} <{}>{facts}]{description}", link.uri)
}

/// An embedded resource's content as text: its text, or a blob whose type is textual decoded; any
/// other blob becomes a note of its type and size.
fn embedded_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents {
            uri, mime_type, text, ..
        } => format!("[resource <{uri}>{}]\n{text}", mime_suffix(mime_type.as_deref())),
        ResourceContents::BlobResourceContents {
            uri, mime_type, blob, ..
        } => {
            let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
            match textual_blob(mime, blob) {
                Some(text) => format!("[resource <{uri}>{}]\n{text}", mime_suffix(Some(mime))),
                None => format!("[resource <{uri}>: {mime}, {} bytes]", decoded_len(blob)),
            }
        }
        #[allow(unreachable_patterns)]
        _ => "[resource]".to_owned(),
    }
}

fn mime_suffix(mime: Option<&str>) -> String {
    mime.map_or_else(String::new, |m| format!(" ({m})"))
}

/// A blob the model can read: a textual type whose bytes are UTF-8.
fn textual_blob(mime: &str, blob: &str) -> Option<String> {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let textual = essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json" | "application/xml" | "application/yaml" | "application/javascript"
        );
    if !textual {
        return None;
    }
    let compact: String = blob.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD.decode(compact).ok()?;
    String::from_utf8(bytes).ok()
}

fn media_note(kind: &str, mime: &str, base64_data: &str) -> String {
    format!("[{kind}: {mime}, {} bytes]", decoded_len(base64_data))
}

/// Size of base64 data once decoded, without decoding it.
fn decoded_len(data: &str) -> usize {
    let significant = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = data
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count()
        .min(2);
    let unpadded = if significant % 4 == 0 {
        significant - padding
    } else {
        significant
    };
    unpadded * 3 / 4
}

fn truncate_chars(text: String, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    let cut_at = text.char_indices().nth(max_chars).map_or(text.len(), |(i, _)| i);
    let mut kept = text[..cut_at].to_owned();
    kept.push_str(&format!(
        "\n\n[Tool result truncated: {} of {total} characters were cut.]",
        total - max_chars
    ));
    kept
}

#[cfg(test)]
mod tests {
    use rmcp::model::Resource;
    use serde_json::json;

    use super::*;

    #[test]
    fn text_blocks_are_joined_in_order() {
        let result = CallToolResult::success(vec![ContentBlock::text("one"), ContentBlock::text("two")]);
        let converted = McpToolResult::from_call_result(&result, 1000, 10_000);
        assert_eq!(converted.model_text, "one\ntwo");
        assert!(!converted.is_error);
        assert_eq!(converted.ui_output["content"][1]["text"], "two");
    }

    #[test]
    fn media_become_notes_and_links_and_resources_become_text() {
        // "aGVsbG8=" is five bytes once decoded; "eyJhIjoxfQ==" is `{"a":1}`.
        let mut link = Resource::new("file:///tmp/a.txt", "a.txt");
        link.title = Some("Notes A".into());
        link.description = Some("The first notes".into());
        link.mime_type = Some("text/plain".into());
        link.size = Some(120);
        let result = CallToolResult::success(vec![
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::audio("aGVsbG8h", "audio/wav"),
            ContentBlock::resource_link(link),
            ContentBlock::resource_link(Resource::new("https://ex.test/r", "r")),
            ContentBlock::embedded_text("file:///tmp/b.txt", "embedded body"),
            ContentBlock::resource(
                ResourceContents::blob("eyJhIjoxfQ==", "file:///c.json").with_mime_type("application/json"),
            ),
            ContentBlock::resource(ResourceContents::blob("aGVsbG8=", "file:///d.bin")),
        ]);
        let text = McpToolResult::from_call_result(&result, 1000, 10_000).model_text;
        assert_eq!(
            text,
            "[image: image/png, 5 bytes]\n[audio: audio/wav, 6 bytes]\n\
             [resource link: Notes A <file:///tmp/a.txt> (text/plain, 120 bytes)] The first notes\n\
             [resource link: r <https://ex.test/r>]\n\
             [resource <file:///tmp/b.txt> (text/plain)]\nembedded body\n\
             [resource <file:///c.json> (application/json)]\n{\"a\":1}\n\
             [resource <file:///d.bin>: application/octet-stream, 5 bytes]"
        );
        assert!(!text.contains("aGVsbG8"), "raw base64 never reaches the model");
    }

    #[test]
    fn structured_content_reaches_the_model_as_json_with_the_text_that_adds_to_it() {
        let mut bare = CallToolResult::success(vec![]);
        bare.structured_content = Some(json!({"temperature": 21}));
        assert_eq!(
            McpToolResult::from_call_result(&bare, 1000, 10_000).model_text,
            r#"{"temperature":21}"#
        );

        // The mirror of the JSON in a text block is said once; other text is kept after it.
        let mut mirrored = CallToolResult::success(vec![
            ContentBlock::text(r#"{ "temperature": 21 }"#),
            ContentBlock::text("21 degrees, dry"),
        ]);
        mirrored.structured_content = Some(json!({"temperature": 21}));
        assert_eq!(
            McpToolResult::from_call_result(&mirrored, 1000, 10_000).model_text,
            "{\"temperature\":21}\n21 degrees, dry"
        );

        // An SDK's `{"result": …}` wrapper around the value the text already gives is left out.
        let mut wrapped = CallToolResult::success(vec![ContentBlock::text("5")]);
        wrapped.structured_content = Some(json!({"result": 5}));
        assert_eq!(
            McpToolResult::from_call_result(&wrapped, 1000, 10_000).model_text,
            "5"
        );
        let mut other = CallToolResult::success(vec![ContentBlock::text("5")]);
        other.structured_content = Some(json!({"result": 6}));
        assert_eq!(
            McpToolResult::from_call_result(&other, 1000, 10_000).model_text,
            "{\"result\":6}\n5"
        );

        let plain = CallToolResult::success(vec![ContentBlock::text("21 degrees")]);
        assert_eq!(
            McpToolResult::from_call_result(&plain, 1000, 10_000).model_text,
            "21 degrees"
        );
    }

    #[test]
    fn error_results_keep_their_text() {
        let result = CallToolResult::error(vec![ContentBlock::text("disk full")]);
        let converted = McpToolResult::from_call_result(&result, 1000, 10_000);
        assert!(converted.is_error);
        assert_eq!(converted.model_text, "disk full");
        assert_eq!(converted.ui_output["isError"], true);
    }

    #[test]
    fn long_text_is_cut_with_a_notice_on_a_char_boundary() {
        let result = CallToolResult::success(vec![ContentBlock::text("é".repeat(30))]);
        let converted = McpToolResult::from_call_result(&result, 10, 10_000);
        let text = &converted.model_text;
        assert!(text.starts_with(&"é".repeat(10)));
        assert!(
            text.ends_with("[Tool result truncated: 20 of 30 characters were cut.]"),
            "{text}"
        );
        assert_eq!(
            converted.ui_output["content"][0]["text"],
            "é".repeat(30),
            "a result within the UI cap reaches the UI whole"
        );
    }

    #[test]
    fn a_result_over_the_ui_cap_reaches_the_ui_as_capped_text() {
        let result = CallToolResult::success(vec![ContentBlock::text("x".repeat(5_000))]);
        let converted = McpToolResult::from_call_result(&result, 100, 1_000);
        assert_eq!(converted.ui_output["truncated"], true);
        let shown = converted.ui_output["content"][0]["text"].as_str().unwrap();
        assert!(shown.len() <= 1_000, "{}", shown.len());
        assert!(shown.contains("[Tool result truncated"), "{shown}");
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(decoded_len(""), 0);
        assert_eq!(decoded_len("aGk="), 2);
        assert_eq!(decoded_len("aGVsbG8="), 5);
        assert_eq!(decoded_len("aGVsbG8"), 5);
        assert_eq!(decoded_len("aGVs\nbG8h"), 6);
    }
}
