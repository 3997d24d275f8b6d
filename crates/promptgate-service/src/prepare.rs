//! From the stored context to a ready plan: MCP discovery, the prompt and toolset, executors, history.

use std::collections::HashMap;
use std::sync::Arc;

use promptgate_core::budget::WebBudget;
use promptgate_core::plan::{ComposeInput, ComposedSend, UpstreamIdentity, compose_send};
use promptgate_core::prompt::nudges;
use promptgate_core::settings::{Engine, Model};
use promptgate_core::tools::mcp_names::{McpServerTools, McpToolDef};
use promptgate_llm::ChatMessage;
use promptgate_mcp::{DiscoveryOutcome, McpServerConfig};
use promptgate_store::{Message, SendContext};
use promptgate_workspace::WorkspaceSession;
use serde_json::{Map, Value, json};

use super::harness::{ClientIdentity, FlushWorkspace};
use super::hooks::{TurnState, WebHooks};
use super::providers::ModelProvider;
use super::toolset::{Executors, McpToolExecutor};
use super::{ClientNotes, Service, ServiceError};
use promptgate_turn::engine::{
    AnswerRecorder, Floor, Nudges, PreparedTool, RequestBudget, StepPolicy, ToolCache, ToolTitles, TurnEnd,
    TurnLimits, TurnPlan,
};
use promptgate_turn::facade::FacadeHistory;
use promptgate_turn::history::{HistoryOptions, last_user_text, to_model_messages};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Everything a turn needs, decided before the first upstream byte.
pub struct Prepared {
    pub model: Model,
    pub composed: ComposedSend,
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

/// What a run of the prepared send needs besides the prepared parts: what differs between a
/// stored send and a facade completion, and what an automatic retry carries over.
pub struct RunParts {
    pub turn_id: String,
    /// The id of the assistant message being written.
    pub message_id: String,
    /// The turn's attempts so far; a retry passes its turn's.
    pub request_budget: Arc<RequestBudget>,
    /// Results of earlier calls; a retry passes its turn's.
    pub tool_cache: ToolCache,
    /// Stops the turn.
    pub cancel: CancellationToken,
    /// The turn's place among those the server runs at once.
    pub admission: OwnedSemaphorePermit,
    /// Where the answer is stored; `None` keeps nothing (the facade).
    pub recorder: Option<Arc<dyn AnswerRecorder>>,
    /// Request fields the client sent that we pass to the provider as they are.
    pub extra: Map<String, Value>,
    /// Owns the turn's task, so a shutdown waits for it.
    pub tasks: TaskTracker,
    /// End the turn at once with this error, before any upstream request.
    pub refusal: Option<String>,
    /// Work due at the turn's end, after the workspace flush and before the stream says done.
    pub on_end: Vec<Arc<dyn TurnEnd>>,
}

impl Prepared {
    /// The same send over a conversation the client supplies (the OpenAI facade): its messages
    /// replace the stored history and its system messages follow our system prompt.
    pub fn over_client_conversation(mut self, conversation: FacadeHistory) -> Self {
        for note in &conversation.system {
            self.composed.system.push_str("\n\n");
            self.composed.system.push_str(note);
        }
        self.history = conversation.messages;
        self
    }

