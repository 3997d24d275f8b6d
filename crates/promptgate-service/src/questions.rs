//! A live tool call that needs the user: it keeps its question in the store and waits, inside the
//! running turn, for the answer, which may be given on any instance.
//!
//! The answer is written to the store (the first one wins) and announced with a turn signal
//! (`TurnSignal::Answered`, the Postgres `NOTIFY` that also carries Stop between instances). The
//! signal only saves waiting: the waiting call also reads the store every [`POLL_EVERY`], so an
//! announcement lost while the listener reconnects costs at most that. The wait is bounded; when
//! its time runs out the question is marked expired, and when the call ends first (Stop, the
//! client went away) it is marked cancelled. What the question is (an MCP elicitation, in `elicit`;
//! an authorization the call waits for, in `consent`) and how it is answered live beside this.

use std::time::Duration;

use promptgate_store::{NewQuestion, QuestionState, Store, StoredQuestion, TurnSignal};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{Service, ServiceError};

/// How often a waiting call reads the store besides listening for the announcement.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Waited {
    /// The user's answer, as stored.
    Answered(Value),
    Expired,
    /// The call ended first (Stop).
    Cancelled,
}

/// A kept question its call waits on.
pub(crate) struct Waiting<'a> {
    store: &'a Store,
    user_id: &'a str,
    question: &'a NewQuestion,
    signals: tokio::sync::broadcast::Receiver<TurnSignal>,
    deadline: tokio::time::Instant,
    unsettled: Unsettled,
}

/// Cancels a kept question whose wait is dropped before it settled: the call's future went away
/// with the turn (Stop, the client left), and no later answer may count for it.
struct Unsettled {
    store: Store,
    user_id: String,
    question_id: String,
    tasks: TaskTracker,
    armed: bool,
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (store, user_id, question_id) =
            (self.store.clone(), self.user_id.clone(), self.question_id.clone());
        self.tasks.spawn(async move {
            if let Err(err) = store
                .end_question(&user_id, &question_id, QuestionState::Cancelled)
                .await
            {
                tracing::warn!(error = %err, "a question whose call ended could not be cancelled");
            }
        });
    }
}

impl<'a> Waiting<'a> {
    /// Keeps `question`, answerable for `ttl` from now.
    pub(crate) async fn keep(
        store: &'a Store,
        user_id: &'a str,
        question: &'a NewQuestion,
        ttl: Duration,
        tasks: &TaskTracker,
    ) -> Result<Waiting<'a>, ServiceError> {
        // Listening starts before the question exists, so no announcement can come unheard.
        let signals = store.turn_signals();
        store.keep_question(user_id, question, ttl).await?;
        Ok(Waiting {
            store,
            user_id,
            question,
            signals,
            deadline: tokio::time::Instant::now() + ttl,
            unsettled: Unsettled {
                store: store.clone(),
                user_id: user_id.to_owned(),
                question_id: question.question_id.clone(),
                tasks: tasks.clone(),
                armed: true,
            },
        })
    }

    /// Waits for the answer until the question's time runs out or `ended` (the call is over).
    /// Dropped before that, the question is cancelled.
    pub(crate) async fn answer(mut self, ended: &CancellationToken) -> Result<Waited, ServiceError> {
        let waited = self.wait(ended).await;
        self.unsettled.armed = false;
        waited
    }

    async fn wait(&mut self, ended: &CancellationToken) -> Result<Waited, ServiceError> {
        let (store, user_id, question) = (self.store, self.user_id, self.question);
        let mut poll = tokio::time::interval(POLL_EVERY);
        loop {
            tokio::select! {
                () = ended.cancelled() => {
                    return settle(store, user_id, question, QuestionState::Cancelled).await;
                }
                () = tokio::time::sleep_until(self.deadline) => {
                    return settle(store, user_id, question, QuestionState::Expired).await;
                }
                signal = self.signals.recv() => match signal {
                    Ok(TurnSignal::Answered { turn_id }) if turn_id == question.turn_id => {}
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => {}
                    // The store is going away: the poll carries on alone.
                    Err(RecvError::Closed) => self.signals = store.turn_signals(),
                },
                _ = poll.tick() => {}
            }
            if let Some(settled) = look(store, user_id, question).await? {
                return Ok(settled);
            }
        }
    }
}

