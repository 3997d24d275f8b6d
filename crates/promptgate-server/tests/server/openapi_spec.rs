//! The OpenAPI document as outside tools see it: the committed openapi.yaml is what the code generates
//! (regenerate with `make openapi`), the served /openapi.json is the same document, it passes
//! `openapi-spec-validator`, and schemathesis finds no server error and no response that breaks it on a
//! live server. The Python checkers live in tests/py/.venv (`tests/py/install.sh`, which `.ci/run` runs);
//! without them those two tests are skipped with a note locally and fail under CI.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Backend, Gateway};
use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT, Env};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[test]
fn committed_openapi_yaml_is_current() {
    let generated = yaml_serde::to_string(&promptgate_server::app::openapi()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.yaml");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated.trim_end() == committed.trim_end(),
        "openapi.yaml is stale: run `make openapi` and commit the result"
    );
}

#[test]
fn every_route_is_documented_with_the_error_envelope() {
    let spec = serde_json::to_value(promptgate_server::app::openapi()).unwrap();
    assert_eq!(spec["openapi"], "3.1.0");
    let paths = spec["paths"].as_object().unwrap();
    for path in [
        "/v1/settings",
        "/v1/threads/{id}/prompt",
        "/v1/mcp-servers/{id}",
        "/v1/models",
    ] {
        assert!(paths.contains_key(path), "{path} is not documented");
    }
    let schemas = spec["components"]["schemas"].as_object().unwrap();
    assert!(
        schemas.contains_key("ErrorBody"),
        "the error envelope is not in the spec"
    );
}

#[test]
fn every_error_code_is_published_with_its_status() {
    let spec = serde_json::to_value(promptgate_server::app::openapi()).unwrap();
    let schemas = &spec["components"]["schemas"];
    assert_eq!(
        schemas["ErrorDetail"]["properties"]["code"]["allOf"][0]["$ref"], "#/components/schemas/ErrorCode",
        "{}",
        schemas["ErrorDetail"]
    );
    let published = schemas["ErrorCode"]["oneOf"].as_array().unwrap();
    let codes = promptgate_server::error::ErrorCode::ALL;
    assert_eq!(published.len(), codes.len());
    for (entry, code) in published.iter().zip(codes) {
        assert_eq!(entry["const"], code.as_str());
        let description = entry["description"].as_str().unwrap();
        let status = code.status().as_u16().to_string();
        assert!(description.starts_with(&status), "{description}");
    }
}

#[test]
fn creations_deletions_and_the_token_are_documented() {
    let spec = serde_json::to_value(promptgate_server::app::openapi()).unwrap();
    assert_eq!(
        spec["components"]["securitySchemes"]["bearer"]["scheme"], "bearer",
        "{}",
        spec["components"]
    );
    assert_eq!(spec["security"], json!([{"bearer": []}]));
    // The OAuth callback is where the provider sends the browser: no token there.
    assert_eq!(
        spec["paths"]["/v1/integrations/{provider}/callback"]["get"]["security"],
        json!([{}])
    );
    for (path, created) in [
        ("/v1/threads", "/v1/threads/{id}"),
        ("/v1/models", "/v1/models/{id}"),
        ("/v1/projects", "/v1/projects/{id}"),
        ("/v1/skills", "/v1/skills/{id}"),
        ("/v1/mcp-servers", "/v1/mcp-servers/{id}"),
    ] {
        let post = &spec["paths"][path]["post"]["responses"];
        assert!(
            post["201"]["content"]["application/json"].is_object(),
            "{path}: {post}"
        );
        let delete = &spec["paths"][created]["delete"];
        assert!(delete["responses"]["204"].is_object(), "{created}: {delete}");
        let params = delete["parameters"].as_array().unwrap();
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "id" && p["in"] == "path" && p["required"] == true),
            "{created}: {params:?}"
        );
        for status in ["401", "404", "500"] {
            let answer = published_response(&spec, &delete["responses"][status]);
            assert_eq!(
                answer["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                "{created} {status}"
            );
        }
    }
}

/// The response an operation's `answer` refers to under `components.responses`, where the error
/// answers are published once.
fn published_response<'a>(spec: &'a Value, answer: &Value) -> &'a Value {
    let reference = answer["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("not a reference: {answer}"));
    let name = reference
        .strip_prefix("#/components/responses/")
        .unwrap_or_else(|| panic!("not a published response: {reference}"));
    &spec["components"]["responses"][name]
}

