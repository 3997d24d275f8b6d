//! Stored or client-sent UI messages → the upstream chat messages the model sees.
//!
//! This mirrors what the AI SDK's `convertToModelMessages` does, so a thread replayed from the
//! store and a thread sent by `useChat` reach the model in the same shape. Input is treated as
//! untrusted: anything malformed is skipped, never an error.

use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, ToolCall, UserContent};
use serde_json::Value;

use crate::attachments::unreadable;
use crate::documents::{FileTexts, NO_FILE_TEXTS};

/// How history is rendered for one model.
#[derive(Debug, Clone, Copy)]
pub struct HistoryOptions<'a> {
    /// The model accepts images; otherwise image files become a text label like other files.
    pub images: bool,
    /// The texts of the messages' files, read beforehand ([`crate::documents::DocumentReader`]);
    /// a file without one is a label.
    pub files: &'a FileTexts,
}

impl Default for HistoryOptions<'_> {
    fn default() -> Self {
        Self {
            images: true,
            files: &NO_FILE_TEXTS,
        }
    }
}

/// Converts UI messages (`{role, parts}`) into upstream messages.
pub fn to_model_messages(messages: &[Value], options: HistoryOptions<'_>) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message.get("role").and_then(Value::as_str) {
            Some("user") => out.extend(user_message(message, options)),
            Some("assistant") => assistant_messages(message, &mut out),
            Some("system") => {
                let text = text_parts(message).join("\n");
                if !text.is_empty() {
                    out.push(ChatMessage::System { content: text });
                }
            }
            _ => {}
        }
    }
    out
}

/// The text of the last user message, its text parts joined with `\n`.
pub fn last_user_text(messages: &[Value]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        .map(|message| text_parts(message).join("\n"))
}

pub(crate) fn parts(message: &Value) -> &[Value] {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Text parts, or the legacy `content` string of messages written before parts existed.
pub(crate) fn text_parts(message: &Value) -> Vec<&str> {
    let texts: Vec<&str> = parts(message)
        .iter()
        .filter(|part| part_type(part) == "text")
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty()
        && let Some(content) = message.get("content").and_then(Value::as_str)
    {
        return vec![content];
    }
    texts
}

pub(crate) fn part_type(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn user_message(message: &Value, options: HistoryOptions<'_>) -> Option<ChatMessage> {
    let mut content = Vec::new();
    for part in parts(message) {
        match part_type(part) {
            "text" => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    content.push(ContentPart::Text {
                        text: text.to_owned(),
                    });
                }
            }
            "file" => content.extend(file_part(part, options.files.get(part), options)),
            _ => {}
        }
    }
    if content.is_empty() {
        let legacy = message.get("content").and_then(Value::as_str)?;
        return Some(ChatMessage::User {
            content: UserContent::Text(legacy.to_owned()),
        });
    }
    let content = match content.as_slice() {
        [ContentPart::Text { text }] => UserContent::Text(text.clone()),
        _ => UserContent::Parts(content),
    };
    Some(ChatMessage::User { content })
}

/// A file's name and media type, as the history shows them.
pub(crate) fn file_identity(part: &Value) -> (&str, &str) {
    let field = |key: &str| part.get(key).and_then(Value::as_str);
    (
        field("filename").unwrap_or("unnamed"),
        field("mediaType").unwrap_or("application/octet-stream"),
    )
}

/// What the model sees of a file whose content it is not given.
pub(crate) fn file_label(name: &str, media_type: &str) -> String {
    format!("[Attached file: {name} ({media_type})]")
}

/// A file part as the model gets it: an image sent inline (for a model that takes images), the
/// file's text when it was read, else a label. An image given by a link is never passed on: the
/// provider would fetch it, from wherever the link points.
fn file_part(part: &Value, text: Option<&str>, options: HistoryOptions<'_>) -> Option<ContentPart> {
    let url = part.get("url").and_then(Value::as_str)?;
    let (name, media_type) = file_identity(part);
    let image = media_type.starts_with("image/");
    if options.images && image && url.starts_with("data:") {
        return Some(ContentPart::ImageUrl {
            image_url: ImageUrl { url: url.to_owned() },
        });
    }
    // Every send renders the whole history this way, so an earlier file reads the same each
    // time and the conversation prefix stays cacheable upstream.
    let text = match text {
        Some(text) => text.to_owned(),
        None if image && !url.starts_with("data:") => unreadable(
            name,
            media_type,
            "it is an image given by a link, which this server does not fetch or pass on",
        ),
        None => file_label(name, media_type),
    };
    Some(ContentPart::Text { text })
}

/// One assistant step: its text and the tool calls that finished, with their results.
#[derive(Default)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<ChatMessage>,
}

impl Step {
    fn flush(&mut self, out: &mut Vec<ChatMessage>) {
        let step = std::mem::take(self);
        if step.text.is_empty() && step.calls.is_empty() {
            return;
        }
        let content = (!step.text.is_empty()).then_some(step.text);
        out.push(ChatMessage::Assistant {
            content,
            tool_calls: step.calls,
        });
        out.extend(step.results);
    }
}

