//! Keeping a turn's answer in the store: a row from the turn's start (`streaming`, written by the
//! send with the user's message, see [`opening_row`]), checkpoints while it grows, and a final save
//! that outlasts a database outage.
//!
//! One writer task per turn does every write, in order, so a slow checkpoint can never land after
//! the final state. The engine only hands it snapshots and waits (a short grace) for the final save.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptgate_store::{
    MessageStatus, NewApproval, NewMessage, Role, Store, StoreCall, StoreError, UsageRecord,
};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::TurnIds;
use super::ledger::UsageTag;
use super::live::{Continuation, Slot};
use promptgate_turn::engine::{AnswerRecorder, PendingApproval, TurnOutcome, TurnStatus};
use promptgate_turn::trace::Scope;

/// Failures of the final save that are neither an outage nor a race (a driver error of unknown
/// cause) are tried this many times, not for the whole retry window.
const OTHER_FAILURES: u32 = 5;
/// The first pause after a failed save; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long the stream's end waits for the thread's release, which is tried again in the background
/// past that (as long as the final save would be).
const RELEASE_BEFORE_DONE: Duration = Duration::from_secs(1);

/// Answers whose final save has not succeeded yet, by turn, so a shutdown can name what it leaves.
#[derive(Clone, Default)]
pub struct PendingSaves {
    inner: Arc<Mutex<HashMap<String, PendingSave>>>,
}

/// Who a pending answer belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSave {
    pub turn_id: String,
    pub thread_id: String,
    pub message_id: String,
}

impl PendingSaves {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PendingSave>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, save: PendingSave) {
        self.lock().insert(save.turn_id.clone(), save);
    }

    fn remove(&self, turn_id: &str) {
        self.lock().remove(turn_id);
    }

    /// The answers not stored yet, oldest turn first (turn ids sort by time).
    pub fn list(&self) -> Vec<PendingSave> {
        let mut all: Vec<_> = self.lock().values().cloned().collect();
        all.sort_by(|a, b| a.turn_id.cmp(&b.turn_id));
        all
    }
}

/// Everything the writer needs besides the snapshots.
pub(crate) struct AnswerWriter {
    pub store: Store,
    /// What the turn's row in the usage ledger says besides its outcome.
    pub usage: UsageTag,
    pub user_id: String,
    pub thread_id: String,
    pub turn_id: String,
    pub message_id: String,
    /// Held until the final save is done (or given up), so the thread takes no new turn before
    /// its history is complete.
    pub slot: Slot,
    pub continuation: Continuation,
    /// How long the final save keeps trying while the store is unavailable.
    pub retry_for: Duration,
    pub pending: PendingSaves,
    /// Writes the turn's stream for a reader elsewhere whose request was not heard in time.
    pub mirrors: super::follow::Mirrors,
    /// Whose limits the turn's tokens count against, when any limit is set.
    pub spender: Option<crate::budgets::Spender>,
    /// How long a call the answer ends waiting for may wait for its approval.
    pub approval_expiry: Duration,
}

/// The answer so far: parts and metadata.
type Snapshot = Option<(Vec<Value>, Value)>;
/// The final answer, with where to say whether it was stored and the turn's scope (its trace's
/// spans of the final save belong to the turn).
type Ending = (TurnOutcome, oneshot::Sender<bool>, Scope);

/// The engine's side: snapshots go into a watch channel (only the newest matters), the outcome
/// into a oneshot.
pub(crate) struct ChannelRecorder {
    snapshots: watch::Sender<Snapshot>,
    outcome: Mutex<Option<oneshot::Sender<Ending>>>,
}

impl AnswerRecorder for ChannelRecorder {
    fn checkpoint(&self, parts: Vec<Value>, metadata: Value) {
        self.snapshots.send_replace(Some((parts, metadata)));
    }

    fn finish(&self, outcome: TurnOutcome) -> Pin<Box<dyn Future<Output = bool> + Send>> {
        let sender = self
            .outcome
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let (stored_tx, stored_rx) = oneshot::channel();
        if let Some(sender) = sender {
            let _ = sender.send((outcome, stored_tx, Scope::current()));
        }
        Box::pin(async move { stored_rx.await.unwrap_or(false) })
    }
}

