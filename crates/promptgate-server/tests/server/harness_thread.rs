//! The per-thread harness of a harness model through the whole gateway: the transcript a thread's
//! sends build up (tool calls and results included) is continued while its signature holds, and a
//! changed signature or a restart rebuilds it from the stored text turns while the workspace stays.
//! Also on the harness path: skills on the user's text, the client named by a header, the web floor
//! that takes away only the web tools and steers once, the replay guard, and workspace limits from
//! the config.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::web_site;

use common::{
    Gateway, offered_tools as tool_names, scripted_config, scripted_config_with, tool_message, use_chat_body,
};
use promptgate_core::prompt::nudges::WEB_FLOOR_STEER;
use promptgate_core::settings::Engine;
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::{AuthMode, Config};
use promptgate_service::REPLAY_REFUSED_TEXT;
use promptgate_store::testing::TestDb;
use reqwest::StatusCode;
use serde_json::{Value, json};

const LOG: &str = "GET /a 200\nPOST /b 500\nGET /c 200\nGET /a 404\nPOST /b 500\nGET /d 500\n";
const COUNT: &str = r#"{"command": "grep ' 500' logs/access.log | sort | uniq | wc -l"}"#;

fn harness(mut config: Config) -> Config {
    let model = config.models.iter_mut().find(|m| m.id == "scripted").unwrap();
    model.engine = Engine::Harness;
    config
}

/// Each message of a request as `role` (with `+tools` for an assistant message that calls tools).
fn shape(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap().to_owned();
            if m["tool_calls"].as_array().is_some_and(|c| !c.is_empty()) {
                role + "+tools"
            } else {
                role
            }
        })
        .collect()
}

