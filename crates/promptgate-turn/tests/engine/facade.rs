//! The OpenAI facade over a real turn.

use std::sync::Arc;

use promptgate_turn::{CompletionChunks, CompletionIdentity};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_tool_turn_reaches_an_openai_client_as_one_clean_completion() {
    let tools = vec![tool(spec("lookup", None, false), Arc::new(Echo::default()))];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", "{}")]),
        answer(&["All ", "good."]),
    ]);
    let done = run(plan(model, tools)).await;

    let identity = CompletionIdentity {
        id: "chatcmpl-x".into(),
        created: 1,
        model: "test-model".into(),
    };
    let mut chunks = CompletionChunks::new(identity, true);
    let out: Vec<_> = done.events.iter().flat_map(|event| chunks.push(event)).collect();

    let content: String = out
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "All good.");
    assert_eq!(out[0]["choices"][0]["delta"]["role"], "assistant");
    let reasons: Vec<_> = out
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(reasons, ["stop"], "the tool step's finish never leaks");
    assert!(
        out.iter()
            .all(|chunk| chunk["choices"][0]["delta"].get("tool_calls").is_none())
    );
    assert_eq!(out.last().unwrap()["usage"]["total_tokens"], 23 + 15);
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_keeps_no_message_streams_the_same_chunks() {
    let script = || {
        ScriptedModel::new(vec![
            tool_calls(&[("c1", "lookup", "{}")]),
            answer(&["All ", "good."]),
        ])
    };
    let tools = || vec![tool(spec("lookup", None, false), Arc::new(Echo::default()))];
    let kept = run(plan(script(), tools())).await;
    let mut unkept_plan = plan(script(), tools());
    unkept_plan.record_message = false;
    let unkept = run(unkept_plan).await;

    assert_eq!(types(&unkept.chunks), types(&kept.chunks));
    assert!(!kept.outcome.parts.is_empty());
    assert!(unkept.outcome.parts.is_empty(), "nothing folded for storage");
    assert_eq!(unkept.outcome.usage_total, kept.outcome.usage_total);
}
