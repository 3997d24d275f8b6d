//! The service's settings from the configuration: model providers, web search, the MCP client, the
//! integrations' OAuth clients and the key for secrets at rest, with the secrets they name read from
//! the environment, and the stream encoding the server speaks. The service builds the running parts
//! from them.

use std::time::Duration;

use anyhow::Context;
use promptgate_service::deployment::ClientCredentials;
use promptgate_service::deployment::{
    DEFAULT_CALENDAR_BASE, DEFAULT_GMAIL_BASE, DEFAULT_GRAPH_BASE, GoogleSetup, HubSettings, InstanceConfig,
    IntegrationSettings, MicrosoftSetup, OAuthProviderConfig, ProviderKind as Kind, ProviderSettings,
    SearchConfig, ServiceConfig, Settings, ThinkingMode, Timeouts, TokenSealer, TurnLimits,
};

use crate::config::{
    AuthMode, Config, Env, OAuthEntry, ProviderEntry, ProviderKind, SearchEntry, ThinkingStyle,
};
use crate::state::LOCAL_USER_ID;

/// The service's settings from the configuration, with the secrets it names read from `env` (and
/// the key file for secrets at rest created when this configuration uses one).
pub fn settings(config: &Config, env: &dyn Env) -> anyhow::Result<Settings> {
    let secrets = crate::secrets::settings(config, env)?;
    let providers = providers(config, env)?;
    let search = search(config, env)?;
    let integrations = integrations(config, env)?;
    let mut service = service_config(config);
    service.mcp_oauth_clients = mcp_oauth_clients(config, env)?;
    Ok(Settings {
        service,
        providers,
        search,
        fetch: config.web.fetch.clone(),
        budget_promotion: config.web.budget_promotion,
        mcp: HubSettings {
            liveness_interval: Duration::from_millis(config.mcp.liveness_interval_ms),
            reconnect_initial_backoff: Duration::from_millis(config.mcp.reconnect_initial_backoff_ms),
            reconnect_max_backoff: Duration::from_millis(config.mcp.reconnect_max_backoff_ms),
            idle_limit: Duration::from_secs(config.mcp.session_idle_secs),
            max_sessions: config.mcp.max_sessions,
            max_servers_per_user: config.mcp.max_servers_per_user,
            probes_per_minute: config.mcp.probes_per_minute,
            probes_in_flight: config.mcp.probes_in_flight,
            addresses: config.mcp.address_policy(config.auth.mode),
            ..HubSettings::default()
        },
        integrations,
        secrets,
        system_models: config.models.iter().map(|m| m.to_model()).collect(),
        local_user: (config.auth.mode == AuthMode::SingleUser)
            .then(|| (LOCAL_USER_ID.to_owned(), "local".to_owned())),
        encoding: crate::sse::UI_MESSAGE_STREAM,
    })
}

fn service_config(config: &Config) -> ServiceConfig {
    ServiceConfig {
        default_model: config.default_model.clone(),
        limits: TurnLimits {
            max_upstream_requests: config.turn.max_upstream_requests,
            wall_clock: Duration::from_secs(config.turn.wall_clock_secs),
            max_steps: config.turn.max_steps,
            tool_timeout: Duration::from_secs(config.turn.tool_timeout_secs),
            keep_alive: Duration::from_secs(config.turn.keep_alive_secs),
            save_grace: Duration::from_secs(config.turn.save_grace_secs),
            checkpoint_every: Duration::from_millis(config.turn.checkpoint_interval_ms),
        },
        save_retry: Duration::from_secs(config.turn.save_retry_secs),
        mcp_discovery_timeout: Duration::from_millis(config.mcp.discovery_timeout_ms),
        max_turns_in_flight: config.turn.max_in_flight,
        mcp_call_timeout: Duration::from_secs(config.mcp.call_timeout_secs),
        mcp_elicitation_timeout: Duration::from_secs(config.mcp.elicitation_timeout_secs),
        authorization_wait: Duration::from_secs(config.mcp.authorization_wait_secs),
        mcp_oauth_redirect: mcp_oauth_redirect(config),
        mcp_oauth_client_metadata_url: mcp_oauth_client_metadata_url(config),
        // Read with the environment, in `settings`.
        mcp_oauth_clients: Vec::new(),
        on_disconnect: config.turn.on_disconnect,
        instance: InstanceConfig {
            lease: Duration::from_secs(config.turn.lease_secs.max(1)),
            heartbeat: Duration::from_secs(config.turn.heartbeat_secs.max(1)),
            retry_window: Duration::from_secs(config.turn.retry_window_secs),
        },
        workspace: config.workspace.limits(),
        shell: config.workspace.shell_pool(),
        documents: config.documents.reader(),
        kept_harnesses: config.turn.kept_harnesses,
        kept_harness_bytes: config.turn.kept_harness_bytes,
        response_retention: Duration::from_secs(config.responses.retention_days.saturating_mul(86_400)),
        responses_per_user: config.responses.max_per_user,
        context: config.context.settings(),
        quota: config.quotas.quota(),
        citation_review: config.citations.settings(),
        approval: config.approval.settings(),
        prices: config.price_table(),
        failover: config.failover.settings(),
    }
}

