//! Stateless turns for the OpenAI-compatible facade: the same prompt, tools and loop as a send, over
//! the history the client supplies, with nothing stored.

use std::sync::Arc;

use promptgate_core::prompt::nudges;
use promptgate_llm::{ChatMessage, ContentPart, UserContent};
use serde_json::{Map, Value};

use super::{SendError, SendHandle, TurnService, WebHooks};
use crate::engine::{Nudges, RequestBudget, StepPolicy, TurnPlan, run_turn};
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
        let model_id = match &request.model {
            Some(m) => m.clone(),
            None => self.default_model_for(&request.user_id).await?,
        };
        // No thread: the context carries the user's settings, skills and servers but no history.
        let mut ctx = self
            .store
            .load_send_context(&request.user_id, "", &model_id)
            .await?;
        let model = ctx
            .model
            .take()
            .ok_or_else(|| SendError::UnknownModel(model_id.clone()))?;
        let provider = self
            .providers
            .get(&model.provider)
            .ok_or_else(|| SendError::ProviderMissing(model.provider.clone()))?
            .clone();
        let text = last_user_text(&request.history.messages);
        let prepared = self
            .prepare_with_text(&request.user_id, ctx, model, &provider, None, &text)
            .await;

        let mut system = prepared.plan.system.clone();
        for note in &request.history.system {
            system.push_str("\n\n");
            system.push_str(note);
        }
        let turn_id = format!("turn_{}", uuid::Uuid::now_v7().simple());
        let message_id = format!("msg_{}", uuid::Uuid::now_v7().simple());
        let profile = &prepared.model.profile;
        let mut plan = TurnPlan::new(
            turn_id.clone(),
            message_id.clone(),
            prepared.model.id.clone(),
            provider.model_client(&prepared.model),
            prepared.model.upstream_model.clone(),
            system,
            request.history.messages,
        );
        plan.citation_reinforcement = profile
            .citation_reinforcement_enabled
            .then(|| nudges::citation_reinforcement(profile).to_owned());
        plan.tools = prepared.tools;
        plan.policy = StepPolicy {
            reasoning_effort: prepared.model.reasoning.clone(),
            ..StepPolicy::from_profile(profile, prepared.model.supports_parallel_tool_calls)
        };
        plan.nudges = default_nudges(profile);
        plan.limits = self.config.limits;
        plan.request_budget = Some(Arc::new(RequestBudget::from_limits(&self.config.limits)));
        let mut extra = profile.provider_options.clone().unwrap_or_default();
        extra.extend(request.extra);
        plan.extra = extra;
        plan.hooks = Arc::new(WebHooks::new(prepared.state));
        let run = run_turn(plan);
        Ok(SendHandle {
            turn_id,
            message_id,
            model_id: prepared.model.id,
            events: run.events,
        })
    }
}

pub(super) fn default_nudges(profile: &promptgate_core::settings::ModelProfile) -> Nudges {
    Nudges {
        final_step: nudges::final_step_nudge(profile).to_owned(),
        preventive: nudges::preventive_nudge(profile).to_owned(),
        retry: nudges::retry_nudge(profile, false),
        retry_last: nudges::LAST_RETRY_SENTENCE.to_owned(),
        web_budget: nudges::WEB_BUDGET_NUDGE.to_owned(),
    }
}
