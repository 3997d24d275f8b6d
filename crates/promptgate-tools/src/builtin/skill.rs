//! `skill`: hands the model the full instructions of one of the user's enabled skills.

use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::settings::Skill;
use promptgate_core::skills::find_enabled_skill;
use promptgate_core::tools::args::SkillArgs;
use promptgate_core::tools::names;
use serde_json::{Value, json};

use super::{parse, shortened};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// Called with the slug of each skill the model loads; the turn uses it to widen the web budget when
/// the research skill is loaded.
pub type OnSkillLoaded = Arc<dyn Fn(&str) + Send + Sync>;

/// Names echoed back in an error are cut here, so a runaway argument does not fill the context.
const MAX_ECHOED_NAME_CHARS: usize = 200;

/// Loads skill instructions by slug from the send's skills.
pub struct SkillTool {
    skills: Vec<Skill>,
    on_loaded: Option<OnSkillLoaded>,
}

impl SkillTool {
    /// `skills` may include disabled ones; those are treated as unknown.
    pub fn new(skills: Vec<Skill>) -> Self {
        Self {
            skills,
            on_loaded: None,
        }
    }

    pub fn with_on_loaded(mut self, on_loaded: OnSkillLoaded) -> Self {
        self.on_loaded = Some(on_loaded);
        self
    }
}

#[async_trait]
impl ToolExecutor for SkillTool {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: SkillArgs = parse(names::SKILL, &input)?;
        let Some(skill) = find_enabled_skill(&self.skills, &args.name) else {
            return Err(ToolError::Failed(format!(
                "Skill \"{}\" was not found or is disabled.",
                shortened(&args.name, MAX_ECHOED_NAME_CHARS)
            )));
        };
        if let Some(on_loaded) = &self.on_loaded {
            on_loaded(&skill.slug);
        }
        Ok(ToolOutput {
            output: json!({"name": skill.slug, "instructions": skill.instructions}),
            model_text: Some(skill.instructions.clone()),
        })
    }
}
