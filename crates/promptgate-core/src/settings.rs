//! Domain types for what a user has configured. The store persists them, the server exposes them as
//! JSON (snake_case), and the prompt reads them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Everything on the user's settings page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UserSettings {
    /// How the assistant addresses the user. Empty means "not set".
    pub preferred_name: String,
    pub location: Location,
    pub localization: Localization,
    /// IANA time zone name, e.g. `Europe/Berlin`. The date line of the prompt is rendered in it.
    pub time_zone: String,
    pub app_language: AppLanguage,
    /// Offers the `addTasks` / `getTasks` / `deleteTasks` tools.
    pub experimental_tasks: bool,
    /// Offers the `search` and `fetch_content` tools.
    pub web_tools_enabled: bool,
    /// The user asked not to be offered integrations again.
    pub integrations_do_not_ask: bool,
    /// Model used when a send names none. Falls back to the configured default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Which tool calls wait for the user's approval, per MCP server and per tool; what is not named
    /// here follows the tool's default (see `promptgate_core::approval`).
    #[serde(skip_serializing_if = "crate::approval::ApprovalSettings::is_empty")]
    pub tool_approval: crate::approval::ApprovalSettings,
}

impl Default for UserSettings {
    fn default() -> Self {
        Self {
            preferred_name: String::new(),
            location: Location::default(),
            localization: Localization::default(),
            time_zone: "UTC".to_owned(),
            app_language: AppLanguage::En,
            experimental_tasks: false,
            web_tools_enabled: true,
            integrations_do_not_ask: false,
            default_model: None,
            tool_approval: Default::default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lng: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Localization {
    pub distance_unit: DistanceUnit,
    pub temperature_unit: TemperatureUnit,
    pub time_format: TimeFormat,
    /// ISO 4217 code, upper case (`USD`, `EUR`).
    pub currency: String,
}

impl Default for Localization {
    fn default() -> Self {
        Self {
            distance_unit: DistanceUnit::Imperial,
            temperature_unit: TemperatureUnit::F,
            time_format: TimeFormat::H12,
            currency: "USD".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DistanceUnit {
    #[default]
    Imperial,
    Metric,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemperatureUnit {
    #[default]
    F,
    C,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TimeFormat {
    #[default]
    #[serde(rename = "12h")]
    H12,
    #[serde(rename = "24h")]
    H24,
}

impl DistanceUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Imperial => "imperial",
            Self::Metric => "metric",
        }
    }
}

impl TemperatureUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F => "f",
            Self::C => "c",
        }
    }
}

impl TimeFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::H12 => "12h",
            Self::H24 => "24h",
        }
    }
}

/// The language of the app's UI; the prompt's language fallback names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AppLanguage {
    #[default]
    #[serde(rename = "en")]
    En,
    #[serde(rename = "de")]
    De,
    #[serde(rename = "fr")]
    Fr,
    #[serde(rename = "es")]
    Es,
    #[serde(rename = "pt-BR")]
    PtBr,
    #[serde(rename = "ja")]
    Ja,
    /// Pseudo-locale used to test translations; the model is told English.
    #[serde(rename = "en-XA")]
    EnXa,
}

impl AppLanguage {
    pub const ALL: [AppLanguage; 7] = [
        Self::En,
        Self::De,
        Self::Fr,
        Self::Es,
        Self::PtBr,
        Self::Ja,
        Self::EnXa,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::De => "de",
            Self::Fr => "fr",
            Self::Es => "es",
            Self::PtBr => "pt-BR",
            Self::Ja => "ja",
            Self::EnXa => "en-XA",
        }
    }

    /// The language's name in English, as the prompt's fallback rule names it.
    pub fn english_name(self) -> &'static str {
        match self {
            Self::En | Self::EnXa => "English",
            Self::De => "German",
            Self::Fr => "French",
            Self::Es => "Spanish",
            Self::PtBr => "Brazilian Portuguese",
            Self::Ja => "Japanese",
        }
    }
}

/// The two integration providers.
// Named apart from the model providers of the config file; the API's schema keeps its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Provider")]
pub enum IntegrationProvider {
    Google,
    Microsoft,
}

impl IntegrationProvider {
    pub const ALL: [IntegrationProvider; 2] = [Self::Google, Self::Microsoft];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Google => "google",
            Self::Microsoft => "microsoft",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "google" => Some(Self::Google),
            "microsoft" => Some(Self::Microsoft),
            _ => None,
        }
    }
}

/// Connection state of one integration. `connected` means tokens exist; `enabled` means the user
/// wants its tools offered. Only connected *and* enabled contributes tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IntegrationState {
    pub connected: bool,
    pub enabled: bool,
}

impl IntegrationState {
    pub fn usable(self) -> bool {
        self.connected && self.enabled
    }
}

