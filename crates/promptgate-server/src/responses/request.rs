//! The body of `POST /v1/responses`, checked: which fields are used, which are accepted and left
//! alone (they change nothing a gateway decides), and which are refused because what they ask for
//! cannot be done here.

use promptgate_core::request_fields::value_problem;
use promptgate_service::facade::{ClientToolChoice, ToolDefinition, ToolInput, client_tools};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ApiError, ErrorCode};

/// The API's own bounds on `metadata`.
const MAX_METADATA_PAIRS: usize = 16;
const MAX_METADATA_KEY_CHARS: usize = 64;
const MAX_METADATA_VALUE_CHARS: usize = 512;

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
    /// The client's function tools as it sent them, for the response to repeat.
    pub functions: Vec<Value>,
    /// The function tools as the model is offered them: none when `tool_choice` is `none`.
    pub client_tools: Vec<ToolDefinition>,
    pub choice: ClientToolChoice,
    /// `tool_choice` as sent (`auto` when absent), for the response to repeat.
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
        if is_function(tool).map_err(|problem| param(&format!("tools[{index}]"), &problem))? {
            functions.push(tool.clone());
        }
    }
    let inputs: Vec<ToolInput<'_>> = functions.iter().map(tool_input).collect();
    let definitions = client_tools("tools", &inputs)
        .map_err(|err| ApiError::new(ErrorCode::InvalidParameter, err.to_string()))?;
    let tool_choice = body.tool_choice.clone().unwrap_or_else(|| "auto".into());
    let (choice, offered) = client_choice(&tool_choice, &definitions)?;
    let client_tools = if offered { definitions } else { Vec::new() };
    let mut sampling = Map::new();
    for (name, value) in [("temperature", body.temperature), ("top_p", body.top_p)] {
        if let Some(value) = value {
            let value = Value::from(value);
            if let Some(problem) = value_problem(name, &value) {
                return Err(param(name, &problem));
            }
            sampling.insert(name.into(), value);
        }
    }
    if body.max_output_tokens == Some(0) {
        return Err(param("max_output_tokens", "must be at least 1"));
    }
    let metadata = body.metadata.clone().unwrap_or_default();
    check_metadata(&metadata)?;
    Ok(Checked {
        functions,
        client_tools,
        choice,
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

/// Whether a tool of the request is the client's: a function tool is; the web search tools are
/// the gateway's own, which serve them when the deployment has them; a namespace groups tools of
/// the client's own agent (Codex sends one) and is left out; anything else is refused.
fn is_function(tool: &Value) -> Result<bool, String> {
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "function" => Ok(true),
        kind if kind.starts_with("web_search") => Ok(false),
        "namespace" => Ok(false),
        "" => Err("a tool needs a `type`".into()),
        other => Err(format!(
            "tool type `{}` is not supported; the gateway runs its own tools (web search and your MCP servers) and accepts function tools",
            other.chars().take(40).collect::<String>()
        )),
    }
}

/// A function tool as the API writes it: flat, with its schema in `parameters`.
fn tool_input(tool: &Value) -> ToolInput<'_> {
    ToolInput {
        name: tool.get("name").and_then(Value::as_str).unwrap_or_default(),
        description: tool.get("description").and_then(Value::as_str),
        parameters: tool.get("parameters"),
    }
}

/// `tool_choice` in the engine's terms, and whether the client's tools are offered at all
/// (`none` offers none of them; the gateway's own tools still run).
fn client_choice(choice: &Value, tools: &[ToolDefinition]) -> Result<(ClientToolChoice, bool), ApiError> {
    let refused = || {
        param(
            "tool_choice",
            "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}",
        )
    };
    match choice {
        Value::String(mode) => match mode.as_str() {
            "auto" => Ok((ClientToolChoice::Auto, true)),
            "none" => Ok((ClientToolChoice::Auto, false)),
            "required" => Ok((ClientToolChoice::Required, true)),
            _ => Err(refused()),
        },
        Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("function") => {
            let name = object.get("name").and_then(Value::as_str).ok_or_else(refused)?;
            if !tools.iter().any(|tool| tool.name == name) {
                return Err(param(
                    "tool_choice",
                    &format!("names the function {name:?}, which is not among `tools`"),
                ));
            }
            Ok((ClientToolChoice::Named(name.to_owned()), true))
        }
        _ => Err(refused()),
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

/// A refused parameter: 400, as the API answers one.
fn param(name: &str, problem: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidParameter, format!("{name}: {problem}"))
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
        assert_eq!(err.status(), axum::http::StatusCode::BAD_REQUEST);
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
        assert_eq!(checked.client_tools.len(), 1);
        assert_eq!(checked.choice, ClientToolChoice::Named("get_weather".into()));
        assert_eq!(
            checked.sampling,
            *json!({"temperature": 0.2, "top_p": 0.9}).as_object().unwrap()
        );
        assert_eq!(checked.metadata["ticket"], "T-1");
        assert_eq!(check(&body(json!({}))).unwrap().tool_choice, "auto");
        let none = check(&body(
            json!({"tools": [{"type": "function", "name": "f"}], "tool_choice": "none"}),
        ))
        .unwrap();
        assert!(
            none.client_tools.is_empty(),
            "none offers the client's tools to nobody"
        );
        assert_eq!(none.functions.len(), 1, "yet the response repeats them");
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_the_parameter_named() {
        let cases = [
            (
                json!({"tools": [{"type": "mcp", "server_label": "x"}]}),
                "tools[0]: tool type `mcp`",
            ),
            (json!({"tools": [{"type": "function"}]}), "tools[0]"),
            (
                json!({"tools": [{"type": "function", "name": "has space"}]}),
                "tools[0]",
            ),
            (
                json!({"tools": [{"type": "function", "name": "f", "parameters": "x"}]}),
                "tools[0]",
            ),
            (json!({"tool_choice": "sometimes"}), "tool_choice"),
            (
                json!({"tool_choice": {"type": "function", "name": "absent"}}),
                "not among `tools`",
            ),
            (
                json!({"temperature": 3}),
                "temperature: must be a number from 0 to 2",
            ),
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
        let many: Vec<Value> = (0..=128)
            .map(|i| json!({"type": "function", "name": format!("f{i}")}))
            .collect();
        assert!(refused(json!({"tools": many})).contains("at most 128"));
        let pairs: Map<String, Value> = (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert!(refused(json!({"metadata": pairs})).contains("at most 16 pairs"));
        assert!(check(&body(json!({"background": false, "conversation": null}))).is_ok());
    }
}
