//! Steering and ending a turn: step cap, nudges, retries, budgets, errors, Stop.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use promptgate_llm::{FinishReason, LlmError, StreamEvent, TimeoutPhase};
use promptgate_turn::{
    RequestBudget, StepPolicy, TurnEvent, TurnPlan, TurnStatus, UiChunk, UiFinishReason, run_turn,
};
use serde_json::json;

use crate::support::*;

/// A model that looks up twice and then runs the `after` steps, and a plan for it with the lookup
/// tool under `policy`.
fn two_lookups(after: Vec<Script>, policy: StepPolicy) -> (Arc<ScriptedModel>, TurnPlan) {
    let mut steps = vec![
        tool_calls(&[("c1", "lookup", "{}")]),
        tool_calls(&[("c2", "lookup", "{}")]),
    ];
    steps.extend(after);
    let model = ScriptedModel::new(steps);
    let mut plan = plan(model.clone(), lookup_tools());
    plan.policy = policy;
    (model, plan)
}

#[tokio::test(start_paused = true)]
async fn the_last_step_offers_no_tools_and_asks_for_the_answer() {
    let (model, plan) = two_lookups(
        vec![answer(&["final"])],
        StepPolicy {
            max_steps: 3,
            ..StepPolicy::default()
        },
    );
    let done = run(plan).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(!requests[1].tools.is_empty());
    assert!(requests[2].tools.is_empty() && requests[2].tool_choice.is_none());
    assert_eq!(
        last_user_text(&requests[2]).as_deref(),
        Some("FINAL: answer now.")
    );
    assert_eq!(
        last_user_text(&requests[1]),
        None,
        "the nudge is only for the final step"
    );
    assert_eq!(done.outcome.status, TurnStatus::Complete);
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_in_the_last_step_is_refused_and_the_turn_ends() {
    let (model, plan) = two_lookups(
        Vec::new(),
        StepPolicy {
            max_steps: 2,
            max_attempts: 1,
            ..StepPolicy::default()
        },
    );
    let done = run(plan).await;

    assert_eq!(model.requests().len(), 2);
    assert!(done.chunks.iter().any(|chunk| matches!(
        chunk,
        UiChunk::ToolOutputError { tool_call_id, error_text, .. }
            if tool_call_id == "c2" && error_text.contains("cannot be called in this step")
    )));
    assert_eq!(done.outcome.finish_reason, Some(UiFinishReason::ToolCalls));
}

#[tokio::test(start_paused = true)]
async fn the_preventive_nudge_follows_enough_tool_steps() {
    let (model, plan) = two_lookups(
        vec![answer(&["enough"])],
        StepPolicy {
            nudge_threshold: 2,
            ..StepPolicy::default()
        },
    );
    run(plan).await;

    let requests = model.requests();
    assert_eq!(last_user_text(&requests[0]).as_deref(), Some("question"));
    assert_eq!(last_user_text(&requests[1]), None);
    assert_eq!(
        last_user_text(&requests[2]).as_deref(),
        Some("PREVENTIVE: synthesise now.")
    );
    assert!(
        !requests[2].tools.is_empty(),
        "the preventive nudge does not take tools away"
    );
}

#[tokio::test(start_paused = true)]
async fn an_empty_answer_after_tools_is_retried_in_the_same_message() {
    let empty = Script::Events(vec![Ok(StreamEvent::Finished(FinishReason::Stop))]);
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", "{}")]),
        empty,
        answer(&["Here it is."]),
    ]);
    let mut plan = plan(model.clone(), lookup_tools());
    plan.policy = StepPolicy {
        max_attempts: 2,
        ..StepPolicy::default()
    };
    let done = run(plan).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        last_user_text(&requests[2]).as_deref(),
        Some("RETRY: respond now. LAST: the answer must not be empty."),
        "the last retry adds the extra sentence"
    );
    assert_eq!(
        types(&done.chunks).iter().filter(|kind| *kind == "start").count(),
        1
    );
    assert_eq!(done.outcome.attempts, 2);
    assert_eq!(done.outcome.status, TurnStatus::Complete);
    assert_eq!(done.outcome.parts.last().unwrap()["text"], "Here it is.");
}

