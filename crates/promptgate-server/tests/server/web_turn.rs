//! A web turn end to end: a scripted model searches and fetches through a SearXNG-speaking backend and
//! a site of real HTML pages on loopback, and the gateway numbers sources, charges the per-turn web
//! budget, tells the model what is left, and cleans native citation markers out of the answer.

#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;
use crate::web_site;

use common::{Gateway, Sse, tool_results};
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::Config;
use serde_json::{Value, json};
use web_site::Web;

async fn gateway() -> (Gateway, ScriptedUpstream, Web) {
    web_site::scripted_web_gateway().await
}

fn body(thread: &str, text: &str) -> Value {
    common::use_chat_body(thread, text, "scripted")
}

/// An automatic retry of `turn`: the thread's stored question regenerated.
fn retry_body(thread: &str, question: &Value, turn: &str) -> Value {
    json!({
        "id": thread,
        "messages": [question],
        "trigger": "regenerate-message",
        "model": "scripted",
        "retryOf": turn,
    })
}

fn search(id: &str, query: &str) -> (String, String, String) {
    (id.into(), "search".into(), json!({"query": query}).to_string())
}

fn fetch(id: &str, url: &str) -> (String, String, String) {
    (id.into(), "fetch_content".into(), json!({"url": url}).to_string())
}

/// One model step making these calls.
fn step(calls: &[(String, String, String)]) -> promptgate_llm::scripted::Script {
    let args: Vec<[&str; 1]> = calls.iter().map(|(_, _, a)| [a.as_str()]).collect();
    let calls: Vec<(&str, &str, &[&str])> = calls
        .iter()
        .zip(&args)
        .map(|((id, name, _), a)| (id.as_str(), name.as_str(), a.as_slice()))
        .collect();
    tool_calls(&calls)
}

