//! The user's MCP servers in a send: discovery of only the servers whose tools fit the toolset's room,
//! their tools in the shape the composition merges, and the log of what a send left out, said once per change
//! rather than on every send.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use promptgate_core::compose::{BuiltInInput, mcp_tool_room};
use promptgate_core::settings::Model;
use promptgate_core::tools::McpToolHints;
use promptgate_core::tools::mcp_names::{McpServerTools, McpToolDef, NotOffered, left_out_summary};
use promptgate_mcp::{DiscoveredTool, DiscoveryOutcome, McpError, McpServerConfig};
use promptgate_store::SendContext;

use super::Service;
use crate::mcp_known::{has_static_secret, wants_authorization};

/// What discovery found for a send.
#[derive(Default)]
pub(crate) struct Discovered {
    /// Every enabled server in order; one that failed or was not needed keeps its place with no tools.
    pub servers: Vec<McpServerTools>,
    /// The connection settings of each server, by id, for the tool executors.
    pub configs: HashMap<String, McpServerConfig>,
    /// The names of the servers left unconnected because the toolset was full without them.
    pub unconnected: Vec<String>,
    /// The servers that refused discovery for want of the user's authorization and whose tools
    /// are not known, as (id, name): the model reads that the user must connect them.
    pub needs_authorization: Vec<(String, String)>,
}

impl Service {
    /// Discovers the servers this send needs: those at the front of the user's list until their
    /// tools fill what the built-in tools leave of the toolset.
    pub(crate) async fn discover_mcp(&self, user_id: &str, ctx: &SendContext, model: &Model) -> Discovered {
        let Some(hub) = &self.mcp else {
            return Discovered::default();
        };
        if !model.supports_tools() || ctx.mcp_servers.is_empty() {
            return Discovered::default();
        }
        let mut configs: Vec<McpServerConfig> = ctx
            .mcp_servers
            .iter()
            .map(|(server, secrets)| McpServerConfig {
                id: server.id.clone(),
                user_id: user_id.to_owned(),
                name: server.name.clone(),
                url: server.url.clone(),
                headers: secrets.headers.clone(),
                bearer_token: secrets.bearer_token.clone(),
            })
            .collect();
        let room = mcp_tool_room(BuiltInInput {
            settings: &ctx.settings,
            integrations: &ctx.integrations,
            model,
            project: ctx.project.as_ref(),
            sibling_count: ctx.sibling_count,
        });
        let authorized = self.with_mcp_tokens(user_id, &mut configs).await;
        let mut outcomes = hub
            .discover_within(&configs, room, self.config.mcp_discovery_timeout)
            .await;
        self.retry_rejected_tokens(user_id, &authorized, &mut configs, &mut outcomes)
            .await;
        let mut found = Discovered::default();
        for outcome in &outcomes {
            let server = outcome.server();
            let tools = match outcome {
                DiscoveryOutcome::Ready { tools, .. } => {
                    let defs: Vec<McpToolDef> = tools.iter().map(tool_def).collect();
                    if authorized.contains(&server.id) {
                        self.remember_mcp_tools(server, tools, &defs).await;
                    }
                    defs
                }
                DiscoveryOutcome::Failed { error, .. } => {
                    self.tools_of_refusing(server, error, &authorized, &mut found)
                        .await
                }
                DiscoveryOutcome::Unused { .. } => {
                    found.unconnected.push(server.name.clone());
                    Vec::new()
                }
            };
            found.servers.push(McpServerTools {
                server_id: server.id.clone(),
                name: server.name.clone(),
                url: server.url.clone(),
                tools,
            });
        }
        found.configs = configs.into_iter().map(|c| (c.id.clone(), c)).collect();
        found
    }
}

