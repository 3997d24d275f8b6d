//! One whole turn pinned as the client sees it: the model thinks, says a little, calls a tool, then
//! answers with a citation. The UI chunk stream (one JSON object a line, as sent over SSE) and the
//! stored message parts are snapshots; a change to either shows up as a diff to review.

use std::sync::Arc;

use promptgate_llm::{FinishReason, StreamEvent};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn reasoning_text_and_a_tool_call_then_the_answer() {
    let echo = Arc::new(Echo::default());
    let tools = vec![tool(spec("lookup", Some("looking up {place}"), false), echo)];
    let mut first = vec![
        Ok(StreamEvent::ReasoningDelta("Tide tables are".into())),
        Ok(StreamEvent::ReasoningDelta(" per harbour.".into())),
        Ok(StreamEvent::TextDelta("Checking Brest.".into())),
    ];
    first.extend(call_events(&[("call_1", "lookup", r#"{"place":"Brest"}"#)]));
    first.push(Ok(usage(40, 12)));
    first.push(Ok(StreamEvent::Finished(FinishReason::ToolCalls)));
    let model = ScriptedModel::new(vec![
        Script::Events(first),
        answer(&["High tide in Brest", " is at 06:40 [1]."]),
    ]);
    let done = run(plan(model, tools)).await;

    insta::assert_snapshot!("turn_chunks", wire(&done.chunks));
    insta::assert_snapshot!(
        "turn_parts",
        serde_json::to_string_pretty(&done.outcome.parts).unwrap()
    );
}
