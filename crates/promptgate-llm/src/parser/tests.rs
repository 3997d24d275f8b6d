//! The chunk parser against the quirks of real OpenAI-compatible servers, one stream at a time.

use serde_json::{Value, json};

use super::*;
use crate::{ToolCall, ToolCallAssembler};

fn run(options: ParserOptions, payloads: &[Value]) -> Result<Vec<StreamEvent>, LlmError> {
    let mut parser = ChunkParser::new(options);
    let mut events = Vec::new();
    for payload in payloads {
        let data = match payload {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        events.extend(parser.push(&data)?);
    }
    events.extend(parser.finish()?);
    Ok(events)
}

fn plain(payloads: &[Value]) -> Vec<StreamEvent> {
    match run(ParserOptions::default(), payloads) {
        Ok(events) => events,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn delta(delta: Value) -> Value {
    json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
}

fn finish(reason: &str) -> Value {
    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

fn usage(prompt: u64, completion: u64) -> Value {
    json!({ "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion } })
}

fn done() -> Value {
    Value::String("[DONE]".to_owned())
}

/// The text and the reasoning the events add up to.
fn streams(events: &[StreamEvent]) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for event in events {
        match event {
            StreamEvent::TextDelta(t) => text.push_str(t),
            StreamEvent::ReasoningDelta(r) => reasoning.push_str(r),
            _ => {}
        }
    }
    (text, reasoning)
}

fn text(events: &[StreamEvent]) -> String {
    streams(events).0
}

fn reasoning(events: &[StreamEvent]) -> String {
    streams(events).1
}

fn calls(events: &[StreamEvent]) -> Vec<ToolCall> {
    let mut assembler = ToolCallAssembler::new();
    events.iter().for_each(|e| assembler.push(e));
    assembler.finish()
}

fn usage_of(prompt: u64, completion: u64) -> StreamEvent {
    StreamEvent::Usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    })
}

#[test]
fn text_then_usage_then_finished_last() {
    let events = plain(&[
        delta(json!({ "role": "assistant", "content": "" })),
        delta(json!({ "content": "Hel" })),
        delta(json!({ "content": "lo" })),
        finish("stop"),
        usage(7, 2),
        done(),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
            usage_of(7, 2),
            StreamEvent::Finished(FinishReason::Stop),
        ]
    );
}

#[test]
fn finish_reason_in_the_same_chunk_as_content_and_empty_role() {
    let events = plain(&[
        json!({ "choices": [{ "index": 0, "delta": { "role": "", "content": "Hi" }, "finish_reason": null }] }),
        json!({ "choices": [{ "index": 0, "delta": { "content": " there" }, "finish_reason": "length" }] }),
    ]);
    assert_eq!(text(&events), "Hi there");
    assert_eq!(events.last(), Some(&StreamEvent::Finished(FinishReason::Length)));
}

#[test]
fn a_stream_without_finish_reason_or_done_is_an_error() {
    let result = run(
        ParserOptions::default(),
        &[delta(json!({ "content": "half an ans" }))],
    );
    assert_eq!(
        result,
        Err(LlmError::Protocol(
            "stream ended before the model finished".into()
        ))
    );
}

#[test]
fn done_without_finish_reason_counts_as_stop() {
    let events = plain(&[delta(json!({ "content": "ok" })), done()]);
    assert_eq!(events.last(), Some(&StreamEvent::Finished(FinishReason::Stop)));
}

#[test]
fn everything_after_done_is_ignored() {
    let mut parser = ChunkParser::new(ParserOptions::default());
    assert!(
        parser
            .push(&finish("stop").to_string())
            .is_ok_and(|e| e.is_empty())
    );
    assert!(parser.push("[DONE]").is_ok_and(|e| e.is_empty()));
    assert!(parser.is_done());
    assert!(
        parser
            .push(&delta(json!({ "content": "late" })).to_string())
            .is_ok_and(|e| e.is_empty())
    );
    assert!(parser.push("not json at all").is_ok_and(|e| e.is_empty()));
    assert_eq!(
        parser.finish(),
        Ok(vec![StreamEvent::Finished(FinishReason::Stop)])
    );
}

#[test]
fn reasoning_content_and_reasoning_fields_are_reasoning() {
    let events = plain(&[
        delta(json!({ "reasoning_content": "think " })),
        delta(json!({ "reasoning": "more" })),
        delta(json!({ "content": "answer" })),
        finish("stop"),
    ]);
    assert_eq!(reasoning(&events), "think more");
    assert_eq!(text(&events), "answer");
}

#[test]
fn content_given_as_typed_parts() {
    let events = plain(&[
        delta(
            json!({ "content": [{ "type": "thinking", "thinking": "hmm" }, { "type": "text", "text": "yes" }] }),
        ),
        finish("stop"),
    ]);
    assert_eq!(reasoning(&events), "hmm");
    assert_eq!(text(&events), "yes");
}

#[test]
fn parallel_tool_calls_interleaved_by_index() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c = json!({ "index": index, "function": { "arguments": args } });
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        delta(json!({ "tool_calls": [c] }))
    };
    let events = plain(&[
        call(0, Some("call_a"), Some("search"), ""),
        call(1, Some("call_b"), Some("getTasks"), ""),
        call(0, None, None, "{\"query\":"),
        call(1, None, None, "{}"),
        call(0, None, None, "\"rust\"}"),
        finish("tool_calls"),
    ]);
    assert_eq!(
        calls(&events),
        vec![
            ToolCall::new("call_a", "search", "{\"query\":\"rust\"}"),
            ToolCall::new("call_b", "getTasks", "{}")
        ]
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls))
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
        .count();
    assert_eq!(started, 2);
}

