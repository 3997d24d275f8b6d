//! `[[providers]]`: the model providers a model can name, and how each is reached.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    pub name: String,
    pub kind: ProviderKind,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (the key itself never goes in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The provider works without a key (a local server): an unset `api_key_env` variable is not an
    /// error then.
    #[serde(default)]
    pub keyless: bool,
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    #[serde(default)]
    pub first_byte_timeout_secs: Option<u64>,
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// How long an answer asked for whole (a facade client that did not ask to stream) may take.
    #[serde(default)]
    pub whole_answer_timeout_secs: Option<u64>,
    /// OpenAI-compatible only: `false` streams every answer, for a server that refuses
    /// `stream: false` (default `true`).
    #[serde(default)]
    pub whole_answers: Option<bool>,
    /// Anthropic only: the answer's length limit (`max_tokens`, which its API requires).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Anthropic only: how a model's `reasoning` setting turns into thinking.
    #[serde(default)]
    pub thinking: Option<ThinkingStyle>,
    /// Upstream request fields users (a model's `provider_options`) and facade callers may set on
    /// this provider beyond the open ones (`promptgate_core::request_fields::OPEN_FIELDS`).
    #[serde(default)]
    pub allow_request_fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat-completions endpoint.
    Openai,
    /// Anthropic's Messages API, with prompt caching.
    Anthropic,
    /// The built-in deterministic offline model.
    Demo,
}

/// How an Anthropic provider asks for thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingStyle {
    /// The model decides how much to think; the reasoning setting is its effort (current models).
    Adaptive,
    /// A fixed thinking budget per reasoning level (models before adaptive thinking).
    Budget,
}
