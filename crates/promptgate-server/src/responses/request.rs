//! The body of `POST /v1/responses`, checked: which fields are used, which are accepted and left
//! alone (they change nothing a gateway decides), and which are refused because what they ask for
//! cannot be done here.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ApiError, preview};

/// Function tools one request may bring.
pub const MAX_CLIENT_TOOLS: usize = 128;
/// The API's own bounds on `metadata`.
const MAX_METADATA_PAIRS: usize = 16;
const MAX_METADATA_KEY_CHARS: usize = 64;
const MAX_METADATA_VALUE_CHARS: usize = 512;
/// What providers accept as a function name.
const MAX_TOOL_NAME_CHARS: usize = 64;

/// The fields the gateway reads. Every other field is accepted and left alone (`include`,
/// `reasoning`, `truncation`, `prompt_cache_key`, `service_tier`, `user`, ...), except those
/// [`check`] refuses.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateResponse {
    /// A model id; else your default model.
    #[serde(default)]
    pub model: Option<String>,
    /// A string (one user message) or an array of input items.
    pub input: Value,
    /// Follows the gateway's system prompt; not carried over by `previous_response_id`.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Function tools; `web_search` is served by the gateway's own web tools.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `auto` (the default), `none`, `required`, or `{"type": "function", "name": ...}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// The most tokens each model request of the response may produce.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    /// Up to 16 string pairs, kept with the response.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// A kept response this one continues.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Keep the response (default true) for `GET /v1/responses/{id}` and `previous_response_id`.
    #[serde(default)]
    pub store: Option<bool>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: Map<String, Value>,
}

/// What the request asks of the turn, once checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The client's function tools as the model is offered them.
    pub functions: Vec<Value>,
    pub tool_choice: Value,
    /// Provider fields: the sampling parameters the client set.
    pub sampling: Map<String, Value>,
    pub metadata: Map<String, Value>,
}

/// Checks everything but `input` (the turn reads that) and says what is wrong in the API's words.
pub fn check(body: &CreateResponse) -> Result<Checked, ApiError> {
    refuse_unsupported(&body.other)?;
    let mut functions = Vec::new();
    for (index, tool) in body.tools.iter().flatten().enumerate() {
        if let Some(function) =
            client_tool(tool).map_err(|problem| param(&format!("tools[{index}]"), &problem))?
        {
            functions.push(function);
        }
    }
    if functions.len() > MAX_CLIENT_TOOLS {
        return Err(param(
            "tools",
            &format!("at most {MAX_CLIENT_TOOLS} function tools are accepted"),
        ));
    }
    let tool_choice = body.tool_choice.clone().unwrap_or_else(|| "auto".into());
    check_tool_choice(&tool_choice)?;
    let mut sampling = Map::new();
    if let Some(temperature) = body.temperature {
        in_range("temperature", temperature, 0.0, 2.0)?;
        sampling.insert("temperature".into(), temperature.into());
    }
    if let Some(top_p) = body.top_p {
        in_range("top_p", top_p, 0.0, 1.0)?;
        sampling.insert("top_p".into(), top_p.into());
    }
    if body.max_output_tokens == Some(0) {
        return Err(param("max_output_tokens", "must be at least 1"));
    }
    let metadata = body.metadata.clone().unwrap_or_default();
    check_metadata(&metadata)?;
    Ok(Checked {
        functions,
        tool_choice,
        sampling,
        metadata,
    })
}

/// Fields whose request cannot be met here: better refused than quietly ignored.
fn refuse_unsupported(other: &Map<String, Value>) -> Result<(), ApiError> {
    let set = |key: &str| {
        other
            .get(key)
            .is_some_and(|value| !value.is_null() && *value != Value::Bool(false))
    };
    if set("background") {
        return Err(param("background", "background responses are not supported"));
    }
    if set("conversation") {
        return Err(param(
            "conversation",
            "conversations are not supported; continue with previous_response_id",
        ));
    }
    if set("prompt") {
        return Err(param("prompt", "stored prompt templates are not supported"));
    }
    let format = other
        .get("text")
        .and_then(|text| text.get("format"))
        .and_then(|format| format.get("type"))
        .and_then(Value::as_str);
    if format.is_some_and(|kind| kind != "text") {
        return Err(param(
            "text.format",
            "only text output is supported (no json_schema or json_object format)",
        ));
    }
    Ok(())
}

/// A tool of the request: a function tool is the client's; the web search tools are the
/// gateway's own, which serve them when the deployment has them; a namespace groups tools of the
/// client's own agent (Codex sends one) and is left out; anything else is refused.
fn client_tool(tool: &Value) -> Result<Option<Value>, String> {
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "function" => function_tool(tool).map(Some),
        kind if kind.starts_with("web_search") => Ok(None),
        "namespace" => Ok(None),
        "" => Err("a tool needs a `type`".into()),
        other => Err(format!(
            "tool type `{}` is not supported; the gateway runs its own tools (web search and your MCP servers) and accepts function tools",
            other.chars().take(40).collect::<String>()
        )),
    }
}

