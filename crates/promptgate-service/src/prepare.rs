//! From the stored context to a prepared turn: MCP discovery, the prompt and toolset, executors, history.

use std::collections::HashMap;
use std::sync::Arc;

use promptgate_core::approval::{ApprovalPolicy, policy_for};
use promptgate_core::budget::WebBudget;
use promptgate_core::compose::{ComposeInput, ComposedSend, UpstreamIdentity, compose_send};
use promptgate_core::prompt::nudges;
use promptgate_core::settings::{Engine, Model};
use promptgate_core::tools::mcp_names::needs_authorization_note;
use promptgate_llm::ChatMessage;
use promptgate_mcp::McpServerConfig;
use promptgate_store::{Message, Role, SendContext};
use promptgate_workspace::WorkspaceSession;
use serde_json::{Map, Value, json};

use super::consent::ConsentSetup;
use super::elicit::ElicitationSetup;
use super::harness::{ClientIdentity, FlushWorkspace};
use super::hooks::{TurnState, WebHooks};
use super::providers::ModelProvider;
use super::toolset::{Executors, McpToolExecutor};
use super::window::{Budget, ContextReport, Mode, Window, with_earlier};
use super::{ClientNotes, Service, ServiceError};
use promptgate_turn::client_tools::ClientTools;
use promptgate_turn::engine::{
    AnswerRecorder, Floor, Nudges, RequestBudget, RunnableTool, StepPolicy, ToolCache, ToolTitles, TurnEnd,
    TurnLimits, TurnPlan,
};
use promptgate_turn::facade::FacadeHistory;
use promptgate_turn::history::HistoryOptions;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Everything a turn needs, decided before the first upstream byte.
pub struct Prepared {
    pub model: Model,
    pub composed: ComposedSend,
    pub tools: Vec<RunnableTool>,
    pub history: Vec<ChatMessage>,
    pub state: Arc<TurnState>,
    /// A harness model's new prompt (skill instructions and attachments in place), which follows
    /// either the kept transcript or the seed that `history` starts with.
    pub harness_prompt: Option<ChatMessage>,
    /// The thread's latest stored answer before the new message: a kept transcript must end there.
    pub previous_answer: Option<String>,
    /// The workspace of this send, flushed when the turn ends.
    pub workspace: Option<Arc<WorkspaceSession>>,
    /// Where the system prompt stops being the same from send to send (its stable half and the
    /// block about the thread's older part).
    pub(crate) system_stable_len: Option<usize>,
    /// The model's window and the room in it for the conversation.
    pub(crate) budget: Budget,
    /// Tokens the block about the thread's older part takes of the room.
    pub(crate) earlier_tokens: usize,
    /// This send compacted its thread.
    pub(crate) compacted: bool,
    /// What the model is shown of the thread, for the answer's metadata and the preview.
    pub report: ContextReport,
    /// The MCP servers (id, name) that want the user's authorization before any of their tools
    /// can be offered; the model reads a note about them.
    pub(crate) mcp_needs_authorization: Vec<(String, String)>,
    /// The parts the answer opens with (see [`TurnPlan::opening_parts`]).
    pub(crate) opening_parts: Vec<promptgate_turn::ui::UiChunk>,
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
    /// The client's own tools (a facade's); none for a send.
    pub client: ClientTools,
    /// Whether the client answers approval requests, and what `ask` becomes when it does not.
    pub asking: Asking,
}

/// Who answers a call of an asking tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The client: the turn ends with an approval request (an AI SDK 6+ UI stream).
    Client,
    /// Nobody: `ask` becomes the operator's choice, `allow` or `deny`.
    Nobody(ApprovalPolicy),
}

