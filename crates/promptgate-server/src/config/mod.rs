//! The configuration file (TOML) and its environment overrides: `Config`, how it is loaded and
//! checked as a whole, and one module per section.

use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;

pub mod admission;
pub mod approval;
pub mod auth;
pub mod citations;
pub mod context;
pub mod failover;
pub mod integrations;
#[cfg(test)]
mod keys;
pub mod limits;
pub mod mcp;
pub mod models;
pub mod prices;
pub mod providers;
pub mod quotas;
pub mod responses;
pub mod server;
pub mod telemetry;
pub mod turn;
pub mod web;
pub mod workspace;

pub use admission::AdmissionConfig;
pub use auth::{AuthConfig, AuthMode};
pub use integrations::{IntegrationsConfig, OAuthEntry};
pub use limits::Limits;
pub use mcp::McpConfig;
pub use models::ModelDefinition;
pub use providers::{ProviderEntry, ProviderKind, ThinkingStyle};
pub use responses::ResponsesConfig;
pub use server::{CorsConfig, ServerConfig};
pub use telemetry::{OtlpProtocol, TelemetryConfig};
pub use turn::TurnConfig;
pub use web::{SearchEntry, WebConfig};
pub use workspace::WorkspaceConfig;

/// The configuration `make run` uses when no file is given.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../../../config/promptgate.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid config: {0}")]
    Parse(String),
    #[error("invalid config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    pub database_url: String,
    /// Model used when neither the send nor the user's settings name one.
    pub default_model: String,
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub limits: Limits,
    /// Who may connect and how: Host and Origin checks, CORS, connection limits.
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub turn: TurnConfig,
    /// How many turns run at once, adapted to what the machine carries, and shared when saturated.
    #[serde(default)]
    pub admission: AdmissionConfig,
    /// Responses of the Responses API that clients ask to keep (`store: true`).
    #[serde(default)]
    pub responses: ResponsesConfig,
    /// How sends fit a thread to the model's context window.
    #[serde(default)]
    pub context: context::ContextConfig,
    /// The optional second look at uncertain citations.
    #[serde(default)]
    pub citations: citations::CitationsConfig,
    /// Tool approval: the operator's floors, the wait, clients that cannot answer.
    #[serde(default)]
    pub approval: approval::ApprovalConfig,
    /// Bounds of each thread's workspace (harness models).
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// What each user may keep in the database.
    #[serde(default)]
    pub quotas: quotas::QuotasConfig,
    /// How attached files are read for the model.
    #[serde(default)]
    pub documents: crate::documents::DocumentsConfig,
    #[serde(default)]
    pub web: WebConfig,
    #[serde(default)]
    pub mcp: McpConfig,
    /// Google and Microsoft OAuth clients; without them the integration tools are not offered.
    pub integrations: Option<IntegrationsConfig>,
    #[serde(default)]
    pub providers: Vec<ProviderEntry>,
    #[serde(default)]
    pub models: Vec<ModelDefinition>,
    /// What the models cost, for the usage ledger.
    #[serde(default)]
    pub prices: Vec<prices::PriceEntry>,
    /// How models with fallbacks are retried and failed over.
    #[serde(default)]
    pub failover: failover::FailoverConfig,
    /// The web app served at `/`.
    #[serde(default)]
    pub ui: crate::ui::UiConfig,
    /// Signed artifact links.
    #[serde(default)]
    pub artifacts: crate::routes::artifacts::ArtifactsConfig,
    /// The AI SDK release a UI message stream is written for when the request does not say.
    #[serde(default)]
    pub ui_stream: crate::ui_stream::UiStreamConfig,
    /// Traces over OTLP.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
}

/// Records `name` among the `kind`s (providers, models) read so far; the second definition of a name
/// is refused, as it would silently replace the first.
fn defined_once<'a>(
    seen: &mut std::collections::HashSet<&'a str>,
    kind: &str,
    name: &'a str,
) -> Result<(), ConfigError> {
    if seen.insert(name) {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!("{kind} {name} is defined twice")))
    }
}

