//! The demo model's web turn: after a search it reads the first result, then answers in Markdown
//! from the page it read and cites it by the number the gateway gave it.

use serde_json::Value;

use crate::ChatMessage;

/// What the tools returned since the user's last message: (tool name, parsed output).
fn results_since_user(messages: &[ChatMessage]) -> Vec<(&str, Value)> {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }))
        .map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => Some((
                super::tool_name(messages, tool_call_id).unwrap_or("tool"),
                first_json(content),
            )),
            _ => None,
        })
        .collect()
}

/// The JSON object a tool result starts with (the gateway may append lines, such as the budget, after
/// it); Null when there is none.
fn first_json(content: &str) -> Value {
    let Some(start) = content.find('{') else {
        return Value::Null;
    };
    serde_json::Deserializer::from_str(&content[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or(Value::Null)
}

/// The page to read next: the first search result, when a search ran and nothing was read yet.
pub(crate) fn page_to_read(messages: &[ChatMessage]) -> Option<String> {
    let results = results_since_user(messages);
    if results.iter().any(|(name, _)| *name == "fetch_content") {
        return None;
    }
    results
        .iter()
        .rev()
        .find(|(name, _)| *name == "search")
        .and_then(|(_, output)| output["results"][0]["url"].as_str())
        .map(str::to_owned)
}

/// A Markdown answer from the page read, citing it as `[N]`; `None` when no page was read.
pub(crate) fn answer_from_page(messages: &[ChatMessage]) -> Option<String> {
    let results = results_since_user(messages);
    let found = results
        .iter()
        .find(|(name, _)| *name == "search")
        .and_then(|(_, output)| output["results"].as_array())
        .map_or(0, Vec::len);
    let (_, page) = results.iter().rev().find(|(name, _)| *name == "fetch_content")?;
    let index = page["sourceIndex"].as_u64()?;
    let title = page["title"].as_str().unwrap_or("the page");
    let text = page["text"].as_str().unwrap_or_default();
    let points: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .take(3)
        .collect();
    let mut answer = format!("## From *{title}*\n\n");
    for point in points {
        let point = point.trim_start_matches("- ");
        answer.push_str(&format!("- {} [{index}]\n", super::excerpt(point)));
    }
    answer.push_str(&format!(
        "\n| step | tool | what it did |\n|---|---|---|\n\
         | 1 | `search` | found {found} result(s) |\n\
         | 2 | `fetch_content` | read source [{index}] |\n\n\
         I am the offline demo model: I quote what my tools return and do not understand it. \
         Configure a model provider for real answers."
    ));
    Some(answer)
}
