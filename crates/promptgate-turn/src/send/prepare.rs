//! From the stored context to a ready plan: MCP discovery, the prompt and toolset, executors, history.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::Utc;
use promptgate_core::budget::WebBudget;
use promptgate_core::plan::{SendInput, SendPlan, UpstreamIdentity, plan_send};
use promptgate_core::settings::{Engine, Model};
use promptgate_core::tools::mcp_names::{McpServerTools, McpToolDef};
use promptgate_llm::ChatMessage;
use promptgate_mcp::{DiscoveryOutcome, McpServerConfig};
use promptgate_store::{Message, SendContext};
use promptgate_workspace::WorkspaceSession;
use serde_json::{Value, json};

use super::harness::{ClientIdentity, FlushWorkspace};
use super::hooks::TurnState;
use super::providers::Provider;
use super::toolset::{Executors, McpToolExecutor};
use super::{ClientNotes, SendError, TurnService};
use crate::engine::PreparedTool;
use crate::history::{HistoryOptions, last_user_text, to_model_messages};

/// Everything a turn needs, decided before the first upstream byte.
pub struct Prepared {
    pub model: Model,
    pub plan: SendPlan,
    pub tools: Vec<PreparedTool>,
    pub history: Vec<ChatMessage>,
    pub state: Arc<TurnState>,
    /// A harness model's new prompt (skill instructions and attachments in place), which follows
    /// either the kept transcript or the seed that `history` starts with.
    pub harness_prompt: Option<ChatMessage>,
    /// The thread's latest stored answer before the new message: a kept transcript must end there.
    pub previous_answer: Option<String>,
    /// The workspace of this send, flushed when the turn ends.
    pub workspace: Option<Arc<WorkspaceSession>>,
}

impl Prepared {
    /// The engine plan for this send. The caller sets what differs between a stored send and a
    /// facade completion: the request budget, tool cache, cancellation and hooks.
    pub fn into_turn_plan(
        self,
        provider: &Provider,
        limits: crate::engine::TurnLimits,
        ids: (String, String),
        system: String,
        history: Vec<ChatMessage>,
    ) -> (crate::engine::TurnPlan, Model, Arc<TurnState>) {
        use promptgate_core::prompt::nudges;
        let (turn_id, message_id) = ids;
        let profile = &self.model.profile;
        let mut plan = crate::engine::TurnPlan::new(
            turn_id,
            message_id,
            self.model.id.clone(),
            provider.model_client(&self.model),
            self.model.upstream_model.clone(),
            system,
            history,
        );
        let stable = &self.plan.parts.stable;
        plan.system_stable_len =
            (!stable.is_empty() && plan.system_prompt.starts_with(stable.as_str())).then_some(stable.len());
        plan.citation_reinforcement = profile
            .citation_reinforcement_enabled
            .then(|| nudges::citation_reinforcement(profile).to_owned());
        plan.tools = self.tools;
        plan.policy = crate::engine::StepPolicy {
            reasoning_effort: self.model.reasoning.clone(),
            ..crate::engine::StepPolicy::from_profile(profile, self.model.supports_parallel_tool_calls)
        };
        plan.nudges = crate::engine::Nudges {
            final_step: nudges::final_step_nudge(profile).to_owned(),
            preventive: nudges::preventive_nudge(profile).to_owned(),
            retry: nudges::retry_nudge(profile, false),
            retry_last: nudges::LAST_RETRY_SENTENCE.to_owned(),
            web_budget: nudges::WEB_BUDGET_NUDGE.to_owned(),
        };
        plan.limits = limits;
        plan.extra = profile.provider_options.clone().unwrap_or_default();
        if self.model.engine == Engine::Harness {
            plan.floor = crate::engine::Floor::Steer(nudges::WEB_FLOOR_STEER.to_owned());
            plan.verb_renderer = crate::engine::title_by_name;
        }
        if let Some(session) = self.workspace {
            plan.on_end.push(Arc::new(FlushWorkspace(session)));
        }
        (plan, self.model, self.state)
    }
}

