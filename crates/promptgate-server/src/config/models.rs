//! `[[models]]`: the system models, in the shape users define their own with.

use promptgate_core::settings::{Engine, Model, ModelProfile};
use schemars::JsonSchema;
use serde::Deserialize;

/// A model as a user defines it. Omitted fields take their defaults.
// The one definition of a model's fields: `[[models]]` in the config file (seeded as read-only system
// models) and the body of `POST`/`PUT /v1/models` read the same shape with the same defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelInput")]
pub struct ModelDefinition {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// A provider name from the config file.
    pub provider: String,
    #[serde(default)]
    pub upstream_model: Option<String>,
    #[serde(default)]
    pub tool_usage: Option<i32>,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub context_window: Option<i64>,
    #[serde(default)]
    pub supports_images: bool,
    #[serde(default)]
    pub supports_parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub extract_think_tags: bool,
    #[serde(default)]
    pub start_with_reasoning: bool,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub profile: ModelProfile,
    /// Model ids that answer instead, in order, when this model's provider fails before the first
    /// token (connection error, timeout, 429, 5xx). At most 4.
    #[serde(default)]
    pub fallbacks: Vec<String>,
}

impl ModelDefinition {
    /// The model with every default filled in; `system` marks a model of the config file, which
    /// users can read but not change.
    pub fn into_model(self, system: bool) -> Model {
        Model {
            name: self.name.unwrap_or_else(|| self.id.clone()),
            upstream_model: self.upstream_model.unwrap_or_else(|| self.id.clone()),
            id: self.id,
            provider: self.provider,
            tool_usage: self.tool_usage.unwrap_or(1),
            engine: self.engine,
            context_window: self.context_window,
            supports_images: self.supports_images,
            supports_parallel_tool_calls: self.supports_parallel_tool_calls.unwrap_or(true),
            extract_think_tags: self.extract_think_tags,
            start_with_reasoning: self.start_with_reasoning,
            reasoning: self.reasoning,
            profile: self.profile,
            fallbacks: self.fallbacks,
            system,
        }
    }

    /// A system model seeded from the config file.
    pub fn to_model(&self) -> Model {
        self.clone().into_model(true)
    }
}
