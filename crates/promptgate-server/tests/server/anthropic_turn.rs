//! A whole send path over a provider of `kind = "anthropic"`: the scripted upstream answers in the
//! Messages API's stream format, and the test checks what a user of the gateway sees (the stream,
//! the stored answer and its usage) and what went to the provider (cache breakpoints, thinking).

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, init, use_chat_body};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_llm::scripted::anthropic::{Answer, PromptCache, PromptCounts};
use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The embedded default plus an Anthropic provider at the scripted upstream and a thinking model.
fn anthropic_config(base_url: &str) -> Config {
    let text = format!(
        "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nbase_url = \"{base_url}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\nmax_tokens = 2000\nthinking = \"budget\"\n\n\
         [[models]]\nid = \"claude\"\nname = \"Claude\"\nprovider = \"claude\"\n\
         upstream_model = \"claude-sonnet-4-5\"\nreasoning = \"low\"\n"
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    config
}

fn counts(input: u64, cache_read: u64, cache_write: u64) -> PromptCounts {
    PromptCounts {
        input,
        cache_read,
        cache_write,
    }
}

/// The text of the system blocks, and which of them carry a cache breakpoint.
fn system_blocks(body: &Value) -> Vec<(String, bool)> {
    body["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b.get("cache_control").is_some(),
            )
        })
        .collect()
}

/// Where the breakpoints sit among the messages: (message index, block type) of each.
fn message_breakpoints(body: &Value) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for block in message["content"].as_array().unwrap() {
            if block.get("cache_control").is_some() {
                out.push((at, block["type"].as_str().unwrap().to_owned()));
            }
        }
    }
    out
}

