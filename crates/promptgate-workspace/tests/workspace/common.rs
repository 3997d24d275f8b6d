//! Helpers shared by the workspace test files: calling a tool the way the send path does.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, TimeZone, Utc};
use promptgate_workspace::{ShellPool, ToolOutcome, Workspace, WorkspaceLimits, run_tool};
use serde_json::{Value, json};

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 10, 12, 0, 0).unwrap()
}

pub fn ws() -> Workspace {
    Workspace::new(WorkspaceLimits::default())
}

pub async fn call(ws: &mut Workspace, tool: &str, args: Value) -> ToolOutcome {
    run_tool(ws, &ShellPool::default(), tool, &args, now())
        .await
        .expect("a workspace tool")
}

/// Runs `command` through the `bash` tool; returns (stdout, stderr, exit code).
pub async fn sh(ws: &mut Workspace, command: &str) -> (String, String, i64) {
    let out = call(ws, "bash", json!({ "command": command })).await.output;
    (
        out["stdout"].as_str().unwrap().to_owned(),
        out["stderr"].as_str().unwrap().to_owned(),
        out["exit_code"].as_i64().unwrap(),
    )
}

/// A successful `read`'s text.
pub fn text(outcome: &ToolOutcome) -> &str {
    outcome
        .output
        .as_str()
        .unwrap_or_else(|| panic!("not text: {:?}", outcome.output))
}

/// A failed call's message.
pub fn error(outcome: &ToolOutcome) -> &str {
    assert!(outcome.is_error, "expected a failure: {outcome:?}");
    outcome.output["error"].as_str().unwrap()
}
