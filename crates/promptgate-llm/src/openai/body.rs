//! The JSON body of a streaming chat-completions request.
//!
//! Written straight from the request, borrowing it: the system prompt and the tools' schemas are most of
//! the bytes, and copying them into a `Value` first cost more than writing them. The object is
//! written field by field rather than through a `Serialize` impl so that the messages' texts go
//! through [`json_text::write_str`] and each schema is copied from its text rendered once
//! ([`json_text::schema_text`]); the bytes are those `serde_json` writes.

use serde::Serialize;
use serde_json::Value;

use crate::json_text;
use crate::{ChatMessage, ChatRequest, LlmError, ToolDefinition, UserContent};

/// Builds the upstream body. `extra` is merged last so provider options and fields a client
/// passed through reach the provider untouched, except that it cannot choose between a stream
/// and a whole answer (the request does) or drop a stream's usage report: the client depends on
/// both.
pub(crate) fn request_body(request: &ChatRequest) -> Result<Vec<u8>, LlmError> {
    if request.extra.contains_key("stream") {
        tracing::debug!("ignoring an extra `stream` field: the request says whether to stream");
    }
    let mut body = Object::default();
    write_body(&mut body, request)
        .map_err(|e| LlmError::Protocol(format!("could not encode the request: {e}")))?;
    Ok(body.end())
}

fn write_body(body: &mut Object, request: &ChatRequest) -> serde_json::Result<()> {
    let extra = &request.extra;
    // A field the extras also carry is written once, from the extras.
    let ours = |key: &str| !extra.contains_key(key);
    if ours("model") {
        body.key("model");
        json_text::write_str(&mut body.out, &request.model);
    }
    if ours("messages") {
        body.key("messages");
        write_messages(&mut body.out, &request.messages)?;
    }
    body.entry("stream", &!request.whole_answer)?;
    // A whole answer always reports its usage, and OpenAI refuses `stream_options` without a
    // stream.
    match extra.get("stream_options") {
        _ if request.whole_answer => {}
        Some(Value::Object(options)) => {
            let mut merged = options.clone();
            merged.insert("include_usage".into(), Value::Bool(true));
            body.entry("stream_options", &merged)?;
        }
        Some(other) => body.entry("stream_options", other)?,
        None => body.entry("stream_options", &IncludeUsage { include_usage: true })?,
    }
    // Providers reject `tool_choice` and `parallel_tool_calls` when no tools are offered.
    if !request.tools.is_empty() {
        if ours("tools") {
            body.key("tools");
            write_tools(&mut body.out, &request.tools);
        }
        if let Some(choice) = request.tool_choice.as_ref().filter(|_| ours("tool_choice")) {
            body.entry("tool_choice", choice)?;
        }
        if let Some(parallel) = request
            .parallel_tool_calls
            .filter(|_| ours("parallel_tool_calls"))
        {
            body.entry("parallel_tool_calls", &parallel)?;
        }
    }
    if let Some(temperature) = request.temperature.filter(|_| ours("temperature")) {
        body.entry("temperature", &temperature)?;
    }
    if let Some(effort) = request
        .reasoning_effort
        .as_ref()
        .filter(|_| ours("reasoning_effort"))
    {
        body.entry("reasoning_effort", effort)?;
    }
    // OpenAI refuses the older `max_tokens` for reasoning models; a compatible server that
    // does not know the newer field ignores it.
    if let Some(tokens) = request
        .max_output_tokens
        .filter(|_| ours("max_completion_tokens") && ours("max_tokens"))
    {
        body.entry("max_completion_tokens", &tokens)?;
    }
    for (key, value) in extra {
        if key != "stream" && key != "stream_options" {
            body.entry(key, value)?;
        }
    }
    Ok(())
}

/// A JSON object being written: `{` before the first key, `,` before every other.
#[derive(Default)]
struct Object {
    out: Vec<u8>,
}