impl Prepared {
    /// The same send over a conversation the client supplies (the OpenAI facade): its messages
    /// replace the stored history and its system messages follow our system prompt. Its oldest
    /// turns are left out, with a note, when it does not fit the model's window; nothing of it is
    /// kept, so there is no summary.
    pub fn over_client_conversation(mut self, conversation: FacadeHistory) -> Self {
        let counter = &self.budget.counter;
        let mut room = self.budget.room;
        for note in &conversation.system {
            self.composed.system.push_str("\n\n");
            self.composed.system.push_str(note);
            room = room.saturating_sub(counter.text(note) + 2);
        }
        let units = promptgate_turn::window::units(&conversation.messages, counter);
        let keep = promptgate_turn::window::keep_from(&units, room);
        let mut messages = conversation.messages;
        let history = messages.split_off(keep);
        if keep > 0 {
            let block = promptgate_core::prompt::earlier_block(&promptgate_core::prompt::Earlier {
                covered: keep as u64,
                summarised: 0,
                summary: None,
            });
            let (system, stable) = with_earlier(
                std::mem::take(&mut self.composed.system),
                self.system_stable_len,
                Some(&block),
            );
            self.composed.system = system;
            self.system_stable_len = stable;
            self.report.dropped_messages = keep as u64;
        }
        self.report.sent_messages = history.len() as u64;
        self.report.prompt_tokens =
            (self.budget.fixed + promptgate_turn::window::tokens_from(&units, keep)) as u64;
        self.history = history;
        self
    }

    /// The engine's plan for this send: the prepared prompt, tools and history, the model's
    /// profile (step policy, nudges, provider options), the server's limits and the run's parts.
    pub fn into_turn_plan(self, provider: &ModelProvider, limits: TurnLimits, run: RunParts) -> TurnPlan {
        let Prepared {
            model,
            composed,
            tools,
            history,
            state,
            workspace,
            system_stable_len,
            report,
            // Used before the plan is built: they decide `history` (see `Service::send`).
            harness_prompt: _,
            previous_answer: _,
            budget: _,
            earlier_tokens: _,
            compacted: _,
            mcp_needs_authorization: _,
            opening_parts,
        } = self;
        let profile = &model.profile;
        let harness = model.engine == Engine::Harness;
        // The workspace's last changes are saved before whatever else the turn's end depends on.
        let mut on_end: Vec<Arc<dyn TurnEnd>> = Vec::new();
        if let Some(session) = workspace {
            on_end.push(Arc::new(FlushWorkspace(session)));
        }
        on_end.extend(run.on_end);
        let mut extra = provider.provider_options(&model);
        extra.extend(run.extra);
        let mut tools = tools;
        // Where nobody can answer and the operator allows, an asking tool runs; where the operator
        // denies, the engine refuses the call and tells the model the client cannot ask.
        if run.asking == Asking::Nobody(ApprovalPolicy::Allow) {
            for tool in tools
                .iter_mut()
                .filter(|tool| tool.approval == ApprovalPolicy::Ask)
            {
                tool.approval = ApprovalPolicy::Allow;
            }
        }
        TurnPlan {
            turn_id: run.turn_id,
            message_id: run.message_id,
            model_id: model.id.clone(),
            model: provider.model_client(&model),
            upstream_model: model.upstream_model.clone(),
            system_stable_len,
            system_prompt: composed.system,
            citation_reinforcement: profile
                .citation_reinforcement_enabled
                .then(|| nudges::citation_reinforcement(profile).to_owned()),
            history,
            tools,
            client: run.client,
            policy: StepPolicy {
                reasoning_effort: model.reasoning.clone(),
                tool_images: model.supports_images,
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
            // A facade sets it, to count what a request its client left used.
            usage_so_far: None,
            tasks: run.tasks,
            citation_review: None,
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
            start_metadata: report.metadata(),
            can_ask_approval: run.asking == Asking::Client,
            resume: None,
            opening_parts,
            // The send or completion sets it, once it resolved the model's fallbacks.
            failover: Default::default(),
        }
    }
}

/// What the user asks this send: the last message's text (its `/slug` skills), and what the
/// request says besides the stored setup.
pub(super) struct Asked<'a> {
    pub text: &'a str,
    pub facts: &'a SendFacts,
    /// A send may compact its thread; a preview only says that the next send will.
    pub mode: Mode,
}

