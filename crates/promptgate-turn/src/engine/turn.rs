//! The loop: attempts (empty-response retry) → steps (nudges, step cap) → tool calls.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use promptgate_llm::{
    CacheHints, ChatMessage, ChatRequest, FinishReason, LlmError, ToolCall, ToolChoice, ToolDefinition,
    Usage, UserContent,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use promptgate_core::citations::check::{Citation, CitationCounts};

use super::approval::Gated;
use super::call_scope::CallScope;
use super::output::Output;
use super::plan::{Floor, PendingApproval, RequestBudget, TurnOutcome, TurnPlan, TurnStatus};
use super::reasoning::ReasoningTimes;
use super::step::{Interrupt, StepState, StreamedCall};
use super::tool_images::StepImages;
use super::tools::{Checked, check_call, check_client_call, start_call};
use super::{span_content, spans};
use crate::client_tools::{ClientToolCall, ClientToolChoice};
use crate::ui::{TurnEvent, UiChunk, UiFinishReason};

/// Shown when a turn has used its request budget.
pub const BUDGET_EXHAUSTED_TEXT: &str =
    "This turn used up its budget of model requests. Send your message again to start a new turn.";
/// The error a tool call gets when the turn is stopped before it finished.
pub const STOPPED_TEXT: &str = "stopped";
/// Sent before the end of a stream whose answer the store has not taken yet; it is still being saved.
pub const NOT_STORED_TEXT: &str = "This answer is not stored yet: the database did not take it in time. \
     The gateway keeps trying; reload the conversation later before relying on it.";
/// The turn's end when the model answered nothing, even when asked again.
pub const EMPTY_ANSWER_TEXT: &str = "The model returned an empty answer. Please try again.";
/// The error code of a turn whose prompt the provider found longer than the model's context window.
pub const CONTEXT_TOO_LONG: &str = "context_too_long";
/// The error code of a turn whose request the provider refused as invalid for another reason (a value
/// out of the model's range, a field it does not take): the same request would be refused again.
pub const REQUEST_REFUSED: &str = "request_refused";
/// The error codes of a turn whose provider said it was rate limiting (429) or overloaded (503, 529)
/// and no fallback answered: asking again later can succeed, after `retryAfterSecs` when the
/// provider said how long.
pub const PROVIDER_RATE_LIMITED: &str = "provider_rate_limited";
pub const PROVIDER_OVERLOADED: &str = "provider_overloaded";
/// What the user reads then: the history was already fitted, so what is left is the newest message
/// (or the setup) itself, or a model whose window is smaller than it says.
pub const CONTEXT_TOO_LONG_TEXT: &str = "The conversation does not fit this model's context window, even with \
     older messages left out (context_too_long). Shorten the message or its attachments, start a new thread, \
     or choose a model with a larger window.";
/// The pause before asking again after an empty answer.
const EMPTY_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(250);
const OVERSIZED_TEXT: &str = "invalid arguments: the arguments are longer than the gateway accepts (1 MiB)";
const CUT_OFF_TEXT: &str = "the model's response was cut off before this call was complete";

/// How the whole turn ended.
enum End {
    Finished(FinishReason),
    /// The model called client tools: the client runs them (model ids here).
    HandedOff(Vec<ClientToolCall>),
    /// Calls wait for the user's approval; a later turn continues the message.
    AwaitingApproval(Vec<PendingApproval>),
    Stopped,
    Failed(String),
}

/// How one step ended.
enum StepEnd {
    Tools,
    HandOff(Vec<ClientToolCall>),
    AwaitApproval(Vec<PendingApproval>),
    Answer(FinishReason),
    Stopped,
    Failed(String),
}

pub(super) struct Turn {
    pub(super) plan: TurnPlan,
    pub(super) out: Output,
    budget: Arc<RequestBudget>,
    /// The conversation as the model sees it, growing with each tool step.
    pub(super) messages: Vec<ChatMessage>,
    /// How many of `messages` came with the plan; the rest is this turn's.
    pub(super) history_len: usize,
    /// Index in each request's messages of the last message before the newest user turn.
    conversation_prefix_end: Option<usize>,
    definitions: Vec<ToolDefinition>,
    /// Which of `definitions` are budgeted web tools (the harness floor takes those away).
    web_definitions: Vec<bool>,
    /// Where the harness floor's steering message sits in `messages`, while it applies.
    pub(super) steer_at: Option<usize>,
    pub(super) part_counter: u64,
    pub(super) answered: bool,
    pub(super) upstream_requests: u32,
    pub(super) made_tool_calls: bool,
    pub(super) after_tool_step: bool,
    usage_total: Usage,
    /// Which model steps are asked of first: 0 for the plan's own, `i` for its `i`-th fallback
    /// once that one answered (see `failover`).
    pub(super) route_index: usize,
    /// Calls of the server's tools that ran, and of those the web tools, for the usage ledger.
    tool_calls: u32,
    web_calls: u32,
    pub(super) reasoning_times: ReasoningTimes,
    steps: u32,
    attempts: u32,
    /// Text parts closed so far; a citation names its part by this ordinal.
    pub(super) text_parts: u32,
    /// The answer's checked citations, for its metadata.
    pub(super) citations: Vec<Citation>,
    /// Set once a part's citations were checked.
    pub(super) citation_counts: Option<CitationCounts>,
    /// The span of the model call under way, lent by `step` while the call is made: attached only
    /// while a request to the upstream is opened (see `failover::first_event`), not on every frame
    /// of its answer.
    pub(super) chat_span: Option<opentelemetry::Context>,
    /// The turn's own span: the explicit parent of its model and tool calls' spans, and attached
    /// only while the final answer is handed to the recorder. It is not attached around the turn's
    /// polls: the turn is polled once per frame of the answer, and nothing in those polls reads it.
    agent_span: spans::TraceSpan,
}