#[tokio::test(start_paused = true)]
async fn an_earlier_retry_gets_the_plain_retry_nudge() {
    let empty = || Script::Events(vec![Ok(StreamEvent::Finished(FinishReason::Stop))]);
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", "{}")]),
        empty(),
        empty(),
        answer(&["ok"]),
    ]);
    let mut plan = plan(model.clone(), lookup_tools());
    plan.policy = StepPolicy {
        max_attempts: 3,
        ..StepPolicy::default()
    };
    run(plan).await;

    let requests = model.requests();
    assert_eq!(
        last_user_text(&requests[2]).as_deref(),
        Some("RETRY: respond now.")
    );
    assert_eq!(
        last_user_text(&requests[3]).as_deref(),
        Some("RETRY: respond now. LAST: the answer must not be empty.")
    );
}

#[tokio::test(start_paused = true)]
async fn an_empty_answer_is_asked_for_once_more_then_ends_as_an_error() {
    let empty = || Script::Events(vec![Ok(StreamEvent::Finished(FinishReason::Stop))]);
    let model = ScriptedModel::new(vec![empty(), empty()]);
    let done = run(plan(model.clone(), vec![])).await;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(done.outcome.status, TurnStatus::Error);
    let errors: Vec<_> = done
        .chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::Error { error_text } => Some(error_text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(errors, [promptgate_turn::EMPTY_ANSWER_TEXT]);
    assert_eq!(types(&done.chunks).last().map(String::as_str), Some("finish"));
}

#[tokio::test(start_paused = true)]
async fn an_empty_first_answer_is_followed_by_the_second() {
    let empty = Script::Events(vec![Ok(StreamEvent::Finished(FinishReason::Stop))]);
    let model = ScriptedModel::new(vec![empty, answer(&["second time lucky"])]);
    let done = run(plan(model.clone(), vec![])).await;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(done.outcome.status, TurnStatus::Complete);
    assert!(types(&done.chunks).iter().any(|t| t == "text-delta"));
}

#[tokio::test(start_paused = true)]
async fn a_spent_request_budget_ends_the_turn_with_an_error() {
    let budget = Arc::new(RequestBudget::new(6, Duration::from_secs(120)));
    for _ in 0..6 {
        assert!(budget.try_consume());
    }
    let model = ScriptedModel::new(vec![answer(&["never"])]);
    let mut plan = plan(model.clone(), vec![]);
    plan.request_budget = Some(budget);
    let done = run(plan).await;

    assert!(model.requests().is_empty());
    assert_eq!(types(&done.chunks), ["start", "error", "finish"]);
    let UiChunk::Error { error_text } = &done.chunks[1] else {
        unreachable!()
    };
    assert!(error_text.contains("budget of model requests"), "{error_text}");
    assert_eq!(done.outcome.status, TurnStatus::Error);
}

#[tokio::test(start_paused = true)]
async fn a_turn_older_than_the_wall_clock_starts_no_new_attempt() {
    let budget = Arc::new(RequestBudget::new(6, Duration::from_secs(120)));
    tokio::time::advance(Duration::from_secs(121)).await;
    let model = ScriptedModel::new(vec![answer(&["never"])]);
    let mut plan = plan(model.clone(), vec![]);
    plan.request_budget = Some(budget.clone());
    let done = run(plan).await;

    assert!(model.requests().is_empty());
    assert!(budget.is_exhausted());
    assert_eq!(done.outcome.status, TurnStatus::Error);
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_provider_gives_a_short_error_without_internals() {
    let model = ScriptedModel::new(vec![Script::Refuse(LlmError::Connect(
        "tcp connect to secret-host.internal:443 refused".into(),
    ))]);
    let done = run(plan(model, vec![])).await;

    assert_eq!(
        types(&done.chunks),
        [
            "start",
            "start-step",
            "message-metadata",
            "finish-step",
            "error",
            "finish"
        ]
    );
    let UiChunk::Error { error_text } = &done.chunks[4] else {
        unreachable!()
    };
    assert_eq!(
        error_text,
        "The model provider could not be reached. Please try again."
    );
    assert_eq!(
        serde_json::to_value(done.chunks.last().unwrap()).unwrap(),
        json!({"type": "finish", "finishReason": "error"})
    );
    assert_eq!(done.outcome.status, TurnStatus::Error);
    assert_eq!(done.outcome.error.as_deref(), Some(error_text.as_str()));
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_breaks_mid_answer_closes_its_parts() {
    let mut events = vec![Ok(StreamEvent::TextDelta("Partial".into()))];
    events.extend(call_events(&[("c1", "lookup", r#"{"q":1}"#)]));
    events.push(Err(LlmError::Timeout {
        phase: TimeoutPhase::Idle,
        seconds: 30,
    }));
    let model = ScriptedModel::new(vec![Script::Events(events)]);
    let done = run(plan(model, lookup_tools())).await;

    assert!(
        done.chunks
            .iter()
            .any(|chunk| matches!(chunk, UiChunk::TextEnd { .. }))
    );
    assert!(done.chunks.iter().any(|chunk| matches!(
        chunk,
        UiChunk::ToolOutputError { tool_call_id, .. } if tool_call_id == "c1"
    )));
    assert_eq!(done.outcome.status, TurnStatus::Error);
    assert_eq!(
        done.outcome.parts[1],
        json!({"type": "text", "text": "Partial", "state": "done"})
    );
}

#[tokio::test(start_paused = true)]
async fn stop_mid_answer_keeps_the_partial_text() {
    let model = ScriptedModel::new(vec![Script::EventsThenHang(vec![Ok(StreamEvent::TextDelta(
        "Half an".into(),
    ))])]);
    let plan = plan(model, vec![]);
    let done = run_stopping_at(plan, |chunk| matches!(chunk, UiChunk::TextDelta { .. })).await;

    assert_eq!(
        types(&done.chunks),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "message-metadata",
            "finish-step",
            "abort"
        ]
    );
    assert_eq!(done.outcome.status, TurnStatus::Stopped);
    assert_eq!(
        done.outcome.parts[1],
        json!({"type": "text", "text": "Half an", "state": "done"})
    );
}

#[tokio::test(start_paused = true)]
async fn stop_while_tools_run_answers_every_pending_call() {
    let tools = vec![
        tool(spec("slow", None, false), Arc::new(Hang)),
        tool(spec("fast", None, false), Arc::new(Echo::default())),
    ];
    let model = ScriptedModel::new(vec![tool_calls(&[("c1", "slow", "{}"), ("c2", "fast", "{}")])]);
    let plan = plan(model.clone(), tools);
    let done = run_stopping_at(plan, |chunk| matches!(chunk, UiChunk::ToolOutputAvailable { .. })).await;

    assert!(done.chunks.contains(&UiChunk::ToolOutputError {
        tool_call_id: "c1".into(),
        error_text: "stopped".into(),
        dynamic: None,
    }));
    assert_eq!(
        done.chunks.last(),
        Some(&UiChunk::Abort {
            reason: Some("stopped".into())
        })
    );
    assert_eq!(done.outcome.status, TurnStatus::Stopped);
    assert_eq!(model.requests().len(), 1, "no model request after Stop");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_stops_the_turn_and_still_yields_the_outcome() {
    let model = ScriptedModel::new(vec![Script::EventsThenHang(vec![Ok(StreamEvent::TextDelta(
        "So far".into(),
    ))])]);
    let mut turn = run_turn(plan(model, vec![]));
    while let Some(event) = turn.events.next().await {
        if matches!(event, TurnEvent::Chunk(UiChunk::TextDelta { .. })) {
            break;
        }
    }
    drop(turn.events);
    let outcome = turn.outcome.await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Stopped);
    assert_eq!(
        outcome.parts[1],
        json!({"type": "text", "text": "So far", "state": "done"})
    );
}
