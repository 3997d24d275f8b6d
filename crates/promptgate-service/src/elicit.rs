//! MCP elicitation in a turn. A server's `elicitation/create` during a tool call becomes a
//! `data-elicitation` part of the answer and a question in the store (see `questions`); the call
//! waits for the user's answer, given with `POST /v1/threads/{id}/elicitations/{elicitation_id}` on
//! any instance, and the server receives it as its `ElicitResult`. A client that cannot show the
//! form (the facades, UI streams before v6) gets the server an immediate `decline`, as does a
//! question over the bounds of `promptgate_core::elicitation`.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use promptgate_core::elicitation as bounds;
use promptgate_mcp::{ElicitationAnswer, ElicitationAsk, Elicitor};
use promptgate_store::{NewQuestion, Store, StoredQuestion};
use promptgate_turn::engine::CallScope;
use promptgate_turn::ui::UiChunk;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::questions::{Waited, Waiting};
use crate::{Service, ServiceError};

/// The kind of question an elicitation is kept as.
const ELICITATION: &str = "elicitation";
/// How a missing elicitation is named in errors.
const WHAT: &str = "elicitation";

/// What the user answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    /// Form mode: the form's content. URL mode: the user agreed to open the page.
    Accept,
    Decline,
    Cancel,
}

impl ElicitationAction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }

    /// The part's state once the server has this answer.
    fn settled_state(self) -> &'static str {
        match self {
            Self::Accept => "accepted",
            Self::Decline => "declined",
            Self::Cancel => "cancelled",
        }
    }
}

/// The user's answer to an elicitation, as stored and sent to the server (`ElicitResult`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElicitationReply {
    pub action: ElicitationAction,
    #[serde(default)]
    pub content: Option<Value>,
}

/// What a turn's MCP calls need to put a server's question to the user.
#[derive(Clone)]
pub(crate) struct ElicitationSetup {
    pub store: Store,
    pub user_id: String,
    /// `None` for a send that keeps no thread (a facade's): nothing can be answered there.
    pub thread_id: Option<String>,
    pub timeout: Duration,
    /// Where a question whose call went away is cancelled.
    pub tasks: TaskTracker,
}

impl ElicitationSetup {
    /// The elicitor of the tool call this runs in, for a server named `server`.
    pub(crate) fn for_current_call(&self, server: &str) -> Option<Arc<dyn Elicitor>> {
        let call = CallScope::current()?;
        Some(Arc::new(TurnElicitor {
            setup: self.clone(),
            server: server.to_owned(),
            call,
        }))
    }
}

#[derive(Clone)]
struct TurnElicitor {
    setup: ElicitationSetup,
    server: String,
    call: CallScope,
}

impl Elicitor for TurnElicitor {
    fn ask(
        &self,
        ask: ElicitationAsk,
        abandoned: CancellationToken,
    ) -> BoxFuture<'static, ElicitationAnswer> {
        let elicitor = self.clone();
        Box::pin(async move { elicitor.put(ask, abandoned).await })
    }

    fn user_time(&self) -> Duration {
        self.call.user_time()
    }
}

impl TurnElicitor {
    async fn put(self, ask: ElicitationAsk, abandoned: CancellationToken) -> ElicitationAnswer {
        let Some(thread_id) = self.setup.thread_id.clone().filter(|_| self.call.can_ask) else {
            tracing::info!(server = %self.server, "an MCP server asked the user, and this client cannot show it; declined");
            return ElicitationAnswer::Decline;
        };
        let id = format!("elicit_{}", uuid::Uuid::now_v7().simple());
        let mut data = match self.shown(&id, &ask) {
            Ok(data) => data,
            Err(why) => {
                tracing::warn!(server = %self.server, %why, "an MCP server's question is over the bounds; declined");
                return ElicitationAnswer::Decline;
            }
        };
        let question = NewQuestion {
            question_id: id.clone(),
            thread_id,
            message_id: self.call.message_id.clone(),
            turn_id: self.call.turn_id.clone(),
            tool_call_id: self.call.tool_call_id.clone(),
            kind: ELICITATION.to_owned(),
            question: data.to_string(),
        };
        let _user_time = self.call.waiting_for_user();
        let (store, user_id) = (&self.setup.store, self.setup.user_id.as_str());
        let kept = Waiting::keep(store, user_id, &question, self.setup.timeout, &self.setup.tasks).await;
        let waited = match kept {
            Ok(waiting) => {
                // Shown once kept, so an answer sent the moment it is seen finds it.
                self.show(&id, &data).await;
                waiting.answer(&abandoned).await
            }
            Err(err) => Err(err),
        };
        let (state, answer) = match waited {
            Ok(Waited::Answered(stored)) => answer_of(stored),
            Ok(Waited::Expired) => ("expired", ElicitationAnswer::Cancel),
            Ok(Waited::Cancelled) => ("cancelled", ElicitationAnswer::Cancel),
            Err(err) => {
                tracing::warn!(error = %err, "an elicitation could not be kept or waited on; the server is told cancel");
                ("cancelled", ElicitationAnswer::Cancel)
            }
        };
        data["state"] = json!(state);
        self.show(&id, &data).await;
        answer
    }

