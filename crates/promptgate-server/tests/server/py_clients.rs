//! The official `openai` Python client against a live promptgate: a function-tool round trip on
//! the chat-completions facade. It lives in tests/py and needs `tests/py/install.sh` (`.ci/run`
//! runs it). Without the venv the test fails under CI and is skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, Backend};
use crate::js_clients::{assert_weather_round_trip, weather_round_trip};

fn python() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/py"));
    let python = dir.join(".venv/bin/python");
    let has_openai = python.is_file()
        && Command::new(&python)
            .args(["-c", "import openai"])
            .output()
            .is_ok_and(|out| out.status.success());
    if has_openai {
        return Some((python, dir));
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "tests/py/.venv has no openai package: run tests/py/install.sh"
    );
    eprintln!("note: skipping the Python client checks; run tests/py/install.sh to include them");
    None
}

#[tokio::test]
async fn the_openai_python_client_runs_a_function_tool_round_trip() {
    let Some((python, dir)) = python() else { return };
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    weather_round_trip(&upstream);
    let args = vec![
        "openai_tools_check.py".to_owned(),
        gw.url("/v1"),
        "scripted".to_owned(),
    ];
    let out = tokio::task::spawn_blocking(move || Command::new(python).current_dir(dir).args(args).output())
        .await
        .unwrap()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "python printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "the Python client failed the round trip: {result}"
    );
    assert_weather_round_trip(&result, &upstream);
}
