//! Stateless turns for the OpenAI-compatible facade: the same prompt, tools and loop as a send, over
//! the history the client supplies, with nothing stored.

use std::sync::Arc;

use promptgate_llm::{ChatMessage, ContentPart, UserContent};
use serde_json::{Map, Value};

use super::{SendError, SendHandle, SendStream, TurnService, WebHooks};
use crate::engine::{RequestBudget, run_turn};
use crate::facade::FacadeHistory;

pub struct CompletionRequest {
    pub user_id: String,
    pub model: Option<String>,
    pub history: FacadeHistory,
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

impl TurnService {
    pub async fn complete(&self, request: CompletionRequest) -> Result<SendHandle, SendError> {
        if !request
            .history
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::User { .. }))
        {
            return Err(SendError::InvalidMessage(
                "the conversation needs at least one user message".to_owned(),
            ));
        }
        let admission = self.admit()?;
        // No thread: the context carries the user's settings, skills and servers but no history.
        let (ctx, model, provider) = self
            .load_with_model(&request.user_id, "", request.model.as_deref())
            .await?;
        let text = last_user_text(&request.history.messages);
        let prepared = self
            .prepare_with_text(
                &request.user_id,
                ctx,
                model,
                &provider,
                None,
                super::prepare::Asked {
                    text: &text,
                    planned: &super::prepare::Planned::default(),
                },
            )
            .await;

        let mut system = prepared.plan.system.clone();
        for note in &request.history.system {
            system.push_str("\n\n");
            system.push_str(note);
        }
        let turn_id = format!("turn_{}", uuid::Uuid::now_v7().simple());
        let message_id = format!("msg_{}", uuid::Uuid::now_v7().simple());
        let (mut plan, model, state) = prepared.into_turn_plan(
            &provider,
            self.config.limits,
            (turn_id.clone(), message_id.clone()),
            system,
            request.history.messages,
        );
        plan.request_budget = Some(Arc::new(RequestBudget::from_limits(&self.config.limits)));
        plan.extra.extend(request.extra);
        plan.hooks = Arc::new(WebHooks::new(state));
        plan.admission = Some(admission);
        // Nothing of a facade completion is stored.
        plan.record_message = false;
        plan.cancel = self.stop_all.child_token();
        plan.tasks = self.tasks.clone();
        let run = run_turn(plan);
        Ok(SendHandle {
            turn_id,
            message_id,
            model_id: model.id,
            events: SendStream::plain(run.events),
        })
    }
}
