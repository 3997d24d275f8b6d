//! What the client makes of provider streams, replayed by a real HTTP server on loopback.

use crate::common;

use std::time::Duration;

use common::{ask, client, run, upstream, with_think_tags};
use promptgate_llm::scripted::{
    Script, Step, choice_chunk, content_chunk, finish_chunk, reasoning_chunk, role_chunk, text,
    tool_call_chunk, tool_calls, usage_chunk,
};
use promptgate_llm::{FinishReason, LlmError, StreamEvent, ToolCall, ToolChoice, ToolDefinition, Usage};
use serde_json::json;

fn usage(prompt: u64, completion: u64) -> StreamEvent {
    StreamEvent::Usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    })
}

#[tokio::test]
async fn streams_text_and_sends_a_streaming_request() {
    let upstream = upstream().await;
    upstream.push(text(["Hel", "lo"]));
    let outcome = run(&client(&upstream), ask("hi")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
            usage(10, 2),
            StreamEvent::Finished(FinishReason::Stop),
        ]
    );
    let sent = upstream.last_request().expect("one request");
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(
        sent["messages"],
        json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "hi" }])
    );
    assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none());
    assert_eq!(upstream.calls(), 1);
}

#[tokio::test]
async fn parallel_tool_calls_with_interleaved_indexes() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(tool_call_chunk(Some(0), Some("call_1"), Some("search"), ""))
            .chunk(tool_call_chunk(Some(1), Some("call_2"), Some("getTasks"), ""))
            .chunk(tool_call_chunk(Some(0), None, None, "{\"query\":"))
            .chunk(tool_call_chunk(Some(1), None, None, "{}"))
            .chunk(tool_call_chunk(Some(0), None, None, "\"rust\"}"))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    let outcome = run(&client(&upstream), ask("find")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.tool_calls(),
        vec![
            ToolCall::new("call_1", "search", "{\"query\":\"rust\"}"),
            ToolCall::new("call_2", "getTasks", "{}")
        ]
    );
    assert_eq!(
        outcome.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls))
    );
}

#[tokio::test]
async fn tool_call_arguments_in_many_fragments() {
    let upstream = upstream().await;
    upstream.push(tool_calls(&[(
        "call_9",
        "render_html",
        &["{\"ht", "ml\":\"<p>", "hi</p>\"}"],
    )]));
    let outcome = run(&client(&upstream), ask("draw")).await;

    assert_eq!(
        outcome.tool_calls(),
        vec![ToolCall::new("call_9", "render_html", "{\"html\":\"<p>hi</p>\"}")]
    );
    let fragments = outcome
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallArgumentsDelta { .. }))
        .count();
    assert_eq!(fragments, 3, "fragments are passed on as they arrive");
}

#[tokio::test]
async fn a_whole_tool_call_in_one_fragment_and_calls_without_index() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(tool_call_chunk(
                Some(0),
                Some("w1"),
                Some("search"),
                "{\"query\":\"a\"}",
            ))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    upstream.push(
        Script::new()
            .chunk(tool_call_chunk(
                None,
                Some("g1"),
                Some("search"),
                "{\"query\":\"a\"}",
            ))
            .chunk(tool_call_chunk(None, Some("g2"), Some("getTasks"), "{}"))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    let model = client(&upstream);

    let whole = run(&model, ask("one")).await;
    assert_eq!(
        whole.tool_calls(),
        vec![ToolCall::new("w1", "search", "{\"query\":\"a\"}")]
    );

    let indexless = run(&model, ask("two")).await;
    assert_eq!(
        indexless.tool_calls(),
        vec![
            ToolCall::new("g1", "search", "{\"query\":\"a\"}"),
            ToolCall::new("g2", "getTasks", "{}")
        ]
    );
}

#[tokio::test]
async fn reasoning_content_is_reasoning() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(reasoning_chunk("Let me "))
            .chunk(reasoning_chunk("think."))
            .chunk(content_chunk("Done."))
            .chunk(finish_chunk("stop"))
            .done(),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert_eq!(outcome.reasoning(), "Let me think.");
    assert_eq!(outcome.text(), "Done.");
}

#[tokio::test]
async fn think_tags_split_across_chunks() {
    let upstream = upstream().await;
    let pieces = ["<thi", "nk>pon", "der</th", "ink>", "Answer", " <b>bold</b>"];
    let script = pieces
        .iter()
        .fold(Script::new(), |s, p| s.chunk(content_chunk(p)));
    upstream.push(script.chunk(finish_chunk("stop")).done());
    let outcome = run(&with_think_tags(&upstream), ask("q")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.reasoning(), "ponder");
    assert_eq!(outcome.text(), "Answer <b>bold</b>");
    let leaked = outcome
        .events
        .iter()
        .any(|e| matches!(e, StreamEvent::TextDelta(t) if t.contains("<th")));
    assert!(
        !leaked,
        "no piece of a tag reaches the text: {:?}",
        outcome.events
    );
}

