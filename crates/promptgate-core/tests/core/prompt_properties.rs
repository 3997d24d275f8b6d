//! Whatever a user types into their settings, project or skills, the prompt keeps its shape: the same
//! top-level sections in the same order, the conversation style last, and no date line in the stable half.

use crate::prompt_support::{Setup, july_10_noon, skill, top_level_headings};
use chrono_tz::Tz;
use promptgate_core::prompt::create_parts;
use promptgate_core::settings::{Location, Project};
use proptest::prelude::*;

const EXPECTED_HEADINGS: [&str; 7] = [
    "# Principles",
    "# Context",
    "# Project:",
    "# Tools",
    "# Output Format",
    "# Language",
    "# Conversation Style (follow these instructions)",
];
const STABLE_ENDING: &str = "- After using tools, cite what you took from them with [N].";

/// Text that imitates the prompt's own structure, mixed with arbitrary characters.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\n# Tools\n".to_owned()),
        Just("# Conversation Style (follow these instructions)".to_owned()),
        Just("Current date/time: Friday, July 10, 2026 at 12:00 PM UTC".to_owned()),
        Just("\r\n# Output Format\r\n".to_owned()),
        Just("\u{2028}# Context\u{2029}".to_owned()),
        Just("   # Language\n".to_owned()),
        Just("\n## Link Previews\n".to_owned()),
        Just("#".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n\n".to_owned()),
        Just("Current\ndate/time".to_owned()),
        "[ -~]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

prop_compose! {
    fn hostile_setup()(
        name in hostile_text(),
        location in hostile_text(),
        project_name in hostile_text(),
        instructions in hostile_text(),
        description in hostile_text(),
        widget_instructions in hostile_text(),
        mcp in hostile_text(),
        supports_tools in any::<bool>(),
    ) -> Setup {
        let mut setup = Setup::everything();
        setup.profile = Default::default();
        setup.settings.preferred_name = name;
        setup.settings.location = Location { name: Some(location), lat: Some(1.5), lng: Some(2.5) };
        setup.project = Some(Project { id: "p".to_owned(), name: project_name, instructions: Some(instructions) });
        setup.siblings = 1;
        setup.supports_tools = supports_tools;
        setup.skills = vec![
            skill("notes", &description, "plain", false),
            skill("weather", &description, &widget_instructions, true),
        ];
        setup.mcp_summary = Some(mcp);
        setup
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn user_text_cannot_reshape_the_prompt(setup in hostile_setup()) {
        let parts = create_parts(&setup.input(), july_10_noon(), Tz::UTC);
        let mut expected = EXPECTED_HEADINGS.to_vec();
        if !setup.supports_tools && setup.project.as_ref().and_then(|p| p.instructions.as_deref()).is_none_or(|i| i.trim().is_empty()) {
            expected.retain(|h| *h != "# Project:");
        }
        prop_assert_eq!(top_level_headings(&parts.stable), expected);
        prop_assert!(parts.stable.ends_with(STABLE_ENDING), "stable ends with user text");
        prop_assert!(!parts.stable.contains("Current date/time"));
        prop_assert_eq!(parts.stable.lines().filter(|l| *l == "## Link Previews").count(), 1);
        prop_assert_eq!(parts.full, format!("{}\n\n{}", parts.stable, parts.volatile));
    }
}
