//! Turns for the OpenAI Responses API: the request's input items, after the stored conversation of
//! `previous_response_id` when it names one, run as a facade turn; and the responses a user keeps
//! (`store: true`), read back, listed by their input items and deleted.
//!
//! What a kept response holds for the next request is the conversation the model saw: its own tool
//! calls and their results included, which the client was never shown in full. So a chain continued
//! by id goes on exactly where the model left it, whatever the client made of the items it received.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use promptgate_llm::ChatMessage;
use promptgate_store::{MAX_RESPONSE_BYTES, NewResponse, StoreError, StoredResponse};
use promptgate_turn::engine::{TurnEnd, TurnStatus};
use promptgate_turn::facade::{FacadeHistory, check_call_results, responses_history};
use serde_json::{Map, Value};

use crate::complete::ClientConversation;
use crate::{SendHandle, Service, ServiceError};

/// A `POST /v1/responses` request, as far as the service reads it.
pub struct ResponseRequest {
    pub user_id: String,
    pub model: Option<String>,
    /// A string or an array of input items.
    pub input: Value,
    /// The system instructions of this request (never carried over from an earlier response).
    pub instructions: Option<String>,
    /// The kept response this request continues.
    pub previous_response_id: Option<String>,
    /// `Some(false)`: one tool call per step.
    pub parallel_tool_calls: Option<bool>,
    /// The most tokens each model request may produce.
    pub max_output_tokens: Option<u64>,
    /// Fields passed to the provider as they are (sampling), already checked.
    pub extra: Map<String, Value>,
    /// Keep the response once it has been read to its end.
    pub store: bool,
}

/// A started response: its events, and what keeps it when the request asked for that.
pub struct ResponseRun {
    pub handle: SendHandle,
    pub keeper: Option<ResponseKeeper>,
}

/// Keeps a response once its reader has built the object the client receives. The turn hands it
/// the conversation at its end, before its last events go out, so it is there when the reader
/// reaches them.
pub struct ResponseKeeper {
    service: Service,
    user_id: String,
    previous_response_id: Option<String>,
    conversation: Arc<ConversationSlot>,
}

/// The conversation the model saw, put here by the turn as it ends.
#[derive(Default)]
struct ConversationSlot(Mutex<Option<Vec<ChatMessage>>>);

impl TurnEnd for ConversationSlot {
    fn turn_ended<'a>(
        &'a self,
        _status: TurnStatus,
        transcript: &'a [ChatMessage],
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(transcript.to_vec());
        }
        Box::pin(std::future::ready(()))
    }
}

impl ResponseKeeper {
    /// Stores the response under `id`: the object its client received (`body`) and the request's
    /// input items, with the conversation the turn ended on.
    pub async fn keep(self, id: &str, body: Value, input_items: Value) -> Result<(), ServiceError> {
        let conversation = self.conversation.0.lock().ok().and_then(|mut slot| slot.take());
        let Some(conversation) = conversation else {
            tracing::error!(
                response = id,
                "a response ended without its conversation; not kept"
            );
            return Err(ServiceError::Internal);
        };
        let conversation = serde_json::to_value(conversation).map_err(|_| ServiceError::Internal)?;
        let response = NewResponse {
            id: id.to_owned(),
            previous_response_id: self.previous_response_id,
            body,
            input_items,
            conversation,
        };
        let max_age = self.service.response_max_age_ms();
        Ok(self
            .service
            .store
            .save_response(&self.user_id, &response, max_age)
            .await?)
    }
}

impl Service {
    #[tracing::instrument(
        name = "respond",
        skip_all,
        fields(user = %request.user_id, turn_id = tracing::field::Empty)
    )]
    pub async fn respond(&self, request: ResponseRequest) -> Result<ResponseRun, ServiceError> {
        let input = responses_history(&request.input).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        let mut messages = match &request.previous_response_id {
            Some(id) => self.kept_conversation(&request.user_id, id).await?,
            None => Vec::new(),
        };
        messages.extend(input.messages);
        check_call_results(&messages).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        // The request's instructions come first, then its system and developer messages.
        let system = request.instructions.into_iter().chain(input.system).collect();
        let conversation = Arc::new(ConversationSlot::default());
        let on_end: Vec<Arc<dyn TurnEnd>> = if request.store {
            vec![conversation.clone()]
        } else {
            Vec::new()
        };
        let handle = self
            .start_over_client_conversation(ClientConversation {
                user_id: request.user_id.clone(),
                model: request.model,
                history: FacadeHistory { system, messages },
                extra: request.extra,
                on_end,
                parallel_tool_calls: request.parallel_tool_calls,
                max_output_tokens: request.max_output_tokens,
            })
            .await?;
        let keeper = request.store.then(|| ResponseKeeper {
            service: self.clone(),
            user_id: request.user_id,
            previous_response_id: request.previous_response_id,
            conversation,
        });
        Ok(ResponseRun { handle, keeper })
    }

    /// A kept response of the user, or NotFound.
    pub async fn kept_response(&self, user_id: &str, id: &str) -> Result<StoredResponse, ServiceError> {
        self.store
            .get_response(user_id, id, self.response_max_age_ms())
            .await?
            .ok_or_else(|| not_found(id))
    }

    /// Deletes a kept response, or says NotFound.
    pub async fn delete_response(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_response(user_id, id)
            .await
            .map_err(|err| match err {
                StoreError::NotFound => not_found(id),
                other => other.into(),
            })
    }

    async fn kept_conversation(&self, user_id: &str, id: &str) -> Result<Vec<ChatMessage>, ServiceError> {
        let conversation = self
            .store
            .response_conversation(user_id, id, self.response_max_age_ms())
            .await?
            .ok_or_else(|| not_found(id))?;
        // What this request and its answer add must still fit beside it when it is kept again.
        if conversation.len() > MAX_RESPONSE_BYTES / 4 * 3 {
            return Err(ServiceError::Invalid(format!(
                "the conversation of response {id} is too long to continue ({} bytes kept); start a new one without previous_response_id",
                conversation.len()
            )));
        }
        serde_json::from_str(&conversation).map_err(|err| {
            tracing::error!(response = id, error = %err, "a kept conversation does not parse");
            ServiceError::Internal
        })
    }

    fn response_max_age_ms(&self) -> i64 {
        i64::try_from(self.config.response_retention.as_millis()).unwrap_or(i64::MAX)
    }
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound {
        what: "response",
        id: id.to_owned(),
    }
}
