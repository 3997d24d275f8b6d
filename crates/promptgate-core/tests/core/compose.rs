//! `compose_send`: the toolset and prompt one send gets, as the preview and the turn both use it.

use chrono::{TimeZone, Utc};
use promptgate_core::compose::{ComposeInput, UpstreamIdentity, compose_send};
use promptgate_core::prompt::HarnessKind;
use promptgate_core::settings::{Engine, IntegrationStatus, Model, Project, Skill, UserSettings};
use promptgate_core::tools::mcp_names::McpServerTools;

use crate::mcp_merge::server;

fn model(tool_usage: i32, engine: Engine) -> Model {
    Model {
        id: "m".into(),
        name: "Model M".into(),
        provider: "p".into(),
        upstream_model: "m-upstream".into(),
        tool_usage,
        engine,
        supports_parallel_tool_calls: true,
        system: true,
        ..Model::default()
    }
}

struct Fixture {
    settings: UserSettings,
    integrations: IntegrationStatus,
    model: Model,
    project: Project,
    skills: Vec<Skill>,
    servers: Vec<McpServerTools>,
}

impl Fixture {
    fn new(model: Model) -> Self {
        Self {
            settings: UserSettings::default(),
            integrations: IntegrationStatus::default(),
            model,
            project: Project {
                id: "p1".into(),
                name: "Atlas".into(),
                instructions: Some("Be exact.".into()),
            },
            skills: Vec::new(),
            servers: Vec::new(),
        }
    }

    fn input<'a>(&'a self, last_user_text: &'a str, siblings: u32) -> ComposeInput<'a> {
        ComposeInput {
            settings: &self.settings,
            integrations: &self.integrations,
            model: &self.model,
            upstream: UpstreamIdentity {
                kind: HarnessKind::OpenAiCompat,
                provider: "p",
                base_url: "http://127.0.0.1:9/v1",
                api_key: Some("k"),
            },
            project: Some(&self.project),
            sibling_count: siblings,
            skills: &self.skills,
            mcp_servers: &self.servers,
            last_user_text,
            ask_responses: &[],
            voice_mode: false,
            client_env: "web",
            app_version: None,
            regeneration_revision: 0,
        }
    }
}

