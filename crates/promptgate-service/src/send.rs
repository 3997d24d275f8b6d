//! One send, the use case behind `POST /v1/chat` and `POST /v1/threads/{id}/messages`.
//!
//! [`Service::send`] reads top-down as its steps: admit (a bounded number of turns run at once),
//! claim the thread here and in the store, load the send context, settle the conversation (store the
//! user's message, or trim for a regenerate), [`prepare`](crate::Prepared) the prompt and tools, and
//! start the engine with [`Prepared::into_turn_plan`](crate::Prepared::into_turn_plan), which takes
//! every per-run part at once ([`RunParts`]) so no half-built plan is ever passed around. Admission
//! and loading the model are shared with [`Service::complete`](crate::Service::complete).

use std::sync::Arc;
use std::time::Duration;

use promptgate_core::settings::Model;
use promptgate_store::{NewMessage, ReadFrom, Role, SendContext, StoreCall};
use promptgate_turn::engine::{TurnEnd, run_turn};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::budgets::{BudgetCheck, Spender};
use crate::failover::ModelRoutes;
use crate::feed::{Detach, FeedWriter, TurnFeed};
use crate::harness::KeepTranscript;
use crate::live::{Claim, Slot};
use crate::record::{self, AnswerWriter};
use crate::{
    ClientIdentity, Continuation, ModelProvider, Prepared, REPLAY_REFUSED_TEXT, RunParts, SendStream,
    Service, ServiceError, prepare,
};

/// How long a send waits for a stopped turn of its thread to finish storing its answer.
const WAIT_FOR_STOPPED_TURN: Duration = Duration::from_secs(2);

/// What the user sends.
#[derive(Debug, Clone)]
pub enum SendInput {
    /// A new user message (UI message parts: text and files).
    Message { id: Option<String>, parts: Vec<Value> },
    /// Answer the newest user message again.
    Regenerate,
    /// The user's answers to the calls the thread's last answer waits for: that answer goes on.
    Approval(Vec<crate::ApprovalReply>),
}

/// The trace a send belongs to, when the server exports traces: the answer's metadata names it
/// (`traceId`, and `traceUrl` when the operator configured a trace UI), so a user can find it.
#[derive(Debug, Clone)]
pub struct TraceLink {
    pub id: String,
    pub url: Option<String>,
}

#[derive(Debug, Clone)]
pub struct SendRequest {
    pub user_id: String,
    pub thread_id: String,
    /// Create the thread when it does not exist (the useChat endpoint); otherwise it must exist.
    pub create_thread: bool,
    pub input: SendInput,
    pub model: Option<String>,
    /// The turn this send automatically retries; its budget and sources carry over.
    pub retry_of: Option<String>,
    /// Where the client runs (a harness prompt names it); `None` is the web app.
    pub client: Option<ClientIdentity>,
    /// What the client says about the user's situation, for the prompt's per-send notes.
    pub notes: ClientNotes,
    /// The trace this send is part of, for the answer's metadata.
    pub trace: Option<TraceLink>,
    /// The key the request came with: the turn counts against its limits beside the user's, and
    /// the usage ledger names it.
    pub key_id: Option<String>,
    /// The client answers approval requests (an AI SDK 6+ UI stream); otherwise a call of an
    /// asking tool gets the operator's choice.
    pub can_ask_approval: bool,
}

impl SendRequest {
    /// A send of `input` by `user_id` to the existing thread `thread_id` that says nothing more: the
    /// model is the user's default, no client, notes, trace or key come with it, and a call of an
    /// asking tool gets the operator's choice. Callers set what their request adds.
    pub fn new(user_id: impl Into<String>, thread_id: impl Into<String>, input: SendInput) -> Self {
        Self {
            user_id: user_id.into(),
            thread_id: thread_id.into(),
            create_thread: false,
            input,
            model: None,
            retry_of: None,
            client: None,
            notes: ClientNotes::default(),
            trace: None,
            key_id: None,
            can_ask_approval: false,
        }
    }
}