impl AnswerWriter {
    /// Starts the writer on `tasks` and returns the recorder the turn reports to.
    pub(crate) fn start(self, tasks: &TaskTracker) -> Arc<ChannelRecorder> {
        let (snapshots_tx, snapshots_rx) = watch::channel(None);
        let (outcome_tx, outcome_rx) = oneshot::channel();
        self.pending.add(PendingSave {
            turn_id: self.turn_id.clone(),
            thread_id: self.thread_id.clone(),
            message_id: self.message_id.clone(),
        });
        // In the request's span, so the writer's lines carry its request id like the turn's do.
        tasks.spawn(
            self.run(snapshots_rx, outcome_rx)
                .instrument(tracing::Span::current()),
        );
        Arc::new(ChannelRecorder {
            snapshots: snapshots_tx,
            outcome: Mutex::new(Some(outcome_tx)),
        })
    }

    fn message(&self, parts: Vec<Value>, metadata: Value, status: MessageStatus) -> NewMessage {
        NewMessage {
            id: Some(self.message_id.clone()),
            thread_id: self.thread_id.clone(),
            role: Role::Assistant,
            parts: Value::Array(parts),
            metadata,
            status: Some(status),
        }
    }

    async fn run(self, mut snapshots: watch::Receiver<Snapshot>, mut outcome: oneshot::Receiver<Ending>) {
        // The row exists already (the send wrote it before the turn started).
        let mut reachable = true;
        // The tokens the turn's ledger row holds so far; a checkpoint writes the row only when
        // a step's end changed them.
        let mut counted = None;
        let ended = loop {
            tokio::select! {
                biased;
                ended = &mut outcome => break ended.ok(),
                changed = snapshots.changed() => {
                    if changed.is_err() {
                        // The recorder is gone without a final answer; the outcome tells why.
                        break (&mut outcome).await.ok();
                    }
                    let snapshot = snapshots.borrow_and_update().clone();
                    if let Some((parts, metadata)) = snapshot {
                        let so_far = self
                            .usage
                            .so_far(&self.turn_id, &metadata)
                            .filter(|row| counted != Some(row.tokens));
                        let message = self.message(parts, metadata, MessageStatus::Streaming);
                        reachable = self.checkpoint(message, so_far.as_ref(), reachable).await;
                        if reachable && let Some(row) = so_far {
                            counted = Some(row.tokens);
                        }
                    }
                }
            }
        };
        let spent = ended
            .as_ref()
            .map(|(outcome, ..)| (outcome.usage_total.clone(), self.usage.cost_of(outcome)));
        let mut approvals = Vec::new();
        let turn_scope = ended
            .as_ref()
            .map_or_else(Scope::current, |(.., scope)| scope.clone());
        let (message, stored_tx, status, usage) = match ended {
            Some((outcome, stored_tx, _)) => {
                let usage = self.usage.record(&self.turn_id, &outcome);
                let model_id = outcome
                    .metadata
                    .get("modelId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                approvals = outcome
                    .pending_approvals
                    .iter()
                    .map(|pending| new_approval(pending, model_id))
                    .collect();
                let status = store_status(outcome.status);
                let metadata = outcome.stored_metadata();
                (
                    self.message(outcome.parts, metadata, status),
                    Some(stored_tx),
                    outcome.status.as_str(),
                    Some(usage),
                )
            }
            None => {
                // The turn's task ended without an outcome (it panicked): keep what was seen; what
                // it used went with it.
                let (parts, metadata) = snapshots.borrow().clone().unwrap_or((Vec::new(), json!({})));
                (
                    self.message(parts, metadata, MessageStatus::Error),
                    None,
                    "error",
                    None,
                )
            }
        };
        let stored = turn_scope
            .instrument(self.save_final(&message, &approvals, usage.as_ref()))
            .await;
        if stored && let Some(usage) = &usage {
            self.usage.count(usage);
        }
        if let (Some(spender), Some((spent, cost))) = (&self.spender, &spent) {
            crate::budgets::settle(&self.store, spender, spent, *cost).await;
        }
        let AnswerWriter {
            mut slot,
            continuation,
            thread_id,
            turn_id,
            pending,
            mirrors,
            ..
        } = self;
        if stored {
            pending.remove(&turn_id);
        }
        // Free the thread before the stream says done, so the client's next message is accepted
        // (on any instance); what a retry of this turn carries over is saved with it. A release the
        // store refuses goes on after the stream's end rather than hold it.
        let followed = {
            let mut release = std::pin::pin!(slot.end(&continuation));
            let quick = tokio::time::timeout(RELEASE_BEFORE_DONE, &mut release).await;
            if let Some(stored_tx) = stored_tx {
                let _ = stored_tx.send(stored);
            }
            match quick {
                Ok(followed) => followed,
                Err(_) => release.await,
            }
        };
        // A reader elsewhere asked for the stream, maybe unheard: write it, while the turn's feed is
        // still known here (until the slot goes).
        if followed {
            mirrors.mirror(&turn_id);
        }
        drop(slot);
        if stored {
            tracing::info!(turn = %turn_id, thread = %thread_id, status, "answer stored");
        }
    }

    /// A best-effort write of the answer so far, with the turn's ledger row when a step's end
    /// changed it. Failures are logged once per outage: the final save is the one that must
    /// succeed.
    async fn checkpoint(&self, message: NewMessage, usage: Option<&UsageRecord>, reachable: bool) -> bool {
        let saved = match usage {
            Some(usage) => {
                self.store
                    .save_answer_with_usage(&self.user_id, &message, usage)
                    .await
            }
            None => self.store.save_message(&self.user_id, &message).await,
        };
        match saved {
            Ok(()) => {
                if !reachable {
                    tracing::info!(turn = %self.turn_id, "the store is back; checkpoints resume");
                }
                true
            }
            Err(err) => {
                if reachable {
                    tracing::warn!(turn = %self.turn_id, error = %err, "checkpoint not stored; the final save will retry");
                }
                false
            }
        }
    }

    /// Saves the final answer (with its row in the usage ledger, in one transaction) and the calls
    /// it waits for, retrying with backoff while the store is unavailable, up to `retry_for`. True
    /// once stored.
    async fn save_final(
        &self,
        message: &NewMessage,
        approvals: &[NewApproval],
        usage: Option<&UsageRecord>,
    ) -> bool {
        let deadline = Instant::now() + self.retry_for;
        let mut backoff = FIRST_BACKOFF;
        let mut failures = 0u32;
        loop {
            let err = match self.save_answer(message, approvals, usage).await {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(turn = %self.turn_id, thread = %self.thread_id, failures, "answer stored after the store came back");
                    }
                    return true;
                }
                Err(err) => err,
            };
            failures += 1;
            let retryable = match err {
                StoreError::Unavailable(_) | StoreError::Conflict(_) => true,
                StoreError::Database(_) => failures < OTHER_FAILURES,
                _ => false,
            };
            if !retryable || Instant::now() + backoff > deadline {
                tracing::error!(
                    turn = %self.turn_id, thread = %self.thread_id, message = %self.message_id,
                    error = %err, failures, retryable, "the answer could not be stored; giving up"
                );
                return false;
            }
            if failures == 1 {
                tracing::warn!(
                    turn = %self.turn_id, thread = %self.thread_id, error = %err,
                    retry_for_secs = self.retry_for.as_secs(), "storing the answer failed; retrying until the store is back"
                );
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

impl AnswerWriter {
    /// The answer with the calls it waits for: those first, so an answer that says it waits is
    /// never stored without what it waits for (keeping them again is harmless).
    async fn save_answer(
        &self,
        message: &NewMessage,
        approvals: &[NewApproval],
        usage: Option<&UsageRecord>,
    ) -> Result<(), StoreError> {
        if !approvals.is_empty() {
            self.store
                .keep_approvals(
                    &self.user_id,
                    &self.thread_id,
                    &self.message_id,
                    approvals,
                    self.approval_expiry,
                )
                .await?;
        }
        match usage {
            Some(usage) => {
                let save = self.store.save_answer_with_usage(&self.user_id, message, usage);
                self.store.traced(StoreCall::SaveAnswerWithUsage, save).await
            }
            None => {
                let save = self.store.save_message(&self.user_id, message);
                self.store.traced(StoreCall::SaveAnswer, save).await
            }
        }
    }
}

fn new_approval(pending: &PendingApproval, model_id: &str) -> NewApproval {
    NewApproval {
        approval_id: pending.approval_id.clone(),
        tool_call_id: pending.tool_call_id.clone(),
        tool_name: pending.tool_name.clone(),
        input: pending.input.to_string(),
        model_id: model_id.to_owned(),
    }
}

/// The answer's row as its turn starts: no parts yet, status `streaming`, and the ids its `start`
/// chunk carries. Written before the stream begins, so a client never holds a `messageId` that does
/// not exist, and a crash right after leaves a row to be marked `interrupted`.
pub(crate) fn opening_row(thread_id: &str, ids: &TurnIds, model_id: &str) -> NewMessage {
    NewMessage {
        id: Some(ids.message_id.clone()),
        thread_id: thread_id.to_owned(),
        role: Role::Assistant,
        parts: Value::Array(Vec::new()),
        metadata: json!({"modelId": model_id, "turnId": ids.turn_id}),
        status: Some(MessageStatus::Streaming),
    }
}

pub(crate) fn store_status(status: TurnStatus) -> MessageStatus {
    match status {
        TurnStatus::Complete => MessageStatus::Complete,
        TurnStatus::Stopped => MessageStatus::Stopped,
        TurnStatus::Error => MessageStatus::Error,
    }
}
