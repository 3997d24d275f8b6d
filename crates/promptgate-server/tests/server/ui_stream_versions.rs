//! The UI message stream read by every AI SDK major, each with its own DefaultChatTransport and
//! readUIMessageStream (tests/js, the releases installed side by side under npm aliases): an early
//! strict 5.0 (5.0.100, which refuses any key it does not know), the latest 5.x, 6.x and 7.x. Each
//! reads the same turns, a text answer, a tool call with its output, a stop and an error, twice:
//! without saying its version (the server's default, which every release accepts) and with
//! `X-Promptgate-UI-Stream` naming its major (the richer fields that major accepts).

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use promptgate_llm::scripted::{Script, ScriptedUpstream, text};
use promptgate_server::config::AuthMode;
use serde_json::{Value, json};

use crate::common::{self, Backend, Gateway};
use crate::js_clients::{chat_request, js_dir, run_node};

/// The text the scripted model answers the first turn with.
const ANSWER: &str = "Tides rise twice a day.";

fn turn(chat: &str, model: &str, words: &str, header: Option<&str>, stop_after: Option<&str>) -> Value {
    let mut turn = chat_request(chat, model, words);
    if let Some(version) = header {
        turn["headers"] = json!({"X-Promptgate-UI-Stream": version});
    }
    if let Some(kind) = stop_after {
        turn["stopAfter"] = json!(kind);
    }
    turn
}

/// Reads the four turns with `release`, naming `header` as its version or not, and returns what
/// the SDK made of each.
async fn read_turns(release: &str, header: Option<&str>) -> Vec<Value> {
    common::init();
    let dir = js_dir().expect("checked by the caller");
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        Backend::Sqlite,
        common::scripted_config(AuthMode::SingleUser, &upstream.base_url()),
    )
    .await;
    upstream.push(text(["Tides rise ", "twice a day."]));
    let slow: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    upstream.push(text(slow).with_delay_between(Duration::from_millis(50)));
    upstream.push(Script::status(400, "the upstream refuses"));
    let suffix = header.unwrap_or("default");
    let turns = json!([
        turn(
            &format!("text-{suffix}"),
            "scripted",
            "Tell me about tides",
            header,
            None
        ),
        // The offline demo model calls a real tool of the server (render_html), titled.
        turn(
            &format!("tool-{suffix}"),
            "demo",
            "Make me a tiny page",
            header,
            None
        ),
        turn(
            &format!("stop-{suffix}"),
            "scripted",
            "Talk for a while",
            header,
            Some("text-delta")
        ),
        turn(
            &format!("error-{suffix}"),
            "scripted",
            "Fail please",
            header,
            None
        ),
    ]);
    let results = read_with(dir, release, &gw, &turns).await;
    for (n, result) in results.iter().enumerate() {
        assert!(
            result["failure"].is_null(),
            "{release} ({suffix}) refused turn {n}: {}",
            result["failure"]
        );
    }
    results
}

/// What `release` made of each of `turns`, sent to `gw`.
async fn read_with(dir: std::path::PathBuf, release: &str, gw: &Gateway, turns: &Value) -> Vec<Value> {
    let (ok, results) = run_node(
        dir,
        &[
            "ui-stream-versions-check.mjs",
            release,
            &gw.url("/v1/chat"),
            &turns.to_string(),
        ],
    )
    .await;
    assert!(ok, "{release}: {results}");
    results.as_array().unwrap().clone()
}

fn chunks<'a>(result: &'a Value, kind: &str) -> Vec<&'a Value> {
    common::where_eq(&result["chunks"], "type", kind)
}

fn text_of(result: &Value) -> String {
    common::stored_text(&result["message"])
}

/// What every release must make of the four turns, whatever the version it named.
fn assert_the_turns_read_whole(release: &str, results: &[Value]) {
    let [answer, tool, stop, error] = results else {
        panic!("{release}: four turns, got {}", results.len());
    };
    assert_eq!(text_of(answer), ANSWER, "{release}");
    assert_eq!(chunks(answer, "finish").len(), 1, "{release}");

    let parts = tool["message"]["parts"].as_array().unwrap();
    let render = parts
        .iter()
        .find(|part| part["type"] == "tool-render_html")
        .unwrap_or_else(|| panic!("{release}: no tool part in {parts:?}"));
    assert_eq!(render["state"], "output-available", "{release}");

    assert_eq!(chunks(stop, "abort").len(), 1, "{release}: {:?}", stop["chunks"]);
    assert!(
        !text_of(stop).is_empty(),
        "{release}: the words before the stop stay"
    );

    assert_eq!(error["errors"].as_array().unwrap().len(), 1, "{release}: {error}");
    assert_eq!(chunks(error, "finish").len(), 1, "{release}");
}

/// The fields only a client that named a newer version gets.
fn richer_fields(results: &[Value]) -> (bool, Option<Value>, Option<Value>) {
    let titled = chunks(&results[1], "tool-input-start")
        .iter()
        .all(|chunk| chunk.get("title").is_some());
    let finish_reason = chunks(&results[3], "finish")[0].get("finishReason").cloned();
    let abort_reason = chunks(&results[2], "abort")[0].get("reason").cloned();
    (titled, finish_reason, abort_reason)
}

async fn check_release(release: &str, major: &str) {
    if js_dir().is_none() {
        return;
    }
    let plain = read_turns(release, None).await;
    assert_the_turns_read_whole(release, &plain);
    assert_eq!(
        richer_fields(&plain),
        (false, None, None),
        "{release}: without the header only what every release accepts"
    );

    let named = read_turns(release, Some(major)).await;
    assert_the_turns_read_whole(release, &named);
    let expected = match major {
        "v5" => (false, None, None),
        "v6" => (true, Some(json!("error")), None),
        _ => (true, Some(json!("error")), Some(json!("stopped"))),
    };
    assert_eq!(richer_fields(&named), expected, "{release} naming {major}");
}