/// What the user asks this send: the last message's text (its `/slug` skills), and what the
/// request says besides the stored setup.
pub(super) struct Asked<'a> {
    pub text: &'a str,
    pub planned: &'a Planned,
}

/// The prompt and toolset a send to a thread would use now (what the preview shows).
pub struct PreparedSend {
    pub model: Model,
    pub plan: SendPlan,
}

/// Stored messages as UI messages (`role` + `parts`), the shape the history conversion reads.
fn ui_messages(history: &[Message]) -> Vec<Value> {
    history
        .iter()
        .map(|m| {
            let role = match m.role {
                promptgate_store::Role::User => "user",
                promptgate_store::Role::Assistant => "assistant",
            };
            json!({"id": m.id, "role": role, "parts": m.parts})
        })
        .collect()
}

impl TurnService {
    /// The prompt and toolset for a send to `thread_id` made now, without running anything.
    pub async fn preview(
        &self,
        user_id: &str,
        thread_id: &str,
        model: Option<&str>,
        message_text: Option<&str>,
    ) -> Result<PreparedSend, SendError> {
        let (ctx, model, provider) = self.load_with_model(user_id, thread_id, model).await?;
        if ctx.thread.is_none() {
            return Err(SendError::UnknownThread(thread_id.to_owned()));
        }
        let text = message_text.map(str::to_owned).unwrap_or_default();
        let prepared = self
            .prepare_with_text(
                user_id,
                ctx,
                model,
                &provider,
                None,
                Asked {
                    text: &text,
                    planned: &Planned::default(),
                },
            )
            .await;
        Ok(PreparedSend {
            model: prepared.model,
            plan: prepared.plan,
        })
    }

    pub(super) async fn prepare(
        &self,
        user_id: &str,
        ctx: SendContext,
        model: Model,
        provider: &Provider,
        state: Option<&Arc<TurnState>>,
        planned: &Planned,
    ) -> Prepared {
        let text = last_user_text(&ui_messages(&ctx.history)).unwrap_or_default();
        self.prepare_with_text(
            user_id,
            ctx,
            model,
            provider,
            state,
            Asked { text: &text, planned },
        )
        .await
    }

    pub(super) async fn prepare_with_text(
        &self,
        user_id: &str,
        mut ctx: SendContext,
        model: Model,
        provider: &Provider,
        state: Option<&Arc<TurnState>>,
        asked: Asked<'_>,
    ) -> Prepared {
        let Asked {
            text: last_user_text,
            planned,
        } = asked;
        let notes = &planned.notes;
        // Offer only what this deployment can run, so the prompt never promises a missing tool.
        if !self.web.available() {
            ctx.settings.web_tools_enabled = false;
        }
        let (mcp_servers, mcp_configs) = self.discover_mcp(user_id, &ctx, &model).await;
        let plan = plan_send(
            &SendInput {
                settings: &ctx.settings,
                integrations: &ctx.integrations,
                model: &model,
                upstream: UpstreamIdentity {
                    kind: provider.harness_kind(),
                    provider: &provider.name,
                    base_url: &provider.base_url,
                    api_key: provider.api_key.as_deref(),
                },
                project: ctx.project.as_ref(),
                sibling_count: ctx.sibling_count,
                skills: &ctx.skills,
                mcp_servers: &mcp_servers,
                last_user_text,
                ask_responses: &notes.ask_responses,
                voice_mode: notes.voice_mode,
                client_env: &planned.client.environment,
                app_version: planned.client.version.as_deref(),
                regeneration_revision: planned.regeneration_revision,
            },
            Utc::now(),
        );
        for skipped in &plan.mcp_not_offered {
            tracing::warn!(user = %user_id, "{}", skipped.warning());
        }
        let state = state.cloned().unwrap_or_else(|| {
            Arc::new(TurnState::new(WebBudget::new(
                plan.web_intent,
                self.web.promotion_enabled,
            )))
        });
        let (executors, workspace) = self.executors(user_id, &ctx, &plan, &mcp_configs, &state).await;
        let (tools, offered) = executors.attach(plan.tools.clone());
        let plan = SendPlan {
            tools: offered,
            ..plan
        };
        let options = HistoryOptions {
            images: model.supports_images,
        };
        let messages = ui_messages(&ctx.history);
        let previous_answer = ctx
            .history
            .iter()
            .rev()
            .find(|m| m.role == promptgate_store::Role::Assistant)
            .map(|m| m.id.clone());
        let (history, harness_prompt) = match (model.engine, messages.split_last()) {
            (Engine::Harness, Some((last, earlier))) if last["role"] == "user" => {
                let prompt = crate::harness::prompt_message(last, &plan.skill_instructions, options);
                let mut history = crate::harness::seed_turns(earlier);
                history.extend(prompt.clone());
                (history, prompt)
            }
            _ => (to_model_messages(&messages, options), None),
        };
        Prepared {
            model,
            plan,
            tools,
            history,
            state,
            harness_prompt,
            previous_answer,
            workspace,
        }
    }