    /// The engine's plan for this send: the prepared prompt, tools and history, the model's
    /// profile (step policy, nudges, provider options), the server's limits and the run's parts.
    pub fn into_turn_plan(self, provider: &ModelProvider, limits: TurnLimits, run: RunParts) -> TurnPlan {
        let Prepared {
            model,
            composed: plan,
            tools,
            history,
            state,
            workspace,
            // Used before the plan is built: they decide `history` (see `Service::send`).
            harness_prompt: _,
            previous_answer: _,
        } = self;
        let profile = &model.profile;
        let stable = &plan.parts.stable;
        let system_stable_len =
            (!stable.is_empty() && plan.system.starts_with(stable.as_str())).then_some(stable.len());
        let harness = model.engine == Engine::Harness;
        // The workspace's last changes are saved before whatever else the turn's end depends on.
        let mut on_end: Vec<Arc<dyn TurnEnd>> = Vec::new();
        if let Some(session) = workspace {
            on_end.push(Arc::new(FlushWorkspace(session)));
        }
        on_end.extend(run.on_end);
        let mut extra = provider.provider_options(&model);
        extra.extend(run.extra);
        TurnPlan {
            turn_id: run.turn_id,
            message_id: run.message_id,
            model_id: model.id.clone(),
            model: provider.model_client(&model),
            upstream_model: model.upstream_model.clone(),
            system_stable_len,
            system_prompt: plan.system,
            citation_reinforcement: profile
                .citation_reinforcement_enabled
                .then(|| nudges::citation_reinforcement(profile).to_owned()),
            history,
            tools,
            policy: StepPolicy {
                reasoning_effort: model.reasoning.clone(),
                ..StepPolicy::from_profile(profile, model.supports_parallel_tool_calls)
            },
            nudges: Nudges {
                final_step: nudges::final_step_nudge(profile).to_owned(),
                preventive: nudges::preventive_nudge(profile).to_owned(),
                retry: nudges::retry_nudge(profile, false),
                retry_last: nudges::LAST_RETRY_SENTENCE.to_owned(),
                web_budget: nudges::WEB_BUDGET_NUDGE.to_owned(),
            },
            limits,
            request_budget: Some(run.request_budget),
            tool_cache: run.tool_cache,
            cancel: run.cancel,
            extra,
            hooks: Arc::new(WebHooks::new(state)),
            admission: Some(run.admission),
            // Without a recorder nothing is stored, so the message need not be folded either.
            record_message: run.recorder.is_some(),
            recorder: run.recorder,
            tasks: run.tasks,
            floor: if harness {
                Floor::Steer(nudges::WEB_FLOOR_STEER.to_owned())
            } else {
                Floor::NoTools
            },
            titles: if harness {
                ToolTitles::Name
            } else {
                ToolTitles::Verb
            },
            refusal: run.refusal,
            on_end,
        }
    }
}

/// What the user asks this send: the last message's text (its `/slug` skills), and what the
/// request says besides the stored setup.
pub(super) struct Asked<'a> {
    pub text: &'a str,
    pub planned: &'a Planned,
}

/// A send whose client said nothing about the user or itself (the preview, the facade).
static NOTHING_SAID: std::sync::LazyLock<Planned> = std::sync::LazyLock::new(Planned::default);

impl<'a> Asked<'a> {
    pub(super) fn without_notes(text: &'a str) -> Self {
        Self {
            text,
            planned: &NOTHING_SAID,
        }
    }
}

/// The prompt and toolset a send to a thread would use now (what the preview shows).
pub struct PreparedSend {
    pub model: Model,
    pub composed: ComposedSend,
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

impl Service {
    /// The prompt and toolset for a send to `thread_id` made now, without running anything.
    pub async fn preview(
        &self,
        user_id: &str,
        thread_id: &str,
        model: Option<&str>,
        message_text: Option<&str>,
    ) -> Result<PreparedSend, ServiceError> {
        let (ctx, model, provider) = self.load_with_model(user_id, Some(thread_id), model).await?;
        if ctx.thread.is_none() {
            return Err(ServiceError::UnknownThread(thread_id.to_owned()));
        }
        let text = message_text.map(str::to_owned).unwrap_or_default();
        let prepared = self
            .prepare_with_text(user_id, ctx, model, &provider, None, Asked::without_notes(&text))
            .await;
        Ok(PreparedSend {
            model: prepared.model,
            composed: prepared.composed,
        })
    }

    pub(super) async fn prepare(
        &self,
        user_id: &str,
        ctx: SendContext,
        model: Model,
        provider: &ModelProvider,
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

    #[tracing::instrument(name = "prepare", skip_all)]
    pub(super) async fn prepare_with_text(
        &self,
        user_id: &str,
        mut ctx: SendContext,
        model: Model,
        provider: &ModelProvider,
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
        let plan = compose_send(
            &ComposeInput {
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
            super::now(),
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
        let plan = ComposedSend {
            tools: offered,
            ..plan
        };
        let messages = ui_messages(&ctx.history);
        let previous_answer = ctx
            .history
            .iter()
            .rev()
            .find(|m| m.role == promptgate_store::Role::Assistant)
            .map(|m| m.id.clone());
        let documents = &self.config.documents;
        let (history, harness_prompt) = match (model.engine, messages.split_last()) {
            // A harness sees earlier files as labels: only the new message's are read.
            (Engine::Harness, Some((last, earlier))) if last["role"] == "user" => {
                let files = documents.read(user_id, std::slice::from_ref(last)).await;
                let options = HistoryOptions {
                    images: model.supports_images,
                    files: &files,
                };
                let prompt =
                    promptgate_turn::harness::prompt_message(last, &plan.skill_instructions, options);
                let mut history = promptgate_turn::harness::seed_turns(earlier);
                history.extend(prompt.clone());
                (history, prompt)
            }
            _ => {
                let files = documents.read(user_id, &messages).await;
                let options = HistoryOptions {
                    images: model.supports_images,
                    files: &files,
                };
                (to_model_messages(&messages, options), None)
            }
        };
        Prepared {
            model,
            composed: plan,
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
        plan: &ComposedSend,
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
            &self.config.shell,
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
