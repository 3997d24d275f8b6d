//! Whole prompts, reviewed once and pinned. A wording change shows up here as a diff to review.

use crate::prompt_support::{Setup, july_10_noon, languages};
use chrono_tz::Tz;
use promptgate_core::prompt::{
    NotesInput, client_identity_block, compose_harness, compose_legacy, create_parts, volatile_notes,
};

fn full(setup: &Setup) -> String {
    create_parts(&setup.input(), july_10_noon(), Tz::UTC).full
}

#[test]
fn bare_prompt() {
    insta::assert_snapshot!("bare", full(&Setup::bare()));
}

#[test]
fn every_fragment_on() {
    let setup = Setup::everything();
    let parts = create_parts(&setup.input(), july_10_noon(), Tz::America__New_York);
    insta::assert_snapshot!("every_fragment", parts.full);
}

#[test]
fn model_without_tools_gets_widget_skills_with_full_instructions() {
    let setup = Setup {
        supports_tools: false,
        has_web_tools: false,
        mcp_summary: None,
        ..Setup::everything()
    };
    insta::assert_snapshot!("no_tools_with_skills", full(&setup));
}

/// A project's section, with searchable sibling chats (the search hint) and without.
#[test]
fn project_with_and_without_siblings() {
    for (siblings, name) in [(2, "project_with_siblings"), (0, "project_without_siblings")] {
        let setup = Setup {
            project: Setup::everything().project,
            siblings,
            ..Setup::bare()
        };
        insta::assert_snapshot!(name, full(&setup));
    }
}

#[test]
fn each_app_language() {
    for language in languages() {
        let mut setup = Setup::bare();
        setup.settings.app_language = language;
        insta::assert_snapshot!(format!("language_{}", language.code()), full(&setup));
    }
}

#[test]
fn harness_composition_with_tools() {
    let setup = Setup::everything();
    let parts = create_parts(&setup.input(), july_10_noon(), Tz::Europe__Berlin);
    let identity = client_identity_block("web", Some("1.4.2"));
    insta::assert_snapshot!(
        "harness_with_tools",
        compose_harness(&parts.stable, &identity, true, &parts.volatile)
    );
}

#[test]
fn harness_composition_without_tools() {
    let setup = Setup {
        supports_tools: false,
        ..Setup::bare()
    };
    let parts = create_parts(&setup.input(), july_10_noon(), Tz::UTC);
    let identity = client_identity_block("tauri", None);
    insta::assert_snapshot!(
        "harness_without_tools",
        compose_harness(&parts.stable, &identity, false, &parts.volatile)
    );
}

#[test]
fn legacy_composition_with_every_note() {
    let setup = Setup::bare();
    let parts = create_parts(&setup.input(), july_10_noon(), Tz::Asia__Kolkata);
    let answers = [promptgate_core::prompt::AskResponse {
        prompt: "Which city?".to_owned(),
        answer: promptgate_core::prompt::AskAnswer::Chose(vec!["Lisbon".to_owned()]),
    }];
    let notes = volatile_notes(NotesInput {
        date_line: &parts.volatile,
        voice_mode: true,
        skill_instructions: vec!["Plan sub-questions first.".to_owned()],
        ask_responses: &answers,
    });
    insta::assert_snapshot!("legacy_with_notes", compose_legacy(&parts.stable, &notes));
}
