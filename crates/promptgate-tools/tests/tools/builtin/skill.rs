//! `skill`: loading a skill's instructions by name or slash token, and what is not loaded.

use std::sync::{Arc, Mutex};

use promptgate_core::settings::Skill;
use promptgate_tools::builtin::SkillTool;

use crate::builtin::common::*;

fn skill(slug: &str, enabled: bool) -> Skill {
    Skill {
        id: format!("id-{slug}"),
        slug: slug.to_owned(),
        name: format!("The {slug} skill"),
        description: format!("Helps with {slug}."),
        instructions: format!("When doing {slug}, work step by step."),
        enabled,
        renders_widgets: false,
    }
}

/// A skill tool over `research` and `notes` (enabled) and `drafts` (disabled) that records every slug
/// its callback is called with.
fn tool() -> (SkillTool, Arc<Mutex<Vec<String>>>) {
    let loaded = Arc::new(Mutex::new(Vec::new()));
    let seen = loaded.clone();
    let tool = SkillTool::new(vec![
        skill("research", true),
        skill("notes", true),
        skill("drafts", false),
    ])
    .with_on_loaded(Arc::new(move |slug: &str| {
        seen.lock().unwrap().push(slug.to_owned())
    }));
    (tool, loaded)
}

#[tokio::test]
async fn loading_a_skill_returns_its_instructions_and_reports_the_slug_once() {
    let (tool, loaded) = tool();

    let output = run(&tool, json!({"name": "research"})).await;

    assert_eq!(
        output.model_text.as_deref(),
        Some("When doing research, work step by step.")
    );
    assert_eq!(
        output.output,
        json!({"name": "research", "instructions": "When doing research, work step by step."})
    );
    assert_eq!(*loaded.lock().unwrap(), ["research"]);
}

#[tokio::test]
async fn a_slash_token_and_surrounding_space_name_the_same_skill() {
    let (tool, loaded) = tool();
    let output = run(&tool, json!({"name": "  /notes "})).await;
    assert_eq!(output.output["name"], json!("notes"));
    assert_eq!(*loaded.lock().unwrap(), ["notes"]);
}

#[tokio::test]
async fn unknown_disabled_and_differently_cased_skills_are_not_loaded() {
    let (tool, loaded) = tool();
    for name in ["weather", "drafts", "Research", "//research"] {
        let error = refused(&tool, json!({"name": name})).await;
        assert_eq!(
            error,
            ToolError::Failed(format!("Skill \"{name}\" was not found or is disabled."))
        );
    }
    assert!(loaded.lock().unwrap().is_empty(), "no callback for a failed load");
}

#[tokio::test]
async fn works_without_a_callback_and_rejects_missing_names() {
    let tool = SkillTool::new(vec![skill("notes", true)]);
    assert_eq!(
        run(&tool, json!({"name": "notes"})).await.output["name"],
        json!("notes")
    );
    let error = refused(&tool, json!({})).await;
    assert!(
        matches!(&error, ToolError::InvalidArguments(m) if m.contains("name")),
        "{error}"
    );
}
