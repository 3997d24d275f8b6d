//! The scripted upstream itself, as other crates' tests and the load driver use it.

use crate::common;

use common::{post, upstream};
use promptgate_llm::scripted::{Script, text, tool_calls};
use serde_json::{Value, json};

#[tokio::test]
async fn non_streaming_requests_get_one_json_completion() {
    let upstream = upstream().await;
    upstream.push(text(["Hel", "lo"]));
    upstream.push(tool_calls(&[("call_1", "search", &["{\"query\":", "\"x\"}"])]));
    let url = format!("{}/chat/completions", upstream.base_url());

    let (status, kind, body) = post(&url, json!({ "model": "m", "messages": [], "stream": false })).await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    let completion: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["choices"][0]["message"]["content"], "Hello");
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    assert_eq!(completion["usage"]["completion_tokens"], 2);

    let (_, _, body) = post(&url, json!({ "model": "m", "messages": [] })).await;
    let completion: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        completion["choices"][0]["message"]["tool_calls"],
        json!([{ "id": "call_1", "type": "function", "function": { "name": "search", "arguments": "{\"query\":\"x\"}" } }])
    );
}

#[tokio::test]
async fn the_default_script_answers_when_the_queue_is_empty() {
    let upstream = upstream().await;
    let url = format!("{}/chat/completions", upstream.base_url());

    let (status, _, body) = post(&url, json!({ "stream": true })).await;
    assert_eq!(status, 500);
    assert!(body.contains("no script left"));

    upstream.replay_by_default(text(["same"]));
    upstream.push(text(["queued"]));
    let (_, _, queued) = post(&url, json!({ "stream": true })).await;
    assert!(queued.contains("queued"));
    for _ in 0..3 {
        let (status, kind, body) = post(&url, json!({ "stream": true })).await;
        assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
        assert!(
            body.contains("\"same\"") && body.ends_with("data: [DONE]\n\n"),
            "{body}"
        );
    }
    assert_eq!(upstream.calls(), 5);
}

#[tokio::test]
async fn requests_are_recorded_until_recording_is_turned_off() {
    let upstream = upstream().await;
    upstream.replay_by_default(Script::new().done());
    let url = format!("{}/chat/completions", upstream.base_url());
    post(&url, json!({ "stream": true, "n": 1 })).await;
    upstream.set_recording(false);
    post(&url, json!({ "stream": true, "n": 2 })).await;

    assert_eq!(upstream.requests(), vec![json!({ "stream": true, "n": 1 })]);
    assert_eq!(upstream.calls(), 2);
}
