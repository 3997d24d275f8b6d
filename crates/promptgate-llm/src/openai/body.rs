//! The JSON body of a streaming chat-completions request.

use serde_json::{Map, Value, json};

use crate::{ChatRequest, LlmError};

/// Builds the upstream body. `extra` is merged last so provider options and fields a client
/// passed through reach the provider untouched, except that it cannot turn streaming off or
/// drop the usage report: the client depends on both.
pub(crate) fn request_body(request: &ChatRequest) -> Result<Vec<u8>, LlmError> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(request.model.clone()));
    body.insert("messages".into(), to_value(&request.messages)?);
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));

    // Providers reject `tool_choice` and `parallel_tool_calls` when no tools are offered.
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            body.insert("tool_choice".into(), to_value(choice)?);
        }
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(effort) = &request.reasoning_effort {
        body.insert("reasoning_effort".into(), Value::String(effort.clone()));
    }

    for (key, value) in &request.extra {
        match (key.as_str(), value) {
            ("stream", _) => {
                tracing::debug!("ignoring an extra `stream` field: the client always streams");
            }
            ("stream_options", Value::Object(options)) => {
                let mut merged = options.clone();
                merged.insert("include_usage".into(), Value::Bool(true));
                body.insert(key.clone(), Value::Object(merged));
            }
            _ => {
                body.insert(key.clone(), value.clone());
            }
        }
    }
    serde_json::to_vec(&body).map_err(|e| LlmError::Protocol(format!("could not encode the request: {e}")))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, LlmError> {
    serde_json::to_value(value).map_err(|e| LlmError::Protocol(format!("could not encode the request: {e}")))
}
