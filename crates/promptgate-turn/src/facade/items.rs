//! A Responses API request's `input` → the history a turn runs on.
//!
//! `input` is a string (one user message) or a list of items: messages of any role, the
//! `function_call` items a response returned and the `function_call_output` items answering them.
//! Items that record work the server did on its own (reasoning, web searches, MCP calls) are what a
//! client sends back when it keeps the conversation itself; the model's side of those is not in
//! them, so they are left out, and the conversation goes on from the text that followed them. A
//! conversation continued with `previous_response_id` keeps them whole instead.

use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, ToolCall, UserContent};
use serde_json::Value;

use super::request::{FacadeHistory, MAX_MESSAGES};
use crate::TurnError;

/// Item types a client may send back that carry nothing the model needs from the client: the
/// server's own work, shown to the client as it happened.
const SERVER_ITEMS: [&str; 11] = [
    "reasoning",
    "web_search_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "compaction",
    "custom_tool_call",
    "custom_tool_call_output",
];

/// Converts `input`. Unlike a chat completion, it may hold no user message: a request that
/// continues a stored response may bring only the outputs of the function calls it ended with.
pub fn responses_history(input: &Value) -> Result<FacadeHistory, TurnError> {
    let items = match input {
        Value::String(text) => {
            return Ok(FacadeHistory {
                system: Vec::new(),
                messages: vec![ChatMessage::User {
                    content: UserContent::Text(text.clone()),
                }],
            });
        }
        Value::Array(items) => items,
        _ => return Err(invalid("`input` must be a string or an array of items".into())),
    };
    if items.len() > MAX_MESSAGES {
        return Err(invalid(format!(
            "at most {MAX_MESSAGES} input items are accepted, got {}",
            items.len()
        )));
    }
    let mut history = FacadeHistory::default();
    for (index, item) in items.iter().enumerate() {
        add_item(&mut history, item).map_err(|problem| invalid(format!("input[{index}]: {problem}")))?;
    }
    Ok(history)
}

fn add_item(history: &mut FacadeHistory, item: &Value) -> Result<(), String> {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
    match kind {
        "message" => add_message(history, item),
        "function_call" => {
            let call = function_call(item)?;
            push_call(&mut history.messages, call);
            Ok(())
        }
        "function_call_output" => {
            let call_id = required_str(item, "call_id")?;
            let content = output_text(item.get("output").unwrap_or(&Value::Null))?;
            history.messages.push(ChatMessage::Tool {
                tool_call_id: call_id.to_owned(),
                content,
            });
            Ok(())
        }
        kind if SERVER_ITEMS.contains(&kind) => Ok(()),
        other => Err(format!("item type `{other}` is not supported")),
    }
}

fn add_message(history: &mut FacadeHistory, item: &Value) -> Result<(), String> {
    let role = required_str(item, "role")?;
    let content = item.get("content").unwrap_or(&Value::Null);
    match role {
        "system" | "developer" => history.system.push(text_of_parts(content)?),
        "user" => history.messages.push(ChatMessage::User {
            content: user_content(content)?,
        }),
        "assistant" => {
            let text = text_of_parts(content)?;
            if !text.is_empty() {
                history.messages.push(ChatMessage::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                });
            }
        }
        other => return Err(format!("role `{other}` is not supported")),
    }
    Ok(())
}

/// A call joins the assistant message it follows (the model's text and calls of one step are one
/// message upstream), unless a result came in between: then it starts the next step.
fn push_call(messages: &mut Vec<ChatMessage>, call: ToolCall) {
    if let Some(ChatMessage::Assistant { tool_calls, .. }) = messages.last_mut() {
        tool_calls.push(call);
        return;
    }
    messages.push(ChatMessage::Assistant {
        content: None,
        tool_calls: vec![call],
    });
}

fn function_call(item: &Value) -> Result<ToolCall, String> {
    let call_id = required_str(item, "call_id")?;
    let name = required_str(item, "name")?;
    let arguments = match item.get("arguments") {
        Some(Value::String(arguments)) => arguments.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(_) => return Err("`arguments` must be a JSON text".into()),
    };
    Ok(ToolCall::new(call_id, name, arguments))
}

