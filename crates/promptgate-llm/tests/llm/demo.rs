//! The offline demo model: what a fresh install shows without an API key.

use crate::common;

use std::time::Duration;

use common::{ask, run};
use promptgate_llm::{
    ChatMessage, DemoModel, FinishReason, StreamEvent, ToolCall, ToolChoice, ToolDefinition, Usage,
};
use serde_json::{Value, json};

fn demo() -> DemoModel {
    DemoModel::new().with_chunk_delay(Duration::ZERO)
}

fn tool(name: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: format!("The {name} tool"),
        parameters: parameters.into(),
    }
}

fn search() -> ToolDefinition {
    tool(
        "search",
        json!({ "type": "object", "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } }, "required": ["query"] }),
    )
}

fn render_html() -> ToolDefinition {
    tool(
        "render_html",
        json!({ "type": "object", "properties": { "html": { "type": "string" } }, "required": ["html"] }),
    )
}

fn needs_an_id() -> ToolDefinition {
    tool(
        "deleteTasks",
        json!({ "type": "object", "properties": { "ids": { "type": "array" } }, "required": ["ids"] }),
    )
}

fn no_parameters(name: &str) -> ToolDefinition {
    tool(name, json!({ "type": "object", "properties": {} }))
}

#[tokio::test]
async fn with_tools_it_calls_search_with_the_users_text() {
    let mut request = ask("rust async runtimes");
    request.tools = vec![render_html(), no_parameters("getTasks"), search()];
    let outcome = run(&demo(), request).await;

    assert_eq!(outcome.error, None);
    let calls = outcome.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, "search");
    let arguments: Value = serde_json::from_str(&calls[0].function.arguments).expect("JSON arguments");
    assert_eq!(arguments, json!({ "query": "rust async runtimes" }));
    assert_eq!(
        outcome.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls))
    );
    assert_eq!(outcome.text(), "", "a tool-call step has no text");
}

#[tokio::test]
async fn without_search_it_prefers_get_tasks_then_render_html_then_any_tool_without_required_parameters() {
    let cases = [
        (
            vec![needs_an_id(), render_html(), no_parameters("getTasks")],
            "getTasks",
        ),
        (vec![needs_an_id(), render_html()], "render_html"),
        (vec![needs_an_id(), no_parameters("skill_list")], "skill_list"),
    ];
    for (tools, expected) in cases {
        let mut request = ask("show <me>");
        request.tools = tools;
        let calls = run(&demo(), request).await.tool_calls();
        assert_eq!(
            calls.iter().map(|c| c.function.name.as_str()).collect::<Vec<_>>(),
            vec![expected]
        );
        let arguments: Value = serde_json::from_str(&calls[0].function.arguments).expect("JSON arguments");
        if expected == "render_html" {
            let page = arguments["html"].as_str().expect("a page");
            assert!(
                page.starts_with("<!DOCTYPE html>") && page.contains("show &lt;me&gt;"),
                "{page}"
            );
        } else {
            assert_eq!(arguments, json!({}));
        }
    }
}

#[tokio::test]
async fn with_only_unusable_tools_or_tools_turned_off_it_answers() {
    let mut unusable = ask("hello");
    unusable.tools = vec![needs_an_id()];
    assert!(run(&demo(), unusable).await.tool_calls().is_empty());

    let mut off = ask("hello");
    off.tools = vec![search()];
    off.tool_choice = Some(ToolChoice::None);
    let outcome = run(&demo(), off).await;
    assert!(outcome.tool_calls().is_empty());
    assert!(outcome.text().contains("offline demo model"));
}

#[tokio::test]
async fn it_answers_from_the_tool_result_and_cites_the_first_source() {
    let call = ToolCall::new("call_demo_2", "search", "{\"query\":\"tides\"}");
    let mut request = ask("tides");
    request.messages.push(ChatMessage::Assistant {
        content: None,
        tool_calls: vec![call],
    });
    request.messages.push(ChatMessage::Tool {
        tool_call_id: "call_demo_2".to_owned(),
        content: "[Source 1] Tides are caused by the moon.\n\nhttps://example.com/tides".to_owned(),
    });
    request.tools = vec![search()];
    let outcome = run(&demo(), request).await;

    assert_eq!(outcome.error, None);
    assert!(
        outcome.tool_calls().is_empty(),
        "after a tool result it answers instead of calling again"
    );
    let text = outcome.text();
    assert!(text.contains("`search`"), "{text}");
    assert!(text.contains("Tides are caused by the moon."), "{text}");
    assert!(text.contains("[1]"), "{text}");
    assert_eq!(outcome.last(), Some(&StreamEvent::Finished(FinishReason::Stop)));
}

#[tokio::test]
async fn a_result_without_sources_is_quoted_without_a_citation() {
    let mut request = ask("tasks");
    request.messages.push(ChatMessage::Assistant {
        content: None,
        tool_calls: vec![ToolCall::new("c", "getTasks", "{}")],
    });
    request.messages.push(ChatMessage::Tool {
        tool_call_id: "c".to_owned(),
        content: "no tasks".to_owned(),
    });
    let text = run(&demo(), request).await.text();
    assert!(text.contains("no tasks") && !text.contains("[1]"), "{text}");
}

#[tokio::test]
async fn without_tools_it_explains_itself_and_echoes_the_user_word_by_word() {
    let outcome = run(&demo(), ask("what is the weather")).await;
    let text = outcome.text();
    assert!(text.contains("offline demo model"), "{text}");
    assert!(text.ends_with("You wrote: what is the weather"), "{text}");
    let chunks = outcome
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
        .count();
    let words = text.split_whitespace().count();
    assert_eq!(chunks, words, "one chunk per word");

    let prompt_words = "Be brief. what is the weather".split_whitespace().count() as u64;
    assert_eq!(
        outcome.events[outcome.events.len() - 2],
        StreamEvent::Usage(Usage {
            prompt_tokens: prompt_words,
            completion_tokens: words as u64,
            total_tokens: prompt_words + words as u64,
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn the_demo_is_deterministic() {
    let mut request = ask("same input");
    request.tools = vec![search()];
    let first = run(&demo(), request.clone()).await.events;
    let second = run(&demo(), request).await.events;
    assert_eq!(first, second);
}
