//! Citations checked at the end of a web turn: a scripted model searches, reads one of the two pages
//! it found, and answers with a supported citation, one of a page it only saw as a search snippet, one
//! shifted onto the wrong page, one the page does not back and one of a source that does not exist.
//! The stream, the stored answer and its metadata all show the outcome.

#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;
use crate::web_site;

use common::Gateway;
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use reqwest::Method;
use serde_json::{Value, json};
use web_site::Web;

async fn gateway() -> (Gateway, ScriptedUpstream, Web) {
    web_site::scripted_web_gateway().await
}

const ANSWER: [&str; 5] = [
    "Heights in a tide table are measured from chart datum, the lowest level the sea reaches [1]. ",
    "The harbour office publishes when it is open [2]. ",
    "The harbour office closes at dusk from April to October [1]. ",
    "The causeway is closed to cars every winter [1]. ",
    "Ferries leave every hour [",
];
const ANSWER_END: &str = "7].";

/// What the client and the store see: the dangling `[7]` is gone with the space before it.
const SHOWN: &str = "Heights in a tide table are measured from chart datum, the lowest level the sea reaches [1]. \
     The harbour office publishes when it is open [2]. \
     The harbour office closes at dusk from April to October [1]. \
     The causeway is closed to cars every winter [1]. \
     Ferries leave every hour.";

/// Pushes the turn: search (both pages become sources 1 and 2), read page 1 only, answer.
fn script(upstream: &ScriptedUpstream, web: &Web) {
    let search = json!({"query": "tide tables"}).to_string();
    upstream.push(tool_calls(&[("s1", "search", &[search.as_str()])]));
    let fetch = json!({"url": web.page("/tides")}).to_string();
    upstream.push(tool_calls(&[("f1", "fetch_content", &[fetch.as_str()])]));
    let mut pieces: Vec<&str> = ANSWER.to_vec();
    pieces.push(ANSWER_END);
    upstream.push(text(pieces));
}

fn utf16_slice(text: &str, start: &Value, end: &Value) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let (start, end) = (start.as_u64().unwrap() as usize, end.as_u64().unwrap() as usize);
    String::from_utf16(&units[start..end]).unwrap()
}