/// Per-send facts only the client knows, which the legacy prompt carries as notes after the date
/// line. The harness engine leaves them out: its system prompt keeps only the clock per send.
#[derive(Debug, Clone, Default)]
pub struct ClientNotes {
    /// The user is talking by voice and the answer is read aloud.
    pub voice_mode: bool,
    /// What the user answered in `ask` widgets of earlier answers, so the model does not ask again.
    pub ask_responses: Vec<promptgate_core::prompt::AskResponse>,
}

/// A started turn.
pub struct SendHandle {
    pub turn_id: String,
    pub message_id: String,
    pub model_id: String,
    pub events: SendStream,
}

/// The ids a new turn and its answer get.
pub(crate) struct TurnIds {
    pub(crate) turn_id: String,
    pub(crate) message_id: String,
}

impl TurnIds {
    pub(crate) fn fresh() -> Self {
        Self {
            turn_id: format!("turn_{}", uuid::Uuid::now_v7().simple()),
            message_id: format!("msg_{}", uuid::Uuid::now_v7().simple()),
        }
    }
}

/// A send's hold on its thread on this instance, from the claim until its turn starts.
struct ThreadTurn {
    ids: TurnIds,
    slot: Slot,
    /// Stops this turn (and only it); a child of the service's stop-all.
    cancel: CancellationToken,
    feed: FeedWriter,
    admission: tokio::sync::OwnedSemaphorePermit,
    /// The limits the turn counts against, checked before it was claimed.
    budget: BudgetCheck,
    /// The answers that continue a waiting answer, once checked; `None` for a new answer.
    resume: Option<promptgate_turn::engine::Resume>,
}

