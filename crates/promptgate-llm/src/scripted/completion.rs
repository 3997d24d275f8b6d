//! The non-streamed answer a script stands for: its chunks folded into one `chat.completion`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Script, Step};

pub(super) fn from_script(script: &Script) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
    let mut finish_reason = Value::Null;
    let mut usage = Value::Null;
    let mut model = Value::String("scripted".to_owned());

    for step in &script.steps {
        let Step::Chunk(chunk) = step else { continue };
        if let Some(m) = chunk.get("model") {
            model = m.clone();
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            usage = u.clone();
        }
        let choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for choice in choices {
            if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
                finish_reason = reason.clone();
            }
            let delta = &choice["delta"];
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                content.push_str(text);
            }
            if let Some(text) = delta.get("reasoning_content").and_then(Value::as_str) {
                reasoning.push_str(text);
            }
            let fragments = delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (position, fragment) in fragments.iter().enumerate() {
                let index = fragment
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(position as u64);
                let call = calls.entry(index).or_default();
                if let Some(id) = fragment.get("id").and_then(Value::as_str) {
                    call.0 = id.to_owned();
                }
                let function = &fragment["function"];
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    call.1 = name.to_owned();
                }
                if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                    call.2.push_str(arguments);
                }
            }
        }
    }

    let mut message = json!({ "role": "assistant", "content": if content.is_empty() { Value::Null } else { Value::String(content) } });
    if !reasoning.is_empty() {
        message["reasoning_content"] = Value::String(reasoning);
    }
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .into_values()
            .map(|(id, name, arguments)| {
                json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_764_662_400,
        "model": model,
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason }],
        "usage": usage,
    })
}
