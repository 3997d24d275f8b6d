//! About how many tokens a request's input is, for the facades' token-count endpoints. No
//! tokenizer is at hand for every provider a gateway may serve, so this counts about four bytes of
//! text a token (what English prose and JSON come to with the common tokenizers), a flat amount per
//! image, and a few tokens of framing per message and tool.

use promptgate_llm::{ChatMessage, ContentPart, ToolDefinition, UserContent};

/// Tokens an image is counted as (a mid-sized image on the common vision models).
const IMAGE_TOKENS: u64 = 1_600;
/// Tokens of framing around each message and each tool definition.
const FRAMING_TOKENS: u64 = 4;

/// The estimate for a request with this system prompt, history and offered tools.
pub fn estimate_input_tokens(system: &str, history: &[ChatMessage], tools: &[ToolDefinition]) -> u64 {
    let mut bytes = system.len();
    let mut fixed = FRAMING_TOKENS;
    for message in history {
        fixed += FRAMING_TOKENS;
        match message {
            ChatMessage::System { content } | ChatMessage::Tool { content, .. } => bytes += content.len(),
            ChatMessage::User {
                content: UserContent::Text(text),
            } => bytes += text.len(),
            ChatMessage::User {
                content: UserContent::Parts(parts),
            } => {
                for part in parts {
                    match part {
                        ContentPart::Text { text } => bytes += text.len(),
                        ContentPart::ImageUrl { .. } => fixed += IMAGE_TOKENS,
                    }
                }
            }
            ChatMessage::Assistant { content, tool_calls } => {
                bytes += content.as_deref().map_or(0, str::len);
                for call in tool_calls {
                    bytes += call.id.len() + call.function.name.len() + call.function.arguments.len();
                }
            }
        }
    }
    for tool in tools {
        fixed += FRAMING_TOKENS;
        bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    }
    (bytes as u64).div_ceil(4) + fixed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn more_input_counts_more_and_an_image_counts_flat() {
        let question = |text: &str| ChatMessage::User {
            content: UserContent::Text(text.into()),
        };
        let short = estimate_input_tokens("Be brief.", &[question("Hi")], &[]);
        let long = estimate_input_tokens("Be brief.", &[question(&"word ".repeat(400))], &[]);
        assert!(long >= short + 400, "{short} {long}");
        let tool = ToolDefinition {
            name: "get_weather".into(),
            description: "The weather.".into(),
            parameters: Arc::new(serde_json::json!({"type": "object"})),
        };
        assert!(estimate_input_tokens("Be brief.", &[question("Hi")], &[tool]) > short);
        let image = ChatMessage::User {
            content: UserContent::Parts(vec![ContentPart::ImageUrl {
                image_url: promptgate_llm::ImageUrl {
                    url: format!("data:image/png;base64,{}", "A".repeat(100_000)),
                },
            }]),
        };
        assert_eq!(
            estimate_input_tokens("", &[image], &[]),
            IMAGE_TOKENS + 2 * FRAMING_TOKENS
        );
    }
}