    /// Every enabled MCP server, in order; a failed server keeps its place with no tools.
    async fn discover_mcp(
        &self,
        user_id: &str,
        ctx: &SendContext,
        model: &Model,
    ) -> (Vec<McpServerTools>, HashMap<String, McpServerConfig>) {
        let Some(hub) = &self.mcp else {
            return (Vec::new(), HashMap::new());
        };
        if !model.supports_tools() || ctx.mcp_servers.is_empty() {
            return (Vec::new(), HashMap::new());
        }
        let configs: Vec<McpServerConfig> = ctx
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
        let outcomes = hub.discover(&configs, self.config.mcp_discovery_timeout).await;
        let servers = outcomes
            .iter()
            .map(|outcome| {
                let server = outcome.server();
                let tools = match outcome {
                    DiscoveryOutcome::Ready { tools, .. } => tools
                        .iter()
                        .map(|t| McpToolDef {
                            name: t.name.clone(),
                            description: t.description.clone(),
                            input_schema: t.input_schema.clone(),
                        })
                        .collect(),
                    DiscoveryOutcome::Failed { error, .. } => {
                        tracing::warn!(server = %server.name, error = %error, "MCP server skipped for this send");
                        Vec::new()
                    }
                };
                McpServerTools { server_id: server.id.clone(), name: server.name.clone(), url: server.url.clone(), tools }
            })
            .collect();
        (servers, configs.into_iter().map(|c| (c.id.clone(), c)).collect())
    }

    async fn executors(
        &self,
        user_id: &str,
        ctx: &SendContext,
        plan: &SendPlan,
        mcp_configs: &HashMap<String, McpServerConfig>,
        state: &Arc<TurnState>,
    ) -> (Executors, Option<Arc<WorkspaceSession>>) {
        let mut executors = Executors::default();
        super::builtin::register(self, &mut executors, user_id, ctx, state).await;
        let workspace = super::workspace::register(
            &mut executors,
            &self.store,
            user_id,
            ctx,
            plan,
            &self.config.workspace,
        );
        if let Some(integrations) = &self.integrations {
            integrations.register(&mut executors, &self.store, user_id, &ctx.integrations);
        }
        if let Some(hub) = &self.mcp {
            for spec in &plan.tools {
                let Some(origin) = &spec.mcp else { continue };
                if let Some(server) = mcp_configs.get(&origin.server_id) {
                    executors.insert(
                        &spec.name,
                        Arc::new(McpToolExecutor {
                            hub: hub.clone(),
                            server: server.clone(),
                            tool_name: origin.tool_name.clone(),
                            timeout: self.config.mcp_call_timeout,
                        }),
                    );
                }
            }
        }
        (executors, workspace)
    }
}

/// What a send adds to the stored setup when planning: who is asking and how often the thread's
/// answer was regenerated (both shape a harness), and the client's notes (the legacy prompt's).
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub client: ClientIdentity,
    pub regeneration_revision: u32,
    pub notes: ClientNotes,
}

impl Default for Planned {
    fn default() -> Self {
        Self {
            client: ClientIdentity::web(),
            regeneration_revision: 0,
            notes: ClientNotes::default(),
        }
    }
}