fn assistant_messages(message: &Value, out: &mut Vec<ChatMessage>) {
    let all = parts(message);
    if all.is_empty() {
        if let Some(content) = message.get("content").and_then(Value::as_str)
            && !content.is_empty()
        {
            out.push(ChatMessage::Assistant {
                content: Some(content.to_owned()),
                tool_calls: Vec::new(),
            });
        }
        return;
    }
    let mut step = Step::default();
    for part in all {
        let kind = part_type(part);
        match kind {
            "step-start" => step.flush(out),
            "text" => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    step.text.push_str(text);
                }
            }
            "dynamic-tool" => {
                if let Some(name) = part.get("toolName").and_then(Value::as_str) {
                    tool_part(name, part, &mut step);
                }
            }
            _ => {
                if let Some(name) = kind.strip_prefix("tool-") {
                    tool_part(name, part, &mut step);
                }
            }
        }
    }
    step.flush(out);
}

/// A finished tool part becomes a call plus its result; one still waiting for input or output
/// never reached the model as a complete call, so it is left out.
fn tool_part(name: &str, part: &Value, step: &mut Step) {
    let Some(id) = part.get("toolCallId").and_then(Value::as_str) else {
        return;
    };
    let result = match part.get("state").and_then(Value::as_str) {
        Some("output-available") => match part.get("output") {
            Some(Value::String(text)) => text.clone(),
            Some(output) => output.to_string(),
            None => "null".to_owned(),
        },
        Some("output-error") => part
            .get("errorText")
            .and_then(Value::as_str)
            .unwrap_or("the tool call failed")
            .to_owned(),
        // The model asked; the user said no (or the approval lapsed): it reads that it was not run.
        Some("output-denied") => promptgate_core::approval::denied_text(
            part.get("approval")
                .and_then(|approval| approval.get("reason"))
                .and_then(Value::as_str),
        ),
        // Asked and never answered (the wait expired, or the user wrote on instead): not run.
        Some("approval-requested" | "approval-responded") => {
            promptgate_core::approval::EXPIRED_TEXT.to_owned()
        }
        _ => return,
    };
    let arguments = match part.get("input") {
        Some(Value::Object(input)) => Value::Object(input.clone()).to_string(),
        _ => "{}".to_owned(),
    };
    step.calls.push(ToolCall::new(id, name, arguments));
    step.results.push(ChatMessage::Tool {
        tool_call_id: id.to_owned(),
        content: result,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(messages: Value) -> Vec<ChatMessage> {
        to_model_messages(messages.as_array().unwrap(), HistoryOptions::default())
    }

    fn user_text(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: UserContent::Text(text.into()),
        }
    }

    #[test]
    fn plain_conversation() {
        let messages = convert(json!([
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]},
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "ponder", "state": "done"},
                {"type": "text", "text": "Hello!", "state": "done"}
            ]},
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Bye"}]}
        ]));
        assert_eq!(
            messages,
            vec![
                user_text("Hi"),
                ChatMessage::Assistant {
                    content: Some("Hello!".into()),
                    tool_calls: vec![]
                },
                user_text("Bye"),
            ]
        );
    }

    #[test]
    fn tool_steps_become_calls_and_results_split_by_step_start() {
        let messages = convert(json!([
            {"role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Let me look.", "state": "done"},
                {"type": "tool-search", "toolCallId": "c1", "state": "output-available",
                 "input": {"query": "rust"}, "output": {"results": []}},
                {"type": "dynamic-tool", "toolName": "srv_echo", "toolCallId": "c2", "state": "output-error",
                 "input": {"message": "x"}, "errorText": "server down"},
                {"type": "tool-search", "toolCallId": "c3", "state": "input-available", "input": {"query": "z"}},
                {"type": "step-start"},
                {"type": "source-url", "sourceId": "1", "url": "https://a.example"},
                {"type": "data-progress", "data": {}},
                {"type": "text", "text": "Found it [1].", "state": "done"}
            ]}
        ]));
        assert_eq!(
            messages,
            vec![
                ChatMessage::Assistant {
                    content: Some("Let me look.".into()),
                    tool_calls: vec![
                        ToolCall::new("c1", "search", r#"{"query":"rust"}"#),
                        ToolCall::new("c2", "srv_echo", r#"{"message":"x"}"#),
                    ],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: r#"{"results":[]}"#.into()
                },
                ChatMessage::Tool {
                    tool_call_id: "c2".into(),
                    content: "server down".into()
                },
                ChatMessage::Assistant {
                    content: Some("Found it [1].".into()),
                    tool_calls: vec![]
                },
            ]
        );
    }

    #[test]
    fn string_outputs_are_passed_as_text() {
        let messages = convert(json!([
            {"role": "assistant", "parts": [
                {"type": "tool-skill", "toolCallId": "c", "state": "output-available", "input": {}, "output": "Do X."}
            ]}
        ]));
        assert_eq!(
            messages[1],
            ChatMessage::Tool {
                tool_call_id: "c".into(),
                content: "Do X.".into()
            }
        );
    }

    #[test]
    fn files_become_images_or_labels() {
        let message = json!([{"role": "user", "parts": [
            {"type": "text", "text": "What is this?"},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAA"},
            {"type": "file", "mediaType": "application/pdf", "url": "https://x/doc.pdf", "filename": "doc.pdf"}
        ]}]);
        let with_images = convert(message.clone());
        assert_eq!(
            with_images,
            vec![ChatMessage::User {
                content: UserContent::Parts(vec![
                    ContentPart::Text {
                        text: "What is this?".into()
                    },
                    ContentPart::ImageUrl {
                        image_url: ImageUrl {
                            url: "data:image/png;base64,AAA".into()
                        }
                    },
                    ContentPart::Text {
                        text: "[Attached file: doc.pdf (application/pdf)]".into()
                    },
                ])
            }]
        );
        let without = to_model_messages(
            message.as_array().unwrap(),
            HistoryOptions {
                images: false,
                ..Default::default()
            },
        );
        let ChatMessage::User {
            content: UserContent::Parts(parts),
        } = &without[0]
        else {
            panic!("expected parts, got {without:?}");
        };
        assert_eq!(
            parts[1],
            ContentPart::Text {
                text: "[Attached file: unnamed (image/png)]".into()
            }
        );
    }

    #[test]
    fn an_image_given_by_a_link_is_never_passed_on() {
        for url in [
            "http://169.254.169.254/latest/meta-data/iam",
            "https://127.0.0.1:8080/chart.png",
            "https://images.example/chart.png",
        ] {
            let messages = convert(json!([{"role": "user", "parts": [
                {"type": "file", "mediaType": "image/png", "url": url, "filename": "chart.png"}
            ]}]));
            let ChatMessage::User {
                content: UserContent::Text(text),
            } = &messages[0]
            else {
                panic!("the image became text: {messages:?}");
            };
            assert_eq!(
                text,
                "[Attached file: chart.png (image/png); it is an image given by a link, which this server \
                 does not fetch or pass on and could not be read]"
            );
        }
    }

    #[tokio::test]
    async fn an_inline_csv_file_reaches_the_model_as_its_text_once_read() {
        let ui = json!([{"role": "user", "parts": [
            {"type": "text", "text": "Which day is earliest?"},
            {"type": "file", "mediaType": "text/csv", "filename": "tides.csv",
             "url": "data:text/csv;base64,ZGF5LGhpZ2gKbW9uLDA2OjQwCnR1ZSwwNzoyNQo="}
        ]}]);
        let ui = ui.as_array().unwrap();
        let unread = convert(Value::Array(ui.clone()));
        assert_eq!(
            unread[0],
            ChatMessage::User {
                content: UserContent::Parts(vec![
                    ContentPart::Text {
                        text: "Which day is earliest?".into()
                    },
                    ContentPart::Text {
                        text: "[Attached file: tides.csv (text/csv)]".into()
                    },
                ])
            },
            "a file that was not read is a label"
        );
        let files = crate::documents::DocumentReader::default().read("u", ui).await;
        let options = HistoryOptions {
            files: &files,
            ..HistoryOptions::default()
        };
        let messages = to_model_messages(ui, options);
        assert_eq!(
            messages[0],
            ChatMessage::User {
                content: UserContent::Parts(vec![
                    ContentPart::Text {
                        text: "Which day is earliest?".into()
                    },
                    ContentPart::Text {
                        text: "[Attached file: tides.csv (text/csv)]\nday,high\nmon,06:40\ntue,07:25\n[End of tides.csv]"
                            .into()
                    },
                ])
            }
        );
    }

    #[test]
    fn malformed_entries_are_skipped() {
        let messages = convert(json!([
            {"role": "user"},
            {"role": "tool", "parts": [{"type": "text", "text": "x"}]},
            {"parts": []},
            {"role": "assistant", "parts": [{"type": "tool-x", "state": "output-available"}]},
            {"role": "assistant", "content": "legacy answer"},
            {"role": "user", "content": "legacy question"}
        ]));
        assert_eq!(
            messages,
            vec![
                ChatMessage::Assistant {
                    content: Some("legacy answer".into()),
                    tool_calls: vec![]
                },
                user_text("legacy question"),
            ]
        );
    }

    #[test]
    fn last_user_text_joins_the_text_parts_of_the_last_user_message() {
        let messages = json!([
            {"role": "user", "parts": [{"type": "text", "text": "old"}]},
            {"role": "user", "parts": [
                {"type": "text", "text": "/research"},
                {"type": "file", "mediaType": "image/png", "url": "x"},
                {"type": "text", "text": "rust async"}
            ]},
            {"role": "assistant", "parts": [{"type": "text", "text": "answer"}]}
        ]);
        assert_eq!(
            last_user_text(messages.as_array().unwrap()),
            Some("/research\nrust async".into())
        );
        assert_eq!(last_user_text(&[]), None);
    }
}