fn function_tool(tool: &Value) -> Result<Value, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a function tool needs a `name`")?;
    let valid = !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        return Err(format!(
            "function name {} must be 1 to {MAX_TOOL_NAME_CHARS} characters of A-Z, a-z, 0-9, '_' and '-'",
            preview(name)
        ));
    }
    match tool.get("parameters") {
        None | Some(Value::Null | Value::Object(_)) => Ok(tool.clone()),
        Some(_) => Err(format!(
            "the parameters of function {name} must be a JSON Schema object"
        )),
    }
}

fn check_tool_choice(choice: &Value) -> Result<(), ApiError> {
    let ok = match choice {
        Value::String(mode) => ["auto", "none", "required"].contains(&mode.as_str()),
        Value::Object(object) => {
            object.get("type").and_then(Value::as_str) == Some("function")
                && object.get("name").and_then(Value::as_str).is_some()
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(param(
            "tool_choice",
            "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}",
        ))
    }
}

fn check_metadata(metadata: &Map<String, Value>) -> Result<(), ApiError> {
    if metadata.len() > MAX_METADATA_PAIRS {
        return Err(param("metadata", &format!("at most {MAX_METADATA_PAIRS} pairs")));
    }
    for (key, value) in metadata {
        if key.chars().count() > MAX_METADATA_KEY_CHARS {
            return Err(param(
                "metadata",
                &format!("keys are at most {MAX_METADATA_KEY_CHARS} characters"),
            ));
        }
        let fits = value
            .as_str()
            .is_some_and(|text| text.chars().count() <= MAX_METADATA_VALUE_CHARS);
        if !fits {
            return Err(param(
                "metadata",
                &format!("values are strings of at most {MAX_METADATA_VALUE_CHARS} characters"),
            ));
        }
    }
    Ok(())
}

fn in_range(name: &str, value: f64, low: f64, high: f64) -> Result<(), ApiError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(param(name, &format!("must be between {low} and {high}")))
    }
}

/// A refused parameter: 400, as the API answers one.
fn param(name: &str, problem: &str) -> ApiError {
    ApiError::bad_request("invalid_parameter", format!("{name}: {problem}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(fields: Value) -> CreateResponse {
        let mut object = json!({"input": "hi"});
        object
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        serde_json::from_value(object).unwrap()
    }

    fn refused(fields: Value) -> String {
        let err = check(&body(fields)).unwrap_err();
        assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST);
        err.message
    }

    #[test]
    fn function_tools_are_the_clients_and_web_search_is_the_gateways() {
        let checked = check(&body(json!({
            "tools": [
                {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": true},
                {"type": "web_search", "external_web_access": false},
                {"type": "web_search_preview"},
                {"type": "namespace", "name": "agents", "tools": []}
            ],
            "tool_choice": {"type": "function", "name": "get_weather"},
            "temperature": 0.2, "top_p": 0.9, "max_output_tokens": 100,
            "metadata": {"ticket": "T-1"},
            "include": ["reasoning.encrypted_content"], "reasoning": null, "store": false,
            "text": {"format": {"type": "text"}, "verbosity": "low"}, "prompt_cache_key": "k"
        })))
        .unwrap();
        assert_eq!(checked.functions.len(), 1);
        assert_eq!(checked.functions[0]["name"], "get_weather");
        assert_eq!(
            checked.sampling,
            *json!({"temperature": 0.2, "top_p": 0.9}).as_object().unwrap()
        );
        assert_eq!(checked.metadata["ticket"], "T-1");
        assert_eq!(check(&body(json!({}))).unwrap().tool_choice, "auto");
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_the_parameter_named() {
        let cases = [
            (
                json!({"tools": [{"type": "mcp", "server_label": "x"}]}),
                "tools[0]: tool type `mcp`",
            ),
            (json!({"tools": [{"type": "function"}]}), "needs a `name`"),
            (
                json!({"tools": [{"type": "function", "name": "has space"}]}),
                "must be 1 to 64",
            ),
            (
                json!({"tools": [{"type": "function", "name": "f", "parameters": "x"}]}),
                "JSON Schema object",
            ),
            (json!({"tool_choice": "sometimes"}), "tool_choice"),
            (json!({"temperature": 3}), "temperature: must be between 0 and 2"),
            (json!({"top_p": -1}), "top_p"),
            (json!({"max_output_tokens": 0}), "max_output_tokens"),
            (json!({"metadata": {"k": 5}}), "values are strings"),
            (json!({"background": true}), "background"),
            (json!({"conversation": "conv_1"}), "previous_response_id"),
            (json!({"prompt": {"id": "p"}}), "prompt templates"),
            (
                json!({"text": {"format": {"type": "json_schema"}}}),
                "text.format",
            ),
        ];
        for (fields, expected) in cases {
            let message = refused(fields);
            assert!(
                message.contains(expected),
                "{message:?} should contain {expected:?}"
            );
        }
        let many: Vec<Value> = (0..=MAX_CLIENT_TOOLS)
            .map(|i| json!({"type": "function", "name": format!("f{i}")}))
            .collect();
        assert!(refused(json!({"tools": many})).contains("at most 128"));
        let pairs: Map<String, Value> = (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert!(refused(json!({"metadata": pairs})).contains("at most 16 pairs"));
        assert!(check(&body(json!({"background": false, "conversation": null}))).is_ok());
    }
}
