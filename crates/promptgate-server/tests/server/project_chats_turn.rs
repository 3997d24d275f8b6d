//! Searching a project's other chats in a turn. A send in a project offers `search_project_chats`
//! but lists the project's chats only when the model calls it, so a project of a hundred thousand
//! chats costs a send no more than one of ten.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, single_user_gateway};
use promptgate_llm::scripted::text;
use reqwest::StatusCode;
use serde_json::json;

/// How often the store listed a project's chats, as `/metrics` counts its queries.
async fn sibling_listings(gw: &Gateway) -> f64 {
    gw.metric("promptgate_store_query_duration_seconds_count{op=\"projects.sibling_threads\"}")
        .await
}

async fn project_chats_are_listed_only_when_searched(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    let (status, project) = gw.post("/v1/projects", json!({"name": "Garden"})).await;
    assert_eq!(status, StatusCode::CREATED, "{project}");
    let pid = project["id"].as_str().unwrap();
    for (thread, said) in [
        ("roses", "Roses like compost in early spring."),
        ("now", "Hello."),
    ] {
        gw.post("/v1/threads", json!({"id": thread, "project_id": pid}))
            .await;
        upstream.push(text(["Noted."]));
        let sse = gw.chat(thread, said).await;
        assert_eq!(sse.text(), "Noted.");
    }
    let offered = common::offered_tools(&upstream.last_request().unwrap());
    assert!(
        offered.contains(&"search_project_chats".to_owned()),
        "{offered:?}"
    );
    assert_eq!(
        sibling_listings(&gw).await,
        0.0,
        "offering the tool listed nothing"
    );

    common::one_call(
        &upstream,
        "p1",
        "search_project_chats",
        "{\"query\":\"compost\"}",
        "Found it.",
    );
    let sse = gw.chat("now", "what did I say about compost?").await;
    assert_eq!(sse.text(), "Found it.");
    let output = sse.tool_output("p1");
    assert_eq!(output["output"]["hits"][0]["thread_id"], "roses", "{output}");
    assert_eq!(sibling_listings(&gw).await, 1.0, "the call listed the chats once");
}

common::on_both_backends!(project_chats_are_listed_only_when_searched);
