//! `promptgate eval` as a user runs it: a config file whose provider is a scripted upstream, a small
//! scenario file, the table or JSON on stdout and the exit code.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

use promptgate_llm::scripted::{ScriptedUpstream, text};
use serde_json::Value;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("promptgate-eval-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the config and scenario files and runs `promptgate eval` with `args`.
async fn eval(upstream: &ScriptedUpstream, scenarios: &str, name: &str, args: &[&str]) -> Output {
    let dir = scratch_dir(name);
    let config = dir.join("promptgate.toml");
    std::fs::write(
        &config,
        format!(
            "{}\n[[providers]]\nname = \"scripted\"\nkind = \"openai\"\n\
             base_url = \"{}\"\n\n[[models]]\nid = \"scripted\"\nname = \"Scripted\"\nprovider = \"scripted\"\n\
             upstream_model = \"upstream-model\"\n",
            promptgate_server::config::EMBEDDED_DEFAULT,
            upstream.base_url()
        ),
    )
    .unwrap();
    let file = dir.join("scenarios.yaml");
    std::fs::write(&file, scenarios).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_promptgate"));
    cmd.env_remove("PROMPTGATE_CONFIG")
        .env_remove("DATABASE_URL")
        .env("PROMPTGATE_LOG", "warn")
        .arg("--config")
        .arg(&config)
        .arg("eval")
        .arg(&file)
        .args(["--model", "scripted"])
        .args(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

const TWO_SCENARIOS: &str = r#"scenarios:
  - name: cites
    message: Where do tides come from?
    criteria: {mustProduceOutput: true, minCitations: 2}
  - name: searches
    message: Look it up
    criteria: {minToolCalls: 1}
"#;

#[tokio::test]
async fn eval_scores_each_scenario_and_fails_when_one_does() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(text([
        "The moon pulls the sea [1], ",
        "and the sun adds to it [2]【3†x】.",
    ]));
    upstream.push(text(["I did not need to search."]));

    let out = eval(&upstream, TWO_SCENARIOS, "json", &["--json"]).await;
    assert!(!out.status.success(), "one scenario fails, so eval fails");
    let results: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(results[0]["name"], "cites");
    assert_eq!(results[0]["passed"], true, "{results}");
    assert_eq!(results[0]["citations"], 2);
    assert_eq!(
        results[0]["text"], "The moon pulls the sea [1], and the sun adds to it [2].",
        "the engine's cleanup applies"
    );
    assert_eq!(results[1]["passed"], false);
    assert_eq!(
        results[1]["failures"],
        serde_json::json!(["Too few web tool calls: 0 (min: 1)"])
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 2 scenarios failed"), "{stderr}");
    // The model was asked with the configured upstream model and the scenario's message.
    let first = &upstream.requests()[0];
    assert_eq!(first["model"], "upstream-model");
    assert_eq!(
        first["messages"].as_array().unwrap().last().unwrap()["content"],
        "Where do tides come from?"
    );
}

#[tokio::test]
async fn a_passing_run_prints_a_table_and_exits_zero() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(text(["Weather is today, climate is decades."]));
    let scenarios = "scenarios:\n  - name: plain\n    message: Weather or climate?\n    \
                     criteria: {mustProduceOutput: true, maxToolCalls: 0}\n";

    let out = eval(&upstream, scenarios, "table", &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("plain     pass"), "{stdout}");
    assert!(stdout.contains("1/1 scenarios passed"), "{stdout}");
}

#[tokio::test]
async fn a_missing_scenario_file_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_promptgate"))
        .env_remove("PROMPTGATE_CONFIG")
        .args(["eval", "/nonexistent/scenarios.yaml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read the scenario file /nonexistent/scenarios.yaml"),
        "{stderr}"
    );
}