#[tokio::test]
async fn usage_on_the_finish_chunk_and_in_a_final_empty_choices_chunk() {
    let upstream = upstream().await;
    let mut on_finish = finish_chunk("stop");
    on_finish["usage"] = json!({ "prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4 });
    upstream.push(
        Script::new()
            .chunk(content_chunk("a"))
            .chunk(on_finish.clone())
            .done(),
    );
    let mut detailed = usage_chunk(20, 6);
    detailed["usage"]["prompt_tokens_details"] = json!({ "cached_tokens": 16 });
    detailed["usage"]["completion_tokens_details"] = json!({ "reasoning_tokens": 4 });
    upstream.push(
        Script::new()
            .chunk(content_chunk("b"))
            .chunk(on_finish)
            .chunk(detailed)
            .done(),
    );
    let model = client(&upstream);

    let first = run(&model, ask("q")).await;
    assert_eq!(
        first.events[first.events.len() - 2..],
        [usage(3, 1), StreamEvent::Finished(FinishReason::Stop)]
    );

    let second = run(&model, ask("q")).await;
    let expected = Usage {
        prompt_tokens: 20,
        completion_tokens: 6,
        total_tokens: 26,
        reasoning_tokens: Some(4),
        cached_tokens: Some(16),
        cache_write_tokens: None,
    };
    assert_eq!(
        second.events[second.events.len() - 2..],
        [
            StreamEvent::Usage(expected),
            StreamEvent::Finished(FinishReason::Stop)
        ],
        "the later usage replaces the one on the finish chunk, and Finished stays last"
    );
}

#[tokio::test]
async fn an_error_chunk_mid_stream_ends_the_stream_with_its_message() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("partial"))
            .chunk(json!({ "error": { "message": "The server had an error", "type": "server_error" } })),
    );
    upstream.push(
        Script::new()
            .chunk(content_chunk("x"))
            .raw("event: error\ndata: {\"message\":\"overloaded\"}\n\n"),
    );
    let model = client(&upstream);

    let chunk = run(&model, ask("q")).await;
    assert_eq!(chunk.text(), "partial", "what came before the error is kept");
    assert!(
        matches!(chunk.error, Some(LlmError::Status { message, .. }) if message == "The server had an error")
    );

    let event = run(&model, ask("q")).await;
    assert!(matches!(event.error, Some(LlmError::Status { message, .. }) if message == "overloaded"));
}

#[tokio::test]
async fn a_stream_that_stops_before_the_finish_reason_is_an_error() {
    let upstream = upstream().await;
    upstream.push(Script::new().chunk(content_chunk("half")));
    // The pause lets the headers and the first chunk leave before the connection is cut.
    upstream.push(
        Script::new()
            .chunk(content_chunk("half"))
            .delay(Duration::from_millis(100))
            .cut(),
    );
    let model = client(&upstream);

    let closed = run(&model, ask("q")).await;
    assert_eq!(closed.text(), "half");
    assert_eq!(
        closed.error,
        Some(LlmError::Protocol(
            "stream ended before the model finished".to_owned()
        ))
    );

    let cut = run(&model, ask("q")).await;
    assert!(
        matches!(cut.error, Some(LlmError::Protocol(_))),
        "got {:?}",
        cut.error
    );
    assert!(!cut.events.iter().any(|e| matches!(e, StreamEvent::Finished(_))));
}

#[tokio::test]
async fn a_finish_reason_without_done_is_a_complete_answer() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("ok"))
            .chunk(finish_chunk("stop"))
            .chunk(usage_chunk(1, 1)),
    );
    // No blank line after the last event either.
    upstream.push(
        Script::new()
            .chunk(content_chunk("ok"))
            .raw(format!("data: {}", finish_chunk("length"))),
    );
    let model = client(&upstream);

    let outcome = run(&model, ask("q")).await;
    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.events[1..],
        [usage(1, 1), StreamEvent::Finished(FinishReason::Stop)]
    );

    let unterminated = run(&model, ask("q")).await;
    assert_eq!(
        unterminated.last(),
        Some(&StreamEvent::Finished(FinishReason::Length))
    );
}

#[tokio::test]
async fn comments_empty_roles_and_events_after_done_are_harmless() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .comment()
            .chunk(choice_chunk(json!({ "role": "", "content": "fine" }), None))
            .comment()
            .chunk(finish_chunk("stop"))
            .done()
            .chunk(content_chunk("after the end")),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text(), "fine");
}

