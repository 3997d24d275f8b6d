//! Builds the long-lived parts a server runs with from the configuration: model providers, web tools,
//! the MCP hub and the turn service.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use promptgate_llm::{DemoModel, OpenAiCompatible, ProviderConfig, Timeouts};
use promptgate_mcp::{HubSettings, McpHub};
use promptgate_store::Store;
use promptgate_tools::web::{SafeFetcher, SearchConfig};
use promptgate_turn::TurnLimits;
use promptgate_turn::send::{Provider, ProviderClient, Providers, ServiceConfig, TurnService, WebTools};

use crate::config::{Config, Env, ProviderKind, SearchEntry};

pub fn providers(config: &Config, env: &dyn Env) -> anyhow::Result<Providers> {
    let mut out = Vec::new();
    for entry in &config.providers {
        let api_key = match &entry.api_key_env {
            Some(var) => {
                let key = env.var(var);
                if key.is_none() {
                    tracing::warn!(provider = %entry.name, variable = %var, "the provider's API key variable is not set");
                }
                key
            }
            None => None,
        };
        let client = match entry.kind {
            ProviderKind::Demo => ProviderClient::Demo(DemoModel::new()),
            ProviderKind::Openai => {
                let base_url = entry.base_url.clone().unwrap_or_default();
                let defaults = Timeouts::default();
                let mut provider = ProviderConfig::new(entry.name.clone(), base_url);
                provider.api_key = api_key.clone();
                provider.timeouts = Timeouts {
                    connect: entry
                        .connect_timeout_secs
                        .map_or(defaults.connect, Duration::from_secs),
                    first_byte: entry
                        .first_byte_timeout_secs
                        .map_or(defaults.first_byte, Duration::from_secs),
                    idle: entry.idle_timeout_secs.map_or(defaults.idle, Duration::from_secs),
                };
                ProviderClient::OpenAi(
                    OpenAiCompatible::new(provider)
                        .with_context(|| format!("provider {} is unusable", entry.name))?,
                )
            }
        };
        out.push(Provider {
            name: entry.name.clone(),
            base_url: entry.base_url.clone().unwrap_or_default(),
            api_key,
            client,
        });
    }
    Ok(Providers::new(out))
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
        },
        mcp_discovery_timeout: Duration::from_millis(config.mcp.discovery_timeout_ms),
        mcp_call_timeout: Duration::from_secs(config.mcp.call_timeout_secs),
    };
    Ok(TurnService::new(
        store,
        providers(config, env)?,
        web_tools(config, env)?,
        Some(hub),
        service_config,
    ))
}