impl Service {
    /// What a send offers of a server whose discovery failed: nothing when it is down (the hub
    /// logs that); when it wants the user's authorization, the tools it last listed under their
    /// grant, whose calls then ask for it, else nothing and a note for the model.
    async fn tools_of_refusing(
        &self,
        server: &McpServerConfig,
        error: &McpError,
        authorized: &[String],
        found: &mut Discovered,
    ) -> Vec<McpToolDef> {
        let granted = authorized.contains(&server.id);
        if !wants_authorization(error) || has_static_secret(server, granted) {
            tracing::debug!(server = %server.name, %error, "MCP server skipped for this send");
            return Vec::new();
        }
        if granted && let Some(tools) = self.known_mcp_tools(&server.user_id, &server.id).await {
            tracing::info!(server = %server.name, "the MCP server refuses the user's grant; its last tools are offered and a call asks to authorize it");
            return tools;
        }
        tracing::info!(server = %server.name, "the MCP server wants the user's authorization and its tools are not known");
        found
            .needs_authorization
            .push((server.id.clone(), server.name.clone()));
        Vec::new()
    }

    /// Puts the current OAuth access token into the configs of the servers the user authorized;
    /// returns their ids.
    async fn with_mcp_tokens(&self, user_id: &str, configs: &mut [McpServerConfig]) -> Vec<String> {
        let granted = match self.store.mcp_grant_server_ids(user_id).await {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(user = %user_id, %error, "MCP grants could not be read; authorized servers are left out");
                return Vec::new();
            }
        };
        for config in configs.iter_mut().filter(|c| granted.contains(&c.id)) {
            config.bearer_token = self.mcp_access_token(user_id, &config.id, false).await;
        }
        granted
    }

    /// A server the user authorized that refused its token (revoked, expired early) gets the grant
    /// renewed and one more try within the send.
    async fn retry_rejected_tokens(
        &self,
        user_id: &str,
        authorized: &[String],
        configs: &mut [McpServerConfig],
        outcomes: &mut [DiscoveryOutcome],
    ) {
        let Some(hub) = &self.mcp else { return };
        for (config, outcome) in configs.iter_mut().zip(outcomes.iter_mut()) {
            let rejected = matches!(
                outcome,
                DiscoveryOutcome::Failed {
                    error: McpError::Unauthorized { status: 401 },
                    ..
                }
            );
            if !rejected || !authorized.contains(&config.id) {
                continue;
            }
            let Some(token) = self.mcp_access_token(user_id, &config.id, true).await else {
                continue;
            };
            config.bearer_token = Some(token);
            let again = hub
                .discover(std::slice::from_ref(config), self.config.mcp_discovery_timeout)
                .await;
            if let Some(fresh) = again.into_iter().next() {
                *outcome = fresh;
            }
        }
    }
}

/// A discovered tool in the shape the composition merges.
fn tool_def(tool: &DiscoveredTool) -> McpToolDef {
    McpToolDef {
        name: tool.name.clone(),
        description: tool.description.clone(),
        input_schema: tool.input_schema.clone(),
        title: tool.title.clone(),
        annotations: tool_hints(tool),
    }
}

/// A discovered tool's behaviour hints under the spec's names, as sends, previews and probes show them.
pub fn tool_hints(tool: &DiscoveredTool) -> Option<McpToolHints> {
    tool.hints.as_ref().map(|h| McpToolHints {
        read_only_hint: h.read_only,
        destructive_hint: h.destructive,
        idempotent_hint: h.idempotent,
        open_world_hint: h.open_world,
    })
}

/// Past this many users remembered, the memory starts over (each user's next change is logged).
const USERS_REMEMBERED: usize = 10_000;

/// What each user's sends last left out, as a fingerprint, so the log line comes once per change.
#[derive(Default)]
pub(crate) struct LeftOut {
    last: Mutex<HashMap<String, u64>>,
}

impl LeftOut {
    /// Logs what a send of `user_id` left out, if that differs from what the user's previous send
    /// left out.
    pub fn report(&self, user_id: &str, not_offered: &[NotOffered], unconnected: &[String]) {
        let mut hasher = DefaultHasher::new();
        (not_offered, unconnected).hash(&mut hasher);
        let fingerprint = hasher.finish();
        {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.len() >= USERS_REMEMBERED && !last.contains_key(user_id) {
                last.clear();
            }
            if last.insert(user_id.to_owned(), fingerprint) == Some(fingerprint) {
                return;
            }
        }
        if let Some(summary) = left_out_summary(not_offered, unconnected) {
            tracing::warn!(user = %user_id, "{summary}");
        }
    }
}