#[tokio::test]
async fn an_early_strict_ai_5_0_reads_every_turn() {
    check_release("ai-5-0-100", "v5").await;
}

#[tokio::test]
async fn the_latest_ai_5_reads_every_turn() {
    check_release("ai-5", "v5").await;
}

#[tokio::test]
async fn the_latest_ai_6_reads_every_turn_and_gets_titles_and_finish_reasons() {
    check_release("ai-6", "v6").await;
}

#[tokio::test]
async fn the_latest_ai_7_reads_every_turn_and_gets_every_field() {
    check_release("ai", "v7").await;
}

/// A reload reads the running turn's stream as its own version asks, whatever the sender asked:
/// the stream is kept whole and written again for an older reader.
#[tokio::test]
async fn a_resumed_stream_is_written_for_the_version_of_whoever_resumes_it() {
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    // A titled tool call of the server's (render_html), then a slow answer.
    upstream.push(promptgate_llm::scripted::tool_calls(&[(
        "c1",
        "render_html",
        &["{\"title\":\"T\",\"html\":\"<p>hi</p>\"}"],
    )]));
    let words: Vec<String> = (0..60).map(|i| format!("w{i} ")).collect();
    upstream.push(text(words).with_delay_between(Duration::from_millis(20)));
    let sender = gw
        .http
        .post(gw.url("/v1/chat"))
        .header("x-promptgate-ui-stream", "v7")
        .json(&common::use_chat_body(
            "resumed",
            "Make a page, then talk",
            "scripted",
        ));
    let sending = tokio::spawn(async move { sender.send().await?.text().await });
    for _ in 0..200 {
        if upstream.calls() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resume = |version: Option<&'static str>| {
        let mut request = gw.http.get(gw.url("/v1/chat/resumed/stream"));
        if let Some(version) = version {
            request = request.header("x-promptgate-ui-stream", version);
        }
        async move {
            let res = request.send().await.unwrap();
            let status = res.status();
            let headers = res.headers().clone();
            common::parse_sse(status, headers, &res.text().await.unwrap())
        }
    };
    let (oldest, newest) = tokio::join!(resume(None), resume(Some("v7")));
    let sent = sending.await.unwrap().unwrap();

    let title = |sse: &common::Sse| sse.of_type("tool-input-start")[0].get("title").cloned();
    assert_eq!(title(&newest), Some(json!("Rendering artifact...")));
    assert_eq!(title(&oldest), None, "a v5 reader never sees a title");
    assert!(oldest.of_type("finish")[0].get("finishReason").is_none());
    assert_eq!(oldest.text(), newest.text(), "the same answer either way");
    assert!(
        sent.contains("\"title\":\"Rendering artifact...\""),
        "the sender asked for v7"
    );
}

/// A cited turn read by the AI SDK itself: the scripted model searches the bundled demo web and cites
/// its first result. Returns what `release` made of it, naming `header` as its version or not.
async fn read_cited_turn(release: &str, header: Option<&str>) -> Value {
    common::init();
    let dir = js_dir().expect("checked by the caller");
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = common::scripted_config_with(
        AuthMode::SingleUser,
        &upstream.base_url(),
        "[web]\nsearch = { kind = \"demo\" }\n",
    );
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let search = json!({"query": "what is promptgate"}).to_string();
    upstream.push(promptgate_llm::scripted::tool_calls(&[(
        "s1",
        "search",
        &[search.as_str()],
    )]));
    upstream.push(text([
        "promptgate sits between a chat frontend and a language model [1]. ",
        "It was written on the moon [2].",
    ]));
    let suffix = header.unwrap_or("default");
    let turns = json!([turn(
        &format!("cited-{suffix}"),
        "scripted",
        "What is promptgate?",
        header,
        None
    )]);
    let result = read_with(dir, release, &gw, &turns).await[0].clone();
    assert!(
        result["failure"].is_null(),
        "{release} refused the cited turn: {}",
        result["failure"]
    );
    result
}

/// The citations a reader's message keeps on its text parts.
fn kept_citations(result: &Value) -> Vec<Value> {
    result["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == "text")
        .flat_map(|part| part["citations"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn ai_7_keeps_the_checked_citations_on_the_text_part_and_a_strict_5_0_never_sees_them() {
    if js_dir().is_none() {
        return;
    }
    let newest = read_cited_turn("ai", Some("v7")).await;
    let kept = kept_citations(&newest);
    assert_eq!(kept.len(), 2, "{newest:#}");
    assert_eq!(
        kept[0]["source"]["url"],
        "https://guide.promptgate.invalid/what-it-is"
    );
    assert_eq!(kept[0]["startIndex"], 0);
    assert!(
        kept[0]["citedText"]
            .as_str()
            .unwrap()
            .contains("promptgate sits between")
    );
    assert!(
        text_of(&newest).contains("moon [2]."),
        "the search found two pages, so [2] names a source and stays: {}",
        text_of(&newest)
    );

    for (release, header) in [
        ("ai-5-0-100", None),
        ("ai-5-0-100", Some("v5")),
        ("ai-6", Some("v6")),
    ] {
        let older = read_cited_turn(release, header).await;
        assert!(kept_citations(&older).is_empty(), "{release}");
        for end in chunks(&older, "text-end") {
            assert!(end.get("citations").is_none(), "{release}: {end}");
        }
        assert_eq!(text_of(&older), text_of(&newest), "{release}");
    }
}
