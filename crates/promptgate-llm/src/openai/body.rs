//! The JSON body of a streaming chat-completions request.
//!
//! Written straight from the request, borrowing it: the system prompt and the tools' schemas are most of
//! the bytes, and copying them into a `Value` first cost more than writing them.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::{ChatRequest, LlmError, ToolDefinition};

/// Builds the upstream body. `extra` is merged last so provider options and fields a client
/// passed through reach the provider untouched, except that it cannot turn streaming off or
/// drop the usage report: the client depends on both.
pub(crate) fn request_body(request: &ChatRequest) -> Result<Vec<u8>, LlmError> {
    if request.extra.contains_key("stream") {
        tracing::debug!("ignoring an extra `stream` field: the client always streams");
    }
    serde_json::to_vec(&Body(request))
        .map_err(|e| LlmError::Protocol(format!("could not encode the request: {e}")))
}

struct Body<'a>(&'a ChatRequest);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let extra = &request.extra;
        // A field the extras also carry is written once, from the extras.
        let ours = |key: &str| !extra.contains_key(key);
        let mut body = serializer.serialize_map(None)?;
        if ours("model") {
            body.serialize_entry("model", &request.model)?;
        }
        if ours("messages") {
            body.serialize_entry("messages", &request.messages)?;
        }
        body.serialize_entry("stream", &true)?;
        match extra.get("stream_options") {
            Some(Value::Object(options)) => {
                let mut merged = options.clone();
                merged.insert("include_usage".into(), Value::Bool(true));
                body.serialize_entry("stream_options", &merged)?;
            }
            Some(other) => body.serialize_entry("stream_options", other)?,
            None => body.serialize_entry("stream_options", &IncludeUsage { include_usage: true })?,
        }
        // Providers reject `tool_choice` and `parallel_tool_calls` when no tools are offered.
        if !request.tools.is_empty() {
            if ours("tools") {
                body.serialize_entry("tools", &Tools(&request.tools))?;
            }
            if let Some(choice) = request.tool_choice.as_ref().filter(|_| ours("tool_choice")) {
                body.serialize_entry("tool_choice", choice)?;
            }
            if let Some(parallel) = request
                .parallel_tool_calls
                .filter(|_| ours("parallel_tool_calls"))
            {
                body.serialize_entry("parallel_tool_calls", &parallel)?;
            }
        }
        if let Some(temperature) = request.temperature.filter(|_| ours("temperature")) {
            body.serialize_entry("temperature", &temperature)?;
        }
        if let Some(effort) = request
            .reasoning_effort
            .as_ref()
            .filter(|_| ours("reasoning_effort"))
        {
            body.serialize_entry("reasoning_effort", effort)?;
        }
        // OpenAI refuses the older `max_tokens` for reasoning models; a compatible server that
        // does not know the newer field ignores it.
        if let Some(tokens) = request
            .max_output_tokens
            .filter(|_| ours("max_completion_tokens") && ours("max_tokens"))
        {
            body.serialize_entry("max_completion_tokens", &tokens)?;
        }
        for (key, value) in extra {
            if key != "stream" && key != "stream_options" {
                body.serialize_entry(key, value)?;
            }
        }
        body.end()
    }
}

#[derive(Serialize)]
struct IncludeUsage {
    include_usage: bool,
}

struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|tool| FunctionTool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        }))
    }
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
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
    fn without_tools_no_tool_fields_are_sent() {
        let mut request = request();
        request.tools.clear();
        let value = body(&request);
        for field in ["tools", "tool_choice", "parallel_tool_calls"] {
            assert!(value.get(field).is_none(), "{field} sent without tools");
        }
    }
}
