//! An Anthropic Messages API request (`POST /v1/messages`) in the engine's terms: `system` and
//! `messages` → the turn's history, `tools` and `tool_choice` → the client's tools.
//!
//! The request comes from Anthropic's SDKs and from Claude Code, so every block they send is read:
//! text, images, documents, `tool_use` and `tool_result` (whose own content may hold text, images
//! and documents), and thinking blocks, which are dropped (the gateway keeps what its provider
//! needs of them itself). A user message's `tool_result` blocks become tool messages ahead of its
//! other content, the order every provider expects.

use promptgate_llm::{ChatMessage, ContentPart, ToolCall, ToolDefinition, UserContent};
use serde_json::Value;

use super::request::{FacadeHistory, MAX_MESSAGES};
use super::tools::{ToolInput, client_tools};
use crate::TurnError;
use crate::attachments::{FileText, file_text};
use crate::client_tools::ClientToolChoice;
use crate::documents::FileTexts;

/// The request's `system` and `messages` as the turn's history.
pub fn messages_history(
    system: Option<&Value>,
    messages: &[Value],
    files: &FileTexts,
) -> Result<FacadeHistory, TurnError> {
    if messages.len() > MAX_MESSAGES {
        return Err(invalid(format!(
            "at most {MAX_MESSAGES} messages are accepted, got {}",
            messages.len()
        )));
    }
    let mut history = FacadeHistory::default();
    match system {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => history.system.push(text.clone()),
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                let text = text_block(block).map_err(|e| invalid(format!("system[{index}]: {e}")))?;
                history.system.push(text.to_owned());
            }
        }
        Some(_) => {
            return Err(invalid(
                "`system` must be a string or an array of text blocks".into(),
            ));
        }
    }
    for (index, message) in messages.iter().enumerate() {
        let at = |problem: String| invalid(format!("messages[{index}]: {problem}"));
        let content = message.get("content").unwrap_or(&Value::Null);
        match message.get("role").and_then(Value::as_str) {
            Some("user") => user_turn(content, files, &mut history.messages).map_err(at)?,
            Some("assistant") => history.messages.push(assistant_turn(content).map_err(at)?),
            Some("system") => history.system.push(plain_text(content).map_err(at)?),
            Some(other) => return Err(at(format!("role `{other}` is not supported"))),
            None => return Err(at("`role` is missing".into())),
        }
    }
    Ok(history)
}

/// The request's `tools` and `tool_choice`. Tools with a `type` other than `custom` are the
/// provider's own (web search, code execution) or Anthropic-defined schemas; they are not offered
/// (the gateway's own tools serve instead). `tool_choice: {"type": "none"}` offers none of the
/// client's tools.
pub fn messages_tools(
    tools: Option<&[Value]>,
    choice: Option<&Value>,
) -> Result<(Vec<ToolDefinition>, ClientToolChoice), TurnError> {
    let mut inputs = Vec::new();
    for (index, tool) in tools.unwrap_or_default().iter().enumerate() {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        if kind != "custom" {
            tracing::debug!(kind, "a provider tool of a Messages request is not offered");
            continue;
        }
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("tools[{index}]: a tool needs a `name`")))?;
        inputs.push(ToolInput {
            name,
            description: tool.get("description").and_then(Value::as_str),
            parameters: tool.get("input_schema"),
        });
    }
    let definitions = client_tools("tools", &inputs)?;
    let choice = match choice.and_then(|c| c.get("type")).and_then(Value::as_str) {
        None | Some("auto") => ClientToolChoice::Auto,
        Some("none") => return Ok((Vec::new(), ClientToolChoice::Auto)),
        Some("any") if !definitions.is_empty() => ClientToolChoice::Required,
        Some("tool") => {
            let name = choice
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !definitions.iter().any(|tool| tool.name == name) {
                return Err(invalid(format!(
                    "tool_choice names `{name}`, which is not one of `tools`"
                )));
            }
            ClientToolChoice::Named(name.to_owned())
        }
        Some(other) => {
            return Err(invalid(format!(
                "tool_choice type `{other}` is not supported here (auto, any with tools, tool or none)"
            )));
        }
    };
    Ok((definitions, choice))
}

