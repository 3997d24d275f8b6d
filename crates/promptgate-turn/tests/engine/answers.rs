//! Plain answers: the shape of the stream and of the stored message.

use std::time::Duration;

use promptgate_llm::{FinishReason, StreamEvent};
use promptgate_turn::{TurnStatus, UiChunk, UiFinishReason};
use serde_json::json;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_text_answer_streams_start_step_text_and_finish() {
    let model = ScriptedModel::new(vec![answer(&["Hel", "lo!"])]);
    let done = run(plan(model.clone(), vec![])).await;

    insta::assert_snapshot!("text_answer", wire(&done.chunks));

    let outcome = done.outcome;
    assert_eq!(outcome.status, TurnStatus::Complete);
    assert_eq!(outcome.finish_reason, Some(UiFinishReason::Stop));
    assert_eq!(
        outcome.parts,
        vec![
            json!({"type": "step-start"}),
            json!({"type": "text", "text": "Hello!", "state": "done"})
        ]
    );
    assert_eq!(outcome.metadata["turnId"], "turn1");
    assert_eq!(outcome.usage_total.total_tokens, 15);
    assert_eq!(
        (outcome.steps, outcome.upstream_requests, outcome.attempts),
        (1, 1, 1)
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model, "upstream-x");
    assert_eq!(
        system_text(&requests[0]),
        "SYSTEM",
        "no reinforcement before any tool step"
    );
    assert_eq!(last_user_text(&requests[0]).as_deref(), Some("question"));
    assert_eq!(requests[0].temperature, Some(0.2));
    assert!(requests[0].tools.is_empty() && requests[0].tool_choice.is_none());
}

#[tokio::test(start_paused = true)]
async fn reasoning_is_closed_before_the_answer_starts() {
    let model = ScriptedModel::new(vec![Script::Events(vec![
        Ok(StreamEvent::ReasoningDelta("Let me think".into())),
        Ok(StreamEvent::ReasoningDelta(" more".into())),
        Ok(StreamEvent::TextDelta("Answer".into())),
        Ok(StreamEvent::Finished(FinishReason::Stop)),
    ])]);
    let done = run(plan(model, vec![])).await;

    assert_eq!(
        types(&done.chunks)[1..7],
        [
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-delta",
            "reasoning-end",
            "text-start"
        ]
    );
    assert_eq!(
        done.outcome.parts[1..],
        [
            json!({"type": "reasoning", "id": "reasoning-turn1-1", "text": "Let me think more", "state": "done"}),
            json!({"type": "text", "text": "Answer", "state": "done"}),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_stored_answer_says_when_each_reasoning_part_began_and_how_long_it_lasted() {
    let model = ScriptedModel::new(vec![Script::Paced(
        Duration::from_millis(700),
        vec![
            Ok(StreamEvent::ReasoningDelta("Tides follow".into())),
            Ok(StreamEvent::ReasoningDelta(" the moon.".into())),
            Ok(StreamEvent::TextDelta("06:40. ".into())),
            Ok(StreamEvent::ReasoningDelta("Check the date.".into())),
            Ok(StreamEvent::TextDelta("Today.".into())),
            Ok(StreamEvent::Finished(FinishReason::Stop)),
        ],
    )]);
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let done = run(plan(model, vec![])).await;

    let metadata = &done.outcome.metadata;
    let starts = metadata["reasoningStartTimes"].as_object().unwrap();
    assert_eq!(starts.keys().collect::<Vec<_>>(), ["reasoning-0", "reasoning-1"]);
    let first_start = starts["reasoning-0"].as_u64().unwrap();
    assert!(first_start >= before, "a wall-clock time: {first_start}");
    // Open from the first reasoning delta to the first text, two events later; the second part
    // from its one delta to the next text.
    assert_eq!(
        metadata["reasoningTime"],
        json!({"reasoning-0": 1400, "reasoning-1": 700})
    );
    // The client saw the same in the step's metadata chunk.
    let streamed = done
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::MessageMetadata { message_metadata } => message_metadata.get("reasoningTime"),
            _ => None,
        })
        .next_back()
        .cloned();
    assert_eq!(streamed, Some(metadata["reasoningTime"].clone()));
}

#[tokio::test(start_paused = true)]
async fn an_answer_without_reasoning_has_no_reasoning_times() {
    let model = ScriptedModel::new(vec![answer(&["Plain."])]);
    let done = run(plan(model, vec![])).await;
    assert!(done.outcome.metadata.get("reasoningStartTimes").is_none());
    assert!(done.outcome.metadata.get("reasoningTime").is_none());
}

#[tokio::test(start_paused = true)]
async fn finish_reasons_are_hyphenated() {
    let model = ScriptedModel::new(vec![Script::Events(vec![
        Ok(StreamEvent::TextDelta("cut".into())),
        Ok(StreamEvent::Finished(FinishReason::ContentFilter)),
    ])]);
    let done = run(plan(model, vec![])).await;
    let last = serde_json::to_value(done.chunks.last().unwrap()).unwrap();
    assert_eq!(last, json!({"type": "finish", "finishReason": "content-filter"}));
}

#[tokio::test(start_paused = true)]
async fn each_text_part_gets_its_own_id_across_steps() {
    let tools = vec![tool(
        spec("lookup", None, false),
        std::sync::Arc::new(Echo::default()),
    )];
    let mut first = call_events(&[("c1", "lookup", "{}")]);
    first.insert(0, Ok(StreamEvent::TextDelta("Checking.".into())));
    first.push(Ok(StreamEvent::Finished(FinishReason::ToolCalls)));
    let model = ScriptedModel::new(vec![Script::Events(first), answer(&["Done."])]);
    let done = run(plan(model, tools)).await;

    let ids: Vec<&str> = done
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::TextStart { id } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    let kinds = types(&done.chunks);
    let text_end = kinds.iter().position(|kind| kind == "text-end").unwrap();
    let tool_start = kinds.iter().position(|kind| kind == "tool-input-start").unwrap();
    assert!(
        text_end < tool_start,
        "text must be closed before tool chunks: {kinds:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stored_message_replays_to_the_model_as_the_turn_sent_it() {
    let tools = vec![tool(
        spec("lookup", None, false),
        std::sync::Arc::new(Echo::default()),
    )];
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", r#"{"q":"a"}"#), ("c2", "lookup", r#"{"q":"b"}"#)]),
        answer(&["Both found."]),
    ]);
    let done = run(plan(model.clone(), tools)).await;

    let stored = json!([
        {"role": "user", "parts": [{"type": "text", "text": "question"}]},
        {"role": "assistant", "parts": done.outcome.parts},
    ]);
    let replayed = promptgate_turn::to_model_messages(stored.as_array().unwrap(), Default::default());
    let last_request = model.requests().pop().unwrap();
    // What the final step saw (minus the system prompt) plus the final answer.
    let mut expected = last_request.messages[1..].to_vec();
    expected.push(promptgate_llm::ChatMessage::Assistant {
        content: Some("Both found.".into()),
        tool_calls: vec![],
    });
    assert_eq!(replayed, expected);
}

#[tokio::test(start_paused = true)]
async fn the_stored_metadata_says_how_the_turn_ended() {
    let model = ScriptedModel::new(vec![answer(&["ok"])]);
    let done = run(plan(model, vec![])).await;
    let metadata = done.outcome.stored_metadata();
    assert_eq!(metadata["status"], "complete");
    assert_eq!(metadata["finishReason"], "stop");
    assert_eq!(metadata["modelId"], "test-model");
    assert_eq!(metadata["usage"]["totalTokens"], 15);
}