impl Turn {
    pub(super) fn new(
        mut plan: TurnPlan,
        events: mpsc::Sender<TurnEvent>,
        stop: CancellationToken,
        agent_span: spans::TraceSpan,
    ) -> Self {
        let budget = plan
            .request_budget
            .clone()
            .unwrap_or_else(|| Arc::new(RequestBudget::from_limits(&plan.limits)));
        let server_definitions = plan.tools.iter().map(|tool| ToolDefinition {
            name: tool.spec.name.clone(),
            description: tool.spec.description.clone(),
            parameters: tool.spec.parameters.clone(),
        });
        let client_definitions = plan
            .client
            .tools
            .iter()
            .filter(|client| !plan.tools.iter().any(|tool| tool.spec.name == client.name));
        let definitions: Vec<ToolDefinition> =
            server_definitions.chain(client_definitions.cloned()).collect();
        let web_definitions = plan
            .tools
            .iter()
            .map(|tool| tool.spec.web)
            .chain(std::iter::repeat(false))
            .take(definitions.len())
            .collect();
        let messages = std::mem::take(&mut plan.history);
        // The history only grows during a turn, and each request puts the system message first,
        // so the message before the newest user message sits one further on.
        let conversation_prefix_end = messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::User { .. }))
            .filter(|&newest_user| newest_user > 0);
        let recorder = plan
            .recorder
            .clone()
            .map(|recorder| (recorder, plan.limits.checkpoint_every));
        let out = Output::new(
            events,
            plan.limits.keep_alive,
            stop,
            budget.deadline(),
            plan.record_message,
            recorder,
        );
        Self {
            plan,
            out,
            budget,
            history_len: messages.len(),
            messages,
            conversation_prefix_end,
            definitions,
            web_definitions,
            steer_at: None,
            part_counter: 0,
            answered: false,
            upstream_requests: 0,
            made_tool_calls: false,
            after_tool_step: false,
            usage_total: Usage::default(),
            route_index: 0,
            tool_calls: 0,
            web_calls: 0,
            reasoning_times: ReasoningTimes::default(),
            steps: 0,
            attempts: 0,
            text_parts: 0,
            citations: Vec::new(),
            citation_counts: None,
            chat_span: None,
            agent_span,
        }
    }

    pub(super) async fn run(mut self) -> TurnOutcome {
        let resume = self.plan.resume.take();
        if let Some(resume) = &resume {
            self.out.continue_message(&resume.parts, &resume.metadata);
        }
        let mut metadata = json!({"modelId": self.plan.model_id, "turnId": self.plan.turn_id});
        if let Some(object) = metadata.as_object_mut() {
            object.extend(self.plan.start_metadata.clone());
        }
        self.out
            .emit(UiChunk::Start {
                message_id: Some(self.plan.message_id.clone()),
                message_metadata: Some(metadata),
            })
            .await;
        if let Some(resume) = resume {
            self.resume(resume).await;
        } else {
            for part in std::mem::take(&mut self.plan.opening_parts) {
                self.out.emit(part).await;
            }
        }
        let mut end = match self.plan.refusal.clone() {
            Some(text) => End::Failed(text),
            None => self.attempts().await,
        };
        if matches!(end, End::Stopped) && self.out.timed_out() {
            // Cut like a Stop, but the user did not ask for it: the answer so far is kept and
            // the end says why it is short.
            self.plan.tool_cache.drop_unfinished();
            end = End::Failed(out_of_time_text(self.plan.limits.wall_clock));
        }
        let mut handed_off = Vec::new();
        let mut pending_approvals = Vec::new();
        let (status, finish_reason, error, ending) = match end {
            End::Finished(reason) => completed(UiFinishReason::from(&reason)),
            End::HandedOff(calls) => {
                handed_off = calls;
                completed(UiFinishReason::ToolCalls)
            }
            End::AwaitingApproval(pending) => {
                pending_approvals = pending;
                completed(UiFinishReason::ToolCalls)
            }
            End::Stopped => {
                self.plan.tool_cache.drop_unfinished();
                let abort = UiChunk::Abort {
                    reason: Some(STOPPED_TEXT.to_owned()),
                };
                (TurnStatus::Stopped, None, None, vec![abort])
            }
            End::Failed(text) => {
                let reason = UiFinishReason::Error;
                let chunks = vec![
                    UiChunk::Error {
                        error_text: text.clone(),
                    },
                    UiChunk::Finish {
                        finish_reason: Some(reason),
                        message_metadata: None,
                    },
                ];
                (TurnStatus::Error, Some(reason), Some(text), chunks)
            }
        };
        // The answer is stored before the stream says it is done, so a client that reads the
        // thread right after the end finds it.
        for chunk in &ending {
            self.out.record(chunk);
        }
        // Kept before the client learns the calls, so its next request finds the hidden steps.
        let client_calls = self.hand_off(handed_off).await;
        self.settle(status).await;
        let (parts, metadata) = self.out.message();
        let outcome = TurnOutcome {
            message_id: self.plan.message_id.clone(),
            parts,
            metadata,
            status,
            finish_reason,
            pending_approvals,
            answered_by: self.answered_by(),
            usage_total: self.usage_total,
            tool_calls: self.tool_calls,
            web_calls: self.web_calls,
            steps: self.steps,
            upstream_requests: self.upstream_requests,
            attempts: self.attempts,
            error,
        };
        if let Some(recorder) = self.plan.recorder.clone() {
            let grace = self.plan.limits.save_grace;
            // The recorder takes the attached context as the parent of the final save's spans,
            // which belong to the turn.
            let finishing =
                crate::trace::within(self.agent_span.context(), || recorder.finish(outcome.clone()));
            let stored = tokio::time::timeout(grace, finishing).await.unwrap_or(false);
            if !stored {
                tracing::warn!(
                    turn = %self.plan.turn_id, grace_ms = grace.as_millis() as u64,
                    "the answer was not stored within the grace; the stream says so"
                );
                self.out
                    .send_only(UiChunk::Error {
                        error_text: NOT_STORED_TEXT.to_owned(),
                    })
                    .await;
            }
        }
        for call in client_calls {
            self.out.send_event(TurnEvent::ClientToolCall(call)).await;
        }
        for chunk in ending {
            self.out.send_only(chunk).await;
        }
        outcome
    }

    /// Runs the plan's end-of-turn work, all at once and within the save grace.
    async fn settle(&mut self, status: TurnStatus) {
        if self.plan.on_end.is_empty() {
            return;
        }
        // The steer answers this turn's budget; a later send starts with a fresh one.
        if let Some(at) = self.steer_at.take()
            && at < self.messages.len()
        {
            self.messages.remove(at);
        }
        let transcript = &self.messages;
        let work = futures::future::join_all(
            self.plan
                .on_end
                .iter()
                .map(|task| task.turn_ended(status, transcript)),
        );
        if tokio::time::timeout(self.plan.limits.save_grace, work)
            .await
            .is_err()
        {
            tracing::warn!(turn = %self.plan.turn_id, "end-of-turn work did not finish within the save grace");
        }
    }

    /// The first run and the empty-response retries, each drawing on the request budget.
    async fn attempts(&mut self) -> End {
        let mut asked_again_after_empty = false;
        loop {
            if self.out.stopped() {
                return End::Stopped;
            }
            if !self.budget.try_consume() {
                return End::Failed(BUDGET_EXHAUSTED_TEXT.to_owned());
            }
            self.attempts += 1;
            let reason = match self.steps_of_attempt().await {
                End::Finished(reason) => reason,
                other => return other,
            };
            if self.answered {
                return End::Finished(reason);
            }
            if !self.made_tool_calls {
                // Nothing at all came back: ask once more as it was, then give up loudly rather
                // than end a turn as complete with nothing in it.
                if asked_again_after_empty {
                    return End::Failed(EMPTY_ANSWER_TEXT.to_owned());
                }
                asked_again_after_empty = true;
                tracing::info!(turn = %self.plan.turn_id, "the model answered nothing; asking again");
                if self
                    .out
                    .wait(tokio::time::sleep(EMPTY_RETRY_DELAY))
                    .await
                    .is_none()
                {
                    return End::Stopped;
                }
                continue;
            }
            let retries_left = self.attempts < self.plan.policy.max_attempts;
            if !retries_left {
                return End::Finished(reason);
            }
            // Tools ran but no answer came: ask again, continuing the same message.
            let mut nudge = self.plan.nudges.retry.clone();
            if self.attempts + 1 == self.plan.policy.max_attempts && !self.plan.nudges.retry_last.is_empty() {
                nudge.push(' ');
                nudge.push_str(&self.plan.nudges.retry_last);
            }
            if !nudge.is_empty() {
                self.messages.push(user_message(nudge));
            }
        }
    }

    async fn steps_of_attempt(&mut self) -> End {
        let max_steps = self
            .plan
            .policy
            .max_steps
            .clamp(1, self.plan.limits.max_steps.max(1));
        let mut tool_steps = 0;
        for index in 0..max_steps {
            if self.out.stopped() {
                return End::Stopped;
            }
            let final_step = index + 1 >= max_steps;
            match self.step(final_step, tool_steps).await {
                StepEnd::Tools => tool_steps += 1,
                StepEnd::HandOff(calls) => return End::HandedOff(calls),
                StepEnd::AwaitApproval(pending) => return End::AwaitingApproval(pending),
                StepEnd::Answer(reason) => return End::Finished(reason),
                StepEnd::Stopped => return End::Stopped,
                StepEnd::Failed(text) => return End::Failed(text),
            }
        }
        // The step cap ended the attempt while the model was still calling tools.
        End::Finished(FinishReason::ToolCalls)
    }

    /// The request for the next step, with the one nudge that applies (final step, then the web
    /// budget floor, then the preventive nudge).
    fn request(&self, final_step: bool, tool_steps: u32) -> ChatRequest {
        let plan = &self.plan;
        let mut system = plan.system_prompt.clone();
        if let Some(reinforcement) = plan
            .citation_reinforcement
            .as_deref()
            .filter(|_| self.after_tool_step)
        {
            system.push_str("\n\n");
            system.push_str(reinforcement);
        }
        let mut messages = Vec::with_capacity(self.messages.len() + 2);
        messages.push(ChatMessage::System { content: system });
        messages.extend(self.messages.iter().cloned());
        let tools = if final_step {
            Vec::new()
        } else if self.steer_at.is_some() {
            self.definitions
                .iter()
                .zip(&self.web_definitions)
                .filter(|(_, web)| !**web)
                .map(|(definition, _)| definition.clone())
                .collect()
        } else {
            self.definitions.clone()
        };
        let mut tool_choice = None;
        let nudge = if final_step {
            Some(&plan.nudges.final_step)
        } else if plan.floor == Floor::NoTools && plan.hooks.floor_active() {
            tool_choice = Some(ToolChoice::None);
            Some(&plan.nudges.web_budget)
        } else if tool_steps > 0 && tool_steps >= plan.policy.nudge_threshold {
            Some(&plan.nudges.preventive)
        } else {
            None
        };
        if let Some(nudge) = nudge.filter(|text| !text.is_empty()) {
            messages.push(user_message(nudge.clone()));
        }
        let first_step = self.steps == 0 && !final_step;
        let mut tools = tools;
        if first_step && tool_choice.is_none() {
            match &plan.client.choice {
                ClientToolChoice::Auto => {}
                ClientToolChoice::Required => tool_choice = Some(ToolChoice::Required),
                ClientToolChoice::Named(name) => {
                    tools.retain(|tool| &tool.name == name);
                    tool_choice = Some(ToolChoice::Required);
                }
            }
        }
        if tools.is_empty() {
            tool_choice = None;
        }
        ChatRequest {
            model: plan.upstream_model.clone(),
            messages,
            parallel_tool_calls: (!tools.is_empty() && !plan.policy.parallel_tool_calls).then_some(false),
            tools,
            tool_choice,
            temperature: plan.policy.temperature,
            reasoning_effort: plan.policy.reasoning_effort.clone(),
            max_output_tokens: plan.policy.max_output_tokens,
            whole_answer: plan.policy.whole_answers,
            extra: plan.extra.clone(),
            cache: CacheHints {
                stable_system_len: plan.system_stable_len,
                conversation_prefix_end: self.conversation_prefix_end,
            },
        }
    }

    /// The harness floor follows the budget: the steer goes in after the first denial and comes
    /// out again when a promotion reopens capacity.
    fn follow_floor(&mut self) {
        let Floor::Steer(text) = &self.plan.floor else {
            return;
        };
        let active = self.plan.hooks.floor_active() && !self.plan.hooks.floor_lifted();
        match self.steer_at {
            None if active => {
                self.steer_at = Some(self.messages.len());
                self.messages.push(user_message(text.clone()));
            }
            Some(at) if !active => {
                if at < self.messages.len() {
                    self.messages.remove(at);
                }
                self.steer_at = None;
            }
            _ => {}
        }
    }

    async fn step(&mut self, final_step: bool, tool_steps: u32) -> StepEnd {
        self.follow_floor();
        let request = self.request(final_step, tool_steps);
        self.steps += 1;
        self.out.emit(UiChunk::StartStep).await;
        let mut state = StepState::default();
        let mut chat = spans::chat(&self.agent_span, &self.plan);
        let capturing = span_content::capturing();
        if capturing {
            span_content::record_request(&chat, &request.messages);
        }
        // Lent, not cloned: the span ends with its last clone, which must not outlive the step.
        self.chat_span = chat.take();
        let streamed = self.stream_step(request, &mut state).await;
        chat.put_back(self.chat_span.take());
        let failure = match &streamed {
            Err(Interrupt::Failed(err)) => Some(err),
            _ => None,
        };
        spans::record_chat(&chat, state.usage.as_ref(), state.finish.as_ref(), failure);
        if capturing {
            span_content::record_response(&chat, &state.text, &state.calls, state.finish.as_ref());
        }
        self.close_open_parts(&mut state).await;
        if let Some(usage) = &state.usage {
            add_usage(&mut self.usage_total, usage);
        }
        let end = match streamed {
            Err(Interrupt::Stopped) => {
                self.abandon_calls(&state.calls, STOPPED_TEXT).await;
                StepEnd::Stopped
            }
            Err(Interrupt::Failed(err)) => {
                tracing::warn!(error = %err, turn = %self.plan.turn_id, "model request failed");
                self.abandon_calls(&state.calls, CUT_OFF_TEXT).await;
                if let Some(code) = error_code(&err) {
                    // The UI stream's error chunk has no field for it; the metadata does.
                    let mut metadata = json!({"errorCode": code});
                    if let Some(wait) = retry_after_secs(&err) {
                        metadata["retryAfterSecs"] = wait.into();
                    }
                    self.out
                        .emit(UiChunk::MessageMetadata {
                            message_metadata: metadata,
                        })
                        .await;
                }
                StepEnd::Failed(user_facing_error(&err))
            }
            Ok(()) if state.calls.is_empty() => {
                if !state.text.is_empty() {
                    // A kept harness transcript continues from the answer on the next send.
                    self.messages.push(ChatMessage::Assistant {
                        content: Some(std::mem::take(&mut state.text)),
                        tool_calls: Vec::new(),
                    });
                }
                StepEnd::Answer(state.finish.take().unwrap_or(FinishReason::Stop))
            }
            Ok(()) => self.run_tools(state, !final_step).await,
        };
        self.end_step().await;
        end
    }

    async fn run_tools(&mut self, state: StepState, offered: bool) -> StepEnd {
        let calls = state.calls;
        let mut results: Vec<Option<String>> = vec![None; calls.len()];
        let mut images = StepImages::default();
        let mut handed: Vec<ClientToolCall> = Vec::new();
        let mut gated: Vec<PendingApproval> = Vec::new();
        let running = FuturesUnordered::new();
        // What the step's calls show the user while they run (a question they wait on).
        let (shown, mut shown_rx) = tokio::sync::mpsc::channel(super::call_scope::SHOWN_BUFFER);
        for (position, call) in calls.iter().enumerate() {
            if call.client {
                match check_client_call(offered, call.oversized, &call.arguments) {
                    Ok(arguments) => handed.push(ClientToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments,
                    }),
                    Err(error) => results[position] = Some(error),
                }
                continue;
            }
            let checked = if call.oversized {
                Checked::Refused {
                    input: json!({}),
                    error: OVERSIZED_TEXT.to_owned(),
                }
            } else {
                check_call(&self.plan.tools, offered, &call.name, &call.arguments)
            };
            let (input, tool) = match &checked {
                Checked::Run { tool, input } => (input.clone(), Some(*tool)),
                Checked::Refused { input, .. } => (input.clone(), None),
            };
            let spec = tool.map(|index| &self.plan.tools[index].spec);
            let title = spec.map(|spec| self.plan.titles.title(spec, &input));
            let dynamic = self.dynamic_flag(&call.name);
            let mcp = spec.and_then(|spec| spec.mcp.clone());
            self.emit_tool_input(call, input, dynamic, title).await;
            if let Some(origin) = mcp {
                let mut invoked = Map::new();
                invoked.insert(
                    call.name.clone(),
                    serde_json::to_value(origin).unwrap_or(Value::Null),
                );
                let metadata = json!({"modelId": self.plan.model_id, "mcpTools": invoked});
                self.out
                    .emit(UiChunk::MessageMetadata {
                        message_metadata: metadata,
                    })
                    .await;
            }
            let checked = match checked {
                Checked::Run { tool, input } => match self.gate_call(call, tool, input).await {
                    Gated::Run(input) => Checked::Run { tool, input },
                    Gated::Refused(error) => Checked::Refused {
                        input: Value::Null,
                        error,
                    },
                    Gated::Waiting(pending) => {
                        gated.push(pending);
                        continue;
                    }
                },
                refused => refused,
            };
            match checked {
                Checked::Refused { error, .. } => {
                    self.emit_tool_error(&call.id, error.clone(), dynamic).await;
                    results[position] = Some(error);
                }
                Checked::Run { tool, input } => {
                    self.reasoning_times.start_tool(&call.id);
                    let prepared = &self.plan.tools[tool];
                    self.tool_calls += 1;
                    self.web_calls += u32::from(prepared.spec.web);
                    let call_id = call.id.clone();
                    let span = spans::tool(&self.agent_span, &prepared.spec, &call_id);
                    let capturing = span_content::capturing();
                    if capturing {
                        span_content::record_tool_arguments(&span, &call.arguments);
                    }
                    let scope = CallScope::new(
                        &self.plan.turn_id,
                        &self.plan.message_id,
                        &call_id,
                        self.plan.can_ask_approval,
                        shown.clone(),
                    );
                    let call = scope.run(start_call(
                        prepared,
                        input,
                        self.plan.hooks.as_ref(),
                        &self.plan.tool_cache,
                        self.plan.limits.tool_timeout,
                    ));
                    let traced = span.clone();
                    running.push(
                        async move {
                            let result = call.await;
                            match &result {
                                Err(error) => spans::record_tool_error(&traced, error),
                                Ok(output) if capturing => {
                                    span_content::record_tool_result(&traced, &output.text_for_model());
                                }
                                Ok(_) => {}
                            }
                            (position, tool, result)
                        }
                        .instrument(span),
                    );
                }
            }
        }
        let mut running = running;
        drop(shown);
        loop {
            let next_event = async {
                tokio::select! {
                    biased;
                    Some(chunk) = shown_rx.recv() => Running::Shown(chunk),
                    next = running.next() => Running::Done(next),
                }
            };
            let next = match self.out.wait(next_event).await {
                Some(Running::Shown(chunk)) => {
                    self.out.emit(chunk).await;
                    self.out.checkpoint();
                    continue;
                }
                Some(Running::Done(next)) => Some(next),
                None => None,
            };
            let Some(next) = next else {
                for (call, result) in calls.iter().zip(&results) {
                    let waiting = gated.iter().any(|pending| pending.tool_call_id == call.id);
                    if result.is_none() && !call.client && !waiting {
                        let dynamic = self.dynamic_flag(&call.name);
                        self.emit_tool_error(&call.id, STOPPED_TEXT.to_owned(), dynamic)
                            .await;
                    }
                }
                return StepEnd::Stopped;
            };
            let Some((position, tool, result)) = next else {
                break;
            };
            let call = &calls[position];
            self.reasoning_times.end_tool(&call.id);
            let dynamic = self.dynamic_flag(&call.name);
            let tool_call_id = call.id.clone();
            let (chunk, model_text) = match result {
                Ok(output) => {
                    let spec = &self.plan.tools[tool].spec;
                    let text = self.plan.hooks.model_text(spec, &output);
                    if self.plan.policy.tool_images && spec.mcp.is_some() {
                        images.add(&call.id, &output.output);
                    }
                    (
                        UiChunk::ToolOutputAvailable {
                            tool_call_id,
                            output: output.output,
                            dynamic,
                        },
                        text,
                    )
                }
                Err(err) => {
                    let text = err.to_string();
                    (
                        UiChunk::ToolOutputError {
                            tool_call_id,
                            error_text: text.clone(),
                            dynamic,
                        },
                        text,
                    )
                }
            };
            self.out.emit(chunk).await;
            results[position] = Some(model_text);
        }
        self.emit_new_sources().await;
        self.record_tool_step(state.text, &calls, results, &gated);
        if let Some(shown) = images.message() {
            self.messages.push(shown);
        }
        if !gated.is_empty() {
            StepEnd::AwaitApproval(gated)
        } else if handed.is_empty() {
            StepEnd::Tools
        } else {
            StepEnd::HandOff(handed)
        }
    }

    /// Streams the sources the turn's tools registered since the last time, after the calls that
    /// found them.
    pub(super) async fn emit_new_sources(&mut self) {
        for source in self.plan.hooks.new_sources() {
            self.out
                .emit(UiChunk::SourceUrl {
                    source_id: source.id,
                    url: source.url,
                    title: source.title,
                })
                .await;
        }
    }

    /// Adds the step's assistant message and its tool results to what the model sees next. A
    /// client call handed off gets no result here: the client's next request brings it.
    fn record_tool_step(
        &mut self,
        text: String,
        calls: &[StreamedCall],
        results: Vec<Option<String>>,
        gated: &[PendingApproval],
    ) {
        // A call waiting for approval joins the conversation when it is answered, with its result.
        let tool_calls = calls
            .iter()
            .filter(|call| !gated.iter().any(|pending| pending.tool_call_id == call.id))
            .map(|call| {
                // Providers reject history whose arguments are not JSON; the error result already
                // tells the model what was wrong with the original text.
                let arguments = if !call.oversized && serde_json::from_str::<Value>(&call.arguments).is_ok() {
                    call.arguments.clone()
                } else {
                    "{}".to_owned()
                };
                ToolCall::new(call.id.clone(), call.name.clone(), arguments)
            })
            .collect();
        let content = (!text.is_empty()).then_some(text);
        self.messages.push(ChatMessage::Assistant { content, tool_calls });
        for (call, result) in calls.iter().zip(results) {
            let waiting = gated.iter().any(|pending| pending.tool_call_id == call.id);
            if (call.client || waiting) && result.is_none() {
                continue;
            }
            self.messages.push(ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content: result.unwrap_or_else(|| STOPPED_TEXT.to_owned()),
            });
        }
        self.made_tool_calls = true;
        self.after_tool_step = true;
    }

    async fn end_step(&mut self) {
        self.end_step_chunks().await;
        self.out.checkpoint();
    }

    async fn end_step_chunks(&mut self) {
        let mut metadata = json!({"modelId": self.plan.model_id, "usage": usage_metadata(&self.usage_total)});
        if let Some(object) = metadata.as_object_mut() {
            if let Some(sources) = self.plan.hooks.sources_snapshot() {
                object.insert("sources".into(), sources);
            }
            if let Some(counts) = &self.citation_counts {
                object.insert("citations".into(), json!(self.citations));
                object.insert("citationCounts".into(), json!(counts));
            }
            if let Some(answered_by) = self.answered_by() {
                object.insert("answeredBy".into(), json!(answered_by.model_id));
            }
            self.reasoning_times.add_to(object);
        }
        self.out
            .emit(UiChunk::MessageMetadata {
                message_metadata: metadata,
            })
            .await;
        self.out.emit(UiChunk::FinishStep).await;
    }
}

