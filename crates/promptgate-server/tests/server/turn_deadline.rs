//! A turn's wall clock bounds all of it: a model that calls a tool at every step under a profile
//! that allows a million steps, and an upstream that streams forever, are both cut at
//! `[turn] wall_clock_secs`; the answer so far is stored before the stream ends and says it was
//! cut. `[turn] max_steps` caps the steps whatever a profile asks for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common;

use common::{Backend, Gateway, Sse, stored_text, use_chat_body};
use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, content_chunk, role_chunk, tool_calls};
use reqwest::StatusCode;
use serde_json::json;

/// Long enough for any turn these tests run, short of the hours a turn without a bound would take.
const CLIENT_PATIENCE: Duration = Duration::from_secs(60);

async fn gateway(turn: &str) -> (Gateway, ScriptedUpstream) {
    common::single_user_gateway_with(Backend::Sqlite, &format!("[turn]\n{turn}")).await
}

/// A gateway with a user's model `endless` whose profile allows a million steps in one attempt,
/// on an upstream that answers every request with a tool call.
async fn endlessly_calling(turn: &str) -> (Gateway, ScriptedUpstream) {
    let (gw, upstream) = gateway(turn).await;
    let (status, body) = gw
        .post(
            "/v1/models",
            json!({"id": "endless", "provider": "scripted", "upstream_model": "m", "tool_usage": 1,
                   "profile": {"max_steps": 1_000_000, "max_attempts": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    upstream.replay_by_default(tool_calls(&[("c", "no_such_tool", &["{}"])]));
    (gw, upstream)
}

/// Sends and reads the whole answer, giving up after [`CLIENT_PATIENCE`].
async fn send(gw: &Gateway, thread: &str, model: &str) -> Sse {
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        // A v7 reader gets the finish reason, which the test reads.
        .header("x-promptgate-ui-stream", "v7")
        .json(&use_chat_body(thread, "Keep going.", model))
        .timeout(CLIENT_PATIENCE)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res
        .text()
        .await
        .expect("the turn ended before the client gave up");
    common::parse_sse(status, headers, &body)
}

/// The answer ended with the wall clock's note, after `finish` was held back until it was stored.
async fn assert_cut_and_stored(gw: &Gateway, thread: &str, sse: &Sse) {
    assert!(sse.done, "{:?}", sse.types());
    let errors = sse.of_type("error");
    assert_eq!(errors.len(), 1, "{:?}", sse.types());
    let note = errors[0]["errorText"].as_str().unwrap();
    assert!(note.contains("time limit of 2 seconds"), "{note}");
    assert_eq!(sse.of_type("finish")[0]["finishReason"], "error");
    let stored = gw.stored_messages(thread, 2).await;
    assert_eq!(stored[1]["status"], "error", "{}", stored[1]);
    assert_eq!(
        stored_text(&stored[1]),
        sse.text(),
        "the stored answer is the streamed one"
    );
}

#[tokio::test]
async fn a_million_step_profile_that_always_calls_a_tool_ends_at_the_wall_clock() {
    let (gw, _upstream) = endlessly_calling("wall_clock_secs = 2\nmax_steps = 4294967295\n").await;

    let sse = send(&gw, "endless", "endless").await;
    assert_cut_and_stored(&gw, "endless", &sse).await;
    assert!(
        sse.of_type("tool-input-available").len() > 1,
        "the model kept calling: {:?}",
        sse.types()
    );
}

#[tokio::test]
async fn the_step_ceiling_holds_whatever_the_profile_asks_for() {
    let (gw, upstream) = endlessly_calling("max_steps = 5\n").await;

    let sse = send(&gw, "capped", "endless").await;
    assert!(sse.done);
    assert_eq!(upstream.calls(), 5, "one request per step, five steps");
    assert_eq!(sse.of_type("start-step").len(), 5);
}

#[tokio::test]
async fn an_upstream_that_streams_forever_is_cut_at_the_wall_clock() {
    let (gw, upstream) = gateway("wall_clock_secs = 2\n").await;
    let forever = Step::Repeat(vec![
        Step::Delay(Duration::from_millis(50)),
        Step::Chunk(content_chunk("more ")),
    ]);
    upstream.push(Script::new().chunk(role_chunk()).step(forever));

    let sse = send(&gw, "forever", "scripted").await;
    assert!(sse.text().starts_with("more more "), "{}", sse.text());
    assert_cut_and_stored(&gw, "forever", &sse).await;
    assert_eq!(upstream.disconnects(), 1, "the upstream stream was dropped");
}
