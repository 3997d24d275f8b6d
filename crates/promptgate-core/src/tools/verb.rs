//! What the UI shows while a tool runs: the rendered verb (`Searching for "rust async"...`), a display
//! name for the tool, its initials and a coarse category.

use serde_json::Value;

use super::ToolSpec;
use super::text::truncate_chars;

/// Longest argument value shown inside a verb before it is cut and marked with `...`.
pub const MAX_VERB_VALUE_CHARS: usize = 40;
/// Longest query quoted by the fallback message of search-like tools without a verb.
pub const MAX_FALLBACK_QUERY_CHARS: usize = 20;
/// Longest display name.
pub const MAX_DISPLAY_NAME_CHARS: usize = 25;

/// Fills each `{word}` of `template` from `input`: a present, non-null, non-empty value becomes
/// ` "<value>"` (cut to 40 characters plus `...`), anything else removes the placeholder. Whitespace
/// runs then collapse to one space and the ends are trimmed.
pub fn render_verb(template: &str, input: &Value) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let word_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if word_len > 0 && after[word_len..].starts_with('}') {
            if let Some(shown) = input.get(&after[..word_len]).and_then(shown_value) {
                out.push_str(" \"");
                out.push_str(&shown);
                out.push('"');
            }
            rest = &after[word_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    collapse_whitespace(&out)
}

fn shown_value(value: &Value) -> Option<String> {
    let text = match value {
        Value::Null => return None,
        Value::String(s) if s.is_empty() => return None,
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    };
    // Non-strings are cut too, so a long array can never blow up a progress line.
    Some(truncate_chars(&text, MAX_VERB_VALUE_CHARS, "..."))
}

/// The progress line for a call: the rendered verb, capitalised, with `...`; without a verb, a message
/// guessed from the tool's name.
pub fn loading_message(name: &str, verb: Option<&str>, input: &Value) -> String {
    if let Some(verb) = verb.filter(|v| !v.trim().is_empty()) {
        return format!("{}...", capitalise(&render_verb(verb, input)));
    }
    let category = category(name);
    if category == Category::Search
        && let Some(query) = input.get("query").and_then(Value::as_str)
        && !query.trim().is_empty()
    {
        let shown = truncate_chars(query.trim(), MAX_FALLBACK_QUERY_CHARS, "…");
        return format!("Searching for \"{shown}\"...");
    }
    match category {
        Category::Search => "Searching...".to_owned(),
        Category::Data => "Loading data...".to_owned(),
        Category::Action => "Working on it...".to_owned(),
        Category::Analysis => "Analyzing...".to_owned(),
        Category::Communication => "Checking messages...".to_owned(),
        Category::Weather => "Checking the weather...".to_owned(),
        Category::Unknown => format!("Using {}...", display_name(name)),
    }
}

/// [`loading_message`] for a tool of the toolset.
pub fn loading_message_for(spec: &ToolSpec, input: &Value) -> String {
    loading_message(&spec.name, spec.verb.as_deref(), input)
}

/// Coarse kind of a tool, guessed from keywords in its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Search,
    Data,
    Action,
    Analysis,
    Communication,
    Weather,
    Unknown,
}

/// First match wins, in the order search, data, action, analysis, communication, weather. A keyword
/// matches the start of a word of the name, so `thread` does not count as `read`.
pub fn category(name: &str) -> Category {
    const RULES: [(Category, &[&str]); 6] = [
        (Category::Search, &["search", "find", "lookup", "query"]),
        (
            Category::Data,
            &["get", "fetch", "read", "list", "load", "retrieve", "check"],
        ),
        (
            Category::Action,
            &[
                "create", "add", "update", "delete", "remove", "write", "draft", "save", "edit", "render",
            ],
        ),
        (
            Category::Analysis,
            &["analy", "calculat", "compute", "summar", "compare"],
        ),
        (
            Category::Communication,
            &["mail", "email", "message", "chat", "send"],
        ),
        (Category::Weather, &["weather", "forecast"]),
    ];
    let words: Vec<String> = words(name).map(|w| w.to_lowercase()).collect();
    RULES
        .iter()
        .find(|(_, keywords)| keywords.iter().any(|k| words.iter().any(|w| w.starts_with(k))))
        .map_or(Category::Unknown, |(c, _)| *c)
}

/// The words of a tool name: split at `.`, `_`, `-`, whitespace and camelCase boundaries.
fn words(name: &str) -> impl Iterator<Item = &str> {
    let mut boundaries = Vec::new();
    let mut previous: Option<char> = None;
    for (i, c) in name.char_indices() {
        if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            boundaries.push(i);
        }
        previous = Some(c);
    }
    boundaries.push(name.len());
    let mut start = 0;
    boundaries
        .into_iter()
        .map(move |end| {
            let part = &name[start..end];
            start = end;
            part
        })
        .flat_map(|part| part.split(|c: char| matches!(c, '.' | '_' | '-') || c.is_whitespace()))
        .filter(|w| !w.is_empty())
}

/// A tool name made readable: `._-` become spaces, camelCase is split, each word starts upper-case, and
/// the result is cut to 25 characters. `fetch_content` → `Fetch Content`, `addTasks` → `Add Tasks`.
pub fn display_name(name: &str) -> String {
    let titled = words(name).map(capitalise).collect::<Vec<_>>().join(" ");
    titled
        .chars()
        .take(MAX_DISPLAY_NAME_CHARS)
        .collect::<String>()
        .trim_end()
        .to_owned()
}

/// The first letters of the display name's first two words, upper-case.
pub fn initials(name: &str) -> String {
    display_name(name)
        .split_whitespace()
        .take(2)
        .filter_map(|w| w.chars().next())
        .flat_map(char::to_uppercase)
        .collect()
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