/// The end of a turn its wall clock cut.
/// How a turn that completed for `reason` ends: its status, finish reason, no error, and the one
/// finish chunk.
fn completed(reason: UiFinishReason) -> (TurnStatus, Option<UiFinishReason>, Option<String>, Vec<UiChunk>) {
    let finish = UiChunk::Finish {
        finish_reason: Some(reason),
        message_metadata: None,
    };
    (TurnStatus::Complete, Some(reason), None, vec![finish])
}

fn out_of_time_text(wall_clock: std::time::Duration) -> String {
    format!(
        "This answer was cut off: the turn reached its time limit of {} seconds. \
         Send a message to continue.",
        wall_clock.as_secs()
    )
}

fn user_message(text: String) -> ChatMessage {
    ChatMessage::User {
        content: UserContent::Text(text),
    }
}

impl Turn {
    /// Tells a caller that asked what the turn has used: the steps that ended, plus `running`
    /// (the running step's usage, once its provider reported it).
    pub(super) fn report_usage(&self, running: Option<&Usage>) {
        if let Some(so_far) = &self.plan.usage_so_far {
            let mut total = self.usage_total.clone();
            if let Some(step) = running {
                add_usage(&mut total, step);
            }
            so_far.set(total, self.answered_by());
        }
    }
}