#[tokio::test]
async fn malformed_data_is_a_protocol_error() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("a"))
            .raw("data: {\"choices\": [\n\n"),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert!(matches!(outcome.error, Some(LlmError::Protocol(m)) if m.contains("not valid JSON")));
}

#[tokio::test]
async fn tools_options_and_unknown_extra_fields_reach_the_provider() {
    let upstream = upstream().await;
    upstream.push(text(["ok"]));
    let mut request = ask("q");
    request.tools = vec![ToolDefinition {
        name: "search".to_owned(),
        description: "Search the web".to_owned(),
        parameters: json!({ "type": "object", "properties": { "query": { "type": "string" } }, "required": ["query"] }).into(),
    }];
    request.tool_choice = Some(ToolChoice::Auto);
    request.temperature = Some(0.2);
    request.parallel_tool_calls = Some(false);
    request.reasoning_effort = Some("low".to_owned());
    request.extra.insert("top_k".to_owned(), json!(40));
    request
        .extra
        .insert("provider".to_owned(), json!({ "order": ["a", "b"] }));
    request.extra.insert("temperature".to_owned(), json!(0.7));
    request.extra.insert("stream".to_owned(), json!(false));
    let outcome = run(&client(&upstream), request).await;
    assert_eq!(outcome.error, None);

    let sent = upstream.last_request().expect("one request");
    assert_eq!(
        sent["tools"],
        json!([{ "type": "function", "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": { "type": "object", "properties": { "query": { "type": "string" } }, "required": ["query"] }
        } }])
    );
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(sent["reasoning_effort"], "low");
    assert_eq!(sent["top_k"], 40);
    assert_eq!(sent["provider"], json!({ "order": ["a", "b"] }));
    assert_eq!(sent["temperature"], 0.7, "extra fields are merged last");
    assert_eq!(sent["stream"], true, "streaming cannot be switched off");
}

#[tokio::test]
async fn a_provider_that_ignores_stream_and_answers_with_json_is_still_understood() {
    let upstream = upstream().await;
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me look.",
            "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "search", "arguments": "{\"query\":\"q\"}" } }]
        } }],
        "usage": { "prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8 }
    });
    upstream.push(Script::new().step(Step::Status(200, completion.to_string())));
    let outcome = run(&client(&upstream), ask("q")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text(), "Let me look.");
    assert_eq!(
        outcome.tool_calls(),
        vec![ToolCall::new("c1", "search", "{\"query\":\"q\"}")]
    );
    assert_eq!(
        outcome.events[outcome.events.len() - 2..],
        [usage(5, 3), StreamEvent::Finished(FinishReason::ToolCalls)]
    );
}

#[tokio::test]
async fn a_whole_answer_carries_its_reasoning_and_its_errors_and_is_not_mistaken_for_empty() {
    let upstream = upstream().await;
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "reasoning_content": "Thinking it over.", "content": "Done."}}]});
    upstream.push(Script::new().step(Step::Status(200, answer.to_string())));
    let refusal = json!({"error": {"message": "the model is overloaded", "code": 503}});
    upstream.push(Script::new().step(Step::Status(200, refusal.to_string())));
    upstream.push(Script::new().step(Step::Status(200, json!({"id": "x"}).to_string())));
    let model = client(&upstream);

    let answered = run(&model, common::ask_whole("q")).await;
    assert_eq!(answered.error, None);
    assert_eq!(answered.reasoning(), "Thinking it over.");
    assert_eq!(answered.text(), "Done.");
    assert_eq!(answered.last(), Some(&StreamEvent::Finished(FinishReason::Stop)));
    let refused = run(&model, common::ask_whole("q")).await;
    assert!(
        matches!(&refused.error, Some(LlmError::Status { status: 503, message }) if message.contains("overloaded")),
        "{:?}",
        refused.error
    );
    let neither = run(&model, common::ask_whole("q")).await;
    assert!(
        matches!(&neither.error, Some(LlmError::Protocol(m)) if m.contains("not a chat completion")),
        "{:?}",
        neither.error
    );
}

#[tokio::test]
async fn a_page_that_is_not_an_event_stream_hints_at_the_base_url() {
    let upstream = upstream().await;
    upstream.push(Script::new().raw("Welcome to my web app\n\n"));
    let outcome = run(&client(&upstream), ask("q")).await;
    assert!(
        matches!(&outcome.error, Some(LlmError::Protocol(m)) if m.contains("base URL")),
        "got {:?}",
        outcome.error
    );
}
