//! Model-native citation markers (`【3†title】`) point into the model's own browsing context, so the
//! engine removes them before any text leaves it: the stream, the stored part and the model's own
//! history all carry the cleaned text (and so does the OpenAI completion the server encodes from the
//! stream; its tests check that).

use std::sync::Arc;

use promptgate_core::citations::check::Citation;
use promptgate_core::citations::markers::Marker;
use promptgate_core::citations::support::SupportClass;
use promptgate_llm::ChatMessage;
use promptgate_turn::UiChunk;
use serde_json::json;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_marker_split_across_deltas_never_reaches_the_client_even_in_part() {
    let model = ScriptedModel::new(vec![answer(&[
        "Rust is fast [1]",
        " 【3",
        "†The Rust Bo",
        "ok】 and safe [2]【12】.",
    ])]);
    let done = run(plan(model, vec![])).await;

    let streamed = deltas(&done.chunks);
    for delta in &streamed {
        assert!(
            !delta.contains('【') && !delta.contains('†') && !delta.contains("Rust Bo"),
            "a piece of a marker was streamed: {delta:?}"
        );
    }
    let expected = "Rust is fast [1] and safe [2].";
    assert_eq!(streamed.concat(), expected);
    assert_eq!(
        done.outcome.parts[1],
        json!({"type": "text", "text": expected, "state": "done"})
    );
}

#[tokio::test(start_paused = true)]
async fn cjk_brackets_without_digits_are_ordinary_text() {
    let text = "価格は【税込み】で、詳細は【注意】を参照 [1]";
    let model = ScriptedModel::new(vec![answer(&[
        "価格は【税",
        "込み】で、詳細は【注意】を参照 [1]",
    ])]);
    let done = run(plan(model, vec![])).await;

    assert_eq!(deltas(&done.chunks).concat(), text);
    assert_eq!(done.outcome.parts[1]["text"], text);
}

#[tokio::test(start_paused = true)]
async fn held_back_text_that_never_closes_is_flushed_before_text_end() {
    let model = ScriptedModel::new(vec![answer(&["Figure ", "【12"])]);
    let done = run(plan(model, vec![])).await;

    let kinds = types(&done.chunks);
    let end = kinds.iter().position(|kind| kind == "text-end").unwrap();
    assert_eq!(
        done.chunks[end - 1],
        UiChunk::TextDelta {
            id: "text-turn1-1".into(),
            delta: " 【12".into()
        },
        "the held text is released as the part's last delta"
    );
    assert_eq!(deltas(&done.chunks).concat(), "Figure 【12");
    assert_eq!(done.outcome.parts[1]["text"], "Figure 【12");
}

#[tokio::test(start_paused = true)]
async fn preamble_text_is_cleaned_before_a_tool_call_and_in_the_models_history() {
    let tools = lookup_tools();
    let model = ScriptedModel::new(vec![
        {
            let mut events = vec![Ok(promptgate_llm::StreamEvent::TextDelta(
                "Checking 【1†notes】".into(),
            ))];
            if let Script::Events(calls) = tool_calls(&[("c1", "lookup", "{}")]) {
                events.extend(calls);
            }
            Script::Events(events)
        },
        answer(&["Done 【2】."]),
    ]);
    let done = run(plan(model.clone(), tools)).await;

    assert_eq!(deltas(&done.chunks), ["Checking", "Done."]);
    let second = &model.requests()[1];
    let preamble = second.messages.iter().find_map(|message| match message {
        ChatMessage::Assistant { content, .. } => content.clone(),
        _ => None,
    });
    assert_eq!(preamble.as_deref(), Some("Checking"));
}

/// A citation of `marker` whose claim is everything before it, classed `class`.
fn citation_at(marker: &Marker, text_part: u32, class: SupportClass) -> Citation {
    Citation {
        n: marker.n,
        url: "https://example.com/".into(),
        title: "Example".into(),
        text_part,
        start: 0,
        end: marker.start,
        marker_start: marker.start,
        marker_end: marker.end,
        class,
        snippet_only: false,
        passage: Some("High water comes at about six in the morning.".into()),
        reviewed: false,
    }
}