fn add_usage(total: &mut Usage, step: &Usage) {
    total.prompt_tokens += step.prompt_tokens;
    total.completion_tokens += step.completion_tokens;
    total.total_tokens += step.total_tokens;
    if let Some(reasoning) = step.reasoning_tokens {
        *total.reasoning_tokens.get_or_insert(0) += reasoning;
    }
    if let Some(cached) = step.cached_tokens {
        *total.cached_tokens.get_or_insert(0) += cached;
    }
    if let Some(written) = step.cache_write_tokens {
        *total.cache_write_tokens.get_or_insert(0) += written;
    }
}

/// Usage in the AI SDK's vocabulary, which is what frontends read from message metadata. The
/// counts are for the whole turn so far, so the stored message carries the turn's total.
pub fn usage_metadata(usage: &Usage) -> Value {
    let mut value = json!({
        "inputTokens": usage.prompt_tokens,
        "outputTokens": usage.completion_tokens,
        "totalTokens": usage.total_tokens,
    });
    if let Some(object) = value.as_object_mut() {
        if let Some(reasoning) = usage.reasoning_tokens {
            object.insert("reasoningTokens".into(), reasoning.into());
        }
        if let Some(cached) = usage.cached_tokens {
            object.insert("cachedInputTokens".into(), cached.into());
        }
        if let Some(written) = usage.cache_write_tokens {
            object.insert("cacheWriteInputTokens".into(), written.into());
        }
    }
    value
}