/// 32 bytes of 0x07, base64: seals integration tokens in the live server below.
const TOKEN_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

struct TestEnv;

impl Env for TestEnv {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "SPEC_TOKEN_KEY" => Some(TOKEN_KEY.to_owned()),
            "SPEC_GOOGLE_SECRET" => Some("google-secret".to_owned()),
            _ => None,
        }
    }
}

/// A token-mode server on SQLite whose Google integration is configured with endpoints on a loopback
/// port nothing listens on, so every route can answer and nothing leaves the machine.
async fn live_gateway() -> Gateway {
    let text = format!(
        "{EMBEDDED_DEFAULT}\n[integrations]\ntoken_key_env = \"SPEC_TOKEN_KEY\"\n\
         redirect_base_url = \"http://127.0.0.1:8080\"\n\n[integrations.google]\nclient_id = \"spec-client\"\n\
         client_secret_env = \"SPEC_GOOGLE_SECRET\"\nauth_url = \"http://127.0.0.1:9/auth\"\n\
         token_url = \"http://127.0.0.1:9/token\"\nrevoke_url = \"http://127.0.0.1:9/revoke\"\n\
         api_base_url = \"http://127.0.0.1:9/gmail\"\ncalendar_base_url = \"http://127.0.0.1:9/calendar\"\n\n\
         [mcp]\nallow_loopback = true\n"
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = AuthMode::Tokens;
    Gateway::start_with_env(Backend::Sqlite, config, &TestEnv).await
}

#[tokio::test]
async fn the_served_document_is_the_generated_one_streaming_routes_included() {
    let gw = live_gateway().await;
    let (status, served) = gw.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        served,
        serde_json::to_value(promptgate_server::app::openapi()).unwrap()
    );
    let paths = served["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/chat", "post"),
        ("/v1/chat/completions", "post"),
        ("/v1/chat/{id}/stop", "post"),
        ("/v1/threads/{id}/messages", "post"),
        ("/v1/artifacts/{id}", "get"),
    ] {
        assert!(paths[path][method].is_object(), "{method} {path} is not served");
    }
}

/// tests/py/.venv/bin, where tests/py/install.sh puts the checkers.
fn python_tools() -> Option<PathBuf> {
    let bin = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/py/.venv/bin"));
    if bin.join("openapi-spec-validator").is_file() && bin.join("schemathesis").is_file() {
        return Some(bin);
    }
    common::skip_without(
        "tests/py/.venv is missing: run tests/py/install.sh",
        "skipping the outside OpenAPI checkers; run tests/py/install.sh to include them",
    )
}

async fn run(program: PathBuf, args: Vec<String>, dir: PathBuf) -> (bool, String) {
    let mut checker = Command::new(&program);
    checker.args(&args).current_dir(&dir).env("NO_COLOR", "1");
    let out = common::output_of(checker, "the checker").await;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("promptgate-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn openapi_spec_validator_accepts_the_document() {
    let Some(bin) = python_tools() else { return };
    let dir = scratch_dir("spec-validator");
    let file = dir.join("openapi.json");
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&promptgate_server::app::openapi()).unwrap(),
    )
    .unwrap();
    let (ok, out) = run(
        bin.join("openapi-spec-validator"),
        vec![
            "--validation-errors".into(),
            "all".into(),
            file.display().to_string(),
        ],
        dir.clone(),
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "openapi-spec-validator rejected the document:\n{out}");
}

