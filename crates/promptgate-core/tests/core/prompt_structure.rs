//! The structural contract of the stable prompt: section order, the ordering invariants, the blank-line
//! facts of the line template, and what each conditional fragment contributes.

use crate::prompt_support::{Setup, july_10_noon, skill, top_level_headings};
use chrono_tz::Tz;
use promptgate_core::prompt::{PromptParts, create_parts, stable_prompt};
use promptgate_core::settings::{AppLanguage, IntegrationState, Location};

const LAST_TOOL_RULE: &str = "Don't mention tool names unless the user asks about them.";
const LAST_LINK_PREVIEW_BULLET: &str = "- For a product, link the manufacturer's page.";

fn parts(setup: &Setup) -> PromptParts {
    create_parts(&setup.input(), july_10_noon(), Tz::UTC)
}

/// The text strictly between the first `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).map(|i| i + start.len());
    assert!(from.is_some(), "{start:?} missing from {text}");
    let from = from.unwrap_or_default();
    let to = text[from..].find(end).map(|i| from + i);
    assert!(to.is_some(), "{end:?} missing after {start:?} in {text}");
    &text[from..to.unwrap_or(from)]
}

fn pos(text: &str, needle: &str) -> usize {
    let found = text.find(needle);
    assert!(found.is_some(), "{needle:?} missing from {text}");
    found.unwrap_or_default()
}

#[test]
fn sections_come_in_the_documented_order() {
    let expected_without_project = [
        "# Principles",
        "# Context",
        "# Tools",
        "# Output Format",
        "# Language",
        "# Conversation Style (follow these instructions)",
    ];
    assert_eq!(
        top_level_headings(&parts(&Setup::bare()).full),
        expected_without_project
    );

    let mut with_project = expected_without_project.map(str::to_owned).to_vec();
    with_project.insert(2, "# Project:".to_owned());
    assert_eq!(
        top_level_headings(&parts(&Setup::everything()).full),
        with_project
    );
}

#[test]
fn opening_names_the_model_and_sets_reasoning_effort() {
    let stable = parts(&Setup::bare()).stable;
    let mut lines = stable.lines();
    let opening = lines.next().unwrap();
    assert!(opening.contains("**Demo Model**"), "{opening}");
    assert!(opening.contains("[N]"));
    assert_eq!(lines.next(), Some("Reasoning: low"));
    assert_eq!(lines.next(), Some(""));
    assert_eq!(lines.next(), Some("# Principles"));
}

#[test]
fn ordering_invariants_hold_with_every_fragment() {
    for setup in [Setup::bare(), Setup::everything()] {
        let PromptParts {
            stable,
            volatile,
            full,
        } = parts(&setup);
        let stamp = pos(&full, "Current date/time: ");
        for heading in ["# Output Format", "# Tools", "# Conversation Style"] {
            assert!(
                pos(&full, heading) < stamp,
                "{heading} must precede the timestamp"
            );
        }
        assert!(pos(&full, "# Context") < pos(&full, "# Tools"));
        assert!(pos(&full, "Integration status:") < pos(&full, "# Tools"));
        assert!(pos(&full, "User location:") < stamp);
        assert!(!stable.contains("Current date/time"));
        assert!(
            !full.contains("# Environment"),
            "the environment block belongs to the harness only"
        );
        assert!(!full.contains("# Widget Components"));
        assert_eq!(full, format!("{stable}\n\n{volatile}"));
        assert!(volatile.starts_with("Current date/time: ") && !volatile.contains('\n'));
    }
    let full = parts(&Setup::everything()).full;
    assert!(pos(&full, "User name: Ada") < pos(&full, "Current date/time"));
}

#[test]
fn widget_instruction_bodies_stay_out_for_tool_capable_models() {
    let full = parts(&Setup::everything()).full;
    assert!(
        !full.contains("<widget:weather"),
        "instructions are loaded through the skill tool"
    );
    assert!(!full.contains("Plan sub-questions"));
}