#[tokio::test]
async fn a_turns_citations_are_resolved_checked_and_stored() {
    let (gw, upstream, web) = gateway().await;
    script(&upstream, &web);
    let sse = gw.chat("cite-1", "Tides?").await;
    sse.assert_stopped();

    // The stream never showed the dangling citation, not even in part.
    assert_eq!(sse.text(), SHOWN);
    assert!(
        sse.of_type("text-delta")
            .iter()
            .all(|d| !d["delta"].as_str().unwrap().contains('7'))
    );

    // A v7 reader gets the checked citations on `text-end`, spans into the text part.
    let ends = sse.of_type("text-end");
    let on_end = ends.last().unwrap()["citations"].as_array().unwrap().clone();
    assert_eq!(on_end.len(), 4);
    assert_eq!(on_end[0]["source"]["url"], web.page("/tides"));
    assert_eq!(on_end[0]["source"]["id"], "source-1");
    assert_eq!(
        utf16_slice(SHOWN, &on_end[0]["startIndex"], &on_end[0]["endIndex"]),
        "Heights in a tide table are measured from chart datum, the lowest level the sea reaches"
    );
    assert!(
        on_end[0]["citedText"]
            .as_str()
            .unwrap()
            .contains("measured from chart datum")
    );

    // The stored answer is what was shown, and its metadata lists and counts the citations.
    let stored = gw.stored_messages("cite-1", 2).await;
    assert_eq!(common::stored_text(&stored[1]), SHOWN);
    let metadata = &stored[1]["metadata"];
    let citations = metadata["citations"].as_array().unwrap();
    let summary: Vec<(u64, &str, bool)> = citations
        .iter()
        .map(|c| {
            (
                c["n"].as_u64().unwrap(),
                c["class"].as_str().unwrap(),
                c["snippetOnly"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "supported", false),
            (2, "supported", true),
            (1, "unsupported", false),
            (1, "unsupported", false),
        ],
        "read and backed; backed by a snippet only; shifted onto the tides page; not on the page: {citations:#?}"
    );
    assert_eq!(citations[1]["url"], web.page("/harbour"));
    assert_eq!(citations[1]["passage"], "When the harbour office is open.");
    assert_eq!(
        utf16_slice(SHOWN, &citations[2]["markerStart"], &citations[2]["markerEnd"]),
        "[1]"
    );
    assert_eq!(citations[0]["textPart"], 0);
    assert_eq!(
        metadata["citationCounts"],
        json!({"total": 4, "supported": 2, "weak": 0, "unsupported": 2, "snippetOnly": 1, "dangling": 1})
    );
}

#[tokio::test]
async fn a_configured_reviewer_takes_a_second_look_at_the_citations_not_found_supported() {
    let (gw, upstream, web) =
        web_site::scripted_web_gateway_with("[citations]\nreview_model = \"scripted\"\n").await;
    script(&upstream, &web);
    // Of the two unsupported claims, the reviewer finds the first one backed after all.
    upstream.push(text(["{\"verdicts\": [\"supported\", \"unsupported\"]}"]));
    let sse = gw.chat("cite-r", "Tides?").await;
    assert_eq!(sse.text(), SHOWN);
    assert_eq!(upstream.calls(), 4, "the turn's three requests and one review");

    let review = upstream.last_request().unwrap();
    assert_eq!(review["model"], "upstream-model");
    let task = review["messages"][1]["content"].as_str().unwrap();
    assert!(
        task.contains("Item 1\nClaim: The harbour office closes at dusk from April to October")
            && task.contains("Item 2\nClaim: The causeway is closed to cars every winter")
            && !task.contains("Item 3"),
        "only the claims not found supported are asked about: {task}"
    );
    assert!(review["tools"].is_null(), "a review offers no tools: {review}");

    let stored = gw.stored_messages("cite-r", 2).await;
    let metadata = &stored[1]["metadata"];
    let classes: Vec<(&str, bool)> = metadata["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["class"].as_str().unwrap(), c["reviewed"] == true))
        .collect();
    assert_eq!(
        classes,
        [
            ("supported", false),
            ("supported", false),
            ("supported", true),
            ("unsupported", true)
        ]
    );
    assert_eq!(metadata["citationCounts"]["supported"], 3);
}

#[tokio::test]
async fn a_v5_reader_gets_no_citation_fields_but_the_same_text_and_metadata() {
    let (gw, upstream, web) = gateway().await;
    script(&upstream, &web);
    let res = gw
        .response(
            Method::POST,
            "/v1/chat",
            Some(&common::use_chat_body("cite-v5", "Tides?", "scripted")),
            None,
        )
        .await;
    let sse = common::sse_of(res).await;
    assert_eq!(sse.text(), SHOWN);
    for end in sse.of_type("text-end") {
        assert_eq!(end.as_object().unwrap().len(), 2, "only type and id: {end}");
    }
    let stored = gw.stored_messages("cite-v5", 2).await;
    assert_eq!(stored[1]["metadata"]["citationCounts"]["dangling"], 1);
}

#[tokio::test]
async fn indexing_and_code_keep_their_brackets() {
    let (gw, upstream, _web) = gateway().await;
    upstream.push(text(["Read xs[3], then `ys[5]`; as the manual says [4]."]));
    let sse = gw.chat("cite-code", "Arrays?").await;
    assert_eq!(sse.text(), "Read xs[3], then `ys[5]`; as the manual says.");
    let stored = gw.stored_messages("cite-code", 2).await;
    assert_eq!(stored[1]["metadata"]["citationCounts"]["dangling"], 1);
}

#[tokio::test]
async fn an_answer_lists_at_most_200_checked_citations() {
    let (gw, upstream, web) = gateway().await;
    let search = json!({"query": "tide tables"}).to_string();
    upstream.push(tool_calls(&[("s1", "search", &[search.as_str()])]));
    let answer = "The sea rises [1]. ".repeat(205);
    upstream.push(text([answer.as_str()]));
    let sse = gw.chat("cite-many", "Tides?").await;
    assert_eq!(
        sse.text().trim_end(),
        answer.trim_end(),
        "every citation stays in the text"
    );
    let stored = gw.stored_messages("cite-many", 2).await;
    let metadata = &stored[1]["metadata"];
    assert_eq!(metadata["citations"].as_array().unwrap().len(), 200);
    assert_eq!(metadata["citationCounts"]["total"], 200);
    assert_eq!(metadata["citations"][0]["url"], web.page("/tides"));
}
