//! Stateless turns for the facades (OpenAI chat completions, the Responses API, and any other API
//! the server speaks): the same prompt, tools and loop as a send, over the history the client
//! supplies, with no thread. A client may bring tools of its own; a call to one ends the turn and
//! the steps it did not see are kept for its next request ([`crate::handoffs`]). Nothing of the
//! answer is stored here; a kept response of the Responses API is kept by its reader
//! ([`crate::respond`]).

use std::sync::Arc;

use promptgate_llm::{ChatMessage, ContentPart, ToolDefinition, UserContent};
use serde_json::{Map, Value};

use super::handoffs::StoredHandoffs;
use super::prepare::{Asked, Prepared};
use super::{
    ModelProvider, ProviderClient, RunParts, SendHandle, SendStream, Service, ServiceError, TurnIds,
    check_request_fields,
};
use crate::budgets::{SettleOnly, Spender};
use crate::ledger::FacadeUsage;
use promptgate_llm::tokens::Tokenizer;
use promptgate_store::UsageKind;
use promptgate_turn::client_tools::{ClientToolChoice, ClientTools};
use promptgate_turn::engine::{RequestBudget, ToolCache, TurnEnd, UsageSoFar, run_turn_in_reader};
use promptgate_turn::facade::FacadeHistory;

/// One facade request, in the engine's terms: each facade reads its own wire format into this.
pub struct CompletionRequest {
    pub user_id: String,
    pub model: Option<String>,
    /// The client's conversation: its system texts and its messages.
    pub conversation: FacadeHistory,
    /// Tools the client runs itself; none when it brings none.
    pub client_tools: Vec<ToolDefinition>,
    pub tool_choice: ClientToolChoice,
    /// Request fields we do not interpret, passed to the provider.
    pub extra: Map<String, Value>,
    /// `Some(false)`: the client asks for one tool call per step, whatever the model could do.
    pub parallel_tool_calls: Option<bool>,
    /// The client's limit on the tokens each model request may produce.
    pub output_cap: Option<OutputCap>,
    /// Work due when the turn ends, before its stream says done.
    pub on_end: Vec<Arc<dyn TurnEnd>>,
    /// The key the request came with: the turn counts against its limits beside the user's, and
    /// the usage ledger names it.
    pub key_id: Option<String>,
    /// Which facade the request came through, for the usage ledger.
    pub facade: UsageKind,
    /// The client reads the answer as it is written. A client that waits for one whole answer
    /// has each model request answered whole too (see `StepPolicy::whole_answers`).
    pub streamed: bool,
}

/// A client's limit on the answer's length, by what it says about the answer the client wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputCap {
    /// Chosen by the client (chat completions, Responses): every model request is held to it.
    Chosen(u64),
    /// Required by the client's API (Anthropic's Messages), so it is often a client's fixed
    /// number larger than the model can give (Claude Code's): it holds only for providers that
    /// know the model's own limit and stay within it (Anthropic's configured `max_tokens`).
    /// Elsewhere the model's configuration decides, as it would without a cap.
    Required(u64),
}

impl OutputCap {
    fn for_provider(self, provider: &ModelProvider) -> Option<u64> {
        match (self, &provider.client) {
            (Self::Chosen(tokens), _) | (Self::Required(tokens), ProviderClient::Anthropic(_)) => {
                Some(tokens)
            }
            (Self::Required(_), ProviderClient::Demo(_) | ProviderClient::OpenAi(_)) => None,
        }
    }
}