#[test]
fn conversation_style_is_last_and_the_addendum_follows_it_after_a_blank_line() {
    let bare = parts(&Setup::bare()).stable;
    assert!(
        bare.ends_with("- After using tools, cite what you took from them with [N]."),
        "{bare}"
    );
    let everything = parts(&Setup::everything()).stable;
    assert!(everything.ends_with("[N].\n\nKeep greetings to a single short line."));
}

#[test]
fn five_blank_lines_separate_the_tool_rules_from_link_previews_when_no_fragment_is_present() {
    let stable = parts(&Setup::bare()).stable;
    assert_eq!(
        between(&stable, LAST_TOOL_RULE, "## Link Previews"),
        "\n\n\n\n\n\n"
    );
}

/// The fragments as the all-on prompt renders them, in their slot order.
fn all_fragments() -> Vec<String> {
    let stable = parts(&Setup::everything()).stable;
    let segment = between(&stable, LAST_TOOL_RULE, "## Link Previews");
    assert!(segment.starts_with("\n\n") && segment.ends_with("\n\n"));
    assert!(
        !segment.contains("\n\n\n"),
        "exactly one blank line between fragments: {segment:?}"
    );
    segment
        .trim_matches('\n')
        .split("\n\n")
        .map(str::to_owned)
        .collect()
}

#[test]
fn with_every_fragment_present_each_is_separated_by_exactly_one_blank_line() {
    let fragments = all_fragments();
    assert_eq!(fragments.len(), 4, "{fragments:#?}");
    assert!(fragments[0].starts_with("Web lookups use `search`"));
    assert_eq!(
        fragments[1],
        "Prefer the calendar tools for anything about meetings."
    );
    assert!(fragments[2].starts_with("## Connected MCP Servers\n"));
    assert!(fragments[3].starts_with("## Skills\n"));
}

#[test]
fn an_absent_fragment_leaves_its_template_line_empty() {
    let fragments = all_fragments();
    for mask in 0u8..16 {
        let on = |bit: u8| mask & (1 << bit) != 0;
        let everything = Setup::everything();
        let setup = Setup {
            has_web_tools: on(0),
            profile: promptgate_core::settings::ModelProfile {
                tools_override: if on(1) {
                    everything.profile.tools_override.clone()
                } else {
                    None
                },
                ..everything.profile.clone()
            },
            mcp_summary: if on(2) {
                everything.mcp_summary.clone()
            } else {
                None
            },
            skills: if on(3) {
                everything.skills.clone()
            } else {
                Vec::new()
            },
            ..everything
        };
        let mut expected = String::from("\n");
        for (bit, fragment) in fragments.iter().enumerate() {
            if on(bit as u8) {
                expected.push('\n');
                expected.push_str(fragment);
            }
            expected.push('\n');
        }
        expected.push('\n');
        let stable = parts(&setup).stable;
        assert_eq!(
            between(&stable, LAST_TOOL_RULE, "## Link Previews"),
            expected,
            "fragment mask {mask:04b}"
        );
    }
}

#[test]
fn one_blank_line_or_the_project_section_separates_context_from_tools() {
    let bare = parts(&Setup::bare()).stable;
    assert_eq!(between(&bare, "Integration status: READY", "# Tools"), "\n\n");

    let everything = parts(&Setup::everything()).stable;
    let gap = between(&everything, "Integration status: GOOGLE_DISABLED", "# Tools");
    assert!(gap.starts_with("\n\n# Project: Garden redesign\n\n"), "{gap:?}");
    assert!(gap.ends_with("nothing was said.\n\n"), "{gap:?}");
    assert!(!gap.contains("\n\n\n"));
}

#[test]
fn link_previews_reach_output_format_through_two_blank_lines_or_the_override() {
    let bare = parts(&Setup::bare()).stable;
    assert_eq!(
        between(&bare, LAST_LINK_PREVIEW_BULLET, "# Output Format"),
        "\n\n\n"
    );
    let everything = parts(&Setup::everything()).stable;
    assert_eq!(
        between(&everything, LAST_LINK_PREVIEW_BULLET, "# Output Format"),
        "\n\nNever preview links to paywalled news sites.\n\n"
    );
}