/// A default duration in whole milliseconds, as the file states it.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Reads a variable from the environment; an injectable seam so tests never mutate the process env.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    /// Loads the file named by `path`, else `PROMPTGATE_CONFIG`, else the embedded default, then applies the
    /// environment overrides and validates.
    pub fn load(path: Option<&Path>, env: &dyn Env) -> Result<Config, ConfigError> {
        let from_env = env.var("PROMPTGATE_CONFIG");
        let path = path.map(Path::to_path_buf).or(from_env.map(Into::into));
        let text = match &path {
            Some(p) => std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.display().to_string(),
                source,
            })?,
            None => EMBEDDED_DEFAULT.to_owned(),
        };
        let mut config = Config::parse(&text)?;
        config.apply_env(env)?;
        config.validate()?;
        Ok(config)
    }

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    fn apply_env(&mut self, env: &dyn Env) -> Result<(), ConfigError> {
        if let Some(listen) = env.var("PROMPTGATE_LISTEN") {
            self.listen = listen.parse().map_err(|_| {
                ConfigError::Invalid(format!("PROMPTGATE_LISTEN={listen} is not an address:port"))
            })?;
        }
        if let Some(listen) = env.var("PROMPTGATE_METRICS_LISTEN") {
            self.server.metrics_listen = Some(listen.parse().map_err(|_| {
                ConfigError::Invalid(format!(
                    "PROMPTGATE_METRICS_LISTEN={listen} is not an address:port"
                ))
            })?);
        }
        if let Some(url) = env.var("DATABASE_URL") {
            self.database_url = url;
        }
        if let Some(model) = env.var("PROMPTGATE_DEFAULT_MODEL") {
            self.default_model = model;
        }
        if let Some(value) = env.var(promptgate_core::budget::PROMOTION_SETTING) {
            self.web.budget_promotion = promptgate_core::budget::parse_promotion_setting(Some(&value))
                .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        }
        self.workspace.apply_env(env)?;
        self.telemetry.apply_env(env);
        if let Some(mode) = env.var("PROMPTGATE_AUTH_MODE") {
            self.auth.mode = match mode.as_str() {
                "single_user" => AuthMode::SingleUser,
                "tokens" => AuthMode::Tokens,
                other => {
                    return Err(ConfigError::Invalid(format!(
                        "PROMPTGATE_AUTH_MODE={other}: expected single_user or tokens"
                    )));
                }
            };
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.auth.mode == AuthMode::SingleUser && !self.listen.ip().is_loopback() {
            // Single-user mode has no authentication at all: exposing it beyond this machine would hand
            // the user's data and integrations to anyone who can reach the port.
            return Err(ConfigError::Invalid(format!(
                "auth.mode = \"single_user\" needs a loopback listen address, not {}; use mode = \"tokens\"",
                self.listen
            )));
        }
        if self.server.metrics_listen == Some(self.listen) {
            return Err(ConfigError::Invalid(format!(
                "server.metrics_listen is the API's own address {}; leave it unset to serve /metrics there",
                self.listen
            )));
        }
        self.mcp.validate()?;
        self.workspace.validate()?;
        let model_ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
        self.context.validate(&model_ids)?;
        self.citations.validate(&model_ids)?;
        self.approval.validate()?;
        prices::table(&self.prices, &model_ids)?;
        self.failover.validate()?;
        if self.limits.body_bytes == 0 {
            return Err(ConfigError::Invalid("limits.body_bytes must be positive".into()));
        }
        crate::boundary::validate(&self.server)?;
        let positive = [
            (
                "limits.user_turns_in_flight",
                self.limits.user_turns_in_flight as u64,
            ),
            (
                "limits.user_sends_per_minute",
                u64::from(self.limits.user_sends_per_minute),
            ),
            (
                "server.header_read_timeout_secs",
                self.server.header_read_timeout_secs,
            ),
            // Zero would keep nothing readable while clients still ask to keep responses.
            ("responses.retention_days", self.responses.retention_days),
            ("responses.max_per_user", self.responses.max_per_user as u64),
            ("server.idle_timeout_secs", self.server.idle_timeout_secs),
            (
                "server.first_request_timeout_secs",
                self.server.first_request_timeout_secs,
            ),
            ("server.body_timeout_secs", self.server.body_timeout_secs),
            ("server.body_deadline_secs", self.server.body_deadline_secs),
            ("server.max_connections", self.server.max_connections as u64),
            ("server.request_id_max_len", self.server.request_id_max_len as u64),
            ("turn.lease_secs", self.turn.lease_secs),
            ("turn.heartbeat_secs", self.turn.heartbeat_secs),
            ("limits.page_size", u64::from(self.limits.page_size)),
        ];
        let documents = self.documents.positive();
        if let Some((key, _)) = positive.iter().chain(&documents).find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{key} must be positive")));
        }
        if self.turn.heartbeat_secs >= self.turn.lease_secs {
            // A lease that runs out between two renewals would hand a live turn's thread to a
            // second instance.
            return Err(ConfigError::Invalid(
                "turn.heartbeat_secs must be shorter than turn.lease_secs".into(),
            ));
        }
        if self.turn.max_in_flight == 0 {
            return Err(ConfigError::Invalid("turn.max_in_flight must be positive".into()));
        }
        self.admission.validate()?;
        if self.limits.max_page_size < self.limits.page_size {
            return Err(ConfigError::Invalid(
                "limits.max_page_size must be at least limits.page_size".into(),
            ));
        }
        let mut names = std::collections::HashSet::new();
        for provider in &self.providers {
            defined_once(&mut names, "provider", &provider.name)?;
            if provider.kind == ProviderKind::Openai && provider.base_url.is_none() {
                return Err(ConfigError::Invalid(format!(
                    "provider {} needs a base_url",
                    provider.name
                )));
            }
            if provider.kind != ProviderKind::Anthropic
                && (provider.max_tokens.is_some() || provider.thinking.is_some())
            {
                // Silently ignoring them would leave the operator believing they apply.
                return Err(ConfigError::Invalid(format!(
                    "provider {}: max_tokens and thinking apply to kind = \"anthropic\" only",
                    provider.name
                )));
            }
            if provider.max_tokens == Some(0) {
                return Err(ConfigError::Invalid(format!(
                    "provider {}: max_tokens must be positive",
                    provider.name
                )));
            }
        }
        if !self.models.iter().any(|m| m.id == self.default_model) {
            // Every send that names no model would answer 404 otherwise.
            let known: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
            return Err(ConfigError::Invalid(format!(
                "default_model = \"{}\" is not a configured model; configured: {}",
                self.default_model,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        let mut ids = std::collections::HashSet::new();
        for model in &self.models {
            defined_once(&mut ids, "model", &model.id)?;
            if let Some(unknown) = model.fallbacks.iter().find(|f| !model_ids.contains(&f.as_str())) {
                return Err(ConfigError::Invalid(format!(
                    "model {} names fallback {unknown}, which is not a configured model",
                    model.id
                )));
            }
            if !names.contains(model.provider.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "model {} names provider {}, which is not defined",
                    model.id, model.provider
                )));
            }
        }
        Ok(())
    }

    /// The price table, checked by [`Config::validate`].
    pub fn price_table(&self) -> promptgate_service::deployment::PriceTable {
        let model_ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
        prices::table(&self.prices, &model_ids).unwrap_or_default()
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderEntry> {
        self.providers.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests;