/// What the prompt's `Integration status:` line is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntegrationStatus {
    pub google: IntegrationState,
    pub microsoft: IntegrationState,
    pub do_not_ask: bool,
}

impl IntegrationStatus {
    /// `READY`, or the applicable flags in fixed order joined by `, `.
    pub fn render(&self) -> String {
        let mut flags = Vec::new();
        if self.google.connected && !self.google.enabled {
            flags.push("GOOGLE_DISABLED");
        }
        if self.microsoft.connected && !self.microsoft.enabled {
            flags.push("MICROSOFT_DISABLED");
        }
        if self.do_not_ask {
            flags.push("PROMPTS_DISABLED");
        }
        if flags.is_empty() {
            "READY".to_owned()
        } else {
            flags.join(", ")
        }
    }
}

/// How a model's turns are composed (see the prompt module).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Legacy,
    Harness,
}

/// Per-model tuning. Every field is optional; absent fields take the documented defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelProfile {
    /// Sampling temperature; default 0.2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Upper bound on model steps in one turn; default 20.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Attempts for the empty-response retry; default 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Tool steps after which the preventive nudge is sent; default 6.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_threshold: Option<u32>,
    /// Extra text appended at the end of `# Tools`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_override: Option<String>,
    /// Extra text appended after `## Link Previews`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_previews_override: Option<String>,
    /// Extra text appended after the conversation style.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_mode_addendum: Option<String>,
    /// Appends `citation_reinforcement_prompt` to the system prompt of every step after a tool step.
    pub citation_reinforcement_enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citation_reinforcement_prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_final_step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_preventive: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_retry: Option<String>,
    /// Extra fields merged into every upstream request body for this model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ModelProfile {
    pub const DEFAULT_TEMPERATURE: f64 = 0.2;
    pub const DEFAULT_MAX_STEPS: u32 = 20;
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;
    pub const DEFAULT_NUDGE_THRESHOLD: u32 = 6;

    pub fn temperature(&self) -> f64 {
        self.temperature.unwrap_or(Self::DEFAULT_TEMPERATURE)
    }
    pub fn max_steps(&self) -> u32 {
        self.max_steps.unwrap_or(Self::DEFAULT_MAX_STEPS).max(1)
    }
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(Self::DEFAULT_MAX_ATTEMPTS).max(1)
    }
    pub fn nudge_threshold(&self) -> u32 {
        self.nudge_threshold.unwrap_or(Self::DEFAULT_NUDGE_THRESHOLD)
    }
}

/// A model a user can chat with. `id` is what sends and URLs use; `upstream_model` is what the provider
/// is asked for.
// The default (an empty definition without tools) lets tests build one field by field; a plain comment
// keeps it out of the published API description.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Model {
    pub id: String,
    /// Display name; the prompt names the model with it.
    pub name: String,
    /// Name of a provider in the config file (`demo` is the built-in offline model).
    pub provider: String,
    /// Model id sent to the provider.
    pub upstream_model: String,
    /// 0 = the model cannot call tools; anything else = it can.
    pub tool_usage: i32,
    pub engine: Engine,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<i64>,
    pub supports_images: bool,
    pub supports_parallel_tool_calls: bool,
    /// Extract `<think>…</think>` from the text stream as reasoning.
    pub extract_think_tags: bool,
    /// With `extract_think_tags`: the response starts inside a reasoning block.
    pub start_with_reasoning: bool,
    /// Reasoning effort passed upstream (`low`, `medium`, `high`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub profile: ModelProfile,
    /// Models (ids) that answer instead, in order, when this one's provider fails before the
    /// answer's first token (connection error, timeout, 429, 5xx).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
    /// Seeded from the config file; read-only through the API.
    pub system: bool,
}

impl Model {
    pub fn supports_tools(&self) -> bool {
        self.tool_usage != 0
    }
}

/// A project groups threads and carries instructions for all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Project {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

// A skill as a user writes it: the body of `POST /v1/skills` and `PUT /v1/skills/{id}`, a
// scenario file's skill, and what the store creates or replaces a skill from (the id is the store's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSkill {
    /// `[A-Za-z0-9_-]{1,64}`, unique per user.
    pub slug: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub instructions: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
    #[serde(default)]
    pub renders_widgets: bool,
}

fn enabled() -> bool {
    true
}

/// A skill as the prompt and the `skill` tool see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Skill {
    pub id: String,
    /// The token users type (`/research`) and the name the `skill` tool takes. `[A-Za-z0-9_-]+`.
    pub slug: String,
    pub name: String,
    pub description: String,
    pub instructions: String,
    pub enabled: bool,
    /// The skill teaches an inline widget; such skills are still disclosed to models without tools.
    pub renders_widgets: bool,
}