#[test]
fn context_lines_describe_the_user() {
    let stable = parts(&Setup::everything()).stable;
    assert_eq!(
        between(&stable, "# Context\n", "\n\n"),
        "User name: Ada\nUser location: New York, NY (40.7, -74)\nUser preferences: metric, c, 24h, EUR\n\
         Integration status: GOOGLE_DISABLED"
    );
}

#[test]
fn an_unset_name_leaves_no_name_line_and_defaults_fill_the_preferences() {
    let stable = parts(&Setup::bare()).stable;
    assert_eq!(
        between(&stable, "# Context\n", "\n\n"),
        "User location: Unknown (ask before using location-based features)\n\
         User preferences: imperial, f, 12h, USD\nIntegration status: READY"
    );
}

fn location_line(location: Location) -> String {
    let mut setup = Setup::bare();
    setup.settings.location = location;
    let stable = stable_prompt(&setup.input());
    stable
        .lines()
        .find(|l| l.starts_with("User location: "))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn coordinates_need_both_values_non_zero() {
    let named = |lat, lng| Location {
        name: Some("Quito".to_owned()),
        lat,
        lng,
    };
    assert_eq!(
        location_line(named(Some(-0.18), Some(-78.47))),
        "User location: Quito (-0.18, -78.47)"
    );
    assert_eq!(
        location_line(named(Some(0.0), Some(-78.47))),
        "User location: Quito"
    );
    assert_eq!(
        location_line(named(Some(-0.18), Some(0.0))),
        "User location: Quito"
    );
    assert_eq!(location_line(named(None, Some(-78.47))), "User location: Quito");
    assert_eq!(
        location_line(named(Some(f64::NAN), Some(-78.47))),
        "User location: Quito"
    );
    assert_eq!(
        location_line(named(Some(51.5), Some(-0.1275))),
        "User location: Quito (51.5, -0.1275)"
    );
    assert_eq!(
        location_line(named(Some(10.0), Some(20.0))),
        "User location: Quito (10, 20)"
    );
}

#[test]
fn a_missing_or_blank_location_name_asks_before_location_features() {
    let unknown = "User location: Unknown (ask before using location-based features)";
    assert_eq!(
        location_line(Location {
            name: None,
            lat: Some(1.0),
            lng: Some(2.0)
        }),
        unknown
    );
    assert_eq!(
        location_line(Location {
            name: Some(" \n ".to_owned()),
            lat: None,
            lng: None
        }),
        unknown
    );
}

#[test]
fn integration_status_line_renders_the_flags() {
    let mut setup = Setup::bare();
    setup.integrations.microsoft = IntegrationState {
        connected: true,
        enabled: false,
    };
    setup.integrations.do_not_ask = true;
    let stable = stable_prompt(&setup.input());
    assert!(stable.contains("\nIntegration status: MICROSOFT_DISABLED, PROMPTS_DISABLED\n"));
}

#[test]
fn project_section_needs_instructions_or_searchable_chats() {
    let mut setup = Setup {
        project: Setup::everything().project,
        siblings: 0,
        ..Setup::bare()
    };
    if let Some(project) = setup.project.as_mut() {
        project.instructions = Some("  \n\t ".to_owned());
    }
    assert!(
        !stable_prompt(&setup.input()).contains("# Project:"),
        "blank instructions and no siblings"
    );

    setup.siblings = 4;
    let stable = stable_prompt(&setup.input());
    assert!(stable.contains("# Project: Garden redesign"));
    assert!(stable.contains("## Other chats in this project\n"));
    assert!(stable.contains("`search_project_chats`"));
    assert!(!stable.contains("## Project instructions"));

    setup.supports_tools = false;
    assert!(
        !stable_prompt(&setup.input()).contains("# Project:"),
        "nothing to search without tools"
    );
}

#[test]
fn project_instructions_are_trimmed_and_siblings_add_the_search_hint() {
    let mut setup = Setup {
        project: Setup::everything().project,
        siblings: 0,
        ..Setup::bare()
    };
    if let Some(project) = setup.project.as_mut() {
        project.instructions = Some("\n\n  Reply in haiku.  \n".to_owned());
    }
    let stable = stable_prompt(&setup.input());
    assert!(
        stable.contains("## Project instructions\nReply in haiku.\n\n# Tools"),
        "{stable}"
    );
    assert!(!stable.contains("## Other chats"));
}

#[test]
fn web_tools_fragment_appears_only_with_web_tools() {
    let with = stable_prompt(
        &Setup {
            has_web_tools: true,
            ..Setup::bare()
        }
        .input(),
    );
    assert!(with.contains("`search`") && with.contains("`fetch_content`"));
    let without = stable_prompt(&Setup::bare().input());
    assert!(!without.contains("`fetch_content`"));
}

#[test]
fn mcp_block_has_heading_intro_summary_and_closing() {
    let fragments = all_fragments();
    let lines: Vec<&str> = fragments[2].lines().collect();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0], "## Connected MCP Servers");
    assert!(lines[1].contains("prefix"));
    assert_eq!(lines[2], "- github: issues, pull requests and repository search");
}

