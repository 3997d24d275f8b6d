//! The calls a turn makes, as the response shows them: a call of one of the client's function tools
//! is a `function_call` item; of the server's tools, an MCP call is an `mcp_call` item (once the turn
//! says which server it went to), a web search or page read a `web_search_call` item, and every other
//! call runs unseen.

use promptgate_core::tools::catalogue::names;
use promptgate_service::events::ClientToolCall;
use serde_json::{Value, json};

use super::frames::{DeltaOf, Frames};
use super::object::{ItemKind, ItemStatus};
use super::translate::Translator;

/// How a call of a server tool shows in the output.
#[derive(Debug, Clone, PartialEq)]
enum Route {
    /// An MCP tool: an `mcp_call` item once the turn says which server it is on.
    Mcp { arguments: Option<String> },
    /// `search` or `fetch_content`: a `web_search_call` item once its input is known.
    Web,
    /// Any other server tool: not shown.
    Hidden,
}

#[derive(Debug)]
pub(super) struct Call {
    tool_call_id: String,
    tool_name: String,
    route: Route,
    /// Its output index, once it is an item.
    index: Option<usize>,
}

impl Translator {
    fn call(&self, tool_call_id: &str) -> Option<&Call> {
        self.calls.iter().find(|call| call.tool_call_id == tool_call_id)
    }

    pub(super) fn call_started(&mut self, tool_call_id: &str, tool_name: &str, mcp: bool) {
        let route = if mcp {
            Route::Mcp { arguments: None }
        } else if [names::SEARCH, names::FETCH_CONTENT].contains(&tool_name) {
            Route::Web
        } else {
            Route::Hidden
        };
        self.calls.push(Call {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            route,
            index: None,
        });
    }

    /// A call of one of the client's tools: the turn hands it over whole at its end, so the item's
    /// arguments arrive as one delta.
    pub(super) fn client_call(&mut self, call: &ClientToolCall, mut out: Option<&mut Frames>) {
        let kind = ItemKind::FunctionCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: String::new(),
        };
        let index = self.open(kind, out.as_deref_mut());
        self.extend(
            Some(index),
            DeltaOf::Arguments,
            &call.arguments,
            out.as_deref_mut(),
        );
        self.close(index, ItemStatus::Completed, out);
    }

    /// The ids of the client's calls the response ended with, in order.
    pub fn client_call_ids(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|item| match &item.kind {
                ItemKind::FunctionCall { call_id, .. } => Some(call_id.clone()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn call_input(&mut self, tool_call_id: &str, input: &Value, out: Option<&mut Frames>) {
        let Some(position) = self
            .calls
            .iter()
            .position(|call| call.tool_call_id == tool_call_id)
        else {
            return;
        };
        match self.calls[position].route {
            Route::Mcp { .. } => {
                self.calls[position].route = Route::Mcp {
                    arguments: Some(input.to_string()),
                };
            }
            Route::Web => {
                let action = web_action(&self.calls[position].tool_name, input);
                let index = self.open(ItemKind::WebSearch { action }, out);
                self.calls[position].index = Some(index);
            }
            Route::Hidden => {}
        }
    }

    /// The turn says which MCP server the latest call of `name` went to: the call becomes an item.
    pub(super) fn mcp_call_located(&mut self, name: &str, origin: &Value, out: Option<&mut Frames>) {
        let Some(position) = self.calls.iter().rposition(|call| {
            call.tool_name == name
                && call.index.is_none()
                && matches!(call.route, Route::Mcp { arguments: Some(_) })
        }) else {
            return;
        };
        let Route::Mcp {
            arguments: Some(arguments),
        } = std::mem::replace(&mut self.calls[position].route, Route::Mcp { arguments: None })
        else {
            return;
        };
        let text = |key: &str| {
            origin
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let kind = ItemKind::McpCall {
            server_label: text("name"),
            name: text("toolName"),
            arguments,
            output: None,
            error: None,
        };
        let index = self.open(kind, out);
        self.calls[position].index = Some(index);
    }

    pub(super) fn call_ended(
        &mut self,
        tool_call_id: &str,
        result: Result<String, String>,
        out: Option<&mut Frames>,
    ) {
        let Some(index) = self.call(tool_call_id).and_then(|call| call.index) else {
            return;
        };
        let status = if result.is_ok() {
            ItemStatus::Completed
        } else {
            ItemStatus::Failed
        };
        if let ItemKind::McpCall { output, error, .. } = &mut self.items[index].kind {
            match result {
                Ok(text) => *output = Some(text),
                Err(text) => *error = Some(text),
            }
        }
        self.close(index, status, out);
    }
}

/// An MCP result as `mcp_call.output` has it: the text of its content blocks, else its JSON.
pub(super) fn output_text(output: &Value) -> String {
    let texts: Option<Vec<&str>> = output.get("content").and_then(Value::as_array).map(|blocks| {
        blocks
            .iter()
            .filter_map(|block| block.get("text")?.as_str())
            .collect()
    });
    match (texts, output) {
        (Some(texts), _) if !texts.is_empty() => texts.join("\n"),
        (_, Value::String(text)) => text.clone(),
        (_, other) => other.to_string(),
    }
}

/// A web tool's call in the API's words: a search, or opening a page.
fn web_action(tool_name: &str, input: &Value) -> Value {
    let field = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or_default();
    if tool_name == names::FETCH_CONTENT {
        json!({"type": "open_page", "url": field("url")})
    } else {
        json!({"type": "search", "query": field("query")})
    }
}
