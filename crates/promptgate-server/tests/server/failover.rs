//! Failover in a web turn over HTTP: the model searches, then its provider answers 429 and its
//! first fallback's 500, and the second fallback finishes the turn with the same web budget and
//! the same numbered sources. The answer names the model that answered, the ledger counts it, and
//! the metrics count each failover by provider and reason.

#![allow(clippy::unwrap_used, clippy::panic)]

use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, text, tool_calls};
use serde_json::json;

use crate::common;
use common::tool_results;

fn refusal(status: u16) -> Script {
    let body = json!({"error": {"message": "not now", "type": "server_error"}});
    Script::new().step(Step::Status(status, body.to_string()))
}

/// The number on the remaining-calls line of a web tool's result.
fn remaining(result: &str) -> u32 {
    let line = result
        .lines()
        .find_map(|l| l.strip_prefix("Web calls remaining this turn: "))
        .unwrap_or_else(|| panic!("no remaining-calls line in {result}"));
    line.chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_web_turn_fails_over_twice_and_keeps_its_budget_and_sources() {
    let second = ScriptedUpstream::start().await.unwrap();
    let third = ScriptedUpstream::start().await.unwrap();
    let more = format!(
        "[failover]\nretries = 0\n\n\
         [[providers]]\nname = \"second\"\nkind = \"openai\"\nbase_url = \"{}\"\n\n\
         [[providers]]\nname = \"third\"\nkind = \"openai\"\nbase_url = \"{}\"\n\n\
         [[models]]\nid = \"web-first\"\nprovider = \"scripted\"\nupstream_model = \"first-model\"\n\
         fallbacks = [\"web-second\", \"web-third\"]\n\n\
         [[models]]\nid = \"web-second\"\nprovider = \"second\"\nupstream_model = \"second-model\"\n\n\
         [[models]]\nid = \"web-third\"\nprovider = \"third\"\nupstream_model = \"third-model\"\n",
        second.base_url(),
        third.base_url()
    );
    let (gw, first, web) = crate::web_site::scripted_web_gateway_with(&more).await;
    let tides = web.page("/tides");
    let harbour = web.page("/harbour");
    let search = json!({"query": "tide tables"}).to_string();
    first.push(tool_calls(&[("s1", "search", &[search.as_str()])]));
    first.push(refusal(429));
    second.push(refusal(500));
    let fetch = json!({"url": harbour}).to_string();
    third.push(tool_calls(&[("f1", "fetch_content", &[fetch.as_str()])]));
    third.push(text(["Heights count from chart datum [1]."]));

    let sse = gw
        .stream(
            "/v1/chat",
            common::use_chat_body("fo", "How do tides work?", "web-first"),
        )
        .await;
    assert_eq!(
        sse.text(),
        "Heights count from chart datum [1].",
        "{:?}",
        sse.types()
    );
    assert_eq!((first.calls(), second.calls(), third.calls()), (2, 1, 2));

    // The third model got the search's result and the same budget: the fetch left one call less.
    let last = third.last_request().unwrap();
    assert_eq!(last["model"], "third-model");
    let results = tool_results(&last);
    assert_eq!(results.len(), 2, "{last}");
    assert!(results[0].contains("[Source 1] (cite as [1])"), "{}", results[0]);
    assert_eq!(remaining(&results[1]), remaining(&results[0]) - 1);

    let stored = gw.stored_messages("fo", 2).await;
    let metadata = &stored[1]["metadata"];
    assert_eq!(metadata["answeredBy"], "web-third", "{metadata}");
    assert_eq!(metadata["modelId"], "web-first");
    let sources: Vec<(u64, &str)> = metadata["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["index"].as_u64().unwrap(), s["url"].as_str().unwrap()))
        .collect();
    assert_eq!(
        sources[0],
        (1, tides.as_str()),
        "the search's numbering stands: {sources:?}"
    );
    assert!(sources.iter().any(|(_, url)| *url == harbour), "{sources:?}");

    let (_, usage) = gw.get("/v1/usage?group_by=model").await;
    let groups: Vec<&str> = common::strings_at(&usage["data"], "group");
    assert_eq!(groups, ["web-third"], "{usage}");

    // A model of the models API names fallbacks the same way.
    let (status, created) = gw
        .post(
            "/v1/models",
            json!({"id": "mine", "provider": "scripted", "fallbacks": ["web-third"]}),
        )
        .await;
    assert_eq!(status.as_u16(), 201, "{created}");
    let (_, mine) = gw.get("/v1/models/mine").await;
    assert_eq!(mine["fallbacks"], json!(["web-third"]), "{mine}");
    let (_, system) = gw.get("/v1/models/web-first").await;
    assert_eq!(
        system["fallbacks"],
        json!(["web-second", "web-third"]),
        "{system}"
    );

    let rate_limited = r#"promptgate_failovers_total{provider="scripted",reason="rate_limited"}"#;
    let server_error = r#"promptgate_failovers_total{provider="second",reason="server_error"}"#;
    assert_eq!(gw.metric(rate_limited).await, 1.0);
    assert_eq!(gw.metric(server_error).await, 1.0);
}
