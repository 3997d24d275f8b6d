//! Builds the long-lived parts a server runs with from the configuration: model providers, web tools,
//! the MCP hub and the turn service.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use promptgate_llm::{
    ANTHROPIC_BASE_URL, ANTHROPIC_MAX_TOKENS, Anthropic, AnthropicConfig, DemoModel, OpenAiCompatible,
    ProviderConfig, ThinkingMode, Timeouts,
};
use promptgate_mcp::{HubSettings, McpHub};
use promptgate_store::Store;
use promptgate_tools::google::{DEFAULT_CALENDAR_BASE, DEFAULT_GMAIL_BASE};
use promptgate_tools::microsoft::DEFAULT_GRAPH_BASE;
use promptgate_tools::oauth::{OAuthProviderConfig, TokenSealer};
use promptgate_tools::web::{SafeFetcher, SearchConfig};
use promptgate_turn::TurnLimits;
use promptgate_turn::send::{
    GoogleSetup, InstanceConfig, Integrations, MicrosoftSetup, Provider, ProviderClient, Providers,
    ServiceConfig, TurnService, WebTools,
};

use crate::config::{Config, Env, OAuthEntry, ProviderEntry, ProviderKind, SearchEntry, ThinkingStyle};

pub fn providers(config: &Config, env: &dyn Env) -> anyhow::Result<Providers> {
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
        let base_url = match (entry.kind, &entry.base_url) {
            (_, Some(url)) => url.clone(),
            (ProviderKind::Anthropic, None) => ANTHROPIC_BASE_URL.to_owned(),
            (_, None) => String::new(),
        };
        let client = match entry.kind {
            ProviderKind::Demo => ProviderClient::Demo(DemoModel::new()),
            ProviderKind::Openai => {
                let mut provider = ProviderConfig::new(entry.name.clone(), base_url.clone());
                provider.api_key = api_key.clone();
                provider.timeouts = timeouts(entry);
                ProviderClient::OpenAi(
                    OpenAiCompatible::new(provider)
                        .with_context(|| format!("provider {} is unusable", entry.name))?,
                )
            }
            ProviderKind::Anthropic => {
                let mut provider = AnthropicConfig::new(entry.name.clone(), base_url.clone());
                provider.provider.api_key = api_key.clone();
                provider.provider.timeouts = timeouts(entry);
                provider.max_tokens = entry.max_tokens.unwrap_or(ANTHROPIC_MAX_TOKENS);
                provider.thinking = match entry.thinking {
                    None | Some(ThinkingStyle::Adaptive) => ThinkingMode::Adaptive,
                    Some(ThinkingStyle::Budget) => ThinkingMode::Budget,
                };
                ProviderClient::Anthropic(
                    Anthropic::new(provider)
                        .with_context(|| format!("provider {} is unusable", entry.name))?,
                )
            }
        };
        out.push(Provider {
            name: entry.name.clone(),
            base_url,
            api_key,
            client,
        });
    }
    Ok(Providers::new(out))
}

/// The provider's timeouts, each defaulting where the entry sets none.
fn timeouts(entry: &ProviderEntry) -> Timeouts {
    let defaults = Timeouts::default();
    let secs = |value: Option<u64>, default: Duration| value.map_or(default, Duration::from_secs);
    Timeouts {
        connect: secs(entry.connect_timeout_secs, defaults.connect),
        first_byte: secs(entry.first_byte_timeout_secs, defaults.first_byte),
        idle: secs(entry.idle_timeout_secs, defaults.idle),
    }
}

pub fn web_tools(config: &Config, env: &dyn Env) -> anyhow::Result<WebTools> {
    let search = match &config.web.search {
        None => None,
        Some(SearchEntry::Searxng { base_url }) => Some(
            SearchConfig::SearxNg {
                base_url: base_url.clone(),
            }
            .build()
            .context("web.search is unusable")?,
        ),
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
            Some(
                SearchConfig::Brave { base_url, api_key }
                    .build()
                    .context("web.search is unusable")?,
            )
        }
    };
    let fetcher = search
        .is_some()
        .then(|| Arc::new(SafeFetcher::new(config.web.fetch.clone())));
    Ok(WebTools {
        search,
        fetcher,
        promotion_enabled: config.web.budget_promotion,
    })
}