fn required_str<'a>(item: &'a Value, key: &str) -> Result<&'a str, String> {
    item.get(key)
        .and_then(Value::as_str)
        .filter(|value| !value.is_empty())
        .ok_or_else(|| format!("`{key}` is missing"))
}

/// A user message keeps its images; anything else must be text.
fn user_content(content: &Value) -> Result<UserContent, String> {
    let Value::Array(parts) = content else {
        return Ok(UserContent::Text(text_of_parts(content)?));
    };
    let parts = parts
        .iter()
        .map(|part| match part_type(part) {
            "input_image" => image(part),
            _ => text_part(part).map(|text| ContentPart::Text {
                text: text.to_owned(),
            }),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(UserContent::Parts(parts))
}

fn image(part: &Value) -> Result<ContentPart, String> {
    let url = match part.get("image_url") {
        Some(Value::String(url)) => url.as_str(),
        _ if part.get("file_id").is_some() => {
            return Err(
                "images by `file_id` are not supported; send `image_url` (a URL or a data URL)".into(),
            );
        }
        _ => return Err("an `input_image` part has no `image_url`".into()),
    };
    Ok(ContentPart::ImageUrl {
        image_url: ImageUrl { url: url.to_owned() },
    })
}

/// Text content: a string, `null`, or text parts (joined with newlines).
fn text_of_parts(content: &Value) -> Result<String, String> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let texts = parts.iter().map(text_part).collect::<Result<Vec<_>, String>>()?;
            Ok(texts.join("\n"))
        }
        _ => Err("`content` must be a string or an array of parts".into()),
    }
}

/// A function's output: a string, or parts of which only text is supported.
fn output_text(output: &Value) -> Result<String, String> {
    match output {
        Value::String(text) => Ok(text.clone()),
        Value::Array(_) => text_of_parts(output),
        Value::Null => Err("`output` is missing".into()),
        _ => Err("`output` must be a string or an array of parts".into()),
    }
}

fn text_part(part: &Value) -> Result<&str, String> {
    let key = match part_type(part) {
        "input_text" | "output_text" | "text" | "summary_text" => "text",
        "refusal" => "refusal",
        "input_file" => return Err("file inputs are not supported".into()),
        other => return Err(format!("content part type `{other}` is not supported here")),
    };
    part.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("a `{}` part has no `{key}`", part_type(part)))
}

fn part_type(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or("")
}

fn invalid(message: String) -> TurnError {
    TurnError::InvalidRequest(message)
}

