//! Stateless turns for the OpenAI-compatible facade: the same prompt, tools and loop as a send, over
//! the history the client supplies, with nothing stored.

use std::sync::Arc;

use promptgate_llm::{ChatMessage, ContentPart, UserContent};
use serde_json::{Map, Value};

use super::prepare::Asked;
use super::{RunParts, SendHandle, SendStream, Service, ServiceError, TurnIds, check_request_fields};
use promptgate_turn::engine::{RequestBudget, ToolCache, run_turn_in_reader};
use promptgate_turn::facade::facade_history;

pub struct CompletionRequest {
    pub user_id: String,
    pub model: Option<String>,
    /// The conversation as the client sends it: OpenAI chat messages.
    pub messages: Vec<Value>,
    /// Request fields we do not interpret, passed to the provider.
    pub extra: Map<String, Value>,
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
        let (ctx, model, provider) = self
            .load_with_model(&request.user_id, None, request.model.as_deref())
            .await?;
        check_request_fields(
            request.extra.keys().map(String::as_str),
            &provider.allowed_request_fields,
        )?;
        let text = last_user_text(&history.messages);
        let prepared = self
            .prepare_with_text(
                &request.user_id,
                ctx,
                model,
                &provider,
                None,
                Asked::without_notes(&text),
            )
            .await
            .over_client_conversation(history);
        let model_id = prepared.model.id.clone();
        let plan = prepared.into_turn_plan(
            &provider,
            self.config.limits,
            RunParts {
                turn_id: turn_id.clone(),
                message_id: message_id.clone(),
                request_budget: Arc::new(RequestBudget::from_limits(&self.config.limits)),
                tool_cache: ToolCache::default(),
                cancel: self.stop_all.child_token(),
                admission,
                // Nothing of a facade completion is stored.
                recorder: None,
                extra: request.extra,
                tasks: self.tasks.clone(),
                refusal: None,
                on_end: Vec::new(),
            },
        );
        // Nothing of it is stored, so nothing needs it to outlive its reader.
        let run = run_turn_in_reader(plan);
        Ok(SendHandle {
            turn_id,
            message_id,
            model_id,
            events: SendStream::plain(run.events, self.encoding),
        })
    }
}