#[test]
fn a_blank_mcp_summary_adds_no_block() {
    let setup = Setup {
        mcp_summary: Some(" \n ".to_owned()),
        ..Setup::bare()
    };
    let stable = stable_prompt(&setup.input());
    assert!(!stable.contains("## Connected MCP Servers"));
    assert_eq!(
        between(&stable, LAST_TOOL_RULE, "## Link Previews"),
        "\n\n\n\n\n\n"
    );
}

#[test]
fn skill_listing_names_enabled_skills_and_points_to_the_skill_tool() {
    let fragments = all_fragments();
    let listing = &fragments[3];
    assert!(listing.contains("Use the `skill` tool"));
    assert!(listing.contains("\n- research: Deep research: several searches, then a cited synthesis.\n"));
    assert!(listing.ends_with("\n- link-preview: Shows a preview card for a URL."));
    assert!(!listing.contains("haiku"), "disabled skills are not disclosed");
}

#[test]
fn models_without_tools_get_widget_skills_with_their_instructions() {
    let setup = Setup {
        supports_tools: false,
        ..Setup::everything()
    };
    let stable = stable_prompt(&setup.input());
    let skills = between(&stable, "## Skills\n", "\n\n## Link Previews");
    assert!(!skills.contains("Use the `skill` tool"));
    assert!(
        !skills.contains("research"),
        "only widget skills are disclosed without tools"
    );
    assert!(skills.starts_with("- weather: Shows a weather card for a place.\n- link-preview:"));
    assert!(
        skills.contains("\n\n### weather\nEmit <widget:weather location=\"...\"/>.\n\n### link-preview\n")
    );

    let no_widgets = Setup {
        supports_tools: false,
        skills: vec![skill("research", "d", "i", false)],
        ..Setup::bare()
    };
    assert!(!stable_prompt(&no_widgets.input()).contains("## Skills"));
}

#[test]
fn language_section_names_the_app_language_in_english() {
    for language in AppLanguage::ALL {
        let mut setup = Setup::bare();
        setup.settings.app_language = language;
        let stable = stable_prompt(&setup.input());
        let section = between(&stable, "# Language\n", "\n\n");
        assert!(
            section.contains(&format!("use {},", language.english_name())),
            "{section}"
        );
    }
}

#[test]
fn output_format_states_the_citation_rules_with_examples() {
    let stable = parts(&Setup::bare()).stable;
    let section = between(&stable, "# Output Format\n", "\n\n");
    assert!(section.contains("<widget:citation>") && section.contains("【1】"));
    assert!(section.contains("footnotes"));
    assert_eq!(section.matches("\nCorrect: ").count(), 1);
    assert_eq!(section.matches("\nWrong: ").count(), 4);
    for latex in ["`$…$`", "`$$…$$`", "`\\(…\\)`", "`\\[…\\]`"] {
        assert!(section.contains(latex), "{latex}");
    }
}