/// A user turn: its tool results first, as tool messages, then the rest as one user message.
fn user_turn(content: &Value, files: &FileTexts, out: &mut Vec<ChatMessage>) -> Result<(), String> {
    let blocks = match content {
        Value::String(text) => {
            out.push(ChatMessage::User {
                content: UserContent::Text(text.clone()),
            });
            return Ok(());
        }
        Value::Array(blocks) => blocks,
        _ => return Err("`content` must be a string or an array of blocks".into()),
    };
    let mut parts = Vec::new();
    for block in blocks {
        match block_type(block) {
            "tool_result" => out.push(tool_result(block, files)?),
            "text" => parts.push(ContentPart::Text {
                text: text_block(block)?.to_owned(),
            }),
            "image" => parts.push(image(block)?),
            "document" => parts.push(ContentPart::Text {
                text: document_text(block, files),
            }),
            "thinking" | "redacted_thinking" => {}
            other => {
                return Err(format!(
                    "content block type `{other}` is not supported in a user message"
                ));
            }
        }
    }
    match parts.as_slice() {
        [] => {}
        [ContentPart::Text { text }] => out.push(ChatMessage::User {
            content: UserContent::Text(text.clone()),
        }),
        _ => out.push(ChatMessage::User {
            content: UserContent::Parts(parts),
        }),
    }
    Ok(())
}

/// An assistant turn: its text and its tool calls. Thinking blocks, and the blocks of Anthropic's
/// own server tools (which this gateway never sends), are left out.
fn assistant_turn(content: &Value) -> Result<ChatMessage, String> {
    let blocks = match content {
        Value::String(text) => {
            return Ok(ChatMessage::Assistant {
                content: Some(text.clone()).filter(|t| !t.is_empty()),
                tool_calls: Vec::new(),
            });
        }
        Value::Array(blocks) => blocks,
        _ => return Err("`content` must be a string or an array of blocks".into()),
    };
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block_type(block) {
            "text" => texts.push(text_block(block)?),
            "tool_use" => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block has no `id`")?;
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block has no `name`")?;
                let input = block
                    .get("input")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default()));
                tool_calls.push(ToolCall::new(id, name, input.to_string()));
            }
            _ => {}
        }
    }
    let text = texts.join("\n\n");
    Ok(ChatMessage::Assistant {
        content: Some(text).filter(|t| !t.is_empty()),
        tool_calls,
    })
}

/// A `tool_result` block as the tool message the model reads. Its images cannot travel in a tool
/// message; the model is told one was there.
fn tool_result(block: &Value, files: &FileTexts) -> Result<ChatMessage, String> {
    let id = block
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or("a tool_result block has no `tool_use_id`")?;
    let mut text = match block.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|inner| match block_type(inner) {
                "text" => text_block(inner).map(str::to_owned),
                "document" => Ok(document_text(inner, files)),
                "image" => Ok("[an image, which this gateway cannot pass on in a tool result]".to_owned()),
                other => Ok(format!("[a `{other}` block, which this gateway cannot pass on]")),
            })
            .collect::<Result<Vec<_>, _>>()?
            .join("\n"),
        Some(_) => return Err("a tool_result's `content` must be a string or an array of blocks".into()),
    };
    if block.get("is_error").and_then(Value::as_bool) == Some(true) {
        text = format!("Error: {text}");
    }
    Ok(ChatMessage::Tool {
        tool_call_id: id.to_owned(),
        content: text,
    })
}

fn image(block: &Value) -> Result<ContentPart, String> {
    let source = block.get("source").ok_or("an image block has no `source`")?;
    let url = match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media_type = source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image/png");
            let data = source
                .get("data")
                .and_then(Value::as_str)
                .ok_or("an image has no `data`")?;
            format!("data:{media_type};base64,{data}")
        }
        Some("url") => {
            return Err(
                "an image must be sent inline (`source.type: \"base64\"`); this server does not fetch image links or pass them on"
                    .into(),
            );
        }
        _ => return Err("an image's source must be `base64`".into()),
    };
    super::request::inline_image(&url)
}

/// The PDF documents of `messages` (in user turns and tool results) as the file parts of one user
/// message, for the server's file reader: a PDF is read where reading is bounded and off the async
/// workers, never while the history is converted.
pub fn messages_documents(messages: &[Value]) -> Vec<Value> {
    // Borrowed, not cloned: a message's content holds the documents' base64 bytes.
    fn blocks(content: Option<&Value>) -> &[Value] {
        content.and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
    let mut parts = Vec::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        for block in blocks(message.get("content")) {
            match block_type(block) {
                "document" => parts.extend(pdf_file_part(block)),
                "tool_result" => {
                    for inner in blocks(block.get("content")) {
                        parts.extend(pdf_file_part(inner));
                    }
                }
                _ => {}
            }
        }
    }
    if parts.is_empty() {
        return Vec::new();
    }
    vec![serde_json::json!({"role": "user", "parts": parts})]
}