/// Ends the question unanswered, unless an answer got there first (then that answer counts).
async fn settle(
    store: &Store,
    user_id: &str,
    question: &NewQuestion,
    state: QuestionState,
) -> Result<Waited, ServiceError> {
    if store.end_question(user_id, &question.question_id, state).await? {
        return Ok(match state {
            QuestionState::Expired => Waited::Expired,
            _ => Waited::Cancelled,
        });
    }
    Ok(look(store, user_id, question).await?.unwrap_or(Waited::Cancelled))
}

/// How the question stands in the store: `None` while it is pending (or gone).
async fn look(store: &Store, user_id: &str, question: &NewQuestion) -> Result<Option<Waited>, ServiceError> {
    let Some(stored) = store
        .question(user_id, &question.thread_id, &question.question_id)
        .await?
    else {
        return Ok(None);
    };
    Ok(match stored.state {
        QuestionState::Pending => None,
        QuestionState::Answered => {
            let answer = stored.answer.as_deref().unwrap_or("null");
            Some(Waited::Answered(
                serde_json::from_str(answer).unwrap_or(Value::Null),
            ))
        }
        QuestionState::Expired => Some(Waited::Expired),
        QuestionState::Cancelled => Some(Waited::Cancelled),
    })
}

impl Service {
    /// The thread's questions still waiting for the user (none for a thread that is not theirs:
    /// `UnknownThread`).
    pub(crate) async fn waiting_questions(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Vec<StoredQuestion>, ServiceError> {
        let waiting = self.store.pending_questions(user_id, thread_id).await?;
        self.waiting_in_known_thread(user_id, thread_id, waiting).await
    }

    /// The question `question_id` of the thread while it still waits: `NotFound` when the thread
    /// has no such question, `QuestionSettled` when it was answered, expired or cancelled.
    pub(crate) async fn open_question(
        &self,
        user_id: &str,
        thread_id: &str,
        question_id: &str,
        what: &'static str,
    ) -> Result<StoredQuestion, ServiceError> {
        let not_found = || ServiceError::NotFound {
            what,
            id: question_id.to_owned(),
        };
        let stored = self
            .store
            .question(user_id, thread_id, question_id)
            .await?
            .ok_or_else(not_found)?;
        match stored.state {
            QuestionState::Pending if !stored.expired => Ok(stored),
            QuestionState::Pending => Err(ServiceError::QuestionSettled(format!(
                "{what} {question_id} expired"
            ))),
            state => Err(ServiceError::QuestionSettled(format!(
                "{what} {question_id} is {} already",
                state.as_str()
            ))),
        }
    }

    /// Stores the answer of an open question (checked by the caller) and tells the instance whose
    /// call waits. `QuestionSettled` when another answer, the expiry or Stop got there first.
    pub(crate) async fn give_answer(
        &self,
        user_id: &str,
        question: &StoredQuestion,
        answer: &Value,
        what: &'static str,
    ) -> Result<(), ServiceError> {
        let taken = self
            .store
            .answer_question(
                user_id,
                &question.asked.thread_id,
                &question.asked.question_id,
                &answer.to_string(),
            )
            .await?;
        if !taken {
            return Err(ServiceError::QuestionSettled(format!(
                "{what} {} was answered, expired or cancelled meanwhile",
                question.asked.question_id
            )));
        }
        let signal = TurnSignal::Answered {
            turn_id: question.asked.turn_id.clone(),
        };
        if let Err(err) = self.store.signal_turn(&signal).await {
            // The waiting call reads the store anyway; it learns the answer at its next look.
            tracing::warn!(error = %err, "could not announce an answer");
        }
        Ok(())
    }
}
