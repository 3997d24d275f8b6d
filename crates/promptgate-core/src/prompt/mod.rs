//! The system prompt: a stable half that only changes when the user's setup changes (so upstream prompt
//! caches and the harness signature hold), and a volatile half that carries the clock.
//!
//! Layout of the stable half (a line template: an absent conditional fragment leaves its line empty,
//! which is what produces the fixed blank-line runs between sections):
//!
//! ```text
//! opening line (model name, citation rule) / Reasoning: low
//! # Principles
//! # Context            user name, location, preferences, integration status
//! # Project: <name>    optional, blank line before and after
//! # Tools              rules, then four fragment lines: web tools, profile tools text, MCP servers, skills
//! ## Link Previews     then the profile's link-preview text line
//! # Output Format
//! # Language
//! # Conversation Style (follow these instructions)   always last, so user text never ends the prompt
//! ```
//!
//! User-controlled text is passed through the `sanitize` module before it is placed; see there for the rules.

mod compose;
mod context;
mod date_line;
mod earlier;
mod notes;
pub mod nudges;
mod project;
pub(crate) mod sanitize;
mod sections;
mod signature;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

pub use compose::{
    ENVIRONMENT_BLOCK, WORKSPACE_COMMANDS, WORKSPACE_HOME, client_identity_block, compose_harness,
    compose_legacy,
};
pub use date_line::{date_line, resolve_time_zone};
pub use earlier::{Earlier, SUMMARISER_INSTRUCTIONS, earlier_block, summariser_task};
pub use notes::{
    AskAnswer, AskResponse, NotesInput, VOICE_MODE_NOTE, format_ask_responses_note, volatile_notes,
};
pub use project::{ProjectContext, project_section};
pub use signature::{HarnessKind, HarnessModel, fnv1a_base36, harness_signature};

use crate::settings::{IntegrationStatus, ModelProfile, UserSettings};
use sanitize::{BLOCK_MAX_CHARS, SHORT_FIELD_MAX_CHARS, block, single_line};

/// Everything the prompt depends on apart from the clock.
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    /// Display name of the model; the opening line names it.
    pub model_name: &'a str,
    pub profile: &'a ModelProfile,
    pub settings: &'a UserSettings,
    pub integration_status: &'a IntegrationStatus,
    /// The toolset has both `search` and `fetch_content` (computed before MCP tools are merged).
    pub has_web_tools: bool,
    /// One line per connected MCP server that contributed tools; `None` when none did.
    pub mcp_summary: Option<&'a str>,
    /// The user's enabled skills; the prompt narrows them for models without tools.
    pub skills: &'a [crate::settings::Skill],
    pub supports_tools: bool,
    pub project: Option<ProjectContext<'a>>,
}

/// The prompt in its two halves plus their legacy concatenation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptParts {
    /// Depends only on the input, never on `now`.
    pub stable: String,
    /// Exactly the date line.
    pub volatile: String,
    /// `stable`, a blank line, `volatile`.
    pub full: String,
}

/// Builds both halves of the system prompt for `now`, rendered in the user's zone `tz`.
pub fn create_parts(input: &PromptInput<'_>, now: DateTime<Utc>, tz: Tz) -> PromptParts {
    let stable = stable_prompt(input);
    let volatile = date_line(now, tz);
    let mut full = String::with_capacity(stable.len() + 2 + volatile.len());
    full.push_str(&stable);
    full.push_str("\n\n");
    full.push_str(&volatile);
    PromptParts {
        stable,
        volatile,
        full,
    }
}

/// The stable half alone; identical for any two calls with the same input.
pub fn stable_prompt(input: &PromptInput<'_>) -> String {
    let profile = input.profile;
    let project = input.project.as_ref().and_then(project_section);
    let web = input.has_web_tools.then_some(sections::WEB_TOOLS_FRAGMENT);
    let tools_override = profile_block(profile.tools_override.as_deref());
    let mcp = input.mcp_summary.and_then(mcp_block);
    let skills = crate::skills::skill_disclosure(input.skills, input.supports_tools);
    let link_previews_override = profile_block(profile.link_previews_override.as_deref());
    let addendum = profile_block(profile.chat_mode_addendum.as_deref());

    let variable_len = [
        &project,
        &tools_override,
        &mcp,
        &skills,
        &link_previews_override,
        &addendum,
    ]
    .iter()
    .map(|part| part.as_ref().map_or(0, String::len))
    .sum::<usize>();
    let mut out = String::with_capacity(STABLE_FIXED_LEN + variable_len + 512);

    out.push_str(sections::OPENING_BEFORE_MODEL);
    out.push_str(&single_line(input.model_name, SHORT_FIELD_MAX_CHARS));
    out.push_str(sections::OPENING_AFTER_MODEL);
    context::write_context_lines(&mut out, input.settings, input.integration_status);
    out.push('\n');
    // The project takes one template line with a blank line on each side; without it the line stays
    // empty and `# Context` reaches `# Tools` through a single blank line.
    push_fragment_line(&mut out, project.as_deref());
    out.push_str(project.as_ref().map_or("\n", |_| "\n\n"));
    out.push_str(sections::TOOLS_SECTION);
    out.push('\n');
    push_fragment_line(&mut out, web);
    out.push('\n');
    push_fragment_line(&mut out, tools_override.as_deref());
    out.push('\n');
    push_fragment_line(&mut out, mcp.as_deref());
    out.push('\n');
    push_fragment_line(&mut out, skills.as_deref());
    out.push_str("\n\n");
    out.push_str(sections::LINK_PREVIEWS_SECTION);
    out.push('\n');
    push_fragment_line(&mut out, link_previews_override.as_deref());
    out.push_str("\n\n");
    out.push_str(sections::OUTPUT_AND_LANGUAGE_BEFORE_NAME);
    out.push_str(input.settings.app_language.english_name());
    out.push_str(sections::LANGUAGE_AFTER_NAME_AND_STYLE);
    if let Some(addendum) = &addendum {
        out.push_str("\n\n");
        out.push_str(addendum);
    }
    out
}

/// Rough size of the constant text, so the buffer is allocated once.
const STABLE_FIXED_LEN: usize = sections::OPENING_BEFORE_MODEL.len()
    + sections::OPENING_AFTER_MODEL.len()
    + sections::TOOLS_SECTION.len()
    + sections::WEB_TOOLS_FRAGMENT.len()
    + sections::LINK_PREVIEWS_SECTION.len()
    + sections::OUTPUT_AND_LANGUAGE_BEFORE_NAME.len()
    + sections::LANGUAGE_AFTER_NAME_AND_STYLE.len();

/// A template line holding an optional fragment: empty when absent, otherwise a blank line and the
/// fragment. The caller ends the line.
fn push_fragment_line(out: &mut String, fragment: Option<&str>) {
    if let Some(fragment) = fragment {
        out.push('\n');
        out.push_str(fragment);
    }
}

fn profile_block(text: Option<&str>) -> Option<String> {
    text.map(|t| block(t, BLOCK_MAX_CHARS)).filter(|t| !t.is_empty())
}

/// The `## Connected MCP Servers` block, or `None` for a blank summary (nothing to introduce).
fn mcp_block(summary: &str) -> Option<String> {
    let summary = block(summary, BLOCK_MAX_CHARS);
    if summary.is_empty() {
        return None;
    }
    Some(format!(
        "{}\n{}\n{summary}\n{}",
        sections::MCP_HEADING,
        sections::MCP_INTRO,
        sections::MCP_CLOSING
    ))
}