/// Checks that every function call in `messages` is answered right after the step that made it,
/// and that every answer belongs to a call: a provider refuses anything else, and the client is
/// better told which call it missed. Run on the whole conversation, stored part included.
pub fn check_call_results(messages: &[ChatMessage]) -> Result<(), TurnError> {
    let mut open: Vec<&str> = Vec::new();
    for message in messages {
        match message {
            ChatMessage::Tool { tool_call_id, .. } => {
                let Some(at) = open.iter().position(|id| id == tool_call_id) else {
                    return Err(invalid(format!(
                        "the function_call_output for call_id {tool_call_id:?} answers no function call before it"
                    )));
                };
                open.remove(at);
            }
            other => {
                if let Some(id) = open.first() {
                    return Err(invalid(format!(
                        "function call {id:?} has no function_call_output; send one for every call"
                    )));
                }
                if let ChatMessage::Assistant { tool_calls, .. } = other {
                    open.extend(tool_calls.iter().map(|call| call.id.as_str()));
                }
            }
        }
    }
    match open.first() {
        Some(id) => Err(invalid(format!(
            "function call {id:?} has no function_call_output; send one for every call"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(input: Value) -> Result<FacadeHistory, TurnError> {
        responses_history(&input)
    }

    #[test]
    fn a_string_is_one_user_message() {
        let history = convert(json!("Hello")).unwrap();
        assert!(history.system.is_empty());
        assert_eq!(
            history.messages,
            [ChatMessage::User {
                content: UserContent::Text("Hello".into())
            }]
        );
    }

    #[test]
    fn the_items_a_client_sends_back_become_the_conversation() {
        let history = convert(json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be terse."}]},
            {"role": "system", "content": "Use metric."},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Weather here?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"}
            ]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "time", "arguments": "{}"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "oslo"}},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"c\":4}"},
            {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "noon"}]},
            {"type": "function_call", "call_id": "call_3", "name": "time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_3", "output": "one"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4 degrees at noon."}]},
            {"type": "message", "role": "user", "content": "Thanks"}
        ]))
        .unwrap();
        assert_eq!(history.system, ["Be terse.", "Use metric."]);
        let tool = |id: &str, content: &str| ChatMessage::Tool {
            tool_call_id: id.into(),
            content: content.into(),
        };
        assert_eq!(
            history.messages,
            vec![
                ChatMessage::User {
                    content: UserContent::Parts(vec![
                        ContentPart::Text {
                            text: "Weather here?".into()
                        },
                        ContentPart::ImageUrl {
                            image_url: ImageUrl {
                                url: "data:image/png;base64,AA".into()
                            }
                        },
                    ])
                },
                ChatMessage::Assistant {
                    content: Some("Checking.".into()),
                    tool_calls: vec![
                        ToolCall::new("call_1", "weather", r#"{"city":"Oslo"}"#),
                        ToolCall::new("call_2", "time", "{}"),
                    ],
                },
                tool("call_1", r#"{"c":4}"#),
                tool("call_2", "noon"),
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall::new("call_3", "time", "{}")],
                },
                tool("call_3", "one"),
                ChatMessage::Assistant {
                    content: Some("4 degrees at noon.".into()),
                    tool_calls: vec![]
                },
                ChatMessage::User {
                    content: UserContent::Text("Thanks".into())
                },
            ]
        );
        assert_eq!(check_call_results(&history.messages), Ok(()));
    }

    #[test]
    fn problems_name_the_item_at_fault() {
        let cases = [
            (json!(5), "must be a string or an array"),
            (
                json!([{"type": "message", "content": "x"}]),
                "input[0]: `role` is missing",
            ),
            (
                json!(["x", {"role": "user", "content": "x"}]),
                "input[0]: `role` is missing",
            ),
            (
                json!([{"role": "user", "content": "x"}, {"role": "tool", "content": "x"}]),
                "input[1]: role `tool`",
            ),
            (
                json!([{"type": "item_reference", "id": "msg_1"}]),
                "item type `item_reference` is not supported",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]),
                "file inputs are not supported",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]),
                "by `file_id` are not supported",
            ),
            (
                json!([{"type": "function_call", "name": "f", "arguments": "{}"}]),
                "`call_id` is missing",
            ),
            (
                json!([{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]),
                "`arguments` must be a JSON text",
            ),
            (
                json!([{"type": "function_call_output", "call_id": "c"}]),
                "`output` is missing",
            ),
        ];
        for (input, expected) in cases {
            let err = convert(input).unwrap_err().to_string();
            assert!(err.contains(expected), "{err:?} should contain {expected:?}");
        }
    }

    #[test]
    fn every_call_needs_its_output_and_every_output_its_call() {
        let unanswered = convert(json!([
            {"role": "user", "content": "x"},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
            {"role": "user", "content": "y"}
        ]))
        .unwrap();
        let err = check_call_results(&unanswered.messages).unwrap_err().to_string();
        assert!(err.contains("\"call_1\" has no function_call_output"), "{err}");

        let last = convert(json!([
            {"role": "user", "content": "x"},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
        ]))
        .unwrap();
        assert!(check_call_results(&last.messages).is_err());

        let orphan = convert(json!([
            {"role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "call_9", "output": "ok"}
        ]))
        .unwrap();
        let err = check_call_results(&orphan.messages).unwrap_err().to_string();
        assert!(err.contains("\"call_9\" answers no function call"), "{err}");
    }

    #[test]
    fn the_number_of_items_is_bounded() {
        let many = Value::Array(vec![json!({"role": "user", "content": "x"}); MAX_MESSAGES + 1]);
        let err = responses_history(&many).unwrap_err().to_string();
        assert!(err.contains("at most 2000 input items"), "{err}");
    }
}