/// A send whose client said nothing about the user or itself (the facade).
static NOTHING_SAID: std::sync::LazyLock<SendFacts> = std::sync::LazyLock::new(SendFacts::default);

impl<'a> Asked<'a> {
    pub(super) fn without_notes(text: &'a str, mode: Mode) -> Self {
        Self {
            text,
            facts: &NOTHING_SAID,
            mode,
        }
    }
}

/// Stored messages as UI messages (`role` + `parts`), the shape the history conversion reads.
fn ui_messages<'a>(history: impl Iterator<Item = &'a Arc<Message>>) -> Vec<Value> {
    history
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
    pub(super) async fn prepare(
        &self,
        user_id: &str,
        ctx: SendContext,
        model: Model,
        provider: &ModelProvider,
        state: Option<&Arc<TurnState>>,
        facts: &SendFacts,
    ) -> Result<Prepared, ServiceError> {
        let newest_question = ctx.tail.messages.iter().rev().find(|m| m.role == Role::User);
        let text = promptgate_turn::history::last_user_text(&ui_messages(newest_question.into_iter()))
            .unwrap_or_default();
        self.prepare_with_text(
            user_id,
            ctx,
            model,
            provider,
            state,
            Asked {
                text: &text,
                facts,
                mode: Mode::Send,
            },
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
    ) -> Result<Prepared, ServiceError> {
        let Asked {
            text: last_user_text,
            facts,
            mode,
        } = asked;
        let notes = &facts.notes;
        // Offer only what this deployment can run, so the prompt never promises a missing tool.
        if !self.web.available() {
            ctx.settings.web_tools_enabled = false;
        }
        let mcp = self.discover_mcp(user_id, &ctx, &model).await;
        let composed = compose_send(
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
                mcp_servers: &mcp.servers,
                last_user_text,
                ask_responses: &notes.ask_responses,
                voice_mode: notes.voice_mode,
                client_env: &facts.client.environment,
                app_version: facts.client.version.as_deref(),
                regeneration_revision: facts.regeneration_revision,
            },
            super::now(),
        );
        self.mcp_left_out
            .report(user_id, &composed.mcp_not_offered, &mcp.unconnected);
        let state = state.cloned().unwrap_or_else(|| {
            Arc::new(TurnState::new(WebBudget::new(
                composed.web_intent,
                self.web.promotion_enabled,
            )))
        });
        let (executors, workspace) = self
            .executors(user_id, &ctx, &composed, &mcp.configs, &state)
            .await;
        let (mut tools, offered) = executors.attach(composed.tools.clone());
        for tool in &mut tools {
            tool.approval = policy_for(
                &tool.spec,
                &ctx.settings.tool_approval,
                &self.config.approval.operator,
            );
        }
        let mut composed = ComposedSend {
            tools: offered,
            ..composed
        };
        let unauthorized: Vec<String> = mcp
            .needs_authorization
            .iter()
            .map(|(_, name)| name.clone())
            .collect();
        if let Some(note) = needs_authorization_note(&unauthorized) {
            // After the stable part, like everything that changes from send to send.
            composed.system.push_str("\n\n");
            composed.system.push_str(&note);
        }
        let budget = Budget::new(
            &self.config.context,
            &self.token_counters,
            &model,
            &composed.system,
            &composed.tools,
        );
        let stable = &composed.parts.stable;
        let stable_len =
            (!stable.is_empty() && composed.system.starts_with(stable.as_str())).then_some(stable.len());
        let window = match &ctx.thread {
            Some(thread) => {
                let tail = std::mem::take(&mut ctx.tail);
                self.window(
                    (user_id, thread.id.as_str()),
                    thread.created_at,
                    tail,
                    &budget,
                    model.supports_images,
                    mode,
                )
                .await?
            }
            None => Window::empty(),
        };
        let block = window.earlier_block();
        let earlier_tokens = block.as_ref().map_or(0, |b| budget.counter.text(b) + 2);
        let (system, system_stable_len) =
            with_earlier(std::mem::take(&mut composed.system), stable_len, block.as_deref());
        composed.system = system;
        let report = ContextReport::of(&budget, &window, earlier_tokens);
        let previous_answer = window
            .messages
            .iter()
            .rev()
            .find(|(m, _)| m.role == Role::Assistant)
            .map(|(m, _)| m.id.clone());
        let compacted = window.compacted;
        let harness_question = model.engine == Engine::Harness
            && window.messages.last().is_some_and(|(m, _)| m.role == Role::User);
        let (history, harness_prompt) = if harness_question {
            let messages = ui_messages(window.messages.iter().map(|(m, _)| m));
            match messages.split_last() {
                Some((last, earlier)) => {
                    let files = self
                        .config
                        .documents
                        .read(user_id, std::slice::from_ref(last))
                        .await;
                    let options = HistoryOptions {
                        images: model.supports_images,
                        files: &files,
                    };
                    let prompt =
                        promptgate_turn::harness::prompt_message(last, &composed.skill_instructions, options);
                    let mut history = promptgate_turn::harness::seed_turns(earlier);
                    history.extend(prompt.clone());
                    (history, prompt)
                }
                None => (Vec::new(), None),
            }
        } else {
            let history = window
                .messages
                .into_iter()
                .flat_map(|(_, costed)| costed.model)
                .collect();
            (history, None)
        };
        Ok(Prepared {
            model,
            composed,
            tools,
            history,
            state,
            harness_prompt,
            previous_answer,
            workspace,
            system_stable_len,
            budget,
            earlier_tokens,
            compacted,
            report,
            mcp_needs_authorization: mcp.needs_authorization,
            opening_parts: Vec::new(),
        })
    }

    async fn executors(
        &self,
        user_id: &str,
        ctx: &SendContext,
        composed: &ComposedSend,
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
            composed,
            &self.config.workspace,
            &self.config.shell,
        );
        let consent = ConsentSetup {
            service: self.clone(),
            user_id: user_id.to_owned(),
            thread_id: ctx.thread.as_ref().map(|thread| thread.id.clone()),
        };
        if let Some(integrations) = &self.integrations {
            integrations.register(&mut executors, &self.store, user_id, &ctx.integrations, &consent);
        }
        if let Some(hub) = &self.mcp {
            for spec in &composed.tools {
                let Some(origin) = &spec.mcp else { continue };
                if let Some(server) = mcp_configs.get(&origin.server_id) {
                    executors.insert(
                        &spec.name,
                        Arc::new(McpToolExecutor {
                            hub: hub.clone(),
                            server: server.clone(),
                            tool_name: origin.tool_name.clone(),
                            timeout: self.config.mcp_call_timeout,
                            grants: self.mcp_grants(),
                            elicitation: Some(ElicitationSetup {
                                store: self.store.clone(),
                                user_id: user_id.to_owned(),
                                thread_id: ctx.thread.as_ref().map(|thread| thread.id.clone()),
                                timeout: self.config.mcp_elicitation_timeout,
                                tasks: self.tasks.clone(),
                            }),
                            consent: Some(consent.clone()),
                        }),
                    );
                }
            }
        }
        (executors, workspace)
    }
}

/// What a send adds to the stored setup when its prompt is composed: who is asking and how often the thread's
/// answer was regenerated (both shape a harness), and the client's notes (the legacy prompt's).
#[derive(Debug, Clone)]
pub(crate) struct SendFacts {
    pub client: ClientIdentity,
    pub regeneration_revision: u32,
    pub notes: ClientNotes,
    /// The send continues an answer that waited for tool approvals (see `approve`).
    pub continues_answer: bool,
}

impl Default for SendFacts {
    fn default() -> Self {
        Self {
            client: ClientIdentity::web(),
            regeneration_revision: 0,
            notes: ClientNotes::default(),
            continues_answer: false,
        }
    }
}
