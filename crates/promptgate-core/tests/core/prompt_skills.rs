//! Slash tokens and which skills a send discloses or loads.

use crate::prompt_support::{default_skills, skill};
use promptgate_core::skills::{
    find_enabled_skill, resolve_skill_instructions, select_prompt_skills, skill_disclosure,
};

#[test]
fn tokens_load_enabled_skills_once_in_first_seen_order() {
    let skills = default_skills();
    let loaded = resolve_skill_instructions("/weather then /research and /weather again", &skills);
    assert_eq!(
        loaded,
        [skills[1].instructions.clone(), skills[0].instructions.clone()]
    );
}

#[test]
fn unknown_disabled_and_differently_cased_slugs_load_nothing() {
    let skills = default_skills();
    assert!(
        resolve_skill_instructions("/haiku please", &skills).is_empty(),
        "disabled"
    );
    assert!(
        resolve_skill_instructions("/Research this", &skills).is_empty(),
        "slugs are case-sensitive"
    );
    assert!(resolve_skill_instructions("/nope", &skills).is_empty());
    assert!(resolve_skill_instructions("", &skills).is_empty());
    assert!(resolve_skill_instructions("/research", &[]).is_empty());
}

#[test]
fn tokens_must_stand_alone() {
    let skills = default_skills();
    for text in [
        "/research.",
        "see docs/research",
        "https://example.com/research",
        "a/research/b",
    ] {
        assert!(resolve_skill_instructions(text, &skills).is_empty(), "{text}");
    }
    assert_eq!(
        resolve_skill_instructions("compare these\n/research", &skills).len(),
        1
    );
}

#[test]
fn tool_capable_models_see_every_enabled_skill_others_only_widget_skills() {
    let skills = default_skills();
    let slugs = |tools| {
        select_prompt_skills(&skills, tools)
            .iter()
            .map(|s| s.slug.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(slugs(true), ["research", "weather", "link-preview"]);
    assert_eq!(slugs(false), ["weather", "link-preview"]);
}

#[test]
fn disclosure_is_absent_when_no_skill_qualifies() {
    assert_eq!(skill_disclosure(&[], true), None);
    assert_eq!(
        skill_disclosure(&[skill("research", "d", "i", false)], false),
        None
    );
}

#[test]
fn catalog_descriptions_are_collapsed_to_one_line() {
    let listing = skill_disclosure(
        &[skill("notes", "  Meeting\n\n notes\t taker ", "i", false)],
        true,
    )
    .unwrap();
    assert!(listing.ends_with("\n- notes: Meeting notes taker"), "{listing}");
}

#[test]
fn the_skill_tool_finds_skills_by_trimmed_slug_with_an_optional_slash() {
    let skills = default_skills();
    assert_eq!(
        find_enabled_skill(&skills, " /research ").map(|s| s.slug.as_str()),
        Some("research")
    );
    assert_eq!(
        find_enabled_skill(&skills, "weather").map(|s| s.slug.as_str()),
        Some("weather")
    );
    assert!(
        find_enabled_skill(&skills, "//research").is_none(),
        "only one slash is stripped"
    );
    assert!(find_enabled_skill(&skills, "Weather").is_none());
    assert!(find_enabled_skill(&skills, "haiku").is_none(), "disabled");
}