/// The number on the remaining-calls line of a tool result.
fn remaining(result: &str) -> u32 {
    let line = result
        .lines()
        .find(|l| l.starts_with("Web calls remaining this turn: "))
        .unwrap_or_else(|| panic!("no remaining-calls line in {result}"));
    let digits: String = line["Web calls remaining this turn: ".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

fn outputs(sse: &Sse) -> Vec<&Value> {
    sse.of_type("tool-output-available")
        .into_iter()
        .map(|e| &e["output"])
        .collect()
}

#[tokio::test]
async fn a_cited_web_turn_numbers_charges_and_cleans() {
    let (gw, upstream, web) = gateway().await;
    let tides = web.page("/tides");
    upstream.push(step(&[search("s1", "Tide   Tables")]));
    upstream.push(step(&[fetch("f1", &tides)]));
    upstream.push(step(&[fetch("f2", &tides)]));
    upstream.push(text([
        "Heights count from chart datum [1]. ",
        "The office closes at dusk [2] 【3",
        "†x】.",
    ]));

    let sse = gw.stream("/v1/chat", body("web-1", "How do I read tides?")).await;
    sse.assert_stopped();

    // The answer reaches the client without the native marker, and is stored that way.
    let answer = "Heights count from chart datum [1]. The office closes at dusk [2].";
    assert_eq!(sse.text(), answer);
    for delta in sse.of_type("text-delta") {
        assert!(!delta["delta"].as_str().unwrap().contains('【'));
    }

    // Results carry labels; the fetch of a searched page keeps its number.
    let out = outputs(&sse);
    assert_eq!(out.len(), 3);
    let results = out[0]["results"].as_array().unwrap();
    assert_eq!(results[0]["sourceLabel"], "[Source 1] (cite as [1])");
    assert_eq!(results[1]["sourceLabel"], "[Source 2] (cite as [2])");
    assert_eq!(results[0]["url"], tides.as_str());
    assert_eq!(out[1]["sourceLabel"], "[Source 1] (cite as [1])");
    assert_eq!(
        out[2]["sourceIndex"], 1,
        "the duplicate fetch shares the first one's result"
    );
    assert!(
        out[1].to_string().contains("chart datum"),
        "the page was read: {}",
        out[1]
    );

    // One source-url chunk per new source, none for the enrichment by fetch.
    let source_urls: Vec<(&str, &str)> = sse
        .of_type("source-url")
        .iter()
        .map(|e| (e["sourceId"].as_str().unwrap(), e["url"].as_str().unwrap()))
        .collect();
    let harbour = web.page("/harbour");
    assert_eq!(
        source_urls,
        [("source-1", tides.as_str()), ("source-2", harbour.as_str())]
    );

    // What the model was told after each call: 5 − 1, 5 − 2, and the duplicate is free.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 4);
    let last = tool_results(&requests[3]);
    let lines: Vec<u32> = last.iter().map(|r| remaining(r)).collect();
    assert_eq!(lines, [4, 3, 3], "the budget charged 2 web calls for 3 results");
    assert!(last[0].contains("[Source 1] (cite as [1])"));

    // The stored message's sources match the labels, enriched by the fetch.
    let stored = gw.stored_messages("web-1", 2).await;
    let sources = stored[1]["metadata"]["sources"].as_array().unwrap();
    let indexes: Vec<(u64, &str)> = sources
        .iter()
        .map(|s| (s["index"].as_u64().unwrap(), s["url"].as_str().unwrap()))
        .collect();
    assert_eq!(indexes, [(1, tides.as_str()), (2, harbour.as_str())]);
    assert_eq!(sources[0]["toolName"], "search");
    assert_eq!(sources[0]["siteName"], "Coastal Notes", "enriched by the fetch");
    let stored_text = common::stored_text(&stored[1]);
    assert_eq!(stored_text, answer);
    let first_turn = sse.turn_id();

    // An automatic retry keeps the numbers and the spent budget: repeating the search is free and
    // gets the same labels, and the next new call leaves 5 − 3.
    upstream.push(step(&[search("s2", "tide tables")]));
    upstream.push(step(&[fetch("f3", &harbour)]));
    upstream.push(text(["Again [1]."]));
    let sse = gw
        .stream("/v1/chat", retry_body("web-1", &stored[0], &first_turn))
        .await;
    assert_eq!(
        sse.of_type("finish")[0]["finishReason"],
        "stop",
        "{:?}",
        sse.events
    );
    let out = outputs(&sse);
    assert_eq!(out[0]["results"][1]["sourceLabel"], "[Source 2] (cite as [2])");
    assert_eq!(out[1]["sourceIndex"], 2);
    assert!(sse.of_type("source-url").is_empty(), "no source is new");
    let requests = upstream.requests();
    let lines: Vec<u32> = tool_results(requests.last().unwrap())
        .iter()
        .map(|r| remaining(r))
        .collect();
    assert_eq!(lines, [3, 2]);

    // The next message is a new turn with a fresh budget: five new calls run, the sixth is denied.
    let calls: Vec<_> = (1..=6)
        .map(|n| search(&format!("n{n}"), &format!("harbour question {n}")))
        .collect();
    upstream.push(step(&calls));
    upstream.push(text(["That is all I could check [1]."]));
    let sse = gw.stream("/v1/chat", body("web-1", "And the harbour?")).await;
    // Parallel calls report in the order they finish; the denial comes at once.
    for n in 1..=5 {
        assert!(sse.tool_output(&format!("n{n}"))["output"]["results"].is_array());
    }
    assert_eq!(sse.tool_output("n6")["output"]["status"], "budget_exhausted");
    let last = upstream.last_request().unwrap();
    assert_eq!(last["tool_choice"], "none");
}

/// The first attempt's search result is kept with the turn, so a retry that repeats the search is
/// answered with it: the backend is not asked again (it could answer otherwise) and nothing is charged.
#[tokio::test]
async fn a_retry_answers_a_repeated_search_from_the_first_attempt_without_the_backend() {
    let (gw, upstream, web) = gateway().await;
    upstream.push(step(&[search("s1", "tide tables")]));
    upstream.push(text(["Datum [1]."]));
    let first = gw
        .stream("/v1/chat", body("web-retry", "How do tides work?"))
        .await;
    let first_result = outputs(&first)[0].clone();
    assert_eq!(web.searches(), 1);
    let stored = gw.stored_messages("web-retry", 2).await;

    upstream.push(step(&[search("s2", "Tide  Tables")]));
    upstream.push(text(["Datum again [1]."]));
    let retry = retry_body("web-retry", &stored[0], &first.turn_id());
    let sse = gw.stream("/v1/chat", retry).await;
    assert_eq!(
        sse.of_type("finish")[0]["finishReason"],
        "stop",
        "{:?}",
        sse.events
    );
    assert_eq!(web.searches(), 1, "the repeated search asked the backend again");
    assert_eq!(
        outputs(&sse)[0],
        &first_result,
        "the retry sees what the first attempt saw"
    );
    let told = tool_results(upstream.requests().last().unwrap());
    assert_eq!(remaining(&told[0]), 4, "the repeat is not charged");
}

#[tokio::test]
async fn the_sixth_distinct_web_call_of_an_auto_turn_is_denied_and_tools_are_withdrawn() {
    let (gw, upstream, _web) = gateway().await;
    let calls: Vec<_> = (1..=6)
        .map(|n| search(&format!("s{n}"), &format!("tides question {n}")))
        .collect();
    upstream.push(step(&calls[..5]));
    upstream.push(step(&calls[5..]));
    upstream.push(text(["From what I found [1]."]));

    let sse = gw.stream("/v1/chat", body("web-2", "Tell me about tides")).await;
    let out = outputs(&sse);
    assert_eq!(out.len(), 6);
    assert!(out[..5].iter().all(|o| o["results"].is_array()));
    assert_eq!(out[5]["status"], "budget_exhausted");
    assert!(!out[5]["message"].as_str().unwrap().is_empty());

    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    let after_five = tool_results(&requests[1]);
    assert_eq!(remaining(after_five.last().unwrap()), 0);
    let denied = tool_results(&requests[2]);
    assert!(denied.last().unwrap().contains("budget_exhausted"));
    // After the first denial the model may not call tools any more.
    assert_eq!(requests[2]["tool_choice"], "none", "{}", requests[2]);
    assert_eq!(sse.text(), "From what I found [1].");
}

#[tokio::test]
async fn fetching_an_address_outside_the_policy_is_a_clear_tool_error() {
    let (gw, upstream, web) = gateway().await;
    let other_port = web.search.port();
    upstream.push(step(&[
        fetch(
            "f1",
            &format!("http://127.0.0.1:{other_port}/search?q=x&format=json"),
        ),
        fetch("f2", "http://10.0.0.1/admin"),
    ]));
    upstream.push(text(["I could not read those pages."]));

    let sse = gw.stream("/v1/chat", body("web-3", "Read these")).await;
    let errors: Vec<&str> = sse
        .of_type("tool-output-error")
        .iter()
        .map(|e| e["errorText"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 2, "{:?}", sse.events);
    assert!(errors[0].contains("loopback"), "{}", errors[0]);
    assert!(errors[1].contains("private network"), "{}", errors[1]);
    let results = tool_results(&upstream.requests()[1]);
    assert!(
        results[0].contains("loopback"),
        "the model is told why: {}",
        results[0]
    );
}

#[tokio::test]
async fn research_in_the_message_gives_the_research_cap() {
    let (gw, upstream, _web) = gateway().await;
    upstream.push(step(&[search("s1", "tides")]));
    upstream.push(text(["Done [1]."]));
    gw.stream("/v1/chat", body("web-4", "/research how tides work"))
        .await;
    let results = tool_results(&upstream.requests()[1]);
    assert_eq!(remaining(&results[0]), 29);
}

#[tokio::test]
async fn loading_the_research_skill_widens_an_auto_budget() {
    let (gw, upstream, _web) = gateway().await;
    let research = json!({"slug": "research", "name": "Research", "description": "Deep research",
                          "instructions": "Search widely and cite every claim."});
    gw.create_skill(research).await;
    upstream.push(step(&[(
        "k1".into(),
        "skill".into(),
        json!({"name": "research"}).to_string(),
    )]));
    upstream.push(step(&[search("s1", "tides")]));
    upstream.push(text(["Done [1]."]));
    let sse = gw.stream("/v1/chat", body("web-5", "how do tides work")).await;
    assert_eq!(
        sse.of_type("finish")[0]["finishReason"],
        "stop",
        "{:?}",
        sse.events
    );
    let results = tool_results(&upstream.requests()[2]);
    assert_eq!(remaining(results.last().unwrap()), 29);
}

#[test]
fn the_compose_config_searches_through_its_searxng_service() {
    let text = include_str!("../../../../docker/promptgate.toml");
    let config = Config::parse(text).unwrap();
    let search = format!("{:?}", config.web.search);
    assert!(search.contains("http://searxng:8080"), "{search}");
    let compose = include_str!("../../../../docker/docker-compose.yml");
    assert!(compose.contains("image: searxng/searxng"));
}
