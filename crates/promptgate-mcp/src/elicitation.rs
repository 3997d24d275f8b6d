//! Questions an MCP server asks the user in the middle of a tool call (`elicitation/create`).
//!
//! The request reaches the session, not the call: rmcp hands it to the session's handler without
//! saying which `tools/call` it belongs to. So each call that can ask the user registers an
//! [`Elicitor`] with its session for as long as it runs, and a request is passed to the one call in
//! flight. With no call that can ask, or with several at once (which one asked cannot be told), the
//! server is answered `decline`, as the spec's default client does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    UrlElicitationCapability,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a server asks, as the user is to see it.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAsk {
    /// A form: `schema` is the server's `requestedSchema`, as sent.
    Form { message: String, schema: Value },
    /// A page to open outside the client. `elicitation_id` is empty under 2026-07-28.
    Url {
        message: String,
        url: String,
        elicitation_id: String,
    },
}

/// The user's answer, as the server receives it (`ElicitResult`).
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The form's content (form mode), or consent to open the page (URL mode: `None`).
    Accept(Option<Value>),
    Decline,
    Cancel,
}

impl ElicitationAnswer {
    fn into_result(self) -> ElicitResult {
        match self {
            Self::Accept(Some(content)) => ElicitResult::new(ElicitationAction::Accept).with_content(content),
            Self::Accept(None) => ElicitResult::new(ElicitationAction::Accept),
            Self::Decline => ElicitResult::new(ElicitationAction::Decline),
            Self::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

/// Whoever can put a server's question to the user during one tool call.
pub trait Elicitor: Send + Sync {
    /// Puts the question to the user and resolves with their answer. `abandoned` is cancelled when
    /// the tool call ends first (Stop, a timeout): the answer is then `cancel`.
    fn ask(&self, ask: ElicitationAsk, abandoned: CancellationToken)
    -> BoxFuture<'static, ElicitationAnswer>;

    /// How long this call has waited for the user so far. The call's own timeout leaves it out:
    /// the server is not slow while a person reads a form.
    fn user_time(&self) -> Duration;
}

/// What the client declares: forms and URL mode.
pub(crate) fn capability() -> ElicitationCapability {
    ElicitationCapability::new()
        .with_form(FormElicitationCapability::new())
        .with_url(UrlElicitationCapability::new())
}

struct Registered {
    id: u64,
    elicitor: Arc<dyn Elicitor>,
    ended: CancellationToken,
}

/// The calls of one session that can ask the user, while they run.
#[derive(Clone, Default)]
pub(crate) struct Elicitors {
    calls: Arc<Mutex<Vec<Registered>>>,
    next: Arc<AtomicU64>,
}

/// A call's registration; dropping it (the call ended) ends any question it has open.
pub(crate) struct Registration {
    elicitors: Elicitors,
    id: u64,
    ended: CancellationToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.ended.cancel();
        self.elicitors.lock().retain(|call| call.id != self.id);
    }
}

impl Elicitors {
    fn lock(&self) -> MutexGuard<'_, Vec<Registered>> {
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn register(&self, elicitor: Arc<dyn Elicitor>) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let ended = CancellationToken::new();
        self.lock().push(Registered {
            id,
            elicitor,
            ended: ended.clone(),
        });
        Registration {
            elicitors: self.clone(),
            id,
            ended,
        }
    }

    /// The call that asked, when exactly one can have.
    fn asking_call(&self) -> Option<(Arc<dyn Elicitor>, CancellationToken)> {
        match self.lock().as_slice() {
            [only] => Some((Arc::clone(&only.elicitor), only.ended.clone())),
            [] => None,
            several => {
                tracing::info!(
                    calls = several.len(),
                    "an MCP server asked the user while several calls ran; declined"
                );
                None
            }
        }
    }

    /// Answers a server's `elicitation/create`.
    pub(crate) async fn answer(&self, params: ElicitRequestParams) -> ElicitResult {
        let Some((elicitor, ended)) = self.asking_call() else {
            return ElicitationAnswer::Decline.into_result();
        };
        let ask = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => match serde_json::to_value(&requested_schema) {
                Ok(schema) => ElicitationAsk::Form { message, schema },
                Err(_) => return ElicitationAnswer::Decline.into_result(),
            },
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => ElicitationAsk::Url {
                message,
                url,
                elicitation_id,
            },
            // A mode this client does not know: it was not declared, so the server broke the spec.
            _ => return ElicitationAnswer::Decline.into_result(),
        };
        elicitor.ask(ask, ended).await.into_result()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;

    use super::*;

    /// Answers every question with `answer` and keeps what it was asked.
    struct Recorder {
        asked: Mutex<Vec<ElicitationAsk>>,
        answer: ElicitationAnswer,
    }

    impl Elicitor for Recorder {
        fn ask(&self, ask: ElicitationAsk, _: CancellationToken) -> BoxFuture<'static, ElicitationAnswer> {
            self.asked.lock().unwrap().push(ask);
            let answer = self.answer.clone();
            Box::pin(async move { answer })
        }

        fn user_time(&self) -> Duration {
            Duration::ZERO
        }
    }

    fn recorder(answer: ElicitationAnswer) -> Arc<Recorder> {
        Arc::new(Recorder {
            asked: Mutex::new(Vec::new()),
            answer,
        })
    }

    fn url_question() -> ElicitRequestParams {
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Sign in".into(),
            url: "https://accounts.example.com/link".into(),
            elicitation_id: "link-1".into(),
        }
    }

    #[tokio::test]
    async fn a_question_goes_to_the_one_call_in_flight_and_its_answer_back() {
        let elicitors = Elicitors::default();
        let call = recorder(ElicitationAnswer::Accept(None));
        let registered = elicitors.register(call.clone());
        let result = elicitors.answer(url_question()).await;
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, None);
        assert_eq!(
            call.asked.lock().unwrap().as_slice(),
            [ElicitationAsk::Url {
                message: "Sign in".into(),
                url: "https://accounts.example.com/link".into(),
                elicitation_id: "link-1".into(),
            }]
        );
        drop(registered);
        // The call ended: nobody can answer any more.
        assert_eq!(
            elicitors.answer(url_question()).await.action,
            ElicitationAction::Decline
        );
    }

    #[tokio::test]
    async fn with_several_calls_in_flight_the_question_is_declined_unseen() {
        let elicitors = Elicitors::default();
        let first = recorder(ElicitationAnswer::Accept(None));
        let second = recorder(ElicitationAnswer::Accept(None));
        let _one = elicitors.register(first.clone());
        let _two = elicitors.register(second.clone());
        assert_eq!(
            elicitors.answer(url_question()).await.action,
            ElicitationAction::Decline
        );
        assert!(first.asked.lock().unwrap().is_empty());
        assert!(second.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn the_end_of_a_call_ends_its_open_question() {
        let elicitors = Elicitors::default();
        let registered = elicitors.register(recorder(ElicitationAnswer::Decline));
        let ended = registered.ended.clone();
        assert!(!ended.is_cancelled());
        drop(registered);
        assert!(ended.is_cancelled());
    }
}
