//! The composition root: the database opened and migrated, then every long-lived part a server
//! runs with built from [`Settings`].

use std::sync::Arc;
use std::time::Duration;

use promptgate_llm::{Anthropic, AnthropicConfig, DemoModel, OpenAiCompatible, ProviderConfig};
use promptgate_mcp::McpHub;
use promptgate_store::{Backend, Store};
use promptgate_tools::web::SafeFetcher;

use crate::deployment::{
    ANTHROPIC_BASE_URL, ANTHROPIC_MAX_TOKENS, IntegrationSettings, ProviderKind, ProviderSettings,
    SecretsSettings, Settings,
};
use crate::{Integrations, ModelProvider, ProviderClient, Providers, Service, ServiceError, WebTools};

/// The database, opened and (after [`Database::migrate`]) up to date, before a service runs on it.
/// The command line's account commands work on it alone.
#[derive(Clone)]
pub struct Database {
    pub(crate) store: Store,
}

impl Database {
    /// Opens the database at `url` (`sqlite://...` or `postgres://...`).
    pub async fn connect(url: &str) -> Result<Database, ServiceError> {
        Ok(Database {
            store: Store::connect(url).await?,
        })
    }

    /// Like [`Database::connect`], but a network database that refuses is retried with a doubling
    /// backoff (0.5 s up to 5 s) until `wait` has passed: a compose stack starts the gateway while
    /// the database may still be initialising. SQLite is never retried: its failures are about the
    /// file and do not go away by waiting.
    pub async fn connect_with_retry(url: &str, wait: Duration) -> Result<Database, ServiceError> {
        let retry = url.starts_with("postgres");
        let deadline = tokio::time::Instant::now() + wait;
        let mut backoff = Duration::from_millis(500);
        loop {
            match Store::connect(url).await {
                Ok(store) => return Ok(Database { store }),
                Err(err) if retry && tokio::time::Instant::now() + backoff < deadline => {
                    tracing::warn!(
                        error = %err,
                        retry_in_ms = backoff.as_millis() as u64,
                        "the database is not reachable yet; retrying"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Brings the schema up to date.
    pub async fn migrate(&self) -> Result<(), ServiceError> {
        Ok(self.store.migrate().await?)
    }

    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    /// A database over a store a test opened itself.
    #[cfg(feature = "testing")]
    pub fn from_store(store: Store) -> Database {
        Database { store }
    }
}

impl Service {
    /// Builds the service a server runs with on `database`: seeds the system models and the local
    /// user, brings the stored secrets in line with the key, starts the MCP client, the providers,
    /// the web tools and the integrations, and joins the instances on the database.
    pub async fn start(database: Database, settings: Settings) -> Result<Service, ServiceError> {
        let store = database.store;
        store
            .seed_system_models(&settings.system_models)
            .await
            .map_err(|e| ServiceError::start("seeding the configured models failed", e))?;
        if let Some((id, name)) = &settings.local_user {
            store.ensure_user(id, name).await?;
        }
        let store = secrets_at_rest(store, &settings.secrets).await?;
        let hub =
            McpHub::new(settings.mcp).map_err(|e| ServiceError::start("cannot start the MCP client", e))?;
        let providers = providers(&settings.providers)?;
        let search = match &settings.search {
            Some(search) => Some(
                search
                    .build()
                    .map_err(|e| ServiceError::start("web.search is unusable", e))?,
            ),
            None => None,
        };
        let fetcher = search
            .is_some()
            .then(|| Arc::new(SafeFetcher::new(settings.fetch.clone())));
        let web = WebTools {
            search,
            fetcher,
            promotion_enabled: settings.budget_promotion,
        };
        let summariser = summariser(&settings.service.context, &settings.system_models, &providers)?;
        let citation_reviewer = citation_reviewer(
            &settings.service.citation_review,
            &settings.system_models,
            &providers,
        )?;
        let service = Service::new(
            store,
            providers,
            web,
            Some(hub),
            settings.service,
            settings.encoding,
        );
        let service = Service {
            summariser,
            citation_reviewer,
            ..service
        };
        let service = match settings.integrations {
            Some(integrations) => service.with_integrations(self::integrations(integrations)?),
            None => service,
        };
        service.start_instance();
        Ok(service)
    }
}

/// The configured summariser model with the client that reaches it.
fn summariser(
    context: &crate::window::ContextSettings,
    system_models: &[promptgate_core::settings::Model],
    providers: &Providers,
) -> Result<Option<crate::window::Summariser>, ServiceError> {
    let Some(id) = &context.summariser else {
        return Ok(None);
    };
    let (model, client) = configured_model("[context] summariser", id, system_models, providers)?;
    Ok(Some(crate::window::Summariser { client, model }))
}

/// The configured model that reviews uncertain citations, ready for a turn plan.
fn citation_reviewer(
    settings: &crate::deployment::CitationReviewSettings,
    system_models: &[promptgate_core::settings::Model],
    providers: &Providers,
) -> Result<Option<promptgate_turn::CitationReview>, ServiceError> {
    let Some(id) = &settings.model else {
        return Ok(None);
    };
    let (model, client) = configured_model("[citations] review_model", id, system_models, providers)?;
    Ok(Some(promptgate_turn::CitationReview {
        model: client,
        upstream_model: model.upstream_model,
        timeout: settings.timeout,
        max_citations: settings.max_citations,
    }))
}

/// A system model a setting names for the server's own side requests, with its client.
fn configured_model(
    setting: &str,
    id: &str,
    system_models: &[promptgate_core::settings::Model],
    providers: &Providers,
) -> Result<
    (
        promptgate_core::settings::Model,
        Arc<dyn promptgate_llm::ChatModel>,
    ),
    ServiceError,
> {
    let model = system_models.iter().find(|m| m.id == id).ok_or_else(|| {
        ServiceError::Refused(format!(
            "{setting} names the model {id:?}, which is not a configured model"
        ))
    })?;
    let provider = providers.get(&model.provider).ok_or_else(|| {
        ServiceError::Refused(format!(
            "{setting}: the provider {:?} of model {id:?} is not configured",
            model.provider
        ))
    })?;
    Ok((model.clone(), provider.model_client(model)))
}

fn providers(entries: &[ProviderSettings]) -> Result<Providers, ServiceError> {
    let mut out = Vec::new();
    for entry in entries {
        let base_url = match (entry.kind, &entry.base_url) {
            (_, Some(url)) => url.clone(),
            (ProviderKind::Anthropic, None) => ANTHROPIC_BASE_URL.to_owned(),
            (_, None) => String::new(),
        };
        let unusable = |e| ServiceError::start(format!("provider {} is unusable", entry.name), e);
        let client = match entry.kind {
            ProviderKind::Demo => ProviderClient::Demo(DemoModel::new()),
            ProviderKind::OpenAi => {
                let mut provider = ProviderConfig::new(entry.name.clone(), base_url.clone());
                provider.api_key = entry.api_key.clone();
                provider.timeouts = entry.timeouts;
                provider.whole_answers = entry.whole_answers;
                ProviderClient::OpenAi(OpenAiCompatible::new(provider).map_err(unusable)?)
            }
            ProviderKind::Anthropic => {
                let mut provider = AnthropicConfig::new(entry.name.clone(), base_url.clone());
                provider.provider.api_key = entry.api_key.clone();
                provider.provider.timeouts = entry.timeouts;
                provider.max_tokens = entry.max_tokens.unwrap_or(ANTHROPIC_MAX_TOKENS);
                provider.thinking = entry.thinking;
                ProviderClient::Anthropic(Anthropic::new(provider).map_err(unusable)?)
            }
        };
        out.push(ModelProvider {
            name: entry.name.clone(),
            base_url,
            api_key: entry.api_key.clone(),
            allowed_request_fields: entry.allowed_request_fields.clone(),
            client,
        });
    }
    Ok(Providers::new(out))
}

fn integrations(settings: IntegrationSettings) -> Result<Integrations, ServiceError> {
    Integrations::new(settings.token_sealer, settings.google, settings.microsoft)
        .map_err(|e| ServiceError::start("cannot build the integrations HTTP client", e))
}

/// Gives the store its sealer and brings the stored MCP secrets in line with it: plain rows are
/// sealed; without a key, sealed rows stop the start with an error that says what to set.
async fn secrets_at_rest(store: Store, secrets: &SecretsSettings) -> Result<Store, ServiceError> {
    let variable = secrets.variable.as_str();
    match &secrets.key {
        Some((sealer, source)) => {
            let store = store.with_secret_box(sealer.clone());
            let report = store
                .seal_plain_mcp_secrets()
                .await
                .map_err(|e| ServiceError::Refused(format!("secrets at rest ({source}): {e}")))?;
            if report.sealed_now > 0 {
                tracing::info!(rows = report.sealed_now, key = %source, "sealed MCP server secrets stored in clear");
            }
            Ok(store)
        }
        None => {
            let sealed = store.count_sealed_mcp_servers().await?;
            if sealed > 0 {
                return Err(ServiceError::Refused(format!(
                    "the database holds sealed MCP server secrets ({sealed} servers) but no key is configured: \
                     set {variable} to the key they were sealed with"
                )));
            }
            let plain = store.count_plain_mcp_secrets().await?;
            if plain > 0 {
                tracing::warn!(
                    servers = plain,
                    variable,
                    "MCP server secrets are stored in clear; set the key variable to seal them"
                );
            }
            tracing::info!(
                variable,
                "no key for secrets at rest: MCP headers and bearer tokens cannot be stored"
            );
            Ok(store)
        }
    }
}