fn last_user_text(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User {
                content: UserContent::Text(text),
            } => Some(text.clone()),
            ChatMessage::User {
                content: UserContent::Parts(parts),
            } => Some(
                parts
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::ImageUrl { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

impl Service {
    /// Starts a facade turn. The work is boxed: its future (the prompt, the tools, the store's
    /// reads) is large, and every layer of the server that awaits it moved it whole, again for
    /// every request (about 20k instructions of copying in a facade request's profile).
    pub async fn complete(&self, request: CompletionRequest) -> Result<SendHandle, ServiceError> {
        Box::pin(self.start_completion(request)).await
    }

    #[tracing::instrument(
        name = "complete",
        skip_all,
        fields(user = %request.user_id, turn_id = tracing::field::Empty)
    )]
    async fn start_completion(&self, request: CompletionRequest) -> Result<SendHandle, ServiceError> {
        let CompletionRequest {
            user_id,
            model,
            conversation,
            client_tools,
            tool_choice,
            extra,
            parallel_tool_calls,
            output_cap,
            on_end,
            key_id,
            facade,
            streamed,
        } = request;
        needs_a_user_message(&conversation)?;
        let spender = Spender {
            user_id: user_id.clone(),
            key_id,
        };
        let budget = self.check_budget(&spender).await?;
        let admission = self.admit()?;
        let TurnIds { turn_id, message_id } = TurnIds::fresh();
        tracing::Span::current().record("turn_id", turn_id.as_str());
        let (prepared, provider) = self
            .prepare_completion(&user_id, model.as_deref(), conversation, &client_tools)
            .await?;
        check_request_fields(&extra, &provider.allowed_request_fields)?;
        self.refuse_unpriced(&budget, &user_id, &prepared.model).await?;
        let client = ClientTools {
            tools: client_tools,
            choice: tool_choice,
            keeper: Some(Arc::new(StoredHandoffs {
                store: self.store.clone(),
                user_id: user_id.clone(),
            })),
        };
        let model_id = prepared.model.id.clone();
        let routes = self.routes_for(&user_id, &prepared.model, &provider).await;
        let failover = routes.failover;
        let usage = self.usage_tag(
            &user_id,
            spender.key_id.clone(),
            None,
            facade,
            &prepared.model,
            routes.ledger,
        );
        let mut plan = prepared.into_turn_plan(
            &provider,
            self.config.limits,
            RunParts {
                turn_id: turn_id.clone(),
                message_id: message_id.clone(),
                request_budget: Arc::new(RequestBudget::from_limits(&self.config.limits)),
                tool_cache: ToolCache::default(),
                cancel: self.stop_all.child_token(),
                admission,
                // No thread keeps the answer (a kept response is kept by its reader): the only
                // end-of-turn write is the budget's.
                recorder: budget.limited.then(|| {
                    Arc::new(SettleOnly {
                        store: self.store.clone(),
                        spender: spender.clone(),
                        usage: usage.clone(),
                    }) as Arc<dyn promptgate_turn::engine::AnswerRecorder>
                }),
                extra,
                tasks: self.tasks.clone(),
                refusal: None,
                on_end,
                client,
                // A completion cannot pause for the user: `ask` is the operator's choice.
                asking: crate::Asking::Nobody(self.config.approval.without_client),
            },
        );
        if !budget.warnings.is_empty() {
            plan.start_metadata
                .insert("budgetWarnings".into(), Value::Array(budget.warnings));
        }
        plan.policy.max_output_tokens = output_cap.and_then(|cap| cap.for_provider(&provider));
        if parallel_tool_calls == Some(false) {
            plan.policy.parallel_tool_calls = false;
        }
        plan.policy.whole_answers = !streamed;
        plan.failover = failover;
        let so_far = Arc::new(UsageSoFar::default());
        plan.usage_so_far = Some(Arc::clone(&so_far));
        // Nothing outlives the reader: a response is kept by the reader that read it to its end.
        let run = run_turn_in_reader(plan);
        let facade = FacadeUsage {
            tag: usage,
            turn_id: turn_id.clone(),
            so_far,
            spender: budget.limited.then_some(spender),
        };
        super::ledger::record_facade(&self.ledger, facade, run.outcome);
        Ok(SendHandle {
            turn_id,
            message_id,
            model_id,
            events: SendStream::plain(run.events, self.encoding),
        })
    }

    /// The texts of the attached files in `messages` (UI messages with file parts) that can be
    /// read, read for `user` by the server's file reader: once per file, bounded in time and off the
    /// async workers, as a send reads its attachments. For a facade whose own document blocks it
    /// turned into such parts.
    pub async fn read_files(
        &self,
        user_id: &str,
        messages: &[Value],
    ) -> promptgate_turn::documents::FileTexts {
        self.config.documents.read(user_id, messages).await
    }

    /// How many input tokens the completion `request` would send the model, all of it counted: the
    /// gateway's prompt and tools as well as the client's conversation and tools, with the model's
    /// tokenizer where it is public and an estimate on the high side elsewhere, as a send counts.
    #[tracing::instrument(name = "count_tokens", skip_all, fields(user = %request.user_id))]
    pub async fn count_input_tokens(&self, request: CompletionRequest) -> Result<u64, ServiceError> {
        needs_a_user_message(&request.conversation)?;
        let (prepared, _) = self
            .prepare_completion(
                &request.user_id,
                request.model.as_deref(),
                request.conversation,
                &request.client_tools,
            )
            .await?;
        let offered: Vec<ToolDefinition> = prepared
            .tools
            .iter()
            .map(|tool| ToolDefinition {
                name: tool.spec.name.clone(),
                description: tool.spec.description.clone(),
                parameters: tool.spec.parameters.clone(),
            })
            .chain(request.client_tools)
            .collect();
        let counter = self
            .token_counters
            .counter(Tokenizer::for_model(&prepared.model.upstream_model));
        let Prepared {
            composed, history, ..
        } = prepared;
        // Encoding is CPU work: off the async workers, as a send's counting is.
        let tokens = tokio::task::spawn_blocking(move || {
            counter.text(&composed.system) + counter.messages(&history) + counter.tools(&offered)
        })
        .await
        .map_err(|err| {
            tracing::error!(error = %err, "counting a request's tokens failed");
            ServiceError::Internal
        })?;
        Ok(tokens as u64)
    }

    /// The prompt, tools and history of a facade request: the user's setup as for a send (no
    /// thread), over the client's conversation with its hidden steps put back.
    async fn prepare_completion(
        &self,
        user_id: &str,
        model: Option<&str>,
        mut conversation: FacadeHistory,
        client_tools: &[ToolDefinition],
    ) -> Result<(Prepared, ModelProvider), ServiceError> {
        // No thread: the context carries the user's settings, skills and servers but no history.
        let load = self.load_with_model(user_id, None, model);
        let restore =
            super::handoffs::restore(&self.store, user_id, std::mem::take(&mut conversation.messages));
        let ((ctx, model, provider), messages) = tokio::try_join!(load, restore)?;
        conversation.messages = messages;
        let text = last_user_text(&conversation.messages);
        let prepared = self
            .prepare_with_text(
                user_id,
                ctx,
                model,
                &provider,
                None,
                Asked::without_notes(&text, crate::window::Mode::Send),
            )
            .await?
            .over_client_conversation(conversation);
        refuse_clashes(&prepared, client_tools)?;
        Ok((prepared, provider))
    }
}

fn needs_a_user_message(conversation: &FacadeHistory) -> Result<(), ServiceError> {
    if conversation
        .messages
        .iter()
        .any(|m| matches!(m, ChatMessage::User { .. }))
    {
        Ok(())
    } else {
        Err(ServiceError::InvalidMessage(
            "the conversation needs at least one user message".to_owned(),
        ))
    }
}

/// A client tool may not take the name of a tool the server runs for this user: the model could
/// not tell them apart, and the client would never see the call it expects.
fn refuse_clashes(prepared: &Prepared, client_tools: &[ToolDefinition]) -> Result<(), ServiceError> {
    let clashes: Vec<String> = client_tools
        .iter()
        .filter(|client| prepared.tools.iter().any(|tool| tool.spec.name == client.name))
        .map(|client| client.name.clone())
        .collect();
    if clashes.is_empty() {
        Ok(())
    } else {
        Err(ServiceError::ToolNameClash(clashes))
    }
}
