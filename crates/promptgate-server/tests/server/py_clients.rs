//! The official `openai` Python client against a live promptgate: a function-tool round trip on
//! the chat-completions facade. It lives in tests/py and needs `tests/py/install.sh` (`.ci/run`
//! runs it). Without the venv the test fails under CI and is skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use crate::common::{self, Backend};
use crate::js_clients::{assert_weather_round_trip, weather_round_trip};
use crate::responses_clients::{python_with, run_python};

#[tokio::test]
async fn the_openai_python_client_runs_a_function_tool_round_trip() {
    let Some((python, dir)) = python_with("openai") else {
        return;
    };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    weather_round_trip(&upstream);
    let (ok, result) = run_python(python, dir, "openai_tools_check.py", gw.url("/v1")).await;
    assert!(ok, "the Python client failed the round trip: {result}");
    assert_weather_round_trip(&result, &upstream);
}

/// A stream the provider refuses before its first token is the Python client's `RateLimitError`
/// with the provider's wait, for chat completions and the Responses API alike.
#[tokio::test]
async fn the_openai_python_client_sees_a_busy_provider_as_a_rate_limit_error_on_a_stream() {
    let Some((python, dir)) = python_with("openai") else {
        return;
    };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    for _ in 0..2 {
        upstream.push(common::rate_limited("5"));
    }
    let (ok, result) = run_python(python, dir, "busy_check.py", gw.url("/v1")).await;
    assert!(ok, "the Python client failed: {result}");
    for api in ["completions", "responses"] {
        assert_eq!(
            result[api],
            serde_json::json!({"status": 429, "code": "provider_rate_limited", "retry_after": "5", "rate_limit_error": true}),
            "{api}: {result}"
        );
    }
    assert_eq!(upstream.calls(), 2, "retries are off: each stream asked once");
}
