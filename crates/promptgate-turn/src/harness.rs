//! A thread as a harness sees it when it is built or rebuilt: the earlier turns as plain text (tool
//! calls and results of earlier sends live only in a kept transcript), and the new prompt with the
//! instructions of the skills it names and its attachments.

use promptgate_llm::{ChatMessage, ContentPart, UserContent};
use serde_json::Value;

use crate::history::{HistoryOptions, part_type, parts, text_parts, user_message};

/// The earlier user and assistant messages (UI messages) as text turns: a user's files become
/// `[Attachment: <name>]` labels, empty turns are dropped, and consecutive turns of one role are
/// merged with a blank line (an interrupted answer followed by a resend reads as one turn).
pub fn seed_turns(earlier: &[Value]) -> Vec<ChatMessage> {
    let mut turns: Vec<(bool, String)> = Vec::with_capacity(earlier.len());
    for message in earlier {
        let user = match message.get("role").and_then(Value::as_str) {
            Some("user") => true,
            Some("assistant") => false,
            _ => continue,
        };
        let mut pieces: Vec<String> = text_parts(message)
            .into_iter()
            .filter(|t| !t.trim().is_empty())
            .map(str::to_owned)
            .collect();
        if user {
            pieces.extend(
                parts(message)
                    .iter()
                    .filter(|part| part_type(part) == "file")
                    .map(|part| {
                        let name = part.get("filename").and_then(Value::as_str).unwrap_or("unnamed");
                        format!("[Attachment: {name}]")
                    }),
            );
        }
        if pieces.is_empty() {
            continue;
        }
        let text = pieces.join("\n");
        match turns.last_mut() {
            Some((role, merged)) if *role == user => {
                merged.push_str("\n\n");
                merged.push_str(&text);
            }
            _ => turns.push((user, text)),
        }
    }
    turns
        .into_iter()
        .map(|(user, text)| {
            if user {
                ChatMessage::User {
                    content: UserContent::Text(text),
                }
            } else {
                ChatMessage::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                }
            }
        })
        .collect()
}

/// The new user message as the harness prompt: its files as images (when the model takes them) or
/// their extracted text (`options.files`, read from this one message), and the skills'
/// instructions in front of the user's words.
pub fn prompt_message(
    message: &Value,
    skill_instructions: &[String],
    options: HistoryOptions<'_>,
) -> Option<ChatMessage> {
    let prompt = user_message(message, options)?;
    if skill_instructions.is_empty() {
        return Some(prompt);
    }
    let prefix = format!("{}\n\n", skill_instructions.join("\n\n"));
    let ChatMessage::User { content } = prompt else {
        return Some(prompt);
    };
    let content = match content {
        UserContent::Text(text) => UserContent::Text(prefix + &text),
        UserContent::Parts(mut parts) => {
            match parts.iter_mut().find_map(|part| match part {
                ContentPart::Text { text } => Some(text),
                ContentPart::ImageUrl { .. } => None,
            }) {
                Some(text) => text.insert_str(0, &prefix),
                None => parts.insert(0, ContentPart::Text { text: prefix }),
            }
            UserContent::Parts(parts)
        }
    };
    Some(ChatMessage::User { content })
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::ImageUrl;
    use serde_json::json;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: UserContent::Text(text.into()),
        }
    }

    fn assistant(text: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: Some(text.into()),
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn earlier_turns_become_text_with_attachment_labels_merged_by_role() {
        let seed = seed_turns(&[
            json!({"role": "user", "parts": [
                {"type": "text", "text": "Look at this"},
                {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAA", "filename": "chart.png"}
            ]}),
            json!({"role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "tool-bash", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "x"},
                {"type": "text", "text": "It rises."}
            ]}),
            json!({"role": "assistant", "parts": [{"type": "reasoning", "text": "only thoughts"}]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "   "}]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Why?"}]}),
            json!({"role": "user", "parts": [{"type": "text", "text": "Be brief."}]}),
        ]);
        assert_eq!(
            seed,
            vec![
                user("Look at this\n[Attachment: chart.png]"),
                assistant("It rises."),
                user("Why?\n\nBe brief."),
            ]
        );
    }

    #[test]
    fn skill_instructions_lead_the_prompt_and_current_files_stay_content() {
        let message = json!({"role": "user", "parts": [
            {"type": "text", "text": "/research tides"},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAA"}
        ]});
        let skills = ["Use many sources.".to_owned(), "Cite them.".to_owned()];
        let prompt = prompt_message(
            &message,
            &skills,
            HistoryOptions {
                images: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            prompt,
            ChatMessage::User {
                content: UserContent::Parts(vec![
                    ContentPart::Text {
                        text: "Use many sources.\n\nCite them.\n\n/research tides".into()
                    },
                    ContentPart::ImageUrl {
                        image_url: ImageUrl {
                            url: "data:image/png;base64,AAA".into()
                        }
                    },
                ])
            }
        );
        let plain = json!({"role": "user", "parts": [{"type": "text", "text": "hi"}]});
        assert_eq!(
            prompt_message(&plain, &[], HistoryOptions::default()),
            Some(user("hi"))
        );
    }
}