#[tokio::test]
async fn an_anthropic_model_runs_a_tool_turn_and_later_sends_read_the_cached_prompt() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(Backend::Sqlite, anthropic_config(&upstream.base_url())).await;

    // First send: the model thinks, draws an artifact, then answers from the tool's result. The
    // first step writes the prompt to the cache; the second reads it and writes the tool step.
    let args = json!({"title": "Tide", "html": "<p>06:40</p>"}).to_string();
    upstream.push(
        Answer::new()
            .counts(counts(300, 0, 2100))
            .thinking("A card shows the time best.", "sig-one")
            .tool_use("toolu_card", "render_html", &[&args[..10], &args[10..]])
            .script(),
    );
    upstream.push(
        Answer::new()
            .counts(counts(40, 2100, 260))
            .text(["High tide ", "is at 06:40."])
            .script(),
    );
    let first = gw
        .stream("/v1/chat", use_chat_body("tides", "When is high tide?", "claude"))
        .await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.done);
    assert_eq!(upstream.calls(), 2);
    let reasoning: String = first
        .of_type("reasoning-delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "A card shows the time best.");
    let input = first.of_type("tool-input-available")[0];
    assert_eq!(input["toolName"], "render_html");
    assert_eq!(input["toolCallId"], "toolu_card");
    assert_eq!(input["input"]["title"], "Tide");
    assert_eq!(first.of_type("tool-output-available")[0]["output"]["ok"], true);
    assert_eq!(first.text(), "High tide is at 06:40.");
    assert_eq!(first.of_type("finish")[0]["finishReason"], "stop");

    let requests = upstream.requests();
    let headers = upstream.request_headers();
    assert_eq!(headers[0]["anthropic-version"], "2023-06-01");
    let (opening, tool_step) = (&requests[0], &requests[1]);
    assert_eq!(opening["model"], "claude-sonnet-4-5");
    assert_eq!(
        opening["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert!(
        opening["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "render_html" && t["input_schema"]["type"] == "object")
    );
    // The system prompt is its stable half alone, ending in a breakpoint; the clock opens the
    // question instead, so nothing that changes between sends comes before the conversation.
    let system = system_blocks(opening);
    assert_eq!(system.len(), 1, "{system:?}");
    assert!(
        system[0].1 && !system[0].0.contains("Current date/time"),
        "{system:?}"
    );
    let question = opening["messages"][0]["content"].as_array().unwrap();
    assert!(
        question[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Current date/time: "),
        "{question:?}"
    );
    assert_eq!(question.last().unwrap()["text"], "When is high tide?");
    assert_eq!(
        system_blocks(tool_step),
        system,
        "the system prompt is byte-identical within a turn"
    );
    // The tool step sends the thinking back before the call and caches up to the result.
    let turn = tool_step["messages"].as_array().unwrap();
    assert_eq!(turn.len(), 3, "{turn:?}");
    assert_eq!(
        turn[1]["content"][0],
        json!({"type": "thinking", "thinking": "A card shows the time best.", "signature": "sig-one"})
    );
    assert_eq!(turn[1]["content"][1]["type"], "tool_use");
    assert_eq!(turn[2]["content"][0]["tool_use_id"], "toolu_card");
    assert_eq!(
        message_breakpoints(tool_step),
        vec![(2, "tool_result".to_owned())]
    );

    // The stored answer reports the turn's usage, cache traffic included.
    let stored = gw.stored_messages("tides", 2).await;
    let usage = &stored[1]["metadata"]["usage"];
    assert_eq!(usage["cachedInputTokens"], 2100);
    assert_eq!(usage["cacheWriteInputTokens"], 2100 + 260);
    assert_eq!(usage["inputTokens"], 300 + 2100 + 40 + 2100 + 260);

    // Second send on the thread: the prompt and the conversation so far come from the cache.
    upstream.push(
        Answer::new()
            .counts(counts(12, 2460, 30))
            .text(["Tomorrow at 07:25."])
            .script(),
    );
    let second = gw
        .stream("/v1/chat", use_chat_body("tides", "And tomorrow?", "claude"))
        .await;
    assert_eq!(second.text(), "Tomorrow at 07:25.");
    let later = upstream.last_request().unwrap();
    assert_eq!(
        system_blocks(&later),
        system,
        "the cached stable half is unchanged"
    );
    let messages = later["messages"].as_array().unwrap();
    // The first question went upstream as it was stored, without the clock of its send: the
    // prefix up to the new breakpoint is the same on every later send.
    assert_eq!(
        messages[0]["content"],
        json!([{"type": "text", "text": "When is high tide?"}])
    );
    let newest = messages.len() - 1;
    assert_eq!(
        messages[newest]["content"].as_array().unwrap().last().unwrap()["text"],
        "And tomorrow?"
    );
    // The breakpoint closes the conversation before the new question.
    assert_eq!(
        message_breakpoints(&later).last().map(|(at, _)| *at),
        Some(newest - 1),
        "{messages:?}"
    );
    let stored = gw.stored_messages("tides", 4).await;
    let usage = &stored[3]["metadata"]["usage"];
    assert_eq!(usage["cachedInputTokens"], 2460);
    assert_eq!(usage["cacheWriteInputTokens"], 30);
    assert_eq!(usage["inputTokens"], 12 + 2460 + 30);

    // What the provider's cache would give back for these layouts: the tool step and the second
    // send read the tools and the stable prompt; the third send also reads the first exchange,
    // written at the breakpoint that closed the conversation on the second send.
    upstream.push(Answer::new().text(["Friday, 08:10."]).script());
    gw.stream("/v1/chat", use_chat_body("tides", "And the day after?", "claude"))
        .await;
    let requests = upstream.requests();
    let mut cache = PromptCache::default();
    let reads: Vec<usize> = requests.iter().map(|r| cache.serve(r)).collect();
    let stable = requests[0]["tools"].as_array().unwrap().len() + 1;
    let first_exchange = 4; // the question, the tool call, its result, the answer
    assert_eq!(
        reads,
        [0, stable, stable, stable + first_exchange],
        "{requests:#?}"
    );
}

/// The `max_tokens` of a facade request reaching an Anthropic provider that thinks with a budget.
async fn upstream_length_fields(gw: &Gateway, upstream: &ScriptedUpstream, path: &str, body: Value) -> Value {
    upstream.push(Answer::new().counts(counts(10, 0, 0)).text(["Short."]).script());
    let res = gw.response(Method::POST, path, Some(&body), None).await;
    let status = res.status();
    let answer: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    let sent = upstream.last_request().unwrap();
    json!({"max_tokens": sent["max_tokens"], "thinking": sent["thinking"]})
}

#[tokio::test]
async fn a_clients_length_cap_holds_within_the_providers_limit_and_leaves_thinking_room() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(Backend::Sqlite, anthropic_config(&upstream.base_url())).await;
    let question = json!([{"role": "user", "content": "Hi"}]);

    // A chat completions client's cap below the thinking budget: Anthropic refuses a budget
    // that is not below `max_tokens`, so the budget shrinks to fit under the cap.
    let body = json!({"model": "claude", "messages": question, "max_completion_tokens": 3000});
    assert_eq!(
        upstream_length_fields(&gw, &upstream, "/v1/chat/completions", body).await,
        json!({"max_tokens": 3000, "thinking": {"type": "enabled", "budget_tokens": 1500}})
    );
    // Too small to think: the answer alone, within the cap.
    let body = json!({"model": "claude", "messages": question, "max_tokens": 200});
    assert_eq!(
        upstream_length_fields(&gw, &upstream, "/v1/chat/completions", body).await,
        json!({"max_tokens": 200, "thinking": null})
    );
    // A Messages client's large required number changes nothing the provider is configured with.
    let body = json!({"model": "claude", "max_tokens": 32_000, "messages": question});
    assert_eq!(
        upstream_length_fields(&gw, &upstream, "/v1/messages", body).await,
        json!({"max_tokens": 2048 + 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    // A small one holds.
    let body = json!({"model": "claude", "max_tokens": 500, "messages": question});
    assert_eq!(
        upstream_length_fields(&gw, &upstream, "/v1/messages", body).await,
        json!({"max_tokens": 500, "thinking": null})
    );
}
