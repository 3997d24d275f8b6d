//! Turns for the OpenAI Responses API: the request's input, after the kept conversation of
//! `previous_response_id` when it names one, run as a facade turn; and the responses a user keeps
//! (`store: true`), read back and deleted.
//!
//! What a kept response holds for the next request is the conversation the model saw: its own tool
//! calls and their results included, which the client was never shown in full. So a chain continued
//! by id goes on exactly where the model left it, whatever the client made of the items it received.
//! A response that ended on calls of the client's tools keeps which ids the client was given for
//! them (see `promptgate_turn::client_tools`), so the outputs the next request brings under those
//! ids answer the model's own calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use promptgate_llm::ChatMessage;
use promptgate_store::{MAX_RESPONSE_BYTES, NewResponse, StoreError, StoredResponse};
use promptgate_turn::client_tools::HandedCall;
use promptgate_turn::engine::{TurnEnd, TurnStatus};
use promptgate_turn::facade::check_call_results;
use serde::{Deserialize, Serialize};

use crate::{CompletionRequest, SendHandle, Service, ServiceError};

/// A `POST /v1/responses` request in the engine's terms: a facade request, and what continues or
/// keeps it.
pub struct ResponseRequest {
    /// The conversation is the request's input (and instructions) alone; the kept part is added here.
    pub turn: CompletionRequest,
    /// The kept response this request continues.
    pub previous_response_id: Option<String>,
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

/// What a kept response holds for the request that continues it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct KeptConversation {
    /// What the model saw, up to its last message, under its own call ids.
    messages: Vec<ChatMessage>,
    /// The calls of client tools it ended with, by the id the client was given and the model's.
    #[serde(default)]
    client_calls: Vec<HandedCall>,
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
    /// Stores the response under `id`: the object its client received (`body`), the request's
    /// input items, and the conversation the turn ended on. `client_call_ids` are the ids the client
    /// was given for the client tool calls the response ended with, in order.
    pub async fn keep(
        self,
        id: &str,
        body: serde_json::Value,
        input_items: serde_json::Value,
        client_call_ids: &[String],
    ) -> Result<(), ServiceError> {
        let messages = self.conversation.0.lock().ok().and_then(|mut slot| slot.take());
        let Some(messages) = messages else {
            tracing::error!(
                response = id,
                "a response ended without its conversation; not kept"
            );
            return Err(ServiceError::Internal);
        };
        let client_calls = handed_calls(&messages, client_call_ids);
        let kept = KeptConversation {
            messages,
            client_calls,
        };
        let conversation = serde_json::to_value(kept).map_err(|_| ServiceError::Internal)?;
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
            .save_response(
                &self.user_id,
                &response,
                max_age,
                self.service.config.responses_per_user,
            )
            .await?)
    }
}

/// The client calls a conversation ends with (the last assistant message's calls no result
/// follows), paired in order with the ids the client was given for them.
fn handed_calls(messages: &[ChatMessage], client_ids: &[String]) -> Vec<HandedCall> {
    let Some(at) = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::Assistant { .. }))
    else {
        return Vec::new();
    };
    let ChatMessage::Assistant { tool_calls, .. } = &messages[at] else {
        return Vec::new();
    };
    let answered = |id: &str| {
        messages[at..]
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { tool_call_id, .. } if tool_call_id == id))
    };
    let open: Vec<&str> = tool_calls
        .iter()
        .map(|call| call.id.as_str())
        .filter(|id| !answered(id))
        .collect();
    if open.len() != client_ids.len() {
        if !client_ids.is_empty() {
            tracing::warn!("a response's client calls do not match its conversation; kept without them");
        }
        return Vec::new();
    }
    open.into_iter()
        .zip(client_ids)
        .map(|(model_id, client_id)| HandedCall {
            client_id: client_id.clone(),
            model_id: model_id.to_owned(),
        })
        .collect()
}