impl Service {
    /// Starts a turn in a thread: claims the thread, stores the user's message, prepares the
    /// prompt and toolset, and runs the engine with an answer writer behind it. Each step below
    /// may refuse the send; nothing after a refusal runs.
    #[tracing::instrument(
        name = "send",
        skip_all,
        fields(user = %request.user_id, thread_id = %request.thread_id, turn_id = tracing::field::Empty)
    )]
    pub async fn send(&self, mut request: SendRequest) -> Result<SendHandle, ServiceError> {
        let spender = Spender {
            user_id: request.user_id.clone(),
            key_id: request.key_id.clone(),
        };
        let budget = self.check_budget(&spender).await?;
        let admission = self.admit()?;
        let mut turn = self.claim_thread_here(&request, admission).await?;
        turn.budget = budget;
        tracing::Span::current().record("turn_id", turn.ids.turn_id.as_str());
        // Answers continue the message that waits for them, under its id.
        let waiting = match &request.input {
            SendInput::Approval(replies) => {
                let (message_id, waiting) = self
                    .waiting_message(&request.user_id, &request.thread_id, replies)
                    .await?;
                turn.ids.message_id = message_id;
                // The model that asked goes on, unless the answer names another.
                if request.model.is_none() {
                    request.model = waiting.first().map(|a| a.model_id.clone());
                }
                Some(waiting)
            }
            _ => None,
        };
        let (continuation, mut ctx, model, provider) = self.claim_and_load(&request, &mut turn).await?;
        self.refuse_unpriced(&turn.budget, &request.user_id, &model)
            .await?;
        let resume = match (&request.input, waiting) {
            (SendInput::Approval(replies), Some(waiting)) => Some(
                self.take_approvals(&request.user_id, &request.thread_id, &mut ctx, waiting, replies)
                    .await?,
            ),
            _ => {
                let answer = record::opening_row(&request.thread_id, &turn.ids, &model.id);
                self.settle_conversation(&request, &mut ctx, &answer).await?;
                None
            }
        };
        let facts = prepare::SendFacts {
            client: request.client.clone().unwrap_or_else(ClientIdentity::web),
            regeneration_revision: self.transcripts.revision(
                &request.user_id,
                &request.thread_id,
                matches!(request.input, SendInput::Regenerate),
            ),
            notes: request.notes.clone(),
            continues_answer: resume.is_some(),
        };
        turn.resume = resume;
        let mut prepared = self
            .prepare(
                &request.user_id,
                ctx,
                model,
                &provider,
                continuation.as_ref().map(|c| &c.state),
                &facts,
            )
            .await?;
        // A client that shows cards sees the servers that want connecting; a continued answer
        // showed them already.
        if request.can_ask_approval && turn.resume.is_none() {
            prepared.opening_parts = self
                .authorization_notices(&request.user_id, &prepared.mcp_needs_authorization)
                .await;
        }
        let continuation = continuation
            .unwrap_or_else(|| Continuation::fresh(&turn.ids.turn_id, &prepared.state, &self.config.limits));
        let routes = self
            .routes_for(&request.user_id, &prepared.model, &provider)
            .await;
        Ok(self.start_send(&request, turn, prepared, routes, continuation, &facts))
    }

    /// Takes the thread on this instance, or refuses the send while a turn runs there. A turn that
    /// was stopped (or lost its client) is only storing its answer: a client that saw the stopped
    /// answer and sends again waits for that moment instead of getting a 409.
    async fn claim_thread_here(
        &self,
        request: &SendRequest,
        admission: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<ThreadTurn, ServiceError> {
        let ids = TurnIds::fresh();
        let cancel = self.stop_all.child_token();
        let feed = FeedWriter(Arc::new(TurnFeed::default()));
        let started = tokio::time::Instant::now();
        loop {
            match self.live.claim(
                &request.user_id,
                &request.thread_id,
                &ids.turn_id,
                cancel.clone(),
                Arc::clone(&feed.0),
            ) {
                Claim::Claimed(slot) => {
                    return Ok(ThreadTurn {
                        ids,
                        slot,
                        cancel,
                        feed,
                        admission,
                        budget: BudgetCheck::default(),
                        resume: None,
                    });
                }
                Claim::Busy
                    if started.elapsed() < WAIT_FOR_STOPPED_TURN
                        && self.live.is_stopping(&request.user_id, &request.thread_id) =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Claim::Busy => return Err(ServiceError::Busy(request.thread_id.clone())),
            }
        }
    }

    /// The thread's claim in the store, what a retry carries over, and the send context with its
    /// model, in one round of concurrent reads.
    #[tracing::instrument(skip_all)]
    async fn claim_and_load(
        &self,
        request: &SendRequest,
        turn: &mut ThreadTurn,
    ) -> Result<(Option<Continuation>, SendContext, Model, ModelProvider), ServiceError> {
        // A retry whose turn is gone must say so before anything is stored, not start afresh.
        let recall = async {
            match request.retry_of.as_deref() {
                Some(previous) => self
                    .recall_retry(&request.user_id, &request.thread_id, previous)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        };
        // The store's claim is what keeps other instances out of the thread; it is taken before the
        // user's message is stored, so a refused send leaves no trace. It goes to the database
        // alongside the reads, so it adds no round trip before the first byte.
        let claim = self.claim_in_store(
            &mut turn.slot,
            &request.user_id,
            &request.thread_id,
            &turn.ids.turn_id,
            &turn.ids.message_id,
            request.retry_of.as_deref(),
        );
        let load = self.load_with_model(
            &request.user_id,
            Some(&request.thread_id),
            request.model.as_deref(),
        );
        let (continuation, (), (ctx, model, provider)) = tokio::try_join!(recall, claim, load)?;
        // A thread waiting for an approval takes only the answer; the load read whether it waits.
        if !matches!(request.input, SendInput::Approval(_)) {
            self.refuse_while_waiting(&request.user_id, &request.thread_id, ctx.checks)
                .await?;
        }
        Ok((continuation, ctx, model, provider))
    }

    /// Makes the conversation end with the user message to answer: the new message stored (with its
    /// thread, on a first send), or for a regenerate the answers after the newest user message
    /// dropped. The answer's opening row (`answer`) is stored with it, in the same write where there
    /// is one: the `start` chunk names that row, so it must exist before the stream begins, even if
    /// this instance dies right after.
    #[tracing::instrument(skip_all)]
    async fn settle_conversation(
        &self,
        request: &SendRequest,
        ctx: &mut SendContext,
        answer: &NewMessage,
    ) -> Result<(), ServiceError> {
        let new_user_message = match &request.input {
            SendInput::Message { id, parts } => Some(validate_user_parts(id.as_deref(), parts)?),
            SendInput::Regenerate | SendInput::Approval(_) => None,
        };
        if ctx.thread.is_none() && !request.create_thread {
            return Err(ServiceError::UnknownThread(request.thread_id.clone()));
        }
        let known = ctx.checks.map(|checks| checks.storage);
        self.admit_storage(&request.user_id, ctx.thread.is_none(), known)
            .await?;
        let answer_stored = match new_user_message {
            Some((id, parts)) => self.store_user_message(request, ctx, id, parts, answer).await?,
            None => {
                if ctx.thread.is_none() {
                    return Err(ServiceError::InvalidMessage(
                        "there is no user message to answer".to_owned(),
                    ));
                }
                ctx.tail.answer_newest_question();
                false
            }
        };
        if !ctx.tail.messages.last().is_some_and(|m| m.role == Role::User) {
            return Err(ServiceError::InvalidMessage(
                "there is no user message to answer".to_owned(),
            ));
        }
        if !answer_stored {
            let append = self.store.append_message(&request.user_id, answer);
            self.store.traced(StoreCall::AppendMessages, append).await?;
        }
        Ok(())
    }

    /// Saves the user's words before anything can fail upstream, so nothing they sent is lost, and
    /// with them `answer` where they are written. True when `answer` was written.
    async fn store_user_message(
        &self,
        request: &SendRequest,
        ctx: &mut SendContext,
        id: Option<String>,
        parts: Vec<Value>,
        answer: &NewMessage,
    ) -> Result<bool, ServiceError> {
        // A resend of the thread's last question (its turn failed) is already stored; any other
        // id the thread has seen is an edit, which takes that message's place (see
        // `current_conversation`).
        let already_stored = is_resent_prompt(
            &ctx.tail.messages,
            id.as_deref(),
            &parts,
            request.retry_of.is_some(),
        );
        if already_stored {
            // The retried turn's answer is replaced by this one; the model answers the prompt.
            ctx.tail.answer_newest_question();
            return Ok(false);
        }
        let message = NewMessage {
            id,
            thread_id: request.thread_id.clone(),
            role: Role::User,
            parts: Value::Array(parts),
            metadata: json!({}),
            status: None,
        };
        let both = [message, answer.clone()];
        let stored = if ctx.thread.is_none() {
            // A first send creates its thread and messages in one write.
            let title = title_from(both[0].parts.as_array().map_or(&[][..], Vec::as_slice));
            let thread = promptgate_store::NewThread {
                id: Some(request.thread_id.clone()),
                project_id: None,
                title: Some(title).filter(|t| !t.is_empty()),
            };
            let create = self
                .store
                .create_thread_with_messages(&request.user_id, &thread, &both);
            let (thread, stored) = self.store.traced(StoreCall::CreateThread, create).await?;
            ctx.thread = Some(thread);
            ctx.tail.messages.clear();
            ctx.tail.from_start = true;
            stored
        } else {
            let append = self.store.append_messages(&request.user_id, &both);
            self.store.traced(StoreCall::AppendMessages, append).await?
        };
        // The conversation the model answers ends with the question, not its empty answer.
        if let Some(question) = stored.into_iter().next() {
            ctx.tail.messages.push(std::sync::Arc::new(question));
        }
        Ok(true)
    }

    /// Runs the prepared turn with its answer writer; its events are kept for followers.
    fn start_send(
        &self,
        request: &SendRequest,
        turn: ThreadTurn,
        mut prepared: Prepared,
        routes: ModelRoutes<'_>,
        continuation: Continuation,
        facts: &prepare::SendFacts,
    ) -> SendHandle {
        let ModelRoutes {
            provider,
            failover,
            ledger,
        } = routes;
        let ThreadTurn {
            ids,
            slot,
            cancel,
            feed,
            admission,
            budget,
            resume,
        } = turn;
        let model_id = prepared.model.id.clone();
        tracing::info!(
            model = %model_id, tools = prepared.tools.len(), retry_of = ?request.retry_of, "turn started"
        );
        let usage = self.usage_tag(
            &request.user_id,
            request.key_id.clone(),
            Some(request.thread_id.clone()),
            promptgate_store::UsageKind::Turn,
            &prepared.model,
            ledger,
        );
        let recorder = AnswerWriter {
            store: self.store.clone(),
            usage,
            user_id: request.user_id.clone(),
            thread_id: request.thread_id.clone(),
            turn_id: ids.turn_id.clone(),
            message_id: ids.message_id.clone(),
            slot,
            continuation: Continuation {
                turn_id: ids.turn_id.clone(),
                ..continuation.clone()
            },
            retry_for: self.config.save_retry,
            pending: self.pending.clone(),
            mirrors: self.mirrors(),
            spender: budget.limited.then(|| Spender {
                user_id: request.user_id.clone(),
                key_id: request.key_id.clone(),
            }),
            approval_expiry: self.config.approval.expiry,
        }
        .start(&self.tasks);
        let (refusal, on_end) = self.continue_harness(
            request,
            &mut prepared,
            facts,
            &continuation,
            &ids.message_id,
            &cancel,
        );
        let mut plan = prepared.into_turn_plan(
            provider,
            self.config.limits,
            RunParts {
                turn_id: ids.turn_id.clone(),
                message_id: ids.message_id.clone(),
                request_budget: continuation.requests,
                tool_cache: continuation.tool_cache,
                cancel: cancel.clone(),
                admission,
                recorder: Some(recorder),
                extra: Map::new(),
                tasks: self.tasks.clone(),
                refusal,
                on_end,
                client: Default::default(),
                asking: if request.can_ask_approval {
                    crate::Asking::Client
                } else {
                    crate::Asking::Nobody(self.config.approval.without_client)
                },
            },
        );
        if !budget.warnings.is_empty() {
            plan.start_metadata
                .insert("budgetWarnings".into(), Value::Array(budget.warnings));
        }
        plan.resume = resume;
        if let Some(trace) = &request.trace {
            plan.start_metadata.insert("traceId".into(), json!(trace.id));
            if let Some(url) = &trace.url {
                plan.start_metadata.insert("traceUrl".into(), json!(url));
            }
        }
        // Only a send keeps the citations' classes (in the stored answer); a facade's would be
        // reviewed for nobody.
        plan.citation_review = self.citation_reviewer.clone();
        plan.failover = failover;
        let run = run_turn(plan);
        let detach = Detach {
            on_disconnect: self.config.on_disconnect,
            cancel,
            tasks: self.tasks.clone(),
            drained: false,
        };
        SendHandle {
            turn_id: ids.turn_id,
            message_id: ids.message_id,
            model_id,
            events: SendStream::fed(run.events, feed, detach, self.encoding),
        }
    }

    /// A harness model's send continues the thread's kept transcript when its signature still
    /// holds (else the prepared history re-seeds it), and keeps the new transcript when the turn
    /// ends. Returns the refusal of a retry whose web budget is spent, and the turn-end work.
    fn continue_harness(
        &self,
        request: &SendRequest,
        prepared: &mut Prepared,
        facts: &prepare::SendFacts,
        continuation: &Continuation,
        message_id: &str,
        cancel: &CancellationToken,
    ) -> (Option<String>, Vec<Arc<dyn TurnEnd>>) {
        let Some(prompt) = prepared.harness_prompt.clone() else {
            return (None, Vec::new());
        };
        let signature = &prepared.composed.harness_signature;
        let started = self.transcripts.start(
            (&request.user_id, &request.thread_id),
            signature,
            facts.regeneration_revision,
            prepared.previous_answer.as_deref(),
            cancel.clone(),
        );
        // A continued answer is rebuilt from the stored message, which has the approved calls.
        if let Some(mut transcript) = started.transcript.filter(|_| !facts.continues_answer) {
            // The kept transcript holds the earlier sends' tool calls too, so it can outgrow the
            // room while the stored thread fits; and after a compaction it holds turns the summary
            // now stands for. Then the harness starts again from what the window shows.
            let budget = &prepared.budget;
            let tokens = budget.counter.messages(&transcript) + budget.counter.message(&prompt);
            if !prepared.compacted && tokens <= budget.room.saturating_sub(prepared.earlier_tokens) {
                transcript.push(prompt);
                prepared.history = transcript;
            }
        }
        let keep: Arc<dyn TurnEnd> = Arc::new(KeepTranscript {
            transcripts: self.transcripts.clone(),
            user_id: request.user_id.clone(),
            thread_id: request.thread_id.clone(),
            signature: signature.clone(),
            answer_id: message_id.to_owned(),
        });
        // A retry carrying a spent budget could only replay the same denials; the user decides
        // whether a new research attempt is worth it.
        let refusal = continuation
            .state
            .budget()
            .is_exhausted()
            .then(|| REPLAY_REFUSED_TEXT.to_owned());
        (refusal, vec![keep])
    }

    /// A place for one more turn, or `Overloaded` when the server already runs its limit.
    pub(crate) fn admit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ServiceError> {
        Arc::clone(&self.admission).try_acquire_owned().map_err(|_| {
            tracing::warn!(
                limit = self.config.max_turns_in_flight,
                "turn refused: the server is at its limit of turns in flight"
            );
            ServiceError::Overloaded(self.config.max_turns_in_flight)
        })
    }

    /// The send context of `thread_id` (none: a stateless completion) with the requested model
    /// (else the user's default, else the server's) taken out of it, and the provider that serves
    /// the model.
    pub(crate) async fn load_with_model(
        &self,
        user_id: &str,
        thread_id: Option<&str>,
        requested: Option<&str>,
    ) -> Result<(SendContext, Model, ModelProvider), ServiceError> {
        // Where this instance holds the thread's older part, only what is newer is read.
        let held = thread_id.and_then(|thread| self.held.newest((user_id, thread)));
        let from = held.as_ref().map(|held| ReadFrom {
            seq: held.seq,
            id: &held.id,
            thread_created_at: held.born,
        });
        let mut ctx = self
            .store
            .load_send_context(user_id, thread_id, requested, &self.config.default_model, from)
            .await?;
        let model = ctx
            .model
            .take()
            .ok_or_else(|| ServiceError::UnknownModel(ctx.model_id.clone()))?;
        let provider = self
            .providers
            .get(&model.provider)
            .ok_or_else(|| ServiceError::ProviderMissing(model.provider.clone()))?;
        Ok((ctx, model, provider.clone()))
    }
}

/// Checks a user message's parts: a non-empty array of objects with a `type`, with some content.
fn validate_user_parts(
    id: Option<&str>,
    parts: &[Value],
) -> Result<(Option<String>, Vec<Value>), ServiceError> {
    if parts.is_empty() {
        return Err(ServiceError::InvalidMessage(
            "the message has no parts".to_owned(),
        ));
    }
    if parts.len() > 64 {
        return Err(ServiceError::InvalidMessage(
            "a message may have at most 64 parts".to_owned(),
        ));
    }
    let mut has_content = false;
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                has_content |= part
                    .get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty())
            }
            Some("file") => has_content |= part.get("url").and_then(Value::as_str).is_some(),
            Some(_) => {}
            None => {
                return Err(ServiceError::InvalidMessage(
                    "every message part needs a `type`".to_owned(),
                ));
            }
        }
    }
    if !has_content {
        return Err(ServiceError::InvalidMessage(
            "the message has no text or file".to_owned(),
        ));
    }
    Ok((id.map(str::to_owned), parts.to_vec()))
}

/// A thread title from the first words of its first message.
fn title_from(parts: &[Value]) -> String {
    let text: String = parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &words[..cut]),
        None => words,
    }
}

/// Whether a send's new message is the thread's last question sent again, so it must not be stored
/// twice. `history` is the thread's newest stored messages (replaced ones included): its newest
/// user message is the conversation's newest question. Without `retry_of` only a resend under the same id, right after that question (its turn left
/// no answer), counts. An automatic retry (`retry_of`) repeats the prompt its turn answered, whatever
/// that turn stored after it, and may come without an id (the thread-messages route has none).
fn is_resent_prompt(
    history: &[std::sync::Arc<promptgate_store::Message>],
    id: Option<&str>,
    parts: &[Value],
    retry: bool,
) -> bool {
    let Some(at) = history.iter().rposition(|m| m.role == Role::User) else {
        return false;
    };
    let question = &history[at];
    let same = question.parts.as_array().is_some_and(|p| p.as_slice() == parts)
        && id.is_none_or(|id| question.id == id);
    if retry {
        same
    } else {
        id.is_some() && same && at + 1 == history.len()
    }
}
