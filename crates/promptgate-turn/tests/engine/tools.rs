//! Tool calls: what the UI sees, what the model gets back, and how calls run.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, ToolCall, UserContent};
use promptgate_turn::{TurnEvent, UiChunk};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_tool_call_streams_its_input_runs_and_feeds_the_result_back() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(
        spec("search", Some("searching for {query}"), false),
        echo.clone(),
    )];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("call_1", "search", r#"{"query":"rust async"}"#)]),
        answer(&["It is [1]."]),
    ]);
    let done = run(plan(model.clone(), tools)).await;

    insta::assert_snapshot!("tool_call_round_trip", wire(&done.chunks));
    assert_eq!(echo.calls.load(Ordering::SeqCst), 1);

    let requests = model.requests();
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(requests[0].tools[0].name, "search");
    let second = &requests[1];
    assert_eq!(
        second.messages[2],
        ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall::new("call_1", "search", r#"{"query":"rust async"}"#)],
        }
    );
    assert_eq!(
        tool_messages(second),
        [(
            "call_1".to_owned(),
            r#"{"echo":{"query":"rust async"}}"#.to_owned()
        )]
    );
    assert_eq!(
        system_text(second),
        "SYSTEM\n\nCITE with [N].",
        "reinforcement after a tool step"
    );

    assert_eq!(
        done.outcome.parts[1],
        json!({"type": "tool-search", "toolCallId": "call_1", "state": "output-available",
               "title": "Searching for \"rust async\"...", "input": {"query": "rust async"},
               "output": {"echo": {"query": "rust async"}}})
    );
    assert_eq!(done.outcome.usage_total.total_tokens, 23 + 15);
}

#[tokio::test(start_paused = true)]
async fn mcp_tools_are_dynamic_and_record_their_server() {
    let tools = vec![tool(mcp_spec("files_read"), Arc::new(Echo::default()))];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "files_read", r#"{"path":"a"}"#)]),
        answer(&["ok"]),
    ]);
    let done = run(plan(model, tools)).await;

    for chunk in &done.chunks {
        match chunk {
            UiChunk::ToolInputStart { dynamic, .. }
            | UiChunk::ToolInputAvailable { dynamic, .. }
            | UiChunk::ToolOutputAvailable { dynamic, .. } => assert_eq!(*dynamic, Some(true), "{chunk:?}"),
            _ => {}
        }
    }
    let origin = json!({"name": "Files Server", "url": "https://files.example/mcp", "toolName": "read"});
    assert!(done.chunks.contains(&UiChunk::MessageMetadata {
        message_metadata: json!({"modelId": "test-model", "mcpTools": {"files_read": origin.clone()}})
    }));
    assert_eq!(done.outcome.metadata["mcpTools"], json!({"files_read": origin}));
    assert_eq!(done.outcome.parts[1]["type"], "dynamic-tool");
    assert_eq!(done.outcome.parts[1]["toolName"], "files_read");
}

/// An MCP tool answering with an image, as the UI receives MCP results.
struct Picture;

#[async_trait]
impl ToolExecutor for Picture {
    async fn call(&self, _input: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            output: json!({"content": [
                {"type": "text", "text": "a chart"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            ]}),
            model_text: Some("a chart\n[image: image/png, 8 bytes]".into()),
        })
    }
}

