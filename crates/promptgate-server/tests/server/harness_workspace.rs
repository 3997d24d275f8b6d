//! A harness model working in its thread's workspace through the whole gateway: a scripted upstream
//! writes a log file, counts with a grep | sort | uniq | wc pipeline, and answers; then a fresh
//! gateway on the same database (as after a restart) serves the second send, where the model edits
//! the file, counts again and answers from the new result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Gateway, scripted_config, tool_message};
use promptgate_core::settings::Engine;
use promptgate_llm::scripted::{ScriptedUpstream, tool_calls};
use promptgate_server::config::{AuthMode, Config};
use promptgate_store::testing::TestDb;
use reqwest::StatusCode;
use serde_json::json;

const LOG: &str = "GET /a 200\nPOST /b 500\nGET /c 200\nGET /a 404\nPOST /b 500\nGET /d 500\n";
const COUNT: &str = r#"{"command": "grep ' 500' logs/access.log | sort | uniq | wc -l"}"#;

fn harness_config(base_url: &str) -> Config {
    let mut config = scripted_config(AuthMode::SingleUser, base_url);
    let model = config.models.iter_mut().find(|m| m.id == "scripted").unwrap();
    model.engine = Engine::Harness;
    config
}

async fn harness_workspace_across_sends_and_a_restart(db: TestDb) {
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::over_store(
        db.another_instance().await,
        db.url(),
        harness_config(&upstream.base_url()),
    )
    .await;
    let (status, _) = gw.post("/v1/threads", json!({"id": "w1"})).await;
    assert_eq!(status, StatusCode::CREATED);

    // First send: write the file, run the pipeline, answer from its output.
    let write = json!({"path": "logs/access.log", "content": LOG}).to_string();
    upstream.push(tool_calls(&[("c1", "write", &[write.as_str()])]));
    common::one_call(
        &upstream,
        "c2",
        "bash",
        COUNT,
        "Two distinct requests failed with 500.",
    );
    let sse = gw.chat("w1", "How many distinct requests failed?").await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "Two distinct requests failed with 500.");
    let requests = upstream.requests();
    let first = &requests[0];
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools[..4],
        ["read", "write", "edit", "bash"],
        "coding tools first: {tools:?}"
    );
    assert!(tools.len() > 4, "then the app's tools: {tools:?}");
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("# Environment") && system.contains("grep, rg, sed, awk, jq"),
        "{system}"
    );
    assert_eq!(
        tool_message(&requests[1], "c1"),
        format!("wrote {} bytes to /home/user/logs/access.log", LOG.len())
    );
    assert_eq!(tool_message(&requests[2], "c2"), "2\n");
    assert_eq!(
        sse.tool_output("c2")["output"],
        json!({"stdout": "2\n", "stderr": "", "exit_code": 0})
    );
    gw.stored_messages("w1", 2).await;
    drop(gw);

    // A fresh gateway on the same database: the file is still there for the second send.
    let gw = Gateway::over_store(
        db.another_instance().await,
        db.url(),
        harness_config(&upstream.base_url()),
    )
    .await;
    let edit =
        json!({"path": "logs/access.log", "edits": [{"oldText": "GET /d 500", "newText": "GET /d 200"}]})
            .to_string();
    upstream.push(tool_calls(&[("c3", "edit", &[edit.as_str()])]));
    upstream.push(tool_calls(&[("c4", "bash", &[COUNT])]));
    common::one_call(
        &upstream,
        "c5",
        "read",
        r#"{"path": "logs/access.log", "offset": 6}"#,
        "After the fix, one distinct request fails.",
    );
    let sse = gw.chat("w1", "/d is fixed; count again.").await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "After the fix, one distinct request fails.");
    let requests = upstream.requests();
    let n = requests.len();
    assert_eq!(
        tool_message(&requests[n - 3], "c3"),
        "applied 1 edit(s) to /home/user/logs/access.log"
    );
    assert_eq!(tool_message(&requests[n - 2], "c4"), "1\n");
    assert_eq!(tool_message(&requests[n - 1], "c5"), "GET /d 200\n");

    // A failed call goes back to the model as an error it can act on, and the turn goes on.
    common::one_call(
        &upstream,
        "c6",
        "read",
        r#"{"path": "../../../etc/passwd"}"#,
        "That file is outside the workspace.",
    );
    let sse = gw.chat("w1", "Show /etc/passwd").await;
    assert_eq!(sse.text(), "That file is outside the workspace.");
    let refused = tool_message(&upstream.last_request().unwrap(), "c6");
    assert!(refused.contains("leaves the workspace"), "{refused}");

    // Deleting the thread deletes its workspace: a new thread under the same id starts empty.
    gw.stored_messages("w1", 6).await;
    let (status, _) = gw.delete("/v1/threads/w1").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    gw.post("/v1/threads", json!({"id": "w1"})).await;
    common::one_call(&upstream, "c7", "bash", r#"{"command": "ls -A"}"#, "Empty.");
    gw.chat("w1", "What files are there?").await;
    assert_eq!(
        tool_message(&upstream.last_request().unwrap(), "c7"),
        "(no output)"
    );
    db.close().await;
}

promptgate_store::on_both_backends!(harness_workspace_across_sends_and_a_restart);

#[tokio::test]
async fn a_completion_without_a_thread_gets_a_workspace_for_that_request_only() {
    let upstream = ScriptedUpstream::start().await.unwrap();
    let db = TestDb::sqlite().await;
    let gw = Gateway::over_store(
        db.another_instance().await,
        db.url(),
        harness_config(&upstream.base_url()),
    )
    .await;
    let completion = json!({"model": "scripted", "messages": [{"role": "user", "content": "sum 1..4"}]});

    common::one_call(
        &upstream,
        "c1",
        "bash",
        r#"{"command": "seq 1 4 > n.txt && paste -sd+ n.txt | bc"}"#,
        "10",
    );
    let (status, body) = gw.post("/v1/chat/completions", completion.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "10");
    assert_eq!(tool_message(&upstream.last_request().unwrap(), "c1"), "10\n");

    // The next completion starts with an empty workspace.
    common::one_call(&upstream, "c2", "bash", r#"{"command": "ls -A"}"#, "nothing");
    let (status, _) = gw.post("/v1/chat/completions", completion).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        tool_message(&upstream.last_request().unwrap(), "c2"),
        "(no output)"
    );
    db.close().await;
}
