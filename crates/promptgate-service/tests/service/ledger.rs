//! The usage ledger against what the upstream reported: every send, regenerate, failed turn and its
//! retry, stopped turn and facade request leaves one row with the tokens the scripted upstream
//! reported for it, priced from the table where the model has a price.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use futures::StreamExt;
use promptgate_llm::scripted::{Script, content_chunk, finish_chunk, role_chunk, tool_calls, usage_chunk};
use promptgate_service::deployment::Price;
use promptgate_service::events::{TurnEvent, UiChunk};
use promptgate_service::facade::facade_history;
use promptgate_service::records::{UsageGroup, UsageGrouping, UsageKind, UsageQuery};
use promptgate_service::{CompletionRequest, SendInput, Service};
use promptgate_store::testing::TestDb;
use serde_json::json;

use crate::common::{MODEL, USER, finish, finished_turn, message, plain_service, retry, service, upstream};

/// An answer of `words` whose usage report says `prompt` and `completion` tokens.
fn answer(words: &str, prompt: u64, completion: u64) -> Script {
    Script::new()
        .chunk(role_chunk())
        .chunk(content_chunk(words))
        .chunk(finish_chunk("stop"))
        .chunk(usage_chunk(prompt, completion))
        .done()
}

async fn by_model(service: &Service) -> Vec<UsageGroup> {
    let query = UsageQuery {
        user: Some(USER.to_owned()),
        from_ms: 0,
        to_ms: i64::MAX,
        group_by: UsageGrouping::Model,
        then_by: None,
    };
    service.usage_report(&query).await.unwrap()
}

async fn requests(service: &Service) -> u64 {
    by_model(service).await.iter().map(|g| g.requests).sum()
}

/// Reads a started turn until its first text arrives, then stops it and reads it to its end.
async fn stop_after_text(service: &Service, handle: promptgate_service::SendHandle, thread: &str) {
    let mut events = handle.events;
    while let Some(event) = events.next().await {
        if let TurnEvent::Chunk(UiChunk::TextDelta { .. }) = event {
            assert!(service.stop(USER, thread).await, "the turn was running");
            break;
        }
    }
    while events.next().await.is_some() {}
}