    /// The part's data: what the user is shown, checked against the bounds.
    fn shown(&self, id: &str, ask: &ElicitationAsk) -> Result<Value, String> {
        let mut data = json!({
            "elicitationId": id,
            "server": self.server,
            "toolCallId": self.call.tool_call_id,
            "state": "waiting",
            "expiresInSecs": self.setup.timeout.as_secs(),
        });
        match ask {
            ElicitationAsk::Form { message, schema } => {
                bounds::check_message(message)?;
                bounds::check_form(schema)?;
                data["mode"] = json!("form");
                data["message"] = json!(message);
                data["requestedSchema"] = schema.clone();
            }
            ElicitationAsk::Url { message, url, .. } => {
                bounds::check_message(message)?;
                bounds::check_url(url)?;
                data["mode"] = json!("url");
                data["message"] = json!(message);
                data["url"] = json!(url);
            }
        }
        Ok(data)
    }

    async fn show(&self, id: &str, data: &Value) {
        let chunk = UiChunk::DataElicitation {
            id: id.to_owned(),
            data: data.clone(),
        };
        if !self.call.show(chunk).await {
            tracing::debug!("an elicitation part came after its turn stopped reading");
        }
    }
}

/// The part's final state and the server's answer, from the stored reply.
fn answer_of(stored: Value) -> (&'static str, ElicitationAnswer) {
    match serde_json::from_value::<ElicitationReply>(stored) {
        Ok(reply) => {
            let answer = match reply.action {
                ElicitationAction::Accept => ElicitationAnswer::Accept(reply.content),
                ElicitationAction::Decline => ElicitationAnswer::Decline,
                ElicitationAction::Cancel => ElicitationAnswer::Cancel,
            };
            (reply.action.settled_state(), answer)
        }
        Err(_) => ("cancelled", ElicitationAnswer::Cancel),
    }
}

/// What the user is shown of a kept elicitation (the `data` of its part).
fn shown_of(question: &StoredQuestion) -> Value {
    serde_json::from_str(&question.asked.question).unwrap_or(Value::Null)
}

impl Service {
    /// The elicitations of the thread waiting for the user, each as its part's `data`.
    pub async fn waiting_elicitations(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Vec<Value>, ServiceError> {
        let waiting = self.waiting_questions(user_id, thread_id).await?;
        Ok(waiting
            .iter()
            .filter(|question| question.asked.kind == ELICITATION)
            .map(shown_of)
            .collect())
    }

    /// Answers an elicitation the thread waits on. `accept` in form mode must carry content that
    /// fits the form. Returns the part's `data` as the answer leaves it.
    pub async fn answer_elicitation(
        &self,
        user_id: &str,
        thread_id: &str,
        elicitation_id: &str,
        reply: ElicitationReply,
    ) -> Result<Value, ServiceError> {
        let question = self
            .open_question(user_id, thread_id, elicitation_id, WHAT)
            .await?;
        if question.asked.kind != ELICITATION {
            return Err(ServiceError::NotFound {
                what: WHAT,
                id: elicitation_id.to_owned(),
            });
        }
        let mut shown = shown_of(&question);
        let content = checked_content(&shown, &reply)?;
        let mut answer = json!({"action": reply.action.as_str()});
        if let Some(content) = content {
            answer["content"] = content;
        }
        self.give_answer(user_id, &question, &answer, WHAT).await?;
        shown["state"] = json!(reply.action.settled_state());
        Ok(shown)
    }
}

/// The content to send: the form's fields for a form's `accept`, nothing otherwise.
fn checked_content(shown: &Value, reply: &ElicitationReply) -> Result<Option<Value>, ServiceError> {
    let form = shown.get("requestedSchema").filter(|_| shown["mode"] == "form");
    match (reply.action, form, &reply.content) {
        (ElicitationAction::Accept, Some(schema), Some(content)) => {
            bounds::check_answer(schema, content)
                .map_err(|why| ServiceError::InvalidMessage(format!("content: {why}")))?;
            Ok(Some(content.clone()))
        }
        (ElicitationAction::Accept, Some(_), None) => Err(ServiceError::InvalidMessage(
            "content: accepting a form needs the form's fields".into(),
        )),
        (_, _, Some(_)) => Err(ServiceError::InvalidMessage(
            "content: only accepting a form carries content".into(),
        )),
        _ => Ok(None),
    }
}