pub fn providers(config: &Config, env: &dyn Env) -> anyhow::Result<Vec<ProviderSettings>> {
    let mut out = Vec::new();
    for entry in &config.providers {
        let api_key = match &entry.api_key_env {
            Some(var) => {
                let key = env.var(var);
                if key.is_none() && !entry.keyless {
                    // Starting anyway would fail every send to this provider with a 401 from upstream.
                    anyhow::bail!(
                        "provider {}: the variable {var} holding its API key is not set; set it, or mark \
                         the provider `keyless = true` if it needs no key",
                        entry.name
                    );
                }
                key
            }
            None => None,
        };
        out.push(ProviderSettings {
            name: entry.name.clone(),
            kind: match entry.kind {
                ProviderKind::Demo => Kind::Demo,
                ProviderKind::Openai => Kind::OpenAi,
                ProviderKind::Anthropic => Kind::Anthropic,
            },
            base_url: entry.base_url.clone(),
            api_key,
            timeouts: timeouts(entry),
            max_tokens: entry.max_tokens,
            thinking: match entry.thinking {
                None | Some(ThinkingStyle::Adaptive) => ThinkingMode::Adaptive,
                Some(ThinkingStyle::Budget) => ThinkingMode::Budget,
            },
            allowed_request_fields: entry.allow_request_fields.clone(),
            whole_answers: entry.whole_answers.unwrap_or(true),
        });
    }
    Ok(out)
}

/// The provider's timeouts, each defaulting where the entry sets none.
fn timeouts(entry: &ProviderEntry) -> Timeouts {
    let defaults = Timeouts::default();
    let secs = |value: Option<u64>, default: Duration| value.map_or(default, Duration::from_secs);
    Timeouts {
        connect: secs(entry.connect_timeout_secs, defaults.connect),
        first_byte: secs(entry.first_byte_timeout_secs, defaults.first_byte),
        idle: secs(entry.idle_timeout_secs, defaults.idle),
        whole_answer: secs(entry.whole_answer_timeout_secs, defaults.whole_answer),
    }
}

/// The search backend of `[web]`, with the key a Brave backend names read from `env`.
pub fn search(config: &Config, env: &dyn Env) -> anyhow::Result<Option<SearchConfig>> {
    Ok(match &config.web.search {
        None => None,
        Some(SearchEntry::Demo) => Some(SearchConfig::Demo),
        Some(SearchEntry::Searxng { base_url }) => Some(SearchConfig::SearxNg {
            base_url: base_url.clone(),
        }),
        Some(SearchEntry::Brave {
            base_url,
            api_key_env,
        }) => {
            let api_key = env.var(api_key_env).with_context(|| {
                format!("web.search: the variable {api_key_env} holding the Brave key is not set")
            })?;
            let base_url = base_url
                .clone()
                .unwrap_or_else(|| "https://api.search.brave.com".to_owned());
            Some(SearchConfig::Brave { base_url, api_key })
        }
    })
}

