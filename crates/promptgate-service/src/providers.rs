//! The configured model providers, resolved per send into a [`ChatModel`].

use std::collections::HashMap;
use std::sync::Arc;

use promptgate_core::request_fields::{OPEN_FIELDS, refusal_message, refused_fields, value_problem};
use promptgate_core::settings::Model;
use promptgate_llm::{Anthropic, ChatModel, DemoModel, OpenAiCompatible, ParserOptions};

use crate::ServiceError;

/// One model provider from the config file, ready to serve requests.
#[derive(Clone)]
pub struct ModelProvider {
    pub name: String,
    /// Empty for the demo provider.
    pub base_url: String,
    /// Only its hash is ever shown (in the harness signature).
    pub api_key: Option<String>,
    /// Request fields users and facade callers may set here beyond the open ones
    /// (`promptgate_core::request_fields`).
    pub allowed_request_fields: Vec<String>,
    pub client: ProviderClient,
}

#[derive(Clone)]
pub enum ProviderClient {
    Demo(DemoModel),
    OpenAi(OpenAiCompatible),
    /// Anthropic's Messages API; reasoning arrives as thinking blocks, so think-tag options do
    /// not apply.
    Anthropic(Anthropic),
}

impl ModelProvider {
    /// How a harness reaches this provider (it decides which fields identify the harness).
    pub fn harness_kind(&self) -> promptgate_core::prompt::HarnessKind {
        match self.client {
            ProviderClient::Anthropic(_) => promptgate_core::prompt::HarnessKind::Anthropic,
            ProviderClient::Demo(_) | ProviderClient::OpenAi(_) => {
                promptgate_core::prompt::HarnessKind::OpenAiCompat
            }
        }
    }

    /// The fields a model's profile adds to every upstream request. The operator's own models
    /// (the config file's) set what they like; a user's model only what users may set here: a
    /// field stored before it was closed to users is left out, with a warning.
    pub fn provider_options(&self, model: &Model) -> serde_json::Map<String, serde_json::Value> {
        let mut options = model.profile.provider_options.clone().unwrap_or_default();
        if model.system {
            return options;
        }
        let refused: Vec<String> =
            refused_fields(options.keys().map(String::as_str), &self.allowed_request_fields)
                .into_iter()
                .map(str::to_owned)
                .collect();
        for field in &refused {
            tracing::warn!(model = %model.id, field = %field, "a user model's provider option is not the user's to set; left out");
            options.remove(field);
        }
        options
    }

    /// The client for one model: per-model parsing options (think-tag extraction) apply here.
    pub fn model_client(&self, model: &Model) -> Arc<dyn ChatModel> {
        match &self.client {
            ProviderClient::Demo(demo) => Arc::new(demo.clone()),
            ProviderClient::OpenAi(client) => Arc::new(client.clone().with_parser_options(ParserOptions {
                think_tags: model.extract_think_tags,
                start_with_reasoning: model.start_with_reasoning,
            })),
            ProviderClient::Anthropic(client) => Arc::new(client.clone()),
        }
    }
}

/// Refuses upstream request fields a user or facade caller may not set on a provider whose
/// operator allowed `allowed` beyond the open ones.
pub fn check_request_fields(
    fields: &serde_json::Map<String, serde_json::Value>,
    allowed: &[String],
) -> Result<(), ServiceError> {
    let refused = refused_fields(fields.keys().map(String::as_str), allowed);
    if !refused.is_empty() {
        return Err(ServiceError::FieldsNotAllowed(refusal_message(&refused, allowed)));
    }
    let mut problems = fields
        .iter()
        .filter(|(field, _)| OPEN_FIELDS.contains(&field.as_str()))
        .filter_map(|(field, value)| value_problem(field, value).map(|why| format!("{field}: {why}")));
    match problems.next() {
        Some(problem) => Err(ServiceError::InvalidMessage(problem)),
        None => Ok(()),
    }
}

/// Providers by name.
#[derive(Clone, Default)]
pub struct Providers {
    by_name: HashMap<String, ModelProvider>,
}

impl Providers {
    pub fn new(providers: impl IntoIterator<Item = ModelProvider>) -> Self {
        Self {
            by_name: providers.into_iter().map(|p| (p.name.clone(), p)).collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&ModelProvider> {
        self.by_name.get(name)
    }
}
