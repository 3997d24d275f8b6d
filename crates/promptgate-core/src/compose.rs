//! Composes one send: the toolset offered to the model and the prompt it receives (the engine's
//! `TurnPlan` is what runs it; this is what it is given). The prompt preview and the
//! real send both call [`compose_send`], so what a user inspects with curl is what the model gets.

use chrono::{DateTime, Utc};

use crate::budget::{WebIntent, resolve_web_intent};
use crate::prompt::{
    AskResponse, HarnessKind, HarnessModel, NotesInput, ProjectContext, PromptInput, PromptParts,
    client_identity_block, compose_harness, compose_legacy, create_parts, harness_signature,
    resolve_time_zone, volatile_notes,
};
use crate::settings::{Engine, IntegrationStatus, Model, Project, Skill, UserSettings};
use crate::skills::resolve_skill_instructions;
use crate::tools::mcp_names::{MAX_TOOLS, McpServerTools, NotOffered, merge};
use crate::tools::{
    ToolSpec, available, has_web_tools, search_project_chats_spec, skill_spec, workspace_specs,
};

/// Where the model is served from; it takes part in the harness signature.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamIdentity<'a> {
    /// How the provider is reached: a native Anthropic provider is identified by model and key only.
    pub kind: HarnessKind,
    pub provider: &'a str,
    pub base_url: &'a str,
    /// Only a hash of it enters the signature.
    pub api_key: Option<&'a str>,
}

/// Everything a send's prompt and toolset depend on, apart from the clock.
#[derive(Debug, Clone, Copy)]
pub struct ComposeInput<'a> {
    pub settings: &'a UserSettings,
    pub integrations: &'a IntegrationStatus,
    pub model: &'a Model,
    pub upstream: UpstreamIdentity<'a>,
    pub project: Option<&'a Project>,
    /// Other threads of the project (excluding this one); only whether there are any matters.
    pub sibling_count: u32,
    /// The user's enabled skills.
    pub skills: &'a [Skill],
    /// Every enabled MCP server in registration order; a server whose discovery failed comes with no
    /// tools, so it still reserves its prefix and names stay stable when it comes back.
    pub mcp_servers: &'a [McpServerTools],
    /// Text of the newest user message (slash tokens pick skills and the web budget intent).
    pub last_user_text: &'a str,
    pub ask_responses: &'a [AskResponse],
    pub voice_mode: bool,
    /// `web`, `ios`, `android`, `desktop` or `cli`: named in the harness composition; anything else
    /// is taken for `desktop`.
    pub client_env: &'a str,
    /// The client's version; the literal `undefined` counts as absent.
    pub app_version: Option<&'a str>,
    /// Bumped by an explicit regenerate; part of the harness signature.
    pub regeneration_revision: u32,
}

/// The prompt and toolset composed for one send, and what was decided on the way.
#[derive(Debug, Clone)]
pub struct ComposedSend {
    pub parts: PromptParts,
    /// Per-send notes (date line first), as the legacy composition appends them.
    pub notes: Vec<String>,
    /// The system prompt for the model's engine.
    pub system: String,
    /// Built-in tools, then MCP tools; empty for a model without tools.
    pub tools: Vec<ToolSpec>,
    /// `search` and `fetch_content` are both offered (decided before MCP tools join).
    pub has_web_tools: bool,
    pub harness_signature: String,
    /// The web budget intent the newest user message asks for.
    pub web_intent: WebIntent,
    /// Instructions of the `/slug` skills in the newest user message. The legacy composition puts
    /// them in the notes; a harness carries them on the user's text instead.
    pub skill_instructions: Vec<String>,
    /// MCP tools that were discovered but not offered, with the reason.
    pub mcp_not_offered: Vec<NotOffered>,
}