#[test]
fn a_whole_call_in_one_fragment_with_object_arguments() {
    let events = plain(&[
        delta(
            json!({ "tool_calls": [{ "index": 0, "id": "c1", "type": "function",
            "function": { "name": "search", "arguments": { "query": "x" } } }] }),
        ),
        finish("tool_calls"),
    ]);
    assert_eq!(
        calls(&events),
        vec![ToolCall::new("c1", "search", "{\"query\":\"x\"}")]
    );
}

#[test]
fn calls_without_index_are_told_apart_by_position_and_id() {
    let events = plain(&[
        delta(json!({ "tool_calls": [
            { "id": "g1", "function": { "name": "search", "arguments": "{\"query\":\"a\"}" } },
            { "id": "g2", "function": { "name": "search", "arguments": "{\"query\":\"b\"}" } }
        ] })),
        delta(
            json!({ "tool_calls": [{ "id": "g3", "function": { "name": "getTasks", "arguments": "{}" } }] }),
        ),
        delta(
            json!({ "tool_calls": [{ "function": { "name": "render_html", "arguments": "{\"html\":" } }] }),
        ),
        delta(json!({ "tool_calls": [{ "function": { "arguments": "\"<p>\"}" } }] })),
        finish("tool_calls"),
    ]);
    let calls = calls(&events);
    let names: Vec<&str> = calls.iter().map(|c| c.function.name.as_str()).collect();
    assert_eq!(names, vec!["search", "search", "getTasks", "render_html"]);
    assert_eq!(calls[1].function.arguments, "{\"query\":\"b\"}");
    assert_eq!(calls[3].function.arguments, "{\"html\":\"<p>\"}");
    assert!(calls[3].id.starts_with("call_"), "a missing id is generated");
}

#[test]
fn a_reused_index_with_a_new_id_is_a_new_call() {
    let events = plain(&[
        delta(
            json!({ "tool_calls": [{ "index": 0, "id": "a", "function": { "name": "one", "arguments": "{}" } }] }),
        ),
        delta(
            json!({ "tool_calls": [{ "index": 0, "id": "b", "function": { "name": "two", "arguments": "{}" } }] }),
        ),
        finish("tool_calls"),
    ]);
    let ids: Vec<String> = calls(&events).into_iter().map(|c| c.id).collect();
    assert_eq!(ids, vec!["a", "b"]);
}

#[test]
fn arguments_before_the_name_are_kept_until_the_call_starts() {
    let events = plain(&[
        delta(json!({ "tool_calls": [{ "index": 0, "id": "x", "function": { "arguments": "{\"a\"" } }] })),
        delta(json!({ "tool_calls": [{ "index": 0, "function": { "name": "late", "arguments": ":1}" } }] })),
        finish("stop"),
    ]);
    assert_eq!(calls(&events), vec![ToolCall::new("x", "late", "{\"a\":1}")]);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls)),
        "a step with tool calls is a tool-call step even when the provider says stop"
    );
}

#[test]
fn usage_from_any_chunk_latest_wins_with_details() {
    let events = plain(&[
        json!({ "choices": [{ "index": 0, "delta": { "content": "a" }, "finish_reason": null }],
                "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 } }),
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }],
                "usage": { "prompt_tokens": 9, "completion_tokens": 4.0,
                           "prompt_tokens_details": { "cached_tokens": 3 },
                           "completion_tokens_details": { "reasoning_tokens": 2 } } }),
        json!({ "choices": [], "usage": null }),
    ]);
    let expected = Usage {
        prompt_tokens: 9,
        completion_tokens: 4,
        total_tokens: 13,
        reasoning_tokens: Some(2),
        cached_tokens: Some(3),
        cache_write_tokens: None,
    };
    assert_eq!(events[events.len() - 2], StreamEvent::Usage(expected));
}