fn names(composed: &promptgate_core::compose::ComposedSend) -> Vec<&str> {
    composed.tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn mcp_tools_join_after_built_ins_and_are_summarised_in_the_prompt() {
    let mut f = Fixture::new(model(1, Engine::Legacy));
    // The first server failed discovery: it brings no tools but keeps its prefix.
    f.servers = vec![
        server("s0", "Tools", &[]),
        server("s1", "Tools", &["echo", "add"]),
        server("s2", "Web", &["search"]),
    ];
    let now = Utc.with_ymd_and_hms(2026, 7, 10, 12, 0, 0).unwrap();
    let composed = compose_send(&f.input("hi", 2), now);
    assert_eq!(
        names(&composed),
        [
            "render_html",
            "search",
            "fetch_content",
            "skill",
            "search_project_chats",
            "tools_2_echo",
            "tools_2_add",
            "web_search"
        ]
    );
    assert!(composed.has_web_tools);
    let mcp = composed.tools[5].mcp.as_ref().unwrap();
    assert_eq!((mcp.name.as_str(), mcp.tool_name.as_str()), ("Tools", "echo"));
    assert!(composed.parts.stable.contains("## Connected MCP Servers"));
    assert!(
        composed.parts.stable.contains("- tools_2 (2 tools)")
            && composed.parts.stable.contains("- web (1 tool)")
    );
    assert_eq!(
        composed.system,
        format!("{}\n\n{}", composed.parts.stable, composed.parts.volatile)
    );
}

#[test]
fn a_model_without_tools_gets_none_and_no_mcp_summary() {
    let mut f = Fixture::new(model(0, Engine::Legacy));
    f.servers = vec![server("s1", "Tools", &["echo"])];
    let composed = compose_send(&f.input("hi", 2), Utc::now());
    assert!(composed.tools.is_empty());
    assert!(!composed.has_web_tools);
    assert!(!composed.parts.stable.contains("Connected MCP Servers"));
    assert!(!composed.parts.stable.contains("## Other chats in this project"));
}

#[test]
fn the_harness_engine_gets_identity_environment_and_date_and_a_clock_free_signature() {
    let f = Fixture::new(model(1, Engine::Harness));
    let a = compose_send(
        &f.input("hi", 0),
        Utc.with_ymd_and_hms(2026, 7, 10, 12, 0, 0).unwrap(),
    );
    let b = compose_send(
        &f.input("hi", 0),
        Utc.with_ymd_and_hms(2026, 7, 10, 12, 1, 0).unwrap(),
    );
    assert!(a.system.starts_with(&a.parts.stable));
    assert!(a.system.contains("Client environment: web"));
    assert!(a.system.contains("# Environment"));
    assert!(a.system.ends_with(&a.parts.volatile));
    assert_eq!(a.parts.stable, b.parts.stable);
    assert_eq!(a.harness_signature, b.harness_signature);
    assert!(
        !a.harness_signature.contains("\"k\"") && !a.harness_signature.contains("|k|"),
        "the key never appears"
    );
    assert!(
        !names(&a).contains(&"search_project_chats"),
        "no siblings, nothing to search"
    );
    assert!(a.harness_signature.starts_with("openai-compat|p|"));

    // A native Anthropic provider is identified by model and key alone: a new base URL keeps it.
    let mut anthropic = f.input("hi", 0);
    anthropic.upstream.kind = HarnessKind::Anthropic;
    let c = compose_send(&anthropic, Utc::now());
    anthropic.upstream.base_url = "http://127.0.0.1:10/v1";
    let d = compose_send(&anthropic, Utc::now());
    assert!(
        c.harness_signature.starts_with("anthropic|"),
        "{}",
        c.harness_signature
    );
    assert_eq!(c.harness_signature, d.harness_signature);

    // The client named by the request shows in the harness prompt; an unknown one is a desktop.
    let mut ios = f.input("hi", 0);
    ios.client_env = "ios";
    ios.app_version = Some("2.0.1");
    assert!(
        compose_send(&ios, Utc::now())
            .system
            .contains("Client environment: ios\nApp version: 2.0.1")
    );
    ios.client_env = "toaster";
    ios.app_version = Some("undefined");
    let toaster = compose_send(&ios, Utc::now()).system;
    assert!(toaster.contains("Client environment: desktop\n") && !toaster.contains("App version"));
}

#[test]
fn a_harness_model_gets_the_workspace_tools_first_and_mcp_cannot_shadow_them() {
    let mut f = Fixture::new(model(1, Engine::Harness));
    f.servers = vec![server("s1", "Shell", &["bash", "lint"])];
    let composed = compose_send(&f.input("hi", 0), Utc::now());
    let names = names(&composed);
    assert_eq!(names[..4], ["read", "write", "edit", "bash"]);
    assert_eq!(names[4], "render_html", "the app's tools follow");
    assert_eq!(names.iter().filter(|n| **n == "bash").count(), 1, "{names:?}");
    assert!(
        names.contains(&"shell_bash") && names.contains(&"shell_lint"),
        "{names:?}"
    );
    let bash = &composed.tools[3];
    assert!(
        bash.parameters["required"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "command")
    );

    // The legacy engine has no workspace, and a harness model without tools gets no tools at all.
    let legacy = compose_send(&Fixture::new(model(1, Engine::Legacy)).input("hi", 0), Utc::now());
    assert!(
        !legacy
            .tools
            .iter()
            .any(|t| promptgate_core::tools::names::WORKSPACE.contains(&t.name.as_str()))
    );
    let toolless = compose_send(
        &Fixture::new(model(0, Engine::Harness)).input("hi", 0),
        Utc::now(),
    );
    assert!(toolless.tools.is_empty());
    assert!(!toolless.system.contains("# Environment"));
}

#[test]
fn slash_tokens_pick_skill_notes_and_the_web_intent() {
    let mut f = Fixture::new(model(1, Engine::Legacy));
    f.skills = vec![Skill {
        id: "s".into(),
        slug: "research".into(),
        name: "Research".into(),
        description: "Dig deep.".into(),
        instructions: "Use many sources.".into(),
        enabled: true,
        renders_widgets: false,
    }];
    let composed = compose_send(&f.input("please /research tides", 0), Utc::now());
    assert_eq!(composed.notes.len(), 2);
    assert_eq!(composed.notes[1], "Use many sources.");
    assert_eq!(composed.skill_instructions, ["Use many sources."]);
    assert_eq!(composed.web_intent, promptgate_core::budget::WebIntent::Research);
    let composed = compose_send(&f.input("please research tides", 0), Utc::now());
    assert_eq!(composed.notes.len(), 1);
    assert_eq!(composed.web_intent, promptgate_core::budget::WebIntent::Auto);
}
