//! The offline demo model: deterministic, no network, no API key. It exists so a fresh install
//! shows a whole turn (streamed text, a real tool call, an answer from its result) out of the box.

mod web;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::{
    ChatMessage, ChatModel, ChatRequest, EventStream, FinishReason, LlmError, StreamEvent, ToolChoice,
    ToolDefinition, Usage, UserContent,
};

/// Tools the demo prefers, in order: each makes a call whose result is worth showing.
const PREFERRED_TOOLS: [&str; 3] = ["search", "getTasks", "render_html"];
/// How much of a tool result the demo quotes.
const EXCERPT_CHARS: usize = 240;

#[derive(Debug, Clone)]
pub struct DemoModel {
    chunk_delay: Duration,
}

impl Default for DemoModel {
    fn default() -> Self {
        Self {
            chunk_delay: Duration::from_millis(15),
        }
    }
}

impl DemoModel {
    /// Streams with a small pause between chunks, so the demo looks like a model typing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pause between streamed chunks; zero for tests.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }
}

#[async_trait::async_trait]
impl ChatModel for DemoModel {
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let events = reply_events(&request);
        let delay = self.chunk_delay;
        let stream = futures::stream::iter(events).then(move |event| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(event)
        });
        Ok(Box::pin(stream))
    }

    fn provider_name(&self) -> &'static str {
        "promptgate.demo"
    }
}

fn reply_events(request: &ChatRequest) -> Vec<StreamEvent> {
    let prompt_tokens = request
        .messages
        .iter()
        .map(|m| word_count(&message_text(m)))
        .sum();
    let (mut events, completion_tokens, reason) = match request.messages.last() {
        Some(ChatMessage::User { content }) => {
            let text = user_text(content);
            match choose_tool_call(request, &text) {
                Some((name, arguments)) => {
                    let words = word_count(&arguments);
                    let id = format!("call_demo_{}", request.messages.len());
                    (
                        tool_call_events(id, name, &arguments),
                        words,
                        FinishReason::ToolCalls,
                    )
                }
                None => text_reply(&introduction(&text)),
            }
        }
        Some(ChatMessage::Tool { .. }) => match read_next(request) {
            Some(arguments) => {
                let id = format!("call_demo_{}", request.messages.len());
                (
                    tool_call_events(id, FETCH_TOOL.to_owned(), &arguments),
                    word_count(&arguments),
                    FinishReason::ToolCalls,
                )
            }
            None => text_reply(
                &web::answer_from_page(&request.messages)
                    .unwrap_or_else(|| answer_from_tool_results(&request.messages)),
            ),
        },
        _ => text_reply(&introduction("")),
    };
    events.push(StreamEvent::Usage(Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens + completion_tokens,
        reasoning_tokens: None,
        cached_tokens: None,
        cache_write_tokens: None,
    }));
    events.push(StreamEvent::Finished(reason));
    events
}

fn text_reply(text: &str) -> (Vec<StreamEvent>, u64, FinishReason) {
    let events = word_chunks(text)
        .map(|w| StreamEvent::TextDelta(w.to_owned()))
        .collect();
    (events, word_count(text), FinishReason::Stop)
}

fn tool_call_events(id: String, name: String, arguments: &str) -> Vec<StreamEvent> {
    // Two argument fragments, like a real model, so consumers exercise their assembly.
    let middle = (0..=arguments.len() / 2)
        .rev()
        .find(|&i| arguments.is_char_boundary(i))
        .unwrap_or(0);
    let (head, tail) = arguments.split_at(middle);
    let mut events = vec![StreamEvent::ToolCallStarted { index: 0, id, name }];
    for fragment in [head, tail].into_iter().filter(|f| !f.is_empty()) {
        events.push(StreamEvent::ToolCallArgumentsDelta {
            index: 0,
            fragment: fragment.to_owned(),
        });
    }
    events
}

/// The tool that reads a page.
const FETCH_TOOL: &str = "fetch_content";

/// The arguments of the `fetch_content` call that reads the first search result, when the turn
/// searched, has not read anything yet and may call the tool.
fn read_next(request: &ChatRequest) -> Option<String> {
    if request.tool_choice == Some(ToolChoice::None) || !request.tools.iter().any(|t| t.name == FETCH_TOOL) {
        return None;
    }
    let url = web::page_to_read(&request.messages)?;
    Some(json!({ "url": url }).to_string())
}

/// The tool the demo calls and its JSON arguments, or `None` when it should just answer.
fn choose_tool_call(request: &ChatRequest, user_text: &str) -> Option<(String, String)> {
    if request.tools.is_empty() || request.tool_choice == Some(ToolChoice::None) {
        return None;
    }
    let preferred = PREFERRED_TOOLS
        .iter()
        .find_map(|name| request.tools.iter().find(|t| t.name == *name))
        .map(|tool| (tool, arguments_for(tool, user_text)));
    let (tool, arguments) = preferred.or_else(|| {
        let tool = request.tools.iter().find(|t| required_parameters(t).is_empty())?;
        Some((tool, Value::Object(Map::new())))
    })?;
    Some((tool.name.clone(), arguments.to_string()))
}

