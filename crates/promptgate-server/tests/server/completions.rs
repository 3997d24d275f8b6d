//! `POST /v1/chat/completions`, the OpenAI facade, against a scripted upstream on loopback: the turn
//! runs its tools on the server and the client sees one clean completion. Each test names the
//! scripts it queues.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Backend, Gateway, init, scripted_config, single_user_gateway, sse_frames, text_of};
use promptgate_server::config::AuthMode;

use promptgate_llm::scripted::{
    Script, ScriptedUpstream, content_chunk, finish_chunk, role_chunk, text, tool_call_chunk, tool_calls,
    usage_chunk,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A streamed completion: every `data:` object in order, and whether `[DONE]` closed it.
struct Chunks {
    chunks: Vec<Value>,
    done: bool,
}

impl Chunks {
    /// The `content` deltas joined, as a client assembles the answer.
    fn content(&self) -> String {
        self.chunks
            .iter()
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
            .collect()
    }
}

/// Asks for a streamed completion with usage and reads it to its end.
async fn stream_completion(gw: &Gateway, question: &str) -> Chunks {
    let body = json!({
        "model": "scripted",
        "messages": [{"role": "user", "content": question}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let res = gw
        .response(Method::POST, "/v1/chat/completions", Some(&body), None)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    let frames = sse_frames(&text);
    let chunks = frames
        .data
        .iter()
        .map(|data| serde_json::from_str(data).unwrap_or_else(|e| panic!("bad JSON {data}: {e}")))
        .collect();
    Chunks {
        chunks,
        done: frames.done,
    }
}

#[tokio::test]
async fn a_tool_turn_reaches_an_openai_client_as_one_clean_completion() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    // Two upstream calls: the tool step (usage 10 + 5), then the answer (usage 10 + 2 words).
    upstream.push(tool_calls(&[("c1", "no_such_tool", &["{}"])]));
    upstream.push(text(["All ", "good."]));

    let out = stream_completion(&gw, "check something").await;
    assert_eq!(upstream.calls(), 2, "the tool ran on the server");
    assert!(out.done, "the stream ends with [DONE]");
    assert_eq!(out.content(), "All good.");
    assert_eq!(out.chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let reasons: Vec<_> = out
        .chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(reasons, ["stop"], "the tool step's finish never leaks");
    assert!(
        out.chunks
            .iter()
            .all(|chunk| chunk["choices"][0]["delta"].get("tool_calls").is_none())
    );
    let last = out.chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]), "usage comes last, with no choices");
    assert_eq!(last["usage"]["total_tokens"], 15 + 12, "usage of both steps");
    let id = out.chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    for chunk in &out.chunks {
        assert_eq!(chunk["id"], id, "one identity for the whole completion");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "scripted");
    }
}

#[tokio::test]
async fn native_citation_markers_never_reach_an_openai_client() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    // Preamble text with a marker, then a tool call; then an answer with another marker.
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Checking 【1†notes】"))
            .chunk(tool_call_chunk(Some(0), Some("c1"), Some("no_such_tool"), ""))
            .chunk(tool_call_chunk(Some(0), None, None, "{}"))
            .chunk(finish_chunk("tool_calls"))
            .chunk(usage_chunk(10, 5))
            .done(),
    );
    upstream.push(text(["Done 【2】."]));

    let content = stream_completion(&gw, "look it up").await.content();
    assert_eq!(upstream.calls(), 2);
    assert!(!content.contains('【'), "{content}");
    assert!(
        content.starts_with("Checking") && content.ends_with("Done."),
        "{content}"
    );
}

#[tokio::test]
async fn a_client_that_leaves_a_whole_completion_stops_its_upstream_request() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = scripted_config(AuthMode::SingleUser, &upstream.base_url());
    // Long enough that only the client's leaving can end the upstream request within the test.
    for provider in &mut config.providers {
        provider.idle_timeout_secs = Some(600);
    }
    let gw = Gateway::start(Backend::Sqlite, config).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Thinking"))
            .hang(),
    );
    let body = json!({
        "model": "scripted",
        "messages": [{"role": "user", "content": "take your time"}],
    });
    let asked = gw
        .http
        .post(gw.url("/v1/chat/completions"))
        .json(&body)
        .timeout(std::time::Duration::from_millis(500))
        .send()
        .await;
    assert!(
        asked.is_err(),
        "the upstream never finishes, so neither does the completion"
    );

    for _ in 0..400 {
        if upstream.disconnects() == 1 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the upstream request outlived the client that asked for it");
}

/// A completion whose upstream sends a few words and then nothing more, until the server stops it.
fn cut_script() -> Script {
    Script::new()
        .chunk(role_chunk())
        .chunk(content_chunk("Partial "))
        .hang()
}

#[tokio::test]
async fn a_completion_cut_by_the_server_says_so_instead_of_finishing() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.push(cut_script());
    upstream.push(cut_script());
    let streamed = {
        let gw_url = gw.url("/v1/chat/completions");
        let http = gw.http.clone();
        tokio::spawn(async move {
            let body = json!({"model": "scripted", "stream": true,
                              "messages": [{"role": "user", "content": "go"}]});
            text_of(http.post(gw_url).json(&body)).await
        })
    };
    let whole = {
        let gw_url = gw.url("/v1/chat/completions");
        let http = gw.http.clone();
        tokio::spawn(async move {
            let body = json!({"model": "scripted", "messages": [{"role": "user", "content": "go"}]});
            let res = http.post(gw_url).json(&body).send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        })
    };
    while upstream.calls() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // What a shutdown does once its grace is over.
    gw.state.service.stop_all();

    let text = streamed.await.unwrap();
    let frames = sse_frames(&text);
    assert!(!frames.done, "a cut stream must not end with [DONE]: {text}");
    let chunks: Vec<Value> = frames
        .data
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        chunks.iter().all(|c| c["choices"][0]["finish_reason"].is_null()),
        "{text}"
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["error"]["code"], "interrupted", "{text}");
    let said: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(said.trim_end(), "Partial");

    let (status, body) = whole.await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "interrupted");
}

/// Both caps set: the smaller holds; `null` sets none. Either way the answer comes.
#[tokio::test]
async fn the_smaller_of_two_output_caps_holds_and_null_sets_none() {
    let (gw, upstream) = single_user_gateway(Backend::Sqlite).await;
    upstream.replay_by_default(text(["Fine."]));
    let question = json!([{"role": "user", "content": "Hi"}]);
    for body in [
        json!({"model": "scripted", "messages": question, "max_tokens": 900, "max_completion_tokens": 120}),
        json!({"model": "scripted", "messages": question, "max_tokens": null}),
    ] {
        let (status, answer) = gw.post("/v1/chat/completions", body).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["choices"][0]["message"]["content"], "Fine.");
    }
    let sent = upstream.requests();
    assert_eq!(sent[0]["max_completion_tokens"], 120);
    assert!(sent[0].get("max_tokens").is_none(), "{}", sent[0]);
    assert!(sent[1].get("max_completion_tokens").is_none(), "{}", sent[1]);
    assert!(sent[1].get("max_tokens").is_none(), "{}", sent[1]);
}