impl Object {
    fn key(&mut self, key: &str) {
        self.out.push(if self.out.is_empty() { b'{' } else { b',' });
        json_text::write_str(&mut self.out, key);
        self.out.push(b':');
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> serde_json::Result<()> {
        self.key(key);
        serde_json::to_writer(&mut self.out, value)
    }

    fn end(mut self) -> Vec<u8> {
        if self.out.is_empty() {
            self.out.push(b'{');
        }
        self.out.push(b'}');
        self.out
    }
}

/// The messages as `ChatMessage`'s `Serialize` writes them (the role first, then the fields in
/// order), their texts through the fast string writer.
fn write_messages(out: &mut Vec<u8>, messages: &[ChatMessage]) -> serde_json::Result<()> {
    out.push(b'[');
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match message {
            ChatMessage::System { content } => {
                out.extend_from_slice(br#"{"role":"system","content":"#);
                json_text::write_recurring_str(out, content);
            }
            ChatMessage::User {
                content: UserContent::Text(text),
            } => {
                out.extend_from_slice(br#"{"role":"user","content":"#);
                json_text::write_str(out, text);
            }
            ChatMessage::User {
                content: UserContent::Parts(parts),
            } => {
                out.extend_from_slice(br#"{"role":"user","content":"#);
                serde_json::to_writer(&mut *out, parts)?;
            }
            ChatMessage::Assistant { content, tool_calls } => {
                out.extend_from_slice(br#"{"role":"assistant""#);
                if let Some(content) = content {
                    out.extend_from_slice(br#","content":"#);
                    json_text::write_str(out, content);
                }
                if !tool_calls.is_empty() {
                    out.extend_from_slice(br#","tool_calls":"#);
                    serde_json::to_writer(&mut *out, tool_calls)?;
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                out.extend_from_slice(br#"{"role":"tool","tool_call_id":"#);
                json_text::write_str(out, tool_call_id);
                out.extend_from_slice(br#","content":"#);
                json_text::write_str(out, content);
            }
        }
        out.push(b'}');
    }
    out.push(b']');
    Ok(())
}

/// `[{"type":"function","function":{"name","description","parameters"}}, …]`.
fn write_tools(out: &mut Vec<u8>, tools: &[ToolDefinition]) {
    out.push(b'[');
    for (index, tool) in tools.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"type":"function","function":{"name":"#);
        json_text::write_str(out, &tool.name);
        out.extend_from_slice(br#","description":"#);
        json_text::write_str(out, &tool.description);
        out.extend_from_slice(br#","parameters":"#);
        out.extend_from_slice(json_text::schema_text(&tool.parameters).as_bytes());
        out.extend_from_slice(b"}}");
    }
    out.push(b']');
}

#[derive(Serialize)]
struct IncludeUsage {
    include_usage: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::{ChatMessage, ToolChoice};

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".to_owned(),
            messages: vec![ChatMessage::System {
                content: "Be brief.".to_owned(),
            }],
            tools: vec![ToolDefinition {
                name: "lookup".to_owned(),
                description: "Looks up.".to_owned(),
                parameters: json!({"type": "object"}).into(),
            }],
            tool_choice: Some(ToolChoice::Auto),
            temperature: Some(0.5),
            parallel_tool_calls: Some(false),
            reasoning_effort: Some("low".to_owned()),
            max_output_tokens: Some(300),
            whole_answer: false,
            extra: Map::new(),
            cache: Default::default(),
        }
    }

    fn body(request: &ChatRequest) -> Value {
        serde_json::from_slice(&request_body(request).unwrap()).unwrap()
    }

    #[test]
    fn every_field_lands_where_the_provider_expects_it() {
        assert_eq!(
            body(&request()),
            json!({
                "model": "m",
                "messages": [{"role": "system", "content": "Be brief."}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {
                    "name": "lookup", "description": "Looks up.", "parameters": {"type": "object"}
                }}],
                "tool_choice": "auto",
                "parallel_tool_calls": false,
                "temperature": 0.5,
                "reasoning_effort": "low",
                "max_completion_tokens": 300,
            })
        );
    }

    #[test]
    fn extras_win_once_each_but_cannot_stop_the_stream_or_its_usage() {
        let mut request = request();
        request.extra = json!({
            "temperature": 0.1,
            "stream": false,
            "stream_options": {"other": 1},
            "top_p": 0.9,
        })
        .as_object()
        .cloned()
        .unwrap();
        let bytes = request_body(&request).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.matches("\"temperature\"").count(), 1, "{text}");
        assert_eq!(text.matches("\"stream\"").count(), 1, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["temperature"], json!(0.1));
        assert_eq!(value["stream"], json!(true));
        assert_eq!(
            value["stream_options"],
            json!({"other": 1, "include_usage": true})
        );
        assert_eq!(value["top_p"], json!(0.9));
    }

    #[test]
    fn a_whole_answer_is_asked_for_without_stream_options_whatever_the_extras_say() {
        let mut request = request();
        request.whole_answer = true;
        request.extra = json!({"stream": true, "stream_options": {"include_usage": true}})
            .as_object()
            .cloned()
            .unwrap();
        let text = String::from_utf8(request_body(&request).unwrap()).unwrap();
        assert_eq!(text.matches("\"stream\"").count(), 1, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["stream"], json!(false));
        assert!(value.get("stream_options").is_none(), "{value}");
        assert_eq!(value["max_completion_tokens"], json!(300));
    }

    #[test]
    fn a_length_cap_in_the_extras_is_the_only_one_sent() {
        for field in ["max_tokens", "max_completion_tokens"] {
            let mut request = request();
            request.extra = json!({ field: 50 }).as_object().cloned().unwrap();
            let value = body(&request);
            assert_eq!(value[field], json!(50));
            let caps = ["max_tokens", "max_completion_tokens"]
                .iter()
                .filter(|f| value.get(**f).is_some())
                .count();
            assert_eq!(caps, 1, "{value}");
        }
    }

    #[test]
    fn messages_and_tools_are_the_bytes_serde_writes() {
        let mut request = request();
        request.messages = vec![
            ChatMessage::System {
                content: "Be brief.\n\n\"Quoted\" \\ and \u{1}".to_owned(),
            },
            ChatMessage::User {
                content: crate::UserContent::Text("héllo\tthere".to_owned()),
            },
            ChatMessage::User {
                content: crate::UserContent::Parts(vec![crate::ContentPart::Text {
                    text: "a\nb".to_owned(),
                }]),
            },
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![crate::ToolCall::new("c1", "lookup", r#"{"q":"x"}"#)],
            },
            ChatMessage::Assistant {
                content: Some("done".to_owned()),
                tool_calls: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".to_owned(),
                content: "result \"1\"".to_owned(),
            },
        ];
        request.tools[0].description = "Looks \"up\".\n".to_owned();
        request.tools[0].parameters =
            json!({"type": "object", "properties": {"q": {"type": "string"}}}).into();
        let text = String::from_utf8(request_body(&request).unwrap()).unwrap();
        let messages = serde_json::to_string(&request.messages).unwrap();
        assert!(
            text.starts_with(&format!(r#"{{"model":"m","messages":{messages},"stream":true,"#)),
            "{text}"
        );
        let tool = &request.tools[0];
        let tools = format!(
            r#""tools":[{{"type":"function","function":{{"name":{},"description":{},"parameters":{}}}}}],"#,
            serde_json::to_string(&tool.name).unwrap(),
            serde_json::to_string(&tool.description).unwrap(),
            tool.parameters,
        );
        assert!(text.contains(&tools), "{text}");
        assert!(text.ends_with(r#""max_completion_tokens":300}"#), "{text}");
    }

    #[test]
    fn without_tools_no_tool_fields_are_sent() {
        let mut request = request();
        request.tools.clear();
        let value = body(&request);
        for field in ["tools", "tool_choice", "parallel_tool_calls"] {
            assert!(value.get(field).is_none(), "{field} sent without tools");
        }
    }
}
