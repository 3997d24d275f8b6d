//! Turns for the OpenAI-compatible facades: the same prompt, tools and loop as a send, over the
//! history the client supplies, with no thread. A chat completion keeps nothing; a response of the
//! Responses API may be kept once read ([`crate::respond`]).

use std::sync::Arc;

use promptgate_llm::{ChatMessage, ContentPart, UserContent};
use serde_json::{Map, Value};

use super::prepare::Asked;
use super::{
    ModelProvider, ProviderClient, RunParts, SendHandle, SendStream, Service, ServiceError, TurnIds,
};
use promptgate_turn::engine::{RequestBudget, ToolCache, TurnEnd, run_turn_in_reader};
use promptgate_turn::facade::{FacadeHistory, facade_history};

pub struct CompletionRequest {
    pub user_id: String,
    pub model: Option<String>,
    /// The conversation as the client sends it: OpenAI chat messages.
    pub messages: Vec<Value>,
    /// Request fields we do not interpret, passed to the provider.
    pub extra: Map<String, Value>,
}

/// What a facade hands over once it has read its request.
pub(crate) struct ClientConversation {
    pub user_id: String,
    pub model: Option<String>,
    pub history: FacadeHistory,
    /// Request fields passed to the provider.
    pub extra: Map<String, Value>,
    /// Work due when the turn ends, before its stream says done.
    pub on_end: Vec<Arc<dyn TurnEnd>>,
    /// `Some(false)`: the client asks for one tool call per step, whatever the model could do.
    pub parallel_tool_calls: Option<bool>,
    /// The most tokens each model request may produce, in the provider's own field.
    pub max_output_tokens: Option<u64>,
}

/// Anthropic's Messages API calls the cap `max_tokens`; OpenAI's chat completions call it
/// `max_completion_tokens` and refuse the older `max_tokens` for reasoning models, while a
/// compatible server that does not know the field ignores it.
fn output_cap_field(provider: &ModelProvider) -> &'static str {
    match provider.client {
        ProviderClient::Anthropic(_) => "max_tokens",
        ProviderClient::Demo(_) | ProviderClient::OpenAi(_) => "max_completion_tokens",
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
    #[tracing::instrument(
        name = "complete",
        skip_all,
        fields(user = %request.user_id, turn_id = tracing::field::Empty)
    )]
    pub async fn complete(&self, request: CompletionRequest) -> Result<SendHandle, ServiceError> {
        let history = facade_history(&request.messages).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        self.start_over_client_conversation(ClientConversation {
            user_id: request.user_id,
            model: request.model,
            history,
            extra: request.extra,
            on_end: Vec::new(),
            parallel_tool_calls: None,
            max_output_tokens: None,
        })
        .await
    }

    /// Starts a turn over a conversation the client supplies, with nothing stored: the facades'
    /// common path once each has turned its request into the conversation.
    pub(crate) async fn start_over_client_conversation(
        &self,
        request: ClientConversation,
    ) -> Result<SendHandle, ServiceError> {
        let ClientConversation {
            user_id,
            model,
            history,
            mut extra,
            on_end,
            parallel_tool_calls,
            max_output_tokens,
        } = request;
        if !history
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::User { .. }))
        {
            return Err(ServiceError::InvalidMessage(
                "the conversation needs at least one user message".to_owned(),
            ));
        }
        let admission = self.admit()?;
        let TurnIds { turn_id, message_id } = TurnIds::fresh();
        tracing::Span::current().record("turn_id", turn_id.as_str());
        // No thread: the context carries the user's settings, skills and servers but no history.
        let (ctx, model, provider) = self.load_with_model(&user_id, None, model.as_deref()).await?;
        if let Some(tokens) = max_output_tokens {
            extra.insert(output_cap_field(&provider).to_owned(), tokens.into());
        }
        let text = last_user_text(&history.messages);
        let prepared = self
            .prepare_with_text(&user_id, ctx, model, &provider, None, Asked::without_notes(&text))
            .await
            .over_client_conversation(history);
        let model_id = prepared.model.id.clone();
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
                // No thread keeps the answer; a kept response is kept by its reader.
                recorder: None,
                extra,
                tasks: self.tasks.clone(),
                refusal: None,
                on_end,
            },
        );
        if parallel_tool_calls == Some(false) {
            plan.policy.parallel_tool_calls = false;
        }
        // Nothing outlives the reader: a response is kept by the reader that read it to its end.
        let run = run_turn_in_reader(plan);
        Ok(SendHandle {
            turn_id,
            message_id,
            model_id,
            events: SendStream::plain(run.events, self.encoding),
        })
    }
}