/// A source registry whose check blocks its thread until the rest of the runtime has run: it
/// finishes only when another task on the same (one-threaded) runtime saw it start.
struct HeavyCheck {
    started: std::sync::atomic::AtomicBool,
    released: std::sync::atomic::AtomicBool,
}

impl promptgate_turn::TurnHooks for HeavyCheck {
    fn citable_sources(&self) -> Option<Vec<u32>> {
        Some(vec![1])
    }

    fn citation_source_bytes(&self) -> usize {
        20 * 16_000
    }

    fn check_citations(&self, _text: &str, text_part: u32, markers: &[Marker]) -> Vec<Citation> {
        use std::sync::atomic::Ordering;
        self.started.store(true, Ordering::SeqCst);
        // Bounded so that a check run on the runtime's only thread fails the test, not hangs it.
        for _ in 0..500 {
            if self.released.load(Ordering::SeqCst) {
                return markers
                    .iter()
                    .map(|m| citation_at(m, text_part, SupportClass::Supported))
                    .collect();
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Vec::new()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_check_over_many_pages_leaves_the_runtime_free_for_other_turns() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let hooks = Arc::new(HeavyCheck {
        started: AtomicBool::new(false),
        released: AtomicBool::new(false),
    });
    let model = ScriptedModel::new(vec![answer(&["The tide turns at six [1]."])]);
    let mut turn = plan(model, vec![]);
    turn.hooks = hooks.clone();
    let other_turn = async {
        while !hooks.started.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        hooks.released.store(true, Ordering::SeqCst);
    };
    let (done, ()) = tokio::join!(run(turn), other_turn);

    let end = done
        .chunks
        .iter()
        .find_map(|chunk| match chunk {
            UiChunk::TextEnd { citations, .. } => Some(citations.clone()),
            _ => None,
        })
        .unwrap();
    let citations = end.expect("the check ran while the other task went on, and its result arrived");
    assert_eq!(citations.len(), 1);
    assert_eq!(citations[0]["source"]["id"], "source-1");
}

/// A source registry whose check finds every citation weak.
struct WeakCheck;

impl promptgate_turn::TurnHooks for WeakCheck {
    fn citable_sources(&self) -> Option<Vec<u32>> {
        Some(vec![1])
    }

    fn check_citations(&self, _text: &str, text_part: u32, markers: &[Marker]) -> Vec<Citation> {
        markers
            .iter()
            .map(|m| citation_at(m, text_part, SupportClass::Weak))
            .collect()
    }
}

/// Runs a turn whose one citation the check finds weak, with `reviewer` answering the review.
async fn reviewed_turn(reviewer: Arc<ScriptedModel>) -> Finished {
    let model = ScriptedModel::new(vec![answer(&["The tide turns at six [1]."])]);
    let mut turn = plan(model, vec![]);
    turn.hooks = Arc::new(WeakCheck);
    turn.citation_review = Some(promptgate_turn::CitationReview {
        model: reviewer,
        upstream_model: "small".into(),
        timeout: std::time::Duration::from_secs(30),
        max_citations: 20,
    });
    run(turn).await
}

#[tokio::test(start_paused = true)]
async fn a_reviewing_model_can_find_a_weak_citation_supported() {
    let reviewer = ScriptedModel::new(vec![answer(&["{\"verdicts\": ", "[\"supported\"]}"])]);
    let done = reviewed_turn(reviewer.clone()).await;

    let citation = &done.outcome.metadata["citations"][0];
    assert_eq!(citation["class"], "supported", "{citation}");
    assert_eq!(citation["reviewed"], true);
    let asked = reviewer.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].model, "small");
    let ChatMessage::User { content } = &asked[0].messages[1] else {
        panic!("the task is the user message: {:?}", asked[0].messages);
    };
    let task = format!("{content:?}");
    assert!(
        task.contains("Claim: The tide turns at six") && task.contains("High water comes at about six"),
        "{task}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unusable_review_leaves_the_checks_class() {
    let reviewer = ScriptedModel::new(vec![answer(&["I think it is fine."])]);
    let done = reviewed_turn(reviewer).await;

    let citation = &done.outcome.metadata["citations"][0];
    assert_eq!(citation["class"], "weak", "{citation}");
    assert!(citation.get("reviewed").is_none(), "{citation}");
}