fn content(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

async fn send(gw: &Gateway, thread: &str, words: &str) -> common::Sse {
    let sse = gw.chat(thread, words).await;
    assert_eq!(sse.status, StatusCode::OK);
    sse
}

async fn harness_kept_while_its_signature_holds_then_rebuilt(db: TestDb) {
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = || harness(scripted_config(AuthMode::SingleUser, &upstream.base_url()));
    let gw = Gateway::over_store(db.another_instance().await, db.url(), config()).await;
    let pid = gw.create_project("Ops", "Count carefully.").await;
    gw.post("/v1/threads", json!({"id": "h1", "project_id": pid}))
        .await;

    // First send: write the log, count with a pipeline, answer from the count.
    let write = json!({"path": "logs/access.log", "content": LOG}).to_string();
    upstream.push(tool_calls(&[("c1", "write", &[write.as_str()])]));
    common::one_call(&upstream, "c2", "bash", COUNT, "Two distinct requests failed.");
    let sse = send(&gw, "h1", "How many distinct requests failed?").await;
    assert_eq!(sse.text(), "Two distinct requests failed.");
    assert_eq!(tool_message(&upstream.last_request().unwrap(), "c2"), "2\n");
    // Harness tool parts are titled by the tool's name.
    let titles: Vec<&str> = sse
        .of_type("tool-input-start")
        .iter()
        .filter_map(|e| e["title"].as_str())
        .collect();
    assert_eq!(titles, ["write", "bash"]);
    let before = upstream.requests().len();

    // Same signature: the second send continues the kept transcript, tool calls and results
    // included, and the model edits the file and counts again.
    let edit =
        json!({"path": "logs/access.log", "edits": [{"oldText": "GET /d 500", "newText": "GET /d 200"}]})
            .to_string();
    upstream.push(tool_calls(&[("c3", "edit", &[edit.as_str()])]));
    common::one_call(&upstream, "c4", "bash", COUNT, "One distinct request fails now.");
    let sse = send(&gw, "h1", "/d is fixed; count again.").await;
    assert_eq!(sse.text(), "One distinct request fails now.");
    let requests = upstream.requests();
    let continued = &requests[before];
    assert_eq!(
        shape(continued),
        [
            "system",
            "user",
            "assistant+tools",
            "tool",
            "assistant+tools",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(tool_message(continued, "c2"), "2\n");
    assert_eq!(
        tool_message(requests.last().unwrap(), "c4"),
        "1\n",
        "the edit took effect"
    );
    let before = requests.len();

    // New project instructions change the stable prompt and so the signature: the harness is
    // rebuilt from the stored text turns, and the workspace is still the same.
    let (status, _) = gw
        .put(
            &format!("/v1/projects/{pid}"),
            json!({"name": "Ops", "instructions": "Count twice."}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    common::one_call(&upstream, "c5", "bash", COUNT, "Still one.");
    send(&gw, "h1", "Check once more.").await;
    let requests = upstream.requests();
    let rebuilt = &requests[before];
    assert_eq!(
        shape(rebuilt),
        ["system", "user", "assistant", "user", "assistant", "user"]
    );
    let messages = rebuilt["messages"].as_array().unwrap();
    assert_eq!(content(&messages[2]), "Two distinct requests failed.");
    assert_eq!(content(&messages[5]), "Check once more.");
    assert!(content(&messages[0]).contains("Count twice."));
    assert_eq!(tool_message(requests.last().unwrap(), "c5"), "1\n");
    gw.stored_messages("h1", 6).await;
    drop(gw);

    // After a restart nothing is kept in memory: rebuilt again, over the same workspace.
    let gw = Gateway::over_store(db.another_instance().await, db.url(), config()).await;
    let before = upstream.requests().len();
    common::one_call(
        &upstream,
        "c6",
        "bash",
        r#"{"command": "grep -c ' 200' logs/access.log"}"#,
        "Three succeeded.",
    );
    let sse = send(&gw, "h1", "How many succeeded?").await;
    assert_eq!(sse.text(), "Three succeeded.");
    let requests = upstream.requests();
    assert!(
        !shape(&requests[before]).iter().any(|r| r.contains("tool")),
        "{:?}",
        shape(&requests[before])
    );
    assert_eq!(tool_message(requests.last().unwrap(), "c6"), "3\n");
    db.close().await;
}

promptgate_store::on_both_backends!(harness_kept_while_its_signature_holds_then_rebuilt);

#[tokio::test]
async fn skills_ride_on_the_user_text_and_the_client_header_names_the_client() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        common::Backend::Sqlite,
        harness(scripted_config(AuthMode::SingleUser, &upstream.base_url())),
    )
    .await;
    let haiku = json!({"slug": "haiku", "name": "Haiku", "description": "Answers in verse",
                       "instructions": "Answer in a haiku."});
    gw.create_skill(haiku).await;
    upstream.push(text(["Waves fold into foam"]));
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .header("X-Promptgate-Client", "ios; version=2.0.1")
        .json(&use_chat_body("s1", "/haiku the sea", "scripted"))
        .send()
        .await
        .unwrap();
    let sse = common::sse_of(res).await;
    assert_eq!(sse.text(), "Waves fold into foam");
    let request = upstream.last_request().unwrap();
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(
        content(messages.last().unwrap()),
        "Answer in a haiku.\n\n/haiku the sea"
    );
    let system = content(&messages[0]);
    assert!(
        system.contains("Client environment: ios\nApp version: 2.0.1"),
        "{system}"
    );

    // Without the header the client is the web app.
    upstream.push(text(["Hello"]));
    send(&gw, "s2", "hi").await;
    let system = content(&upstream.last_request().unwrap()["messages"][0]);
    assert!(
        system.contains("Client environment: web") && !system.contains("App version"),
        "{system}"
    );
}

#[tokio::test]
async fn workspace_limits_come_from_the_config() {
    common::init();
    let (upstream, config) = common::single_user_scripted("[workspace]\nmax_file_bytes = 8\n").await;
    let gw = Gateway::start(common::Backend::Sqlite, harness(config)).await;
    let write = json!({"path": "big.txt", "content": "more than eight bytes"}).to_string();
    upstream.push(tool_calls(&[("w1", "write", &[write.as_str()])]));
    upstream.push(text(["Too big."]));
    send(&gw, "l1", "Save a note").await;
    let refused = tool_message(&upstream.last_request().unwrap(), "w1");
    assert!(refused.contains("at most 8 bytes"), "{refused}");
}

async fn web_gateway() -> (Gateway, ScriptedUpstream, web_site::Web) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let web = web_site::Web::start().await;
    let config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), &web.config_section());
    let gw = Gateway::start(common::Backend::Sqlite, harness(config)).await;
    (gw, upstream, web)
}