impl Service {
    #[tracing::instrument(
        name = "respond",
        skip_all,
        fields(user = %request.turn.user_id, turn_id = tracing::field::Empty)
    )]
    pub async fn respond(&self, request: ResponseRequest) -> Result<ResponseRun, ServiceError> {
        let ResponseRequest {
            mut turn,
            previous_response_id,
            store,
        } = request;
        if let Some(id) = &previous_response_id {
            let kept = self.kept_conversation(&turn.user_id, id).await?;
            let input = std::mem::take(&mut turn.conversation.messages);
            turn.conversation.messages = continue_kept(kept, input);
        }
        check_call_results(&turn.conversation.messages)
            .map_err(|e| ServiceError::InvalidMessage(e.to_string()))?;
        let conversation = Arc::new(ConversationSlot::default());
        if store {
            turn.on_end.push(conversation.clone());
        }
        let user_id = turn.user_id.clone();
        let handle = self.complete(turn).await?;
        let keeper = store.then(|| ResponseKeeper {
            service: self.clone(),
            user_id,
            previous_response_id,
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

    async fn kept_conversation(&self, user_id: &str, id: &str) -> Result<KeptConversation, ServiceError> {
        let text = self
            .store
            .response_conversation(user_id, id, self.response_max_age_ms())
            .await?
            .ok_or_else(|| not_found(id))?;
        // What this request and its answer add must still fit beside it when it is kept again.
        if text.len() > MAX_RESPONSE_BYTES / 4 * 3 {
            return Err(ServiceError::InvalidMessage(format!(
                "the conversation of response {id} is too long to continue ({} bytes kept); start a new one without previous_response_id",
                text.len()
            )));
        }
        serde_json::from_str(&text).map_err(|err| {
            tracing::error!(response = id, error = %err, "a kept conversation does not parse");
            ServiceError::Internal
        })
    }

    fn response_max_age_ms(&self) -> i64 {
        i64::try_from(self.config.response_retention.as_millis()).unwrap_or(i64::MAX)
    }
}

/// The kept conversation followed by the request's input, whose outputs for the client calls it
/// ended with answer them under the model's ids.
fn continue_kept(kept: KeptConversation, input: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut messages = kept.messages;
    messages.extend(input.into_iter().map(|message| match message {
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => {
            let tool_call_id = kept
                .client_calls
                .iter()
                .find(|call| call.client_id == tool_call_id)
                .map_or(tool_call_id, |call| call.model_id.clone());
            ChatMessage::Tool {
                tool_call_id,
                content,
            }
        }
        other => other,
    }));
    messages
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound {
        what: "response",
        id: id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::{ToolCall, UserContent};

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: UserContent::Text(text.into()),
        }
    }

    fn result(id: &str, content: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: content.into(),
        }
    }

    #[test]
    fn a_continued_response_answers_the_models_calls_under_the_ids_the_client_was_given() {
        // The model searched on the server beside calling the client's tool.
        let transcript = vec![
            user("Weather in Oslo?"),
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall::new("up_1", "search", "{}"),
                    ToolCall::new("up_2", "get_weather", "{}"),
                ],
            },
            result("up_1", "found"),
        ];
        let client_calls = handed_calls(&transcript, &["pg_k_0".to_owned()]);
        assert_eq!(
            client_calls,
            [HandedCall {
                client_id: "pg_k_0".into(),
                model_id: "up_2".into()
            }]
        );
        let kept = KeptConversation {
            messages: transcript.clone(),
            client_calls,
        };
        let continued = continue_kept(kept, vec![result("pg_k_0", "4 degrees"), user("Thanks")]);
        let mut expected = transcript;
        expected.extend([result("up_2", "4 degrees"), user("Thanks")]);
        assert_eq!(continued, expected);
        assert_eq!(check_call_results(&continued), Ok(()));
    }

    #[test]
    fn client_ids_that_do_not_match_the_open_calls_rename_nothing() {
        let transcript = vec![
            user("q"),
            ChatMessage::Assistant {
                content: Some("done".into()),
                tool_calls: Vec::new(),
            },
        ];
        assert!(handed_calls(&transcript, &[]).is_empty());
        assert!(handed_calls(&transcript, &["pg_k_0".to_owned()]).is_empty());
    }
}