/// Creates one of each record through the API and returns its id.
async fn seed(gw: &Gateway, token: &str, path: &str, body: Value) -> String {
    let (status, created) = gw
        .call(reqwest::Method::POST, path, Some(body), Some(token))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{path}: {created}");
    created["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_undocumented_answer() {
    let Some(bin) = python_tools() else { return };
    let gw = live_gateway().await;
    let user = gw.store.create_user("spec").await.unwrap();
    let token = gw.store.issue_token(&user.id).await.unwrap();

    // Seeded data, so path parameters reach the handlers' real work instead of 404. Deletions get
    // records of their own so the rest keep existing for the whole run.
    let mut ids = Vec::new();
    for (name, thread) in [("thread", "spec-thread"), ("doomed_thread", "spec-doomed")] {
        seed(&gw, &token, "/v1/threads", json!({"id": thread})).await;
        ids.push((name, thread.to_owned()));
    }
    let res = gw
        .response(
            Method::POST,
            "/v1/threads/spec-thread/messages",
            Some(&json!({"message": "Make me a tiny page", "model": "demo"})),
            Some(&token),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let stream = res.text().await.unwrap();
    let artifact = stream
        .split("\"artifact_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the demo turn stored no artifact: {stream}"))
        .to_owned();
    ids.push(("artifact", artifact));
    for (name, path, body) in [
        ("project", "/v1/projects", json!({"name": "Spec"})),
        ("doomed_project", "/v1/projects", json!({"name": "Doomed"})),
        (
            "skill",
            "/v1/skills",
            json!({"name": "Spec", "slug": "spec", "instructions": "Be brief."}),
        ),
        (
            "doomed_skill",
            "/v1/skills",
            json!({"name": "Doomed", "slug": "doomed", "instructions": "Be brief."}),
        ),
        (
            "mcp",
            "/v1/mcp-servers",
            json!({"name": "Spec", "url": "http://127.0.0.1:9/mcp"}),
        ),
        (
            "doomed_mcp",
            "/v1/mcp-servers",
            json!({"name": "Doomed", "url": "http://127.0.0.1:9/mcp"}),
        ),
        (
            "model",
            "/v1/models",
            json!({"id": "spec-model", "provider": "demo"}),
        ),
        (
            "doomed_model",
            "/v1/models",
            json!({"id": "spec-doomed", "provider": "demo"}),
        ),
    ] {
        ids.push((name, seed(&gw, &token, path, body).await));
    }
    let id = |name: &str| ids.iter().find(|(n, _)| *n == name).unwrap().1.clone();

    // Operation ids are `<method>_<path>`; each family points its `id` at a seeded record.
    let mut config = String::new();
    for (regex, value) in [
        ("^(get|put|post)_v1_(threads|chat)_id", id("thread")),
        ("^delete_v1_threads_id$", id("doomed_thread")),
        ("^(get|put)_v1_projects_id$", id("project")),
        ("^delete_v1_projects_id$", id("doomed_project")),
        ("^(get|put)_v1_skills_id$", id("skill")),
        ("^delete_v1_skills_id$", id("doomed_skill")),
        ("^(get|put|post)_v1_mcp_servers_id", id("mcp")),
        ("^delete_v1_mcp_servers_id$", id("doomed_mcp")),
        ("^(get|put)_v1_models_id$", id("model")),
        ("^delete_v1_models_id$", id("doomed_model")),
        ("^get_v1_artifacts_id$", id("artifact")),
    ] {
        config.push_str(&format!(
            "[[operations]]\ninclude-operation-id-regex = \"{regex}\"\nparameters = {{ \"path.id\" = \"{value}\" }}\n\n"
        ));
    }
    config.push_str(
        "[[operations]]\ninclude-operation-id-regex = \"_v1_integrations_provider\"\n\
         parameters = { \"path.provider\" = \"google\" }\n",
    );
    let dir = scratch_dir("schemathesis");
    std::fs::write(dir.join("schemathesis.toml"), config).unwrap();

    // Bounded so the run takes about a minute on two cores; the seed makes a failure reproducible.
    let (ok, out) = run(
        bin.join("schemathesis"),
        vec![
            "--config-file".into(),
            dir.join("schemathesis.toml").display().to_string(),
            "run".into(),
            gw.url("/openapi.json"),
            "--header".into(),
            format!("Authorization: Bearer {token}"),
            "--checks".into(),
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
                .into(),
            "--phases".into(),
            "examples,coverage,fuzzing".into(),
            "--max-examples".into(),
            "40".into(),
            "--seed".into(),
            "20261203".into(),
            "--workers".into(),
            "2".into(),
            "--generation-database".into(),
            "none".into(),
            "--no-color".into(),
        ],
        dir.clone(),
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "schemathesis found problems:\n{out}");
    assert!(out.contains("Tested: "), "schemathesis tested nothing:\n{out}");
}
