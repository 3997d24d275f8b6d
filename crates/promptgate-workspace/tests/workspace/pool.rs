//! `bash` on its pool: a CPU-heavy call leaves the caller's runtime free and ends at its limit,
//! and a call past the pool's threads and queue is refused with a tool error instead of waiting.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common;

use common::now;
use promptgate_workspace::{ShellPool, ShellPoolSize, ToolOutcome, Workspace, WorkspaceLimits, run_tool};
use serde_json::json;

/// Busy for as long as the interpreter lets it: a string copied longer at each of fewer
/// iterations than the loop limit, which no budget but time stops first.
const SPIN: &str = "awk 'BEGIN { for (i = 0; i < 99999; i++) s = s \"0123456789\"; print length(s) }'";

fn limited(seconds: u64) -> Workspace {
    Workspace::new(WorkspaceLimits {
        bash_timeout: Duration::from_secs(seconds),
        ..WorkspaceLimits::default()
    })
}

async fn bash(ws: &mut Workspace, pool: &ShellPool, command: &str) -> ToolOutcome {
    run_tool(ws, pool, "bash", &json!({ "command": command }), now())
        .await
        .expect("bash is a workspace tool")
}

/// Runs on the test's one-thread runtime, where a call that kept the thread would finish before
/// anything else could run.
#[tokio::test]
async fn a_cpu_heavy_call_leaves_the_runtime_free_and_ends_at_its_limit() {
    let pool = ShellPool::default();
    let mut ws = limited(2);
    let call = bash(&mut ws, &pool, SPIN);
    tokio::pin!(call);
    let first = tokio::select! {
        _ = &mut call => "the bash call",
        () = tokio::time::sleep(Duration::from_millis(200)) => "a timer on the same runtime",
    };
    assert_eq!(first, "a timer on the same runtime");
    let out = call.await;
    assert_eq!(out.output["exit_code"], 124, "{:?}", out.output);
    let stderr = out.output["stderr"].as_str().unwrap();
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

#[tokio::test]
async fn a_call_past_the_threads_and_the_queue_is_refused_with_a_clear_error() {
    let pool = ShellPool::new(ShellPoolSize { threads: 1, queue: 0 });
    let (mut busy, mut other) = (limited(2), limited(2));
    let running = bash(&mut busy, &pool, SPIN);
    tokio::pin!(running);
    // One poll takes the only thread.
    tokio::select! {
        biased;
        _ = &mut running => panic!("the spinning call ended at once"),
        () = std::future::ready(()) => {}
    }

    let refused = bash(&mut other, &pool, "echo hello > greeting").await;
    assert!(refused.is_error);
    let message = refused.error_message().unwrap();
    assert!(
        message.contains("the shell is busy") && message.contains("nothing was run"),
        "{message}"
    );

    assert_eq!(running.await.output["exit_code"], 124);
    let ran = bash(&mut other, &pool, "echo hello > greeting && cat greeting").await;
    assert_eq!(ran.output["stdout"], "hello\n", "the thread is free again");
}
