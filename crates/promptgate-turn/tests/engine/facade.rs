//! The engine's side of the OpenAI facade: a completion keeps no message. (The completion a client
//! receives is encoded by the server and tested there.)

use std::sync::Arc;

use crate::support::*;

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
