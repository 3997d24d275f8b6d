//! An OpenAI chat-completions request's `messages` → the history a turn runs on.
//!
//! The request comes from any OpenAI client, so every shape it may legitimately use is accepted
//! (string or part-array content, `developer` as a system role, `null` assistant content) and
//! everything else is refused with a message naming the offending message.

use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, ToolCall, UserContent};
use serde_json::Value;

use crate::TurnError;

/// Messages one request may carry.
pub const MAX_MESSAGES: usize = 2_000;

/// The request's conversation, split the way a turn needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FacadeHistory {
    /// Text of the client's `system` / `developer` messages, in order. The server decides how it
    /// combines them with the gateway's own prompt.
    pub system: Vec<String>,
    /// Everything else, in order.
    pub messages: Vec<ChatMessage>,
}

/// Converts the request's `messages`.
pub fn facade_history(messages: &[Value]) -> Result<FacadeHistory, TurnError> {
    if messages.len() > MAX_MESSAGES {
        return Err(invalid(format!(
            "at most {MAX_MESSAGES} messages are accepted, got {}",
            messages.len()
        )));
    }
    let mut history = FacadeHistory::default();
    for (index, message) in messages.iter().enumerate() {
        let at = |problem: String| invalid(format!("messages[{index}]: {problem}"));
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| at("`role` is missing".into()))?;
        let content = message.get("content").unwrap_or(&Value::Null);
        match role {
            "system" | "developer" => history.system.push(text_content(content).map_err(at)?),
            "user" => history.messages.push(ChatMessage::User {
                content: user_content(content).map_err(at)?,
            }),
            "assistant" => {
                let text = text_content(content).map_err(at)?;
                let tool_calls = match message.get("tool_calls") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(calls)) => calls
                        .iter()
                        .map(tool_call)
                        .collect::<Result<_, _>>()
                        .map_err(at)?,
                    Some(_) => return Err(at("`tool_calls` must be an array".into())),
                };
                let content = (!text.is_empty()).then_some(text);
                history
                    .messages
                    .push(ChatMessage::Assistant { content, tool_calls });
            }
            "tool" => {
                let tool_call_id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("a tool message needs `tool_call_id`".into()))?;
                let content = text_content(content).map_err(at)?;
                history.messages.push(ChatMessage::Tool {
                    tool_call_id: tool_call_id.to_owned(),
                    content,
                });
            }
            other => return Err(at(format!("role `{other}` is not supported"))),
        }
    }
    if history.messages.is_empty() {
        return Err(invalid("the request needs at least one user message".into()));
    }
    Ok(history)
}

fn invalid(message: String) -> TurnError {
    TurnError::InvalidRequest(message)
}

/// Content that must be text: a string, `null`, or text parts (joined with newlines).
fn text_content(content: &Value) -> Result<String, String> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let texts = parts
                .iter()
                .map(|part| match part_type(part) {
                    "text" => text_of(part),
                    other => Err(format!("content part type `{other}` is not supported here")),
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(texts.join("\n"))
        }
        _ => Err("`content` must be a string or an array of parts".into()),
    }
}

fn user_content(content: &Value) -> Result<UserContent, String> {
    let Value::Array(parts) = content else {
        return Ok(UserContent::Text(text_content(content)?));
    };
    let parts = parts
        .iter()
        .map(|part| match part_type(part) {
            "text" => text_of(part).map(|text| ContentPart::Text {
                text: text.to_owned(),
            }),
            "image_url" => {
                let url = match part.get("image_url") {
                    Some(Value::String(url)) => Some(url.as_str()),
                    Some(image) => image.get("url").and_then(Value::as_str),
                    None => None,
                };
                let url = url.ok_or_else(|| "an image part has no `image_url.url`".to_owned())?;
                inline_image(url)
            }
            other => Err(format!("content part type `{other}` is not supported")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(UserContent::Parts(parts))
}

fn text_of(part: &Value) -> Result<&str, String> {
    part.get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| "a text part has no `text`".to_owned())
}

fn part_type(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or("")
}

fn tool_call(call: &Value) -> Result<ToolCall, String> {
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .ok_or("a tool call has no `id`")?;
    let function = call.get("function").ok_or("a tool call has no `function`")?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool call has no `function.name`")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(arguments)) => arguments.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(object) => object.to_string(),
    };
    Ok(ToolCall::new(id, name, arguments))
}

/// An image a facade caller sends. A link would be fetched by the provider, from wherever it points
/// (the provider's own network, a metadata address): only inline `data:` images pass.
pub(crate) fn inline_image(url: &str) -> Result<ContentPart, String> {
    if !url.starts_with("data:") {
        return Err(
            "an image must be sent inline as a `data:` URL; this server does not fetch image links or pass them on"
                .to_owned(),
        );
    }
    Ok(ContentPart::ImageUrl {
        image_url: ImageUrl { url: url.to_owned() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(messages: Value) -> Result<FacadeHistory, TurnError> {
        facade_history(messages.as_array().unwrap())
    }

    #[test]
    fn the_usual_shapes_are_accepted() {
        let history = convert(json!([
            {"role": "developer", "content": "Be terse."},
            {"role": "system", "content": [{"type": "text", "text": "Use metric."}]},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"c\":4}"},
            {"role": "assistant", "content": "4 degrees."},
            {"role": "user", "name": "ann", "content": [
                {"type": "text", "text": "And this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "low"}}
            ]}
        ]))
        .unwrap();

        assert_eq!(history.system, ["Be terse.", "Use metric."]);
        assert_eq!(
            history.messages,
            vec![
                ChatMessage::User {
                    content: UserContent::Text("Weather?".into())
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall::new("call_1", "weather", r#"{"city":"Oslo"}"#)],
                },
                ChatMessage::Tool {
                    tool_call_id: "call_1".into(),
                    content: r#"{"c":4}"#.into()
                },
                ChatMessage::Assistant {
                    content: Some("4 degrees.".into()),
                    tool_calls: vec![]
                },
                ChatMessage::User {
                    content: UserContent::Parts(vec![
                        ContentPart::Text {
                            text: "And this?".into()
                        },
                        ContentPart::ImageUrl {
                            image_url: ImageUrl {
                                url: "data:image/png;base64,AA".into()
                            }
                        },
                    ])
                },
            ]
        );
    }

    #[test]
    fn problems_name_the_message_at_fault() {
        let cases = [
            (json!([{"content": "x"}]), "messages[0]: `role` is missing"),
            (
                json!([{"role": "user", "content": "x"}, {"role": "function", "content": "x"}]),
                "messages[1]: role `function`",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_audio"}]}]),
                "`input_audio` is not supported",
            ),
            (json!([{"role": "tool", "content": "x"}]), "needs `tool_call_id`"),
            (
                json!([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]),
                "no `id`",
            ),
            (
                json!([{"role": "user", "content": 5}]),
                "must be a string or an array",
            ),
            (
                json!([{"role": "system", "content": "only a prompt"}]),
                "at least one user message",
            ),
            (
                json!([{"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest/meta-data"}}
                ]}]),
                "messages[0]: an image must be sent inline as a `data:` URL",
            ),
        ];
        for (messages, expected) in cases {
            let err = convert(messages).unwrap_err().to_string();
            assert!(err.contains(expected), "{err:?} should contain {expected:?}");
        }
    }

    #[test]
    fn the_number_of_messages_is_bounded() {
        let many = vec![json!({"role": "user", "content": "x"}); MAX_MESSAGES + 1];
        let err = facade_history(&many).unwrap_err();
        assert!(err.to_string().contains("at most 2000 messages"), "{err}");
    }
}
