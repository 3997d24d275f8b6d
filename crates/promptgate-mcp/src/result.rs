//! A tool call's result in the two shapes the gateway needs: text for the model, JSON for the UI.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
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

fn model_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text.clone());
            }
            ContentBlock::Image(image) => parts.push(media_note("image", &image.mime_type, &image.data)),
            ContentBlock::Audio(audio) => parts.push(media_note("audio", &audio.mime_type, &audio.data)),
            ContentBlock::ResourceLink(link) => {
                let label = link.title.as_deref().unwrap_or(&link.name);
                parts.push(format!("[resource: {label}] {}", link.uri));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    has_text = true;
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => {
                    let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                    parts.push(format!("[resource {uri}: {mime}, {} bytes]", decoded_len(blob)));
                }
                #[allow(unreachable_patterns)]
                _ => parts.push("[resource]".to_owned()),
            },
            #[allow(unreachable_patterns)]
            _ => parts.push("[unsupported content]".to_owned()),
        }
    }
    // Servers should mirror structured content in a text block; when one does not, the JSON is
    // the only thing the model can read.
    if !has_text && let Some(structured) = &result.structured_content {
        parts.insert(0, structured.to_string());
    }
    parts.join("\n")
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
    fn media_become_notes_and_links_become_uri_lines() {
        // "aGVsbG8=" is five bytes once decoded.
        let result = CallToolResult::success(vec![
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::audio("aGVsbG8h", "audio/wav"),
            ContentBlock::resource_link(Resource::new("file:///tmp/a.txt", "a.txt")),
            ContentBlock::embedded_text("file:///tmp/b.txt", "embedded body"),
        ]);
        let text = McpToolResult::from_call_result(&result, 1000, 10_000).model_text;
        assert_eq!(
            text,
            "[image: image/png, 5 bytes]\n[audio: audio/wav, 6 bytes]\n[resource: a.txt] file:///tmp/a.txt\n[resource file:///tmp/b.txt]\nembedded body"
        );
        assert!(!text.contains("aGVsbG8"), "raw base64 never reaches the model");
    }

    #[test]
    fn structured_content_is_used_only_without_text() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(json!({"temperature": 21}));
        assert_eq!(
            McpToolResult::from_call_result(&result, 1000, 10_000).model_text,
            r#"{"temperature":21}"#
        );

        let mut with_text = CallToolResult::success(vec![ContentBlock::text("21 degrees")]);
        with_text.structured_content = Some(json!({"temperature": 21}));
        assert_eq!(
            McpToolResult::from_call_result(&with_text, 1000, 10_000).model_text,
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