pub fn turn_service(config: &Config, store: Store, env: &dyn Env) -> anyhow::Result<TurnService> {
    let hub = McpHub::new(HubSettings {
        liveness_interval: Duration::from_millis(config.mcp.liveness_interval_ms),
        reconnect_initial_backoff: Duration::from_millis(config.mcp.reconnect_initial_backoff_ms),
        reconnect_max_backoff: Duration::from_millis(config.mcp.reconnect_max_backoff_ms),
        addresses: config.mcp.address_policy(config.auth.mode),
        ..HubSettings::default()
    })
    .context("cannot start the MCP client")?;
    let service_config = ServiceConfig {
        default_model: config.default_model.clone(),
        limits: TurnLimits {
            max_upstream_requests: config.turn.max_upstream_requests,
            wall_clock: Duration::from_secs(config.turn.wall_clock_secs),
            tool_timeout: Duration::from_secs(config.turn.tool_timeout_secs),
            keep_alive: Duration::from_secs(config.turn.keep_alive_secs),
            save_grace: Duration::from_secs(config.turn.save_grace_secs),
            checkpoint_every: Duration::from_millis(config.turn.checkpoint_interval_ms),
        },
        save_retry: Duration::from_secs(config.turn.save_retry_secs),
        mcp_discovery_timeout: Duration::from_millis(config.mcp.discovery_timeout_ms),
        max_turns_in_flight: config.turn.max_in_flight,
        mcp_call_timeout: Duration::from_secs(config.mcp.call_timeout_secs),
        on_disconnect: config.turn.on_disconnect,
        instance: InstanceConfig {
            lease: Duration::from_secs(config.turn.lease_secs.max(1)),
            heartbeat: Duration::from_secs(config.turn.heartbeat_secs.max(1)),
            retry_window: Duration::from_secs(config.turn.retry_window_secs),
        },
        workspace: config.workspace.limits(),
        kept_harnesses: config.turn.kept_harnesses,
    };
    let service = TurnService::new(
        store,
        providers(config, env)?,
        web_tools(config, env)?,
        Some(hub),
        service_config,
    );
    Ok(match integrations(config, env)? {
        Some(integrations) => service.with_integrations(integrations),
        None => service,
    })
}

/// The OAuth clients of `[integrations]`; `None` when the section is absent.
pub fn integrations(config: &Config, env: &dyn Env) -> anyhow::Result<Option<Integrations>> {
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
    let callback = |provider: &str| format!("{base}/v1/integrations/{provider}/callback");
    let google = match &section.google {
        Some(entry) => {
            let secret = client_secret(entry, "google", env)?;
            let oauth = with_endpoints(
                OAuthProviderConfig::google(&entry.client_id, secret, callback("google")),
                entry,
            );
            Some(GoogleSetup {
                oauth,
                gmail_base: entry
                    .api_base_url
                    .clone()
                    .unwrap_or_else(|| DEFAULT_GMAIL_BASE.to_owned()),
                calendar_base: entry
                    .calendar_base_url
                    .clone()
                    .unwrap_or_else(|| DEFAULT_CALENDAR_BASE.to_owned()),
            })
        }
        None => None,
    };
    let microsoft = match &section.microsoft {
        Some(entry) => {
            let secret = client_secret(entry, "microsoft", env)?;
            let oauth = with_endpoints(
                OAuthProviderConfig::microsoft(&entry.client_id, secret, callback("microsoft")),
                entry,
            );
            Some(MicrosoftSetup {
                oauth,
                graph_base: entry
                    .api_base_url
                    .clone()
                    .unwrap_or_else(|| DEFAULT_GRAPH_BASE.to_owned()),
            })
        }
        None => None,
    };
    let integrations =
        Integrations::new(sealer, google, microsoft).context("cannot build the integrations HTTP client")?;
    Ok(Some(integrations))
}

fn client_secret(entry: &OAuthEntry, provider: &str, env: &dyn Env) -> anyhow::Result<String> {
    env.var(&entry.client_secret_env).with_context(|| {
        format!(
            "integrations.{provider}.client_secret_env: the variable {} is not set",
            entry.client_secret_env
        )
    })
}

fn with_endpoints(mut oauth: OAuthProviderConfig, entry: &OAuthEntry) -> OAuthProviderConfig {
    if let Some(url) = &entry.auth_url {
        oauth.auth_url = url.clone();
    }
    if let Some(url) = &entry.token_url {
        oauth.token_url = url.clone();
    }
    if let Some(url) = &entry.revoke_url {
        oauth.revoke_url = Some(url.clone());
    }
    oauth
}
