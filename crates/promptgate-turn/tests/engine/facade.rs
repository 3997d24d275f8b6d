//! The engine's side of the OpenAI facade: a completion keeps no message. (The completion a client
//! receives is encoded by the server and tested there.)

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use promptgate_turn::TurnEvent;

use crate::support::*;

/// The turn both tests run twice: one lookup, then an answer in two pieces.
fn script() -> Arc<ScriptedModel> {
    ScriptedModel::new(vec![
        tool_calls(&[("c1", "lookup", "{}")]),
        answer(&["All ", "good."]),
    ])
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_keeps_no_message_streams_the_same_chunks() {
    let kept = run(plan(script(), lookup_tools())).await;
    let mut unkept_plan = plan(script(), lookup_tools());
    unkept_plan.record_message = false;
    let unkept = run(unkept_plan).await;

    assert_eq!(types(&unkept.chunks), types(&kept.chunks));
    assert!(!kept.outcome.parts.is_empty());
    assert!(unkept.outcome.parts.is_empty(), "nothing folded for storage");
    assert_eq!(unkept.outcome.usage_total, kept.outcome.usage_total);
}

#[tokio::test(start_paused = true)]
async fn a_turn_run_by_its_reader_streams_what_a_spawned_turn_streams() {
    let spawned = run(plan(script(), lookup_tools())).await;
    let read = promptgate_turn::run_turn_in_reader(plan(script(), lookup_tools()));
    let events: Vec<TurnEvent> = read.events.collect().await;
    let in_reader = finished(events, read.outcome.await.unwrap());

    assert_eq!(types(&in_reader.chunks), types(&spawned.chunks));
    assert_eq!(deltas(&in_reader.chunks).concat(), "All good.");
    assert_eq!(in_reader.outcome.status, spawned.outcome.status);
    assert_eq!(in_reader.outcome.usage_total, spawned.outcome.usage_total);
}

#[tokio::test(start_paused = true)]
async fn a_reader_that_stops_reading_stops_its_turn() {
    let paced = || {
        let Script::Events(events) = answer(&["one ", "two ", "three"]) else {
            unreachable!()
        };
        ScriptedModel::new(vec![Script::Paced(Duration::from_secs(1), events)])
    };
    // A spawned turn outlives its reader long enough to report how it ended...
    let mut spawned = promptgate_turn::run_turn(plan(paced(), vec![]));
    assert!(spawned.events.next().await.is_some(), "the turn started");
    drop(spawned.events);
    assert!(spawned.outcome.await.is_ok());
    // ...one run by its reader ends with it, mid-answer.
    let mut read = promptgate_turn::run_turn_in_reader(plan(paced(), vec![]));
    assert!(read.events.next().await.is_some(), "the turn started");
    drop(read.events);
    assert!(
        read.outcome.await.is_err(),
        "a turn dropped with its reader sends no outcome"
    );
}