fn searches(range: std::ops::RangeInclusive<u32>) -> Vec<(String, String)> {
    range
        .map(|n| {
            (
                format!("s{n}"),
                json!({"query": format!("tides question {n}")}).to_string(),
            )
        })
        .collect()
}

fn search_step(calls: &[(String, String)]) -> promptgate_llm::scripted::Script {
    let args: Vec<[&str; 1]> = calls.iter().map(|(_, a)| [a.as_str()]).collect();
    let calls: Vec<(&str, &str, &[&str])> = calls
        .iter()
        .zip(&args)
        .map(|((id, _), a)| (id.as_str(), "search", a.as_slice()))
        .collect();
    tool_calls(&calls)
}

fn steers(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| content(m).contains(WEB_FLOOR_STEER))
        .count()
}

#[tokio::test]
async fn the_web_floor_takes_only_the_web_tools_steers_once_and_lifts_on_promotion() {
    let (gw, upstream, _web) = web_gateway().await;
    gw.post(
        "/v1/skills",
        json!({"slug": "research", "name": "Research", "description": "Deep research",
               "instructions": "Search widely."}),
    )
    .await;
    // Six distinct searches against an auto budget of five: the sixth is denied.
    upstream.push(search_step(&searches(1..=6)));
    upstream.push(tool_calls(&[("b1", "bash", &[r#"{"command": "echo noted"}"#])]));
    common::one_call(
        &upstream,
        "k1",
        "skill",
        r#"{"name": "research"}"#,
        "What I found, and what I could not check.",
    );
    let sse = send(&gw, "f1", "Tell me about tides").await;
    assert_eq!(sse.text(), "What I found, and what I could not check.");
    let denied = sse.tool_output("s6");
    assert_eq!(denied["output"]["status"], "budget_exhausted");

    let requests = upstream.requests();
    assert_eq!(requests.len(), 4);
    let first = tool_names(&requests[0]);
    assert!(first.contains(&"search".to_owned()) && first.contains(&"fetch_content".to_owned()));
    assert_eq!(steers(&requests[0]), 0);
    for after_denial in &requests[1..3] {
        let tools = tool_names(after_denial);
        assert!(
            !tools.iter().any(|t| t == "search" || t == "fetch_content"),
            "{tools:?}"
        );
        assert!(
            tools.contains(&"bash".to_owned()) && tools.contains(&"skill".to_owned()),
            "non-web tools stay: {tools:?}"
        );
        assert_eq!(steers(after_denial), 1, "steered once");
        assert_ne!(after_denial["tool_choice"], "none");
    }
    // Loading the research skill widened the budget: the web tools are back and the steer is gone.
    assert!(tool_names(&requests[3]).contains(&"search".to_owned()));
    assert_eq!(steers(&requests[3]), 0);
}

#[tokio::test]
async fn a_retry_of_a_turn_that_spent_its_web_budget_makes_no_model_request() {
    let (gw, upstream, _web) = web_gateway().await;
    upstream.push(search_step(&searches(1..=6)));
    upstream.push(text(["Partial findings."]));
    let sse = send(&gw, "r1", "Tell me about tides").await;
    let turn = sse.turn_id();
    let stored = gw.stored_messages("r1", 2).await;
    let requests = upstream.requests().len();

    let retry = json!({
        "id": "r1",
        "messages": [stored[0].clone()],
        "trigger": "regenerate-message",
        "model": "scripted",
        "retryOf": turn,
    });
    let sse = gw.stream("/v1/chat", retry).await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.types(), ["start", "error", "finish"]);
    assert!(sse.done);
    assert_eq!(sse.of_type("error")[0]["errorText"], REPLAY_REFUSED_TEXT);
    assert_eq!(upstream.requests().len(), requests, "no model request");
}
