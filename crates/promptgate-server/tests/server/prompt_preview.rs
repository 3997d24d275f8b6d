//! `GET /v1/threads/{id}/prompt` shows the user's stored settings where the model will read them.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code};
use promptgate_core::settings::{IntegrationProvider, IntegrationState};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn tool_names(preview: &Value) -> Vec<&str> {
    common::strings_at(&preview["tools"], "name")
}

async fn settings_reach_the_prompt(backend: Backend) {
    let gw = Gateway::single_user(backend).await;
    gw.put(
        "/v1/settings",
        json!({"preferred_name": "Ada", "location": {"name": "São Paulo", "lat": -23.55, "lng": -46.63},
               "localization": {"distance_unit": "metric", "temperature_unit": "c", "time_format": "24h", "currency": "BRL"},
               "time_zone": "America/Sao_Paulo", "app_language": "ja"}),
    )
    .await;
    gw.post("/v1/threads", json!({"id": "t1"})).await;

    let (status, preview) = gw.get("/v1/threads/t1/prompt?model=demo").await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    let stable = preview["stable"].as_str().unwrap();
    let volatile = preview["volatile"].as_str().unwrap();

    let context = stable.find("# Context").expect("a context section");
    let tools = stable.find("# Tools").expect("a tools section");
    for line in [
        "User name: Ada",
        "User location: São Paulo (-23.55, -46.63)",
        "User preferences: metric, c, 24h, BRL",
        "Integration status: READY",
    ] {
        let at = stable
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} missing from:\n{stable}"));
        assert!(
            context < at && at < tools,
            "{line:?} must sit in # Context, before # Tools"
        );
    }
    assert!(
        stable.contains("Japanese"),
        "the language fallback names the app language"
    );
    assert!(
        !stable.contains("Current date/time"),
        "the date never enters the stable half"
    );
    assert!(volatile.starts_with("Current date/time: "), "{volatile}");
    assert!(
        volatile.contains("GMT-3"),
        "rendered in the user's zone: {volatile}"
    );
    assert_eq!(
        preview["full"].as_str().unwrap(),
        format!("{stable}\n\n{volatile}")
    );
    assert_eq!(preview["notes"][0], volatile);
    assert!(preview["system"].as_str().unwrap().starts_with(stable));

    let names = tool_names(&preview);
    assert_eq!(names, ["render_html", "search", "fetch_content", "skill"]);
    assert_eq!(preview["has_web_tools"], true);
    let search = &preview["tools"][1];
    assert_eq!(search["verb"], "searching for {query}");
    assert_eq!(search["cacheable"], true);
    assert_eq!(search["parameters"]["type"], "object");
}

common::on_both_backends!(settings_reach_the_prompt);

#[tokio::test]
async fn toolset_follows_settings_integrations_and_projects() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    gw.put(
        "/v1/settings",
        json!({"experimental_tasks": true, "web_tools_enabled": false, "integrations_do_not_ask": true}),
    )
    .await;
    // Connected is what a completed authorization records; set it directly here.
    let store = &gw.store;
    let user = promptgate_server::state::LOCAL_USER_ID;
    let (on, off) = (
        IntegrationState {
            connected: true,
            enabled: true,
        },
        IntegrationState {
            connected: true,
            enabled: false,
        },
    );
    store
        .put_integration(user, IntegrationProvider::Google, on)
        .await
        .unwrap();
    store
        .put_integration(user, IntegrationProvider::Microsoft, off)
        .await
        .unwrap();
    let pid = &gw.create_project("Launch", "Keep a changelog.").await;
    gw.post("/v1/threads", json!({"id": "a", "project_id": pid}))
        .await;
    gw.post(
        "/v1/threads",
        json!({"id": "b", "project_id": pid, "title": "Earlier"}),
    )
    .await;

    let (_, preview) = gw.get("/v1/threads/a/prompt").await;
    let names = tool_names(&preview);
    assert!(names.starts_with(&["render_html", "addTasks"]), "{names:?}");
    // Integration tools need the deployment's OAuth client configured (integrations_turn.rs covers
    // that); without it none are offered, but the status line still names the disabled ones.
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("google_") || n.starts_with("microsoft_")),
        "{names:?}"
    );
    assert!(!names.contains(&"search"), "web tools are off");
    assert!(names.ends_with(&["skill", "search_project_chats"]), "{names:?}");
    assert_eq!(preview["has_web_tools"], false);
    let stable = preview["stable"].as_str().unwrap();
    assert!(
        stable.contains("Integration status: MICROSOFT_DISABLED, PROMPTS_DISABLED"),
        "{stable}"
    );
    assert!(stable.contains("# Project: Launch") && stable.contains("Keep a changelog."));
    assert!(stable.find("# Project: Launch").unwrap() < stable.find("# Tools").unwrap());

    // Changing project instructions changes the stable prompt and the harness signature.
    let before = preview["harness_signature"].clone();
    gw.put(
        &format!("/v1/projects/{pid}"),
        json!({"name": "Launch", "instructions": "Use British spelling."}),
    )
    .await;
    let (_, after) = gw.get("/v1/threads/a/prompt").await;
    assert_ne!(after["harness_signature"], before);
    assert!(
        after["stable"]
            .as_str()
            .unwrap()
            .contains("Use British spelling.")
    );
}