/// An inline PDF document block as the file part a chat attachment of it would be.
fn pdf_file_part(block: &Value) -> Option<Value> {
    if block_type(block) != "document" {
        return None;
    }
    let source = block.get("source")?;
    let media_type = source.get("media_type").and_then(Value::as_str)?;
    let data = source.get("data").and_then(Value::as_str)?;
    if source.get("type").and_then(Value::as_str) != Some("base64") || media_type != "application/pdf" {
        return None;
    }
    Some(serde_json::json!({
        "type": "file",
        "mediaType": media_type,
        "filename": block.get("title").and_then(Value::as_str).unwrap_or("document"),
        "url": format!("data:{media_type};base64,{data}"),
    }))
}

/// A document block as text: plain text as it is, an inline text file as its text (as an attached
/// file reads), a PDF as the file reader read it, anything else as a label the model can mention.
fn document_text(block: &Value, files: &FileTexts) -> String {
    let source = block.get("source").unwrap_or(&Value::Null);
    let name = block.get("title").and_then(Value::as_str).unwrap_or("document");
    let media_type = source.get("media_type").and_then(Value::as_str).unwrap_or("");
    let data = source.get("data").and_then(Value::as_str);
    match (source.get("type").and_then(Value::as_str), data) {
        (Some("text"), Some(text)) => format!("[{name}]\n{text}"),
        (Some("base64"), Some(data)) if media_type == "application/pdf" => {
            match files.get_inline(name, media_type, data) {
                Some(text) => text.to_owned(),
                None => format!("[attached: {name} ({media_type}), which was not read]"),
            }
        }
        (Some("base64"), Some(data)) => {
            let url = format!("data:{media_type};base64,{data}");
            // Read here, on the request's worker: a PDF under another type gets its label.
            match file_text(name, media_type, &url, None) {
                FileText::Text(text) => text,
                FileText::Label => {
                    format!("[attached: {name} ({media_type}), which the gateway cannot read]")
                }
            }
        }
        _ => format!("[attached: {name}, which the gateway cannot read]"),
    }
}

fn text_block(block: &Value) -> Result<&str, String> {
    if block_type(block) != "text" {
        return Err(format!("expected a text block, got `{}`", block_type(block)));
    }
    block
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| "a text block has no `text`".to_owned())
}

