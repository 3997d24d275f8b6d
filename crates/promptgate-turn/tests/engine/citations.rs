//! Model-native citation markers (`【3†title】`) point into the model's own browsing context, so the
//! engine removes them before any text leaves it: the stream, the stored part and the model's own
//! history all carry the cleaned text (and so does the OpenAI completion the server encodes from the
//! stream; its tests check that).

use std::sync::Arc;

use promptgate_llm::ChatMessage;
use promptgate_turn::UiChunk;
use serde_json::json;

use crate::support::*;

/// The text deltas, in order.
fn deltas(chunks: &[UiChunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::TextDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

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
    let tools = vec![tool(spec("lookup", None, false), Arc::new(Echo::default()))];
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
