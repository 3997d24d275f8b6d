//! The configured model providers, resolved per send into a [`ChatModel`].

use std::collections::HashMap;
use std::sync::Arc;

use promptgate_core::settings::Model;
use promptgate_llm::{Anthropic, ChatModel, DemoModel, OpenAiCompatible, ParserOptions};

/// One provider from the config file, ready to serve requests.
#[derive(Clone)]
pub struct Provider {
    pub name: String,
    /// Empty for the demo provider.
    pub base_url: String,
    /// Only its hash is ever shown (in the harness signature).
    pub api_key: Option<String>,
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

impl Provider {
    /// How a harness reaches this provider (it decides which fields identify the harness).
    pub fn harness_kind(&self) -> promptgate_core::prompt::HarnessKind {
        match self.client {
            ProviderClient::Anthropic(_) => promptgate_core::prompt::HarnessKind::Anthropic,
            ProviderClient::Demo(_) | ProviderClient::OpenAi(_) => {
                promptgate_core::prompt::HarnessKind::OpenAiCompat
            }
        }
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

/// Providers by name.
#[derive(Clone, Default)]
pub struct Providers {
    by_name: HashMap<String, Provider>,
}

impl Providers {
    pub fn new(providers: impl IntoIterator<Item = Provider>) -> Self {
        Self {
            by_name: providers.into_iter().map(|p| (p.name.clone(), p)).collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Provider> {
        self.by_name.get(name)
    }
}