fn required_parameters(tool: &ToolDefinition) -> Vec<&str> {
    let required = tool.parameters.get("required").and_then(Value::as_array);
    required
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Fills every required parameter (and `query`, when the tool has one) from its schema type;
/// string parameters get the user's text, or a small page when they hold HTML.
fn arguments_for(tool: &ToolDefinition, user_text: &str) -> Value {
    let properties = tool.parameters.get("properties").and_then(Value::as_object);
    let mut names = required_parameters(tool);
    if properties.is_some_and(|p| p.contains_key("query")) && !names.contains(&"query") {
        names.push("query");
    }
    let mut arguments = Map::new();
    for name in names {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match kind {
            "integer" | "number" => json!(1),
            "boolean" => json!(false),
            "array" => json!([]),
            "object" => json!({}),
            _ if name.to_ascii_lowercase().contains("html") => Value::String(demo_page(user_text)),
            _ if name == "title" => Value::String("Demo page".to_owned()),
            _ => Value::String(user_text.to_owned()),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

fn demo_page(user_text: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Demo page</title></head>\
         <body><h1>Made by the offline demo model</h1><p>{}</p></body></html>",
        escape_html(user_text)
    )
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn introduction(user_text: &str) -> String {
    let mut text = String::from(
        "I am promptgate's offline demo model. I run without an API key or network access and do \
         not understand what you write: I only show how a turn streams. Configure a model provider \
         to get real answers.",
    );
    if !user_text.trim().is_empty() {
        text.push_str("\n\nYou wrote: ");
        text.push_str(user_text.trim());
    }
    text
}

/// Quotes the results of the tool calls that ended the history, labelled with each tool's name.
fn answer_from_tool_results(messages: &[ChatMessage]) -> String {
    let results: Vec<(&str, &str)> = messages
        .iter()
        .rev()
        .map_while(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => Some((tool_call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    let mut text =
        String::from("Here is what the tools returned (the offline demo model quotes, it does not read):");
    let mut cites_first_source = false;
    for (call_id, output) in results.into_iter().rev() {
        let name = tool_name(messages, call_id).unwrap_or("tool");
        text.push_str(&format!(
            "\n\nExcerpt of the `{name}` result:\n> {}",
            excerpt(output)
        ));
        cites_first_source |= output.contains("[Source 1]");
    }
    if cites_first_source {
        text.push_str("\n\nThe first source above is cited like this [1].");
    }
    text
}

fn tool_name<'a>(messages: &'a [ChatMessage], call_id: &str) -> Option<&'a str> {
    messages.iter().find_map(|m| match m {
        ChatMessage::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c| c.id == call_id)
            .map(|c| c.function.name.as_str()),
        _ => None,
    })
}

/// The start of `output` on one line, cut at a word boundary.
fn excerpt(output: &str) -> String {
    let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "(empty)".to_owned();
    }
    match flat.char_indices().nth(EXCERPT_CHARS) {
        None => flat,
        Some((cut, _)) => {
            let head = &flat[..cut];
            let head = head.rfind(' ').map_or(head, |space| &head[..space]);
            format!("{head} …")
        }
    }
}

/// Words with the whitespace that follows them, so concatenating the chunks restores the text.
fn word_chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let after = &rest[word_end..];
        let gap = after.find(|c: char| !c.is_whitespace()).unwrap_or(after.len());
        let (chunk, tail) = rest.split_at(word_end + gap);
        rest = tail;
        Some(chunk)
    })
}

fn word_count(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The demo answers about words, so images are left out.
fn user_text(content: &UserContent) -> String {
    content.joined_text(" ", None)
}

fn message_text(message: &ChatMessage) -> String {
    match message {
        ChatMessage::System { content } | ChatMessage::Tool { content, .. } => content.clone(),
        ChatMessage::User { content } => user_text(content),
        ChatMessage::Assistant { content, tool_calls } => {
            let mut text = content.clone().unwrap_or_default();
            for call in tool_calls {
                text.push(' ');
                text.push_str(&call.function.arguments);
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_chunks_restore_the_text() {
        let text = "  Hello,  world\n\nagain ";
        let chunks: Vec<&str> = word_chunks(text).collect();
        assert_eq!(chunks.concat(), text);
        assert_eq!(chunks, vec!["  ", "Hello,  ", "world\n\n", "again "]);
    }

    #[test]
    fn excerpt_cuts_long_output_at_a_word() {
        let long = "word ".repeat(100);
        let cut = excerpt(&long);
        assert!(cut.ends_with(" …"));
        assert!(cut.chars().count() <= EXCERPT_CHARS + 2);
        assert!(!cut.contains("wor …"));
    }

    #[test]
    fn page_escapes_the_user_text() {
        assert!(demo_page("<b>&").contains("<p>&lt;b&gt;&amp;</p>"));
    }
}