/// What a send offers before any MCP tool: the same for [`compose_send`] and [`mcp_tool_room`].
#[derive(Debug, Clone, Copy)]
pub struct BuiltInInput<'a> {
    pub settings: &'a UserSettings,
    pub integrations: &'a IntegrationStatus,
    pub model: &'a Model,
    pub project: Option<&'a Project>,
    pub sibling_count: u32,
}

/// The built-in tools of a send, in the order they are offered.
fn built_in_tools(input: BuiltInInput<'_>) -> Vec<ToolSpec> {
    let supports_tools = input.model.supports_tools();
    // A harness model works in its workspace first, so those tools lead; the app's tools follow.
    let mut tools = if supports_tools && input.model.engine == Engine::Harness {
        workspace_specs()
    } else {
        Vec::new()
    };
    tools.extend(available(input.settings, input.integrations, supports_tools));
    if supports_tools {
        tools.push(skill_spec());
        if let Some(project) = input.project
            && input.sibling_count > 0
        {
            tools.push(search_project_chats_spec(&project.name));
        }
    }
    tools
}

/// How many MCP tools a send can still offer after its built-ins, so discovery connects only the
/// servers whose tools can make it in.
pub fn mcp_tool_room(input: BuiltInInput<'_>) -> usize {
    MAX_TOOLS.saturating_sub(built_in_tools(input).len())
}

pub fn compose_send(input: &ComposeInput<'_>, now: DateTime<Utc>) -> ComposedSend {
    let supports_tools = input.model.supports_tools();
    let mut tools = built_in_tools(BuiltInInput {
        settings: input.settings,
        integrations: input.integrations,
        model: input.model,
        project: input.project,
        sibling_count: input.sibling_count,
    });
    let web = has_web_tools(&tools);

    let (mcp_summary, mcp_not_offered) = if supports_tools && !input.mcp_servers.is_empty() {
        let outcome = merge(tools.iter().map(|t| t.name.as_str()), input.mcp_servers);
        let summary = outcome.summary();
        tools.extend(outcome.added);
        (summary, outcome.not_offered)
    } else {
        (None, Vec::new())
    };

    let project = input.project.map(|project| ProjectContext {
        project,
        has_searchable_chats: supports_tools && input.sibling_count > 0,
    });
    let prompt_input = PromptInput {
        model_name: &input.model.name,
        profile: &input.model.profile,
        settings: input.settings,
        integration_status: input.integrations,
        has_web_tools: web,
        mcp_summary: mcp_summary.as_deref(),
        skills: input.skills,
        supports_tools,
        project,
    };
    let parts = create_parts(&prompt_input, now, resolve_time_zone(&input.settings.time_zone));
    let skill_instructions = resolve_skill_instructions(input.last_user_text, input.skills);
    let notes = volatile_notes(NotesInput {
        date_line: &parts.volatile,
        voice_mode: input.voice_mode,
        skill_instructions: skill_instructions.clone(),
        ask_responses: input.ask_responses,
    });
    let system = match input.model.engine {
        Engine::Legacy => compose_legacy(&parts.stable, &notes),
        Engine::Harness => compose_harness(
            &parts.stable,
            &client_identity_block(input.client_env, input.app_version),
            supports_tools,
            &parts.volatile,
        ),
    };
    let signature = harness_signature(
        &HarnessModel {
            kind: input.upstream.kind,
            provider_id: input.upstream.provider,
            model_id: &input.model.upstream_model,
            vendor: None,
            base_url: input.upstream.base_url,
            api_key: input.upstream.api_key,
            reasoning: input.model.reasoning.is_some(),
            context_window: input.model.context_window.and_then(|w| u64::try_from(w).ok()),
            supports_images: input.model.supports_images,
            client_id: None,
        },
        input.model.reasoning.as_deref().unwrap_or("off"),
        &parts.stable,
        input.regeneration_revision,
    );
    ComposedSend {
        parts,
        notes,
        system,
        tools,
        has_web_tools: web,
        harness_signature: signature,
        web_intent: resolve_web_intent(input.last_user_text),
        skill_instructions,
        mcp_not_offered,
    }
}