#[test]
fn an_error_chunk_is_an_error_with_the_provider_message() {
    let result = run(
        ParserOptions::default(),
        &[
            delta(json!({ "content": "a" })),
            json!({ "error": { "message": "overloaded", "code": 529 } }),
        ],
    );
    assert_eq!(
        result,
        Err(LlmError::Status {
            status: 529,
            message: "overloaded".into()
        })
    );
}

#[test]
fn malformed_json_is_a_protocol_error() {
    let result = run(
        ParserOptions::default(),
        &[Value::String("{\"choices\": [".into())],
    );
    assert!(matches!(result, Err(LlmError::Protocol(m)) if m.contains("not valid JSON")));
}

#[test]
fn other_choices_are_ignored() {
    let events = plain(&[
        json!({ "choices": [{ "index": 1, "delta": { "content": "other" }, "finish_reason": null },
                            { "index": 0, "delta": { "content": "mine" }, "finish_reason": "stop" }] }),
    ]);
    assert_eq!(text(&events), "mine");
}

const THINKING: &str = "<think>\nweigh it</think>\n\nThe answer.";

fn split_everywhere(options: ParserOptions, input: &str) -> Vec<Vec<StreamEvent>> {
    let mut runs = Vec::new();
    for a in 0..=input.len() {
        for b in a..=input.len() {
            let pieces = [&input[..a], &input[a..b], &input[b..]];
            let mut payloads: Vec<Value> = pieces.iter().map(|p| delta(json!({ "content": p }))).collect();
            payloads.push(finish("stop"));
            match run(options, &payloads) {
                Ok(events) => runs.push(events),
                Err(e) => panic!("unexpected error: {e}"),
            }
        }
    }
    runs
}

#[test]
fn think_tags_split_at_any_point_never_leak() {
    let options = ParserOptions {
        think_tags: true,
        start_with_reasoning: false,
    };
    for events in split_everywhere(options, THINKING) {
        assert_eq!(reasoning(&events), "weigh it");
        assert_eq!(text(&events), "The answer.");
    }
}

#[test]
fn start_with_reasoning_reads_until_the_closing_tag() {
    let options = ParserOptions {
        think_tags: true,
        start_with_reasoning: true,
    };
    for events in split_everywhere(options, "weigh it</think>The answer.") {
        assert_eq!(reasoning(&events), "weigh it");
        assert_eq!(text(&events), "The answer.");
    }
    // A model that still opens with the tag is read the same way.
    for events in split_everywhere(options, THINKING) {
        assert_eq!(reasoning(&events), "weigh it");
        assert_eq!(text(&events), "The answer.");
    }
}

#[test]
fn think_tags_off_leave_the_text_alone() {
    let events = plain(&[delta(json!({ "content": THINKING })), finish("stop")]);
    assert_eq!(text(&events), THINKING);
}

#[test]
fn a_half_tag_at_the_end_is_text() {
    let options = ParserOptions {
        think_tags: true,
        start_with_reasoning: false,
    };
    let events = run(options, &[delta(json!({ "content": "a <thi" })), finish("stop")]);
    assert_eq!(events.map(|e| text(&e)), Ok("a <thi".to_owned()));
}

#[test]
fn assembler_orders_by_index_and_fills_empty_arguments() {
    let mut assembler = ToolCallAssembler::new();
    for event in [
        StreamEvent::ToolCallStarted {
            index: 1,
            id: "b".into(),
            name: "second".into(),
        },
        StreamEvent::ToolCallStarted {
            index: 0,
            id: "a".into(),
            name: "first".into(),
        },
        StreamEvent::ToolCallArgumentsDelta {
            index: 1,
            fragment: "{\"x\":".into(),
        },
        StreamEvent::TextDelta("ignored".into()),
        StreamEvent::ToolCallArgumentsDelta {
            index: 1,
            fragment: "1}".into(),
        },
    ] {
        assembler.push(&event);
    }
    assert_eq!(
        assembler.finish(),
        vec![
            ToolCall::new("a", "first", "{}"),
            ToolCall::new("b", "second", "{\"x\":1}")
        ]
    );
}

#[test]
fn a_response_without_any_chunk_points_at_the_base_url() {
    let result = run(ParserOptions::default(), &[]);
    assert!(matches!(result, Err(LlmError::Protocol(m)) if m.contains("base URL")));
}