/// The OAuth clients of `[integrations]`; `None` when the section is absent.
pub fn integrations(config: &Config, env: &dyn Env) -> anyhow::Result<Option<IntegrationSettings>> {
    let Some(section) = &config.integrations else {
        return Ok(None);
    };
    let key = env.var(&section.token_key_env).with_context(|| {
        format!(
            "integrations.token_key_env: the variable {} holding the token encryption key is not set",
            section.token_key_env
        )
    })?;
    let sealer =
        TokenSealer::from_base64(&key).map_err(|err| anyhow::anyhow!("integrations.token_key_env: {err}"))?;
    let base = section.redirect_base_url.trim_end_matches('/');
    let google = match &section.google {
        Some(entry) => Some(GoogleSetup {
            oauth: oauth_client(entry, "google", base, env, OAuthProviderConfig::google)?,
            gmail_base: or_default(entry.api_base_url.as_deref(), DEFAULT_GMAIL_BASE),
            calendar_base: or_default(entry.calendar_base_url.as_deref(), DEFAULT_CALENDAR_BASE),
        }),
        None => None,
    };
    let microsoft = match &section.microsoft {
        Some(entry) => Some(MicrosoftSetup {
            oauth: oauth_client(entry, "microsoft", base, env, OAuthProviderConfig::microsoft)?,
            graph_base: or_default(entry.api_base_url.as_deref(), DEFAULT_GRAPH_BASE),
        }),
        None => None,
    };
    Ok(Some(IntegrationSettings {
        token_sealer: sealer,
        google,
        microsoft,
    }))
}

/// An API base the file may override, else the provider's own.
fn or_default(url: Option<&str>, default: &str) -> String {
    url.unwrap_or(default).to_owned()
}

/// One provider's OAuth client, made by `make` (its defaults): the secret from the environment, the
/// callback under `base`, and the file's endpoint overrides.
fn oauth_client(
    entry: &OAuthEntry,
    provider: &str,
    base: &str,
    env: &dyn Env,
    make: fn(String, String, String) -> OAuthProviderConfig,
) -> anyhow::Result<OAuthProviderConfig> {
    let secret = env.var(&entry.client_secret_env).with_context(|| {
        format!(
            "integrations.{provider}.client_secret_env: the variable {} is not set",
            entry.client_secret_env
        )
    })?;
    let mut oauth = make(
        entry.client_id.clone(),
        secret,
        format!("{base}/v1/integrations/{provider}/callback"),
    );
    if let Some(url) = &entry.auth_url {
        oauth.auth_url = url.clone();
    }
    if let Some(url) = &entry.token_url {
        oauth.token_url = url.clone();
    }
    if let Some(url) = &entry.revoke_url {
        oauth.revoke_url = Some(url.clone());
    }
    Ok(oauth)
}

/// Where browsers reach us, for users' MCP servers that ask for OAuth.
fn mcp_oauth_base(config: &Config) -> Option<&str> {
    let base = config
        .mcp
        .oauth_redirect_base_url
        .as_deref()
        .or_else(|| config.integrations.as_ref().map(|i| i.redirect_base_url.as_str()))?;
    Some(base.trim_end_matches('/'))
}

/// The OAuth callback of users' MCP servers, when the configuration says where browsers reach us.
fn mcp_oauth_redirect(config: &Config) -> Option<String> {
    Some(format!(
        "{}/v1/mcp-servers/oauth/callback",
        mcp_oauth_base(config)?
    ))
}

/// Where we serve our Client ID Metadata Document: on the public base, which must be https (an
/// authorization server fetches it there), unless the configuration allows plain http for tests.
fn mcp_oauth_client_metadata_url(config: &Config) -> Option<String> {
    let base = mcp_oauth_base(config)?;
    let scheme_ok = base.starts_with("https://")
        || (config.mcp.oauth_client_metadata_over_http && base.starts_with("http://"));
    scheme_ok.then(|| format!("{base}{MCP_CLIENT_METADATA_PATH}"))
}

/// The path of our Client ID Metadata Document, a route of the server's own.
pub const MCP_CLIENT_METADATA_PATH: &str = "/v1/mcp-servers/oauth/client.json";

/// The clients the operator registered by hand, their secrets read from the environment.
fn mcp_oauth_clients(config: &Config, env: &dyn Env) -> anyhow::Result<Vec<(String, ClientCredentials)>> {
    config
        .mcp
        .oauth_clients
        .iter()
        .map(|entry| {
            let client_secret = match &entry.client_secret_env {
                Some(variable) => Some(env.var(variable).with_context(|| {
                    format!(
                        "mcp.oauth_clients ({}): the variable {variable} is not set",
                        entry.issuer
                    )
                })?),
                None => None,
            };
            Ok((
                entry.issuer.clone(),
                ClientCredentials {
                    client_id: entry.client_id.clone(),
                    client_secret,
                },
            ))
        })
        .collect()
}