#[tokio::test(start_paused = true)]
async fn images_from_mcp_tools_reach_a_model_that_takes_images_and_only_that_one() {
    for takes_images in [true, false] {
        let tools = vec![tool(mcp_spec("files_chart"), Arc::new(Picture))];
        let model = ScriptedModel::new(vec![
            tool_calls(&[("c1", "files_chart", "{}")]),
            answer(&["A rising line."]),
        ]);
        let mut plan = plan(model.clone(), tools);
        plan.policy.tool_images = takes_images;
        run(plan).await;

        let second = &model.requests()[1];
        assert_eq!(
            tool_messages(second),
            [("c1".to_owned(), "a chart\n[image: image/png, 8 bytes]".to_owned())]
        );
        let shown = second.messages.iter().find_map(|m| match m {
            ChatMessage::User {
                content: UserContent::Parts(parts),
            } => Some(parts.clone()),
            _ => None,
        });
        if takes_images {
            let parts = shown.expect("the image follows the results");
            assert_eq!(
                parts,
                [
                    ContentPart::Text {
                        text: "The images the tool call c1 returned:".into()
                    },
                    ContentPart::ImageUrl {
                        image_url: ImageUrl {
                            url: "data:image/png;base64,iVBORw0KGgo=".into()
                        }
                    },
                ]
            );
            assert!(matches!(second.messages.last(), Some(ChatMessage::User { .. })));
        } else {
            assert_eq!(shown, None, "a model without images reads the note only");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn malformed_arguments_and_unknown_tools_become_errors_the_model_sees() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(spec("search", None, false), echo.clone())];
    let model = ScriptedModel::new(vec![
        tool_calls(&[
            ("c1", "search", r#"{"query": "x"#),
            ("c2", "nosuch", r#"{"a":1}"#),
        ]),
        answer(&["Sorry."]),
    ]);
    let done = run(plan(model.clone(), tools)).await;

    assert!(done.chunks.contains(&UiChunk::ToolInputAvailable {
        tool_call_id: "c1".into(),
        tool_name: "search".into(),
        input: Value::String(r#"{"query": "x"#.into()),
        dynamic: None,
        title: None,
    }));
    assert!(done.chunks.contains(&UiChunk::ToolInputAvailable {
        tool_call_id: "c2".into(),
        tool_name: "nosuch".into(),
        input: json!({"a": 1}),
        dynamic: None,
        title: None,
    }));
    let errors: Vec<(String, String)> = done
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
                ..
            } => Some((tool_call_id.clone(), error_text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0]
            .1
            .starts_with("invalid arguments: the arguments are not valid JSON"),
        "{errors:?}"
    );
    assert!(
        errors[1].1.contains("no tool named `nosuch`") && errors[1].1.contains("search"),
        "{errors:?}"
    );
    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);

    let second = &model.requests()[1];
    assert_eq!(tool_messages(second), errors);
    let ChatMessage::Assistant { tool_calls, .. } = &second.messages[2] else {
        panic!("{:?}", second.messages)
    };
    assert_eq!(
        tool_calls[0].function.arguments, "{}",
        "unparseable arguments are not sent back verbatim"
    );
}

/// Waits until both calls of a step are running at once.
struct Rendezvous(Barrier);

#[async_trait]
impl ToolExecutor for Rendezvous {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.0.wait().await;
        // The first call finishes last, so completion order differs from call order.
        let delay = if input["n"] == 1 { 50 } else { 1 };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        Ok(ToolOutput::json(json!({"n": input["n"]})))
    }
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_run_at_once_and_return_in_call_order() {
    let tools = vec![tool(
        spec("meet", None, false),
        Arc::new(Rendezvous(Barrier::new(2))),
    )];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "meet", r#"{"n":1}"#), ("c2", "meet", r#"{"n":2}"#)]),
        answer(&["both"]),
    ]);
    let done = run(plan(model.clone(), tools)).await;

    let outputs: Vec<&str> = done
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::ToolOutputAvailable { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["c2", "c1"], "the UI sees results as they finish");
    assert_eq!(
        tool_messages(&model.requests()[1]),
        [
            ("c1".to_owned(), r#"{"n":1}"#.to_owned()),
            ("c2".to_owned(), r#"{"n":2}"#.to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn identical_cacheable_calls_share_one_run() {
    let echo = Arc::new(Echo {
        delay: Some(Duration::from_millis(5)),
        ..Echo::default()
    });
    let tools = vec![tool(spec("lookup", None, true), echo.clone())];
    let model = ScriptedModel::new(vec![
        tool_calls(&[
            ("c1", "lookup", r#"{"a":1,"b":2}"#),
            ("c2", "lookup", r#"{"b":2,"a":1}"#),
        ]),
        tool_calls(&[("c3", "lookup", r#"{"a":1,"b":2}"#)]),
        answer(&["done"]),
    ]);
    let done = run(plan(model, tools)).await;

    assert_eq!(echo.calls.load(Ordering::SeqCst), 1);
    let outputs = done
        .chunks
        .iter()
        .filter(|chunk| matches!(chunk, UiChunk::ToolOutputAvailable { .. }))
        .count();
    assert_eq!(outputs, 3);
}

#[tokio::test(start_paused = true)]
async fn calls_of_tools_that_are_not_cacheable_always_run() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(spec("lookup", None, false), echo.clone())];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", r#"{"a":1}"#), ("c2", "lookup", r#"{"a":1}"#)]),
        answer(&["done"]),
    ]);
    run(plan(model, tools)).await;
    assert_eq!(echo.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn failed_cacheable_calls_are_not_cached() {
    let flaky = Arc::new(Flaky {
        failures: 1,
        calls: Default::default(),
    });
    let tools = vec![tool(spec("lookup", None, true), flaky.clone())];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", r#"{"a":1}"#)]),
        tool_calls(&[("c2", "lookup", r#"{"a":1}"#)]),
        answer(&["done"]),
    ]);
    let done = run(plan(model, tools)).await;

    assert_eq!(flaky.calls.load(Ordering::SeqCst), 2);
    assert!(done.chunks.contains(&UiChunk::ToolOutputError {
        tool_call_id: "c1".into(),
        error_text: "the backend is down".into(),
        dynamic: None,
    }));
    assert!(matches!(
        done.chunks.iter().find(|chunk| matches!(chunk, UiChunk::ToolOutputAvailable { .. })),
        Some(UiChunk::ToolOutputAvailable { tool_call_id, .. }) if tool_call_id == "c2"
    ));
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_takes_too_long_times_out() {
    let tools = vec![tool(spec("slow", None, false), Arc::new(Hang))];
    let model = ScriptedModel::new(vec![tool_calls(&[("c1", "slow", "{}")]), answer(&["gave up"])]);
    let mut plan = plan(model.clone(), tools);
    plan.limits.tool_timeout = Duration::from_secs(3);
    let done = run(plan).await;

    let error = UiChunk::ToolOutputError {
        tool_call_id: "c1".into(),
        error_text: "the tool call timed out after 3 s".into(),
        dynamic: None,
    };
    assert!(done.chunks.contains(&error), "{:#?}", done.chunks);
    assert_eq!(
        tool_messages(&model.requests()[1])[0].1,
        "the tool call timed out after 3 s"
    );
}

#[tokio::test(start_paused = true)]
async fn long_tool_calls_get_keep_alives() {
    let slow = Arc::new(Echo {
        delay: Some(Duration::from_secs(40)),
        ..Echo::default()
    });
    let tools = vec![tool(spec("slow", None, false), slow)];
    let model = ScriptedModel::new(vec![tool_calls(&[("c1", "slow", "{}")]), answer(&["ok"])]);
    let done = run(plan(model, tools)).await;

    let available = done
        .events
        .iter()
        .position(|event| matches!(event, TurnEvent::Chunk(UiChunk::ToolInputAvailable { .. })))
        .unwrap();
    let output = done
        .events
        .iter()
        .position(|event| matches!(event, TurnEvent::Chunk(UiChunk::ToolOutputAvailable { .. })))
        .unwrap();
    let beats = done.events[available..output]
        .iter()
        .filter(|event| **event == TurnEvent::KeepAlive)
        .count();
    assert_eq!(beats, 2, "40 s of silence with a 15 s interval");
    assert_eq!(
        done.events
            .iter()
            .filter(|event| **event == TurnEvent::KeepAlive)
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn oversized_arguments_are_refused_without_running() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(spec("render", None, false), echo.clone())];
    let huge = format!(r#"{{"html":"{}"}}"#, "x".repeat(1 << 20));
    let model = ScriptedModel::new(vec![tool_calls(&[("c1", "render", &huge)]), answer(&["too big"])]);
    let done = run(plan(model.clone(), tools)).await;

    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);
    let (_, error) = &tool_messages(&model.requests()[1])[0];
    assert!(error.contains("longer than the gateway accepts"), "{error}");
    let streamed: usize = done
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::ToolInputDelta { input_text_delta, .. } => Some(input_text_delta.len()),
            _ => None,
        })
        .sum();
    assert!(
        streamed <= 1 << 20,
        "argument text relayed beyond the limit: {streamed}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_runs_at_most_32_calls() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(spec("lookup", None, false), echo.clone())];
    let ids: Vec<String> = (0..40).map(|n| format!("c{n}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids.iter().map(|id| (id.as_str(), "lookup", "{}")).collect();
    let model = ScriptedModel::new(vec![tool_calls(&calls), answer(&["ok"])]);
    let done = run(plan(model.clone(), tools)).await;

    assert_eq!(echo.calls.load(Ordering::SeqCst), 32);
    assert_eq!(tool_messages(&model.requests()[1]).len(), 32);
    let started = done
        .chunks
        .iter()
        .filter(|chunk| matches!(chunk, UiChunk::ToolInputStart { .. }))
        .count();
    assert_eq!(started, 32);
}

#[tokio::test(start_paused = true)]
async fn a_zero_keep_alive_interval_does_not_flood_the_stream() {
    let slow = Arc::new(Echo {
        delay: Some(Duration::from_secs(5)),
        ..Echo::default()
    });
    let tools = vec![tool(spec("slow", None, false), slow)];
    let model = ScriptedModel::new(vec![tool_calls(&[("c1", "slow", "{}")]), answer(&["ok"])]);
    let mut plan = plan(model, tools);
    plan.limits.keep_alive = Duration::ZERO;
    let done = run(plan).await;
    let beats = done
        .events
        .iter()
        .filter(|event| **event == TurnEvent::KeepAlive)
        .count();
    assert!(
        (1..=5).contains(&beats),
        "one heartbeat per second at most, got {beats}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_stored_answer_says_how_long_each_tool_that_ran_took() {
    let slow = Arc::new(Echo {
        delay: Some(Duration::from_millis(1500)),
        ..Echo::default()
    });
    let tools = vec![tool(spec("lookup", None, false), slow)];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("call_1", "lookup", "{}"), ("call_2", "no_such_tool", "{}")]),
        answer(&["Done."]),
    ]);
    let done = run(plan(model, tools)).await;

    let metadata = &done.outcome.metadata;
    let starts = metadata["reasoningStartTimes"].as_object().unwrap();
    assert_eq!(
        starts.keys().collect::<Vec<_>>(),
        ["call_1"],
        "a refused call never ran"
    );
    assert_eq!(metadata["reasoningTime"], json!({"call_1": 1500}));
}
