//! `promptgate eval` as a user runs it: a config file whose provider is a scripted upstream, a small
//! scenario file, the table or JSON on stdout and the exit code.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use serde_json::Value;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("promptgate-eval-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the config and scenario files and runs `promptgate eval` with `args`.
async fn eval(upstream: &ScriptedUpstream, scenarios: &str, name: &str, args: &[&str]) -> Output {
    eval_with(upstream, scenarios, name, args, "").await
}

/// As [`eval`], with `extra` appended to the config.
async fn eval_with(
    upstream: &ScriptedUpstream,
    scenarios: &str,
    name: &str,
    args: &[&str],
    extra: &str,
) -> Output {
    let dir = scratch_dir(name);
    let config = dir.join("promptgate.toml");
    std::fs::write(
        &config,
        format!(
            "{}\n[[providers]]\nname = \"scripted\"\nkind = \"openai\"\n\
             base_url = \"{}\"\n\n[[models]]\nid = \"scripted\"\nname = \"Scripted\"\nprovider = \"scripted\"\n\
             upstream_model = \"upstream-model\"\n{extra}",
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
    crate::common::output_of(cmd, "promptgate eval").await
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
    crate::common::assert_succeeded(&out, "promptgate eval");
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

/// The bundled demo web answers search and reading; the scripted model reads one page of three.
const DEMO_WEB: &str = "\n[web]\nsearch = { kind = \"demo\" }\n";
const CITATIONS_PAGE: &str = "https://guide.promptgate.invalid/sources-and-citations";

/// One scenario's turn: a search that finds all three bundled pages (1 to 3), a read of page 2, and
/// `answer`.
fn cited_turn(upstream: &ScriptedUpstream, answer: &'static str) {
    let search = serde_json::json!({"query": "zzz"}).to_string();
    upstream.push(tool_calls(&[("s1", "search", &[search.as_str()])]));
    let fetch = serde_json::json!({"url": CITATIONS_PAGE}).to_string();
    upstream.push(tool_calls(&[("f1", "fetch_content", &[fetch.as_str()])]));
    upstream.push(text([answer]));
}

const CITATION_SCENARIOS: &str = r#"scenarios:
  - name: well-cited
    message: How does promptgate number sources?
    criteria: {minCitations: 1, minCitationPrecision: 0.9, maxDanglingRate: 0}
  - name: badly-cited
    message: How does promptgate number sources?
    criteria: {minCitationPrecision: 0.9, maxDanglingRate: 0, maxSnippetOnlyRate: 0.5}
"#;

#[tokio::test]
async fn eval_measures_citation_precision_dangling_and_snippet_only_citations() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let upstream = ScriptedUpstream::start().await.unwrap();
    cited_turn(
        &upstream,
        "Each search result and each page read during an answer gets a number [2].",
    );
    cited_turn(
        &upstream,
        "The model cites a page by writing its number in square brackets [1]. \
         promptgate was first released in 1999 [2]. \
         The offline demo model only quotes what its tools return [3]. \
         Prices start at five euros [9].",
    );

    let out = eval_with(&upstream, CITATION_SCENARIOS, "citations", &["--json"], DEMO_WEB).await;
    let results: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(results[0]["passed"], true, "{results:#}");
    assert_eq!(results[0]["citationRates"]["precision"], 1.0);
    // Shifted ([1] is the overview page, seen as a snippet), unsupported ([2] never says 1999),
    // supported but seen only as a snippet ([3]), and dangling ([9]: there are three sources).
    let bad = &results[1];
    assert_eq!(
        bad["citationCounts"],
        serde_json::json!({"total": 3, "supported": 1, "weak": 0, "unsupported": 2, "snippetOnly": 2, "dangling": 1}),
        "{bad:#}"
    );
    let rates = &bad["citationRates"];
    assert!((rates["precision"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(rates["danglingRate"], 0.25);
    assert!((rates["snippetOnlyRate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(
        bad["failures"],
        serde_json::json!([
            "Citation precision too low: 33% supported (min: 90%)",
            "Too many dangling citations: 25% (max: 0%)",
            "Too many snippet-only citations: 67% (max: 50%)"
        ])
    );
    assert!(!bad["text"].as_str().unwrap().contains("[9]"));

    // The table shows the same per scenario, and all scenarios together.
    cited_turn(&upstream, "Each page read during an answer gets a number [2].");
    cited_turn(&upstream, "Prices start at five euros [9].");
    let out = eval_with(&upstream, CITATION_SCENARIOS, "citations-table", &[], DEMO_WEB).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("precision  dangling  snippet-only"), "{stdout}");
    let overall = stdout.lines().find(|l| l.starts_with("overall")).unwrap();
    let columns: Vec<&str> = overall.split_whitespace().collect();
    assert_eq!(columns, ["overall", "100%", "50%", "0%"], "{stdout}");
}