async fn the_ledger_holds_what_the_upstream_reported_for_every_kind_of_turn(db: TestDb) {
    let upstream = upstream().await;
    let service = service(db.store().clone(), &upstream, |config| {
        config.prices.0.insert(
            MODEL.to_owned(),
            Price {
                input: 2.0,
                output: 10.0,
                cached_input: None,
            },
        );
    })
    .await;
    // A send with a tool step: two requests, whose reports add up.
    let card = json!({"title": "Tasks", "html": "<p>none</p>"}).to_string();
    upstream.push(tool_calls(&[("c1", "render_html", &[card.as_str()])]));
    upstream.push(answer("No tasks.", 100, 20));
    finish(
        service
            .send(message("t", Some("q1"), "Draw my tasks"))
            .await
            .unwrap(),
    )
    .await;
    // A regenerate.
    upstream.push(answer("Still none.", 200, 30));
    let mut regenerate = message("t", None, "");
    regenerate.input = SendInput::Regenerate;
    finish(service.send(regenerate).await.unwrap()).await;
    // A turn the upstream cuts off after reporting, and its automatic retry.
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Half"))
            .chunk(usage_chunk(300, 40))
            // Read before the connection goes: a reset drops what the client has not read yet.
            .delay(std::time::Duration::from_millis(100))
            .cut(),
    );
    let failed_turn = finished_turn(&service, message("t", Some("q2"), "Tides?")).await;
    upstream.push(answer("High at noon.", 400, 50));
    finish(
        service
            .send(retry(message("t", Some("q2"), "Tides?"), &failed_turn))
            .await
            .unwrap(),
    )
    .await;
    // A turn stopped while the upstream still streams.
    upstream.push(hanging_answer("Long", 500, 60));
    let long = service
        .send(message("s", Some("q3"), "Tell me all"))
        .await
        .unwrap();
    stop_after_text(&service, long, "s").await;
    // A facade request: its row is written once its stream ended.
    upstream.push(answer("Hi.", 600, 70));
    let conversation = facade_history(&[json!({"role": "user", "content": "Hello"})]).unwrap();
    let facade = service
        .complete(CompletionRequest {
            user_id: USER.to_owned(),
            model: None,
            conversation,
            client_tools: Vec::new(),
            tool_choice: Default::default(),
            extra: Default::default(),
            parallel_tool_calls: None,
            output_cap: None,
            on_end: Vec::new(),
            key_id: Some("key_1".to_owned()),
            facade: UsageKind::ChatCompletions,
            streamed: false,
        })
        .await
        .unwrap();
    finish(facade).await;
    for _ in 0..500 {
        if requests(&service).await == 6 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let report = by_model(&service).await;
    assert_eq!(report.len(), 1, "{report:?}");
    let row = &report[0];
    assert_eq!(row.group, MODEL);
    assert_eq!(
        row.requests, 6,
        "send, regenerate, failed turn, retry, stop, facade: {row:?}"
    );
    let input = 10 + 100 + 200 + 300 + 400 + 500 + 600;
    let output = 5 + 20 + 30 + 40 + 50 + 60 + 70;
    assert_eq!((row.tokens.input, row.tokens.output), (input, output));
    assert_eq!((row.tool_calls, row.web_calls), (1, 0));
    let cost = row.cost.unwrap();
    let expected = (input as f64 * 2.0 + output as f64 * 10.0) / 1_000_000.0;
    assert!((cost - expected).abs() < 1e-9, "{cost} against {expected}");
    assert_eq!(row.unpriced_requests, 0);

    let by_key = service
        .usage_report(&UsageQuery {
            user: None,
            from_ms: 0,
            to_ms: i64::MAX,
            group_by: UsageGrouping::Key,
            then_by: None,
        })
        .await
        .unwrap();
    let keys: Vec<_> = by_key.iter().map(|g| (g.group.as_str(), g.requests)).collect();
    assert_eq!(keys, vec![("", 5), ("key_1", 1)]);
    assert_eq!(upstream.calls(), 7);
}

/// While a turn runs, its row holds the steps that ended (what a process that died now would
/// leave); its end replaces that row rather than add one.
async fn a_running_turn_leaves_its_finished_steps_in_the_ledger_and_ends_as_one_row(db: TestDb) {
    let (upstream, service) = plain_service(db.store()).await;
    let card = json!({"title": "Tide", "html": "<p>06:40</p>"}).to_string();
    upstream.push(tool_calls(&[("c1", "render_html", &[card.as_str()])]));
    upstream.push(hanging_answer("Drawn", 70, 8));
    let running = service
        .send(message("c", Some("q"), "Draw the tide"))
        .await
        .unwrap();
    let mut events = running.events;
    while let Some(event) = events.next().await {
        if let TurnEvent::Chunk(UiChunk::TextDelta { .. }) = event {
            break;
        }
    }
    let mut so_far = Vec::new();
    for _ in 0..500 {
        so_far = by_model(&service).await;
        if !so_far.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(so_far.len(), 1, "{so_far:?}");
    assert_eq!(
        (
            so_far[0].requests,
            so_far[0].tokens.input,
            so_far[0].tokens.output
        ),
        (1, 10, 5),
        "the tool step's tokens are in the ledger while the turn runs"
    );
    assert!(service.stop(USER, "c").await);
    while events.next().await.is_some() {}
    let ended = by_model(&service).await;
    assert_eq!(
        (
            ended[0].requests,
            ended[0].tokens.input,
            ended[0].tokens.output,
            ended[0].tool_calls
        ),
        (1, 80, 13, 1)
    );
}

promptgate_store::on_both_backends!(
    the_ledger_holds_what_the_upstream_reported_for_every_kind_of_turn,
    a_running_turn_leaves_its_finished_steps_in_the_ledger_and_ends_as_one_row,
);

/// An answer that reports its usage, then keeps the stream open: a turn still running.
fn hanging_answer(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Script {
    Script::new()
        .chunk(role_chunk())
        .chunk(content_chunk(text))
        .chunk(usage_chunk(prompt_tokens, completion_tokens))
        .hang()
}