/// The machine-readable name of a failure a client may want to act on, sent as the answer's
/// `errorCode` metadata (and by the OpenAI facade as the error's `code`).
fn error_code(err: &LlmError) -> Option<&'static str> {
    match err {
        LlmError::ContextTooLong(_) => Some(CONTEXT_TOO_LONG),
        LlmError::Status { status, .. } if refuses_the_request(*status) => Some(REQUEST_REFUSED),
        LlmError::Status { status: 429, .. } => Some(PROVIDER_RATE_LIMITED),
        LlmError::Status {
            status: 503 | 529, ..
        } => Some(PROVIDER_OVERLOADED),
        _ => None,
    }
}

/// The provider's `Retry-After`, in whole seconds rounded up.
fn retry_after_secs(err: &LlmError) -> Option<u64> {
    let wait = err.retry_after()?;
    Some(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
}

/// `condition`, and when to ask again: "try again in Ns" when the provider said (how OpenAI says it,
/// and what Codex reads the wait from), "in a moment" when it did not.
fn come_back_later(condition: &str, err: &LlmError) -> String {
    match retry_after_secs(err) {
        Some(secs) => format!("{condition}; try again in {secs}s."),
        None => format!("{condition}. Please try again in a moment."),
    }
}

/// A status with which the provider says the request itself is at fault, so that asking again
/// cannot succeed. (A 404 names a model the operator configured; 401 and 403 their credentials.)
fn refuses_the_request(status: u16) -> bool {
    matches!(status, 400 | 413 | 422)
}

/// A short explanation for the user. The details (provider messages, addresses) go to the log
/// only, since they can carry internals.
fn user_facing_error(err: &LlmError) -> String {
    match err {
        LlmError::ContextTooLong(_) => CONTEXT_TOO_LONG_TEXT.to_owned(),
        LlmError::Connect(_) => "The model provider could not be reached. Please try again.".to_owned(),
        LlmError::Status { status: 429, .. } => {
            come_back_later("The model provider is rate limiting requests", err)
        }
        LlmError::Status {
            status: 401 | 403, ..
        } => "The model provider rejected the gateway's credentials.".to_owned(),
        LlmError::Status {
            status: 503 | 529, ..
        } => come_back_later("The model provider is overloaded right now", err),
        LlmError::Status { status, .. } if refuses_the_request(*status) => format!(
            "The model provider refused the request as invalid (HTTP {status}, {REQUEST_REFUSED}): a value it \
             sets, such as the output token cap, may be outside what the model takes. Sending it again \
             unchanged will not help."
        ),
        LlmError::Status { status, .. } => format!("The model provider returned an error (HTTP {status})."),
        LlmError::Timeout { .. } => {
            "The model provider did not respond in time. Please try again.".to_owned()
        }
        LlmError::Protocol(_) => "The model provider sent a response that could not be read.".to_owned(),
        LlmError::Cancelled => "The request was cancelled.".to_owned(),
    }
}

/// What a step's running calls produced next: a part to show, or a call's end (`None`: all ended).
enum Running<T> {
    Shown(UiChunk),
    Done(Option<T>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::TimeoutPhase;

    #[test]
    fn provider_errors_become_short_texts_without_their_details() {
        let secret = "https://internal.example:8443/v1 key=sk-123";
        let errors = [
            LlmError::Connect(secret.into()),
            LlmError::Status {
                status: 429,
                message: secret.into(),
            },
            LlmError::Status {
                status: 401,
                message: secret.into(),
            },
            LlmError::Status {
                status: 500,
                message: secret.into(),
            },
            LlmError::Timeout {
                phase: TimeoutPhase::FirstByte,
                seconds: 30,
            },
            LlmError::Protocol(secret.into()),
            LlmError::ContextTooLong(secret.into()),
            LlmError::Status {
                status: 400,
                message: secret.into(),
            },
        ];
        let texts: Vec<String> = errors.iter().map(user_facing_error).collect();
        for text in &texts {
            assert!(!text.contains("internal") && !text.contains("sk-"), "{text}");
            assert!(text.ends_with('.'), "{text}");
        }
        assert!(texts[1].contains("rate limiting"));
        assert!(texts[2].contains("credentials"));
        assert!(texts[3].contains("HTTP 500"));
        assert!(texts[4].contains("in time"));
        assert!(texts[6].contains("context_too_long") && !texts[6].contains("HTTP"));
        assert_eq!(error_code(&errors[6]), Some(CONTEXT_TOO_LONG));
        assert_eq!(error_code(&errors[1]), Some(PROVIDER_RATE_LIMITED));
        assert_eq!(retry_after_secs(&errors[1]), None, "the provider named no wait");
        assert!(texts[7].contains("HTTP 400") && texts[7].contains("will not help"));
        assert_eq!(error_code(&errors[7]), Some(REQUEST_REFUSED));
        assert_eq!(
            error_code(&errors[3]),
            None,
            "a 500 may pass: asking again can help"
        );
    }
}
