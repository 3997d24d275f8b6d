//! A facade request's own tools, checked once for every API: each facade reads its wire shape
//! (`{type: "function", function: {...}}`, a flat function tool, an Anthropic tool) into
//! [`ToolInput`]s and [`client_tools`] decides what the model is offered.

use std::sync::Arc;

use promptgate_llm::ToolDefinition;
use serde_json::Value;

use crate::TurnError;

/// Tools one request may define (the most the OpenAI API accepts).
pub const MAX_TOOLS: usize = 128;
/// A tool name: 1 to this many of `A-Z a-z 0-9 _ -` (what Anthropic's API accepts; OpenAI's
/// stops at 64, which its upstream then says).
pub const MAX_NAME_LEN: usize = 128;
/// The longest description and the largest parameter schema (as JSON) of one tool.
pub const MAX_DESCRIPTION_BYTES: usize = 64 << 10;
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// All of a request's tools together (names, descriptions and schemas).
pub const MAX_TOOLS_BYTES: usize = 1 << 20;

/// One tool as a facade read it from its request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInput<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    /// The JSON Schema of its arguments; absent means "no arguments".
    pub parameters: Option<&'a Value>,
}

/// The request's tools as the model is offered them, or why they are refused. `at` names where
/// the tools sit in the request (`tools`), for the messages.
pub fn client_tools(at: &str, tools: &[ToolInput<'_>]) -> Result<Vec<ToolDefinition>, TurnError> {
    if tools.len() > MAX_TOOLS {
        return Err(invalid(format!(
            "`{at}` may hold at most {MAX_TOOLS} tools, got {}",
            tools.len()
        )));
    }
    let mut total = 0;
    let mut definitions: Vec<ToolDefinition> = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let problem = |what: String| invalid(format!("{at}[{index}]: {what}"));
        check_name(tool.name).map_err(problem)?;
        if definitions.iter().any(|known| known.name == tool.name) {
            return Err(problem(format!("the name `{}` is used twice", tool.name)));
        }
        let description = tool.description.unwrap_or_default();
        if description.len() > MAX_DESCRIPTION_BYTES {
            return Err(problem(format!(
                "the description is longer than {MAX_DESCRIPTION_BYTES} bytes"
            )));
        }
        let parameters = match tool.parameters {
            None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
            Some(schema @ Value::Object(_)) => schema.clone(),
            Some(_) => return Err(problem("the parameter schema must be a JSON object".into())),
        };
        let schema_bytes = parameters.to_string().len();
        if schema_bytes > MAX_SCHEMA_BYTES {
            return Err(problem(format!(
                "the parameter schema is larger than {MAX_SCHEMA_BYTES} bytes"
            )));
        }
        total += tool.name.len() + description.len() + schema_bytes;
        if total > MAX_TOOLS_BYTES {
            return Err(invalid(format!(
                "`{at}` is larger than {MAX_TOOLS_BYTES} bytes altogether"
            )));
        }
        definitions.push(ToolDefinition {
            name: tool.name.to_owned(),
            description: description.to_owned(),
            parameters: Arc::new(parameters),
        });
    }
    Ok(definitions)
}

fn check_name(name: &str) -> Result<(), String> {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if name.is_empty() || name.len() > MAX_NAME_LEN || !plain {
        return Err(format!(
            "the tool name `{name}` must be 1 to {MAX_NAME_LEN} characters of A-Z, a-z, 0-9, '_' and '-'"
        ));
    }
    Ok(())
}

fn invalid(message: String) -> TurnError {
    TurnError::InvalidRequest(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool<'a>(name: &'a str, parameters: Option<&'a Value>) -> ToolInput<'a> {
        ToolInput {
            name,
            description: Some("does it"),
            parameters,
        }
    }

    #[test]
    fn tools_become_definitions_and_a_missing_schema_takes_no_arguments() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let tools = client_tools("tools", &[tool("get_weather", Some(&schema)), tool("now", None)]).unwrap();
        assert_eq!(tools[0].name, "get_weather");
        assert_eq!(*tools[0].parameters, schema);
        assert_eq!(*tools[1].parameters, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn bad_tools_are_refused_with_where_they_are() {
        let list = json!([1]);
        let cases: Vec<(Vec<ToolInput<'_>>, &str)> = vec![
            (
                vec![tool("has space", None)],
                "tools[0]: the tool name `has space`",
            ),
            (vec![tool("", None)], "tools[0]: the tool name ``"),
            (
                vec![tool("a", None), tool("a", None)],
                "tools[1]: the name `a` is used twice",
            ),
            (vec![tool("a", Some(&list))], "must be a JSON object"),
        ];
        for (tools, expected) in cases {
            let err = client_tools("tools", &tools).unwrap_err().to_string();
            assert!(err.contains(expected), "{err:?} should contain {expected:?}");
        }
        let many: Vec<ToolInput<'_>> = (0..=MAX_TOOLS).map(|_| tool("t", None)).collect();
        assert!(
            client_tools("tools", &many)
                .unwrap_err()
                .to_string()
                .contains("at most 128")
        );
    }
}