#[tokio::test]
async fn a_model_without_tools_gets_no_tools_and_slash_skills_become_notes() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    gw.post(
        "/v1/models",
        json!({"id": "plain", "provider": "demo", "tool_usage": 0}),
    )
    .await;
    gw.post(
        "/v1/skills",
        json!({"slug": "haiku", "name": "Haiku", "description": "Answer as a haiku.",
        "instructions": "Write exactly three lines.", "enabled": true, "renders_widgets": false}),
    )
    .await;
    gw.post("/v1/threads", json!({"id": "t"})).await;

    let (_, preview) = gw.get("/v1/threads/t/prompt?model=plain").await;
    assert_eq!(preview["tools"], json!([]));
    let (_, preview) = gw
        .get("/v1/threads/t/prompt?model=demo&message=please%20%2Fhaiku%20this")
        .await;
    let notes = common::strs(&preview["notes"]);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[1], "Write exactly three lines.");
    assert!(
        preview["stable"]
            .as_str()
            .unwrap()
            .contains("- haiku: Answer as a haiku.")
    );
}

#[tokio::test]
async fn unknown_thread_or_model_is_a_404() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let (status, err) = gw.get("/v1/threads/missing/prompt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(common::error_message(&err).contains("thread missing"));
    gw.post("/v1/threads", json!({"id": "t"})).await;
    let (status, err) = gw.get("/v1/threads/t/prompt?model=gpt-nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    assert!(err["error"]["message"].as_str().unwrap().contains("gpt-nothing"));
}

/// The environment a gateway reads its provider key from.
struct KeyEnv;

const INTERNAL_KEY: &str = "sk-internal-provider-key-4471";

impl promptgate_server::config::Env for KeyEnv {
    fn var(&self, name: &str) -> Option<String> {
        (name == "PREVIEW_TEST_PROVIDER_KEY").then(|| INTERNAL_KEY.to_owned())
    }
}

/// A gateway whose `internal` model goes to a provider at `base_url`, with a key.
async fn internal_provider_gateway(base_url: &str) -> Gateway {
    let text = format!(
        "{}\n[[providers]]\nname = \"internal\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"PREVIEW_TEST_PROVIDER_KEY\"\n\n[[models]]\nid = \"internal\"\nname = \"Internal\"\n\
         provider = \"internal\"\nupstream_model = \"m\"\nengine = \"harness\"\n",
        promptgate_server::config::EMBEDDED_DEFAULT
    );
    let config = promptgate_server::config::Config::parse(&text).unwrap();
    let gw = Gateway::start_with_env(Backend::Sqlite, config, &KeyEnv).await;
    gw.post("/v1/threads", json!({"id": "t"})).await;
    gw
}

#[tokio::test]
async fn the_preview_shows_no_provider_address_or_key_hash_and_its_signature_still_follows_them() {
    let gw = internal_provider_gateway("http://10.20.30.40:8123/v1").await;
    let (status, preview) = gw.get("/v1/threads/t/prompt?model=internal").await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    let text = preview.to_string();
    let key_hash = promptgate_core::prompt::fnv1a_base36(INTERNAL_KEY);
    for secret in ["10.20.30.40", "8123", INTERNAL_KEY, key_hash.as_str()] {
        assert!(!text.contains(secret), "the preview shows {secret}: {text}");
    }
    let signature = preview["harness_signature"].as_str().unwrap().to_owned();
    assert!(!signature.contains('|'), "{signature}");

    // Another address for the same provider is another harness.
    let moved = internal_provider_gateway("http://10.20.30.41:8123/v1").await;
    let (_, elsewhere) = moved.get("/v1/threads/t/prompt?model=internal").await;
    assert_eq!(elsewhere["stable"], preview["stable"]);
    assert_ne!(elsewhere["harness_signature"], signature.as_str());
}