/// Content that must be text: a string or text blocks (joined with blank lines).
fn plain_text(content: &Value) -> Result<String, String> {
    match content {
        Value::String(text) => Ok(text.clone()),
        Value::Array(blocks) => Ok(blocks
            .iter()
            .map(text_block)
            .collect::<Result<Vec<_>, _>>()?
            .join("\n\n")),
        _ => Err("`content` must be a string or an array of text blocks".into()),
    }
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

fn invalid(message: String) -> TurnError {
    TurnError::InvalidRequest(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::NO_FILE_TEXTS;
    use promptgate_llm::ImageUrl;
    use serde_json::json;

    #[test]
    fn a_claude_code_turn_reads_as_the_engine_history() {
        let system = json!([
            {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Work in /repo."}
        ]);
        let messages = json!([
            {"role": "user", "content": [{"type": "text", "text": "Fix the test."}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look first.", "signature": "sig"},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.rs"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "fn main() {}"}]},
                {"type": "text", "text": "Go on."}
            ]},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": true}
            ]}
        ]);
        let history = messages_history(Some(&system), messages.as_array().unwrap(), &NO_FILE_TEXTS).unwrap();
        assert_eq!(history.system, ["You are a coding agent.", "Work in /repo."]);
        assert_eq!(
            history.messages,
            vec![
                ChatMessage::User {
                    content: UserContent::Text("Fix the test.".into())
                },
                ChatMessage::Assistant {
                    content: Some("Reading it.".into()),
                    tool_calls: vec![ToolCall::new("toolu_1", "Read", r#"{"file_path":"a.rs"}"#)],
                },
                ChatMessage::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: "fn main() {}".into()
                },
                ChatMessage::User {
                    content: UserContent::Text("Go on.".into())
                },
                ChatMessage::Assistant {
                    content: Some("Done.".into()),
                    tool_calls: vec![]
                },
                ChatMessage::Tool {
                    tool_call_id: "toolu_2".into(),
                    content: "Error: no such file".into()
                },
            ]
        );
    }

    #[test]
    fn images_and_documents_reach_the_model() {
        let messages = json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}},
            {"type": "document", "title": "notes", "source": {"type": "text", "media_type": "text/plain", "data": "tide at six"}}
        ]}]);
        let history = messages_history(None, messages.as_array().unwrap(), &NO_FILE_TEXTS).unwrap();
        let ChatMessage::User {
            content: UserContent::Parts(parts),
        } = &history.messages[0]
        else {
            panic!("{:?}", history.messages);
        };
        assert_eq!(
            parts[0],
            ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: "data:image/jpeg;base64,AAAA".into()
                }
            }
        );
        assert_eq!(
            parts[1],
            ContentPart::Text {
                text: "[notes]\ntide at six".into()
            }
        );
    }

    #[test]
    fn an_image_link_is_refused_and_an_unread_pdf_is_only_named() {
        let linked = json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/latest/meta-data/"}}
        ]}]);
        let err = messages_history(None, linked.as_array().unwrap(), &NO_FILE_TEXTS).unwrap_err();
        assert!(err.to_string().contains("inline"), "{err}");

        // A base64 document as the model sees it, and what the file reader is handed.
        let sent = |title: &str, media_type: &str| {
            let messages = json!([{"role": "user", "content": [{"type": "document", "title": title,
                "source": {"type": "base64", "media_type": media_type, "data": "JVBERi0xLjQK"}}]}]);
            let messages = messages.as_array().unwrap();
            let history = messages_history(None, messages, &NO_FILE_TEXTS).unwrap();
            (format!("{:?}", history.messages[0]), messages_documents(messages))
        };
        let (seen, documents) = sent("bomb", "application/pdf");
        assert!(
            seen.contains("[attached: bomb (application/pdf), which was not read]"),
            "{seen}"
        );
        // The file reader is handed the PDF as the chat attachment it would be.
        assert_eq!(
            documents,
            vec![
                json!({"role": "user", "parts": [{"type": "file", "mediaType": "application/pdf",
                "filename": "bomb", "url": "data:application/pdf;base64,JVBERi0xLjQK"}]})
            ]
        );
        // A PDF under another type is not parsed on the request's worker either: only named.
        let (seen, documents) = sent("x.pdf", "application/octet-stream");
        assert!(
            seen.contains("[attached: x.pdf (application/octet-stream), which the gateway cannot read]"),
            "{seen}"
        );
        assert!(documents.is_empty());
    }

    #[test]
    fn tools_and_choices_read_as_the_clients_tools() {
        let tools = json!([
            {"name": "Bash", "description": "Runs a command.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
        ]);
        let tools = tools.as_array().unwrap();
        let (defined, choice) = messages_tools(Some(tools), None).unwrap();
        assert_eq!(defined.len(), 1, "the provider's own tools are not offered");
        assert_eq!(defined[0].name, "Bash");
        assert_eq!(choice, ClientToolChoice::Auto);
        let named = json!({"type": "tool", "name": "Bash"});
        assert_eq!(
            messages_tools(Some(tools), Some(&named)).unwrap().1,
            ClientToolChoice::Named("Bash".into())
        );
        let none = json!({"type": "none"});
        assert!(messages_tools(Some(tools), Some(&none)).unwrap().0.is_empty());
        let unknown = json!({"type": "tool", "name": "Nope"});
        assert!(messages_tools(Some(tools), Some(&unknown)).is_err());
    }

    #[test]
    fn problems_name_the_message_at_fault() {
        let cases = [
            (
                json!([{"role": "tool", "content": "x"}]),
                "messages[0]: role `tool`",
            ),
            (
                json!([{"role": "user", "content": [{"type": "video"}]}]),
                "messages[0]: content block type `video`",
            ),
            (
                json!([{"role": "user", "content": [{"type": "tool_result"}]}]),
                "no `tool_use_id`",
            ),
            (
                json!([{"role": "user", "content": 3}]),
                "must be a string or an array",
            ),
        ];
        for (messages, expected) in cases {
            let err = messages_history(None, messages.as_array().unwrap(), &NO_FILE_TEXTS)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err:?} should contain {expected:?}");
        }
    }
}
