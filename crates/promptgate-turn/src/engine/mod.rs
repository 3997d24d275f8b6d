//! The model/tool loop of one send, independent of any transport.
//!
//! [`run_turn`] spawns the turn on the runtime and hands back its events and, separately, its
//! outcome. The outcome arrives however the turn ends (answer, error, Stop, or the consumer
//! dropping the event stream, which counts as Stop), so the caller can always persist it.

mod output;
mod plan;
mod reasoning;
mod step;
mod tools;
mod turn;

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::DropGuard;
use tracing::Instrument;

pub use plan::{
    AnswerRecorder, Floor, Gate, NoHooks, Nudges, PreparedTool, RequestBudget, SourceRef, StepPolicy,
    TurnEnd, TurnHooks, TurnLimits, TurnOutcome, TurnPlan, TurnStatus, VerbRenderer,
};
pub use tools::{ToolCache, render_verb, stable_json, title_by_name};
pub use turn::{EMPTY_ANSWER_TEXT, NOT_STORED_TEXT};

use crate::ui::TurnEvent;

/// Events buffered between the turn and a slow consumer before the turn waits for it.
const EVENT_BUFFER: usize = 64;

/// A running turn: its events, and its outcome once it has ended.
pub struct TurnRun {
    pub events: TurnStream,
    pub outcome: oneshot::Receiver<TurnOutcome>,
}

/// The events of a turn. Dropping it stops the turn.
pub struct TurnStream {
    events: mpsc::Receiver<TurnEvent>,
    _stop_on_drop: DropGuard,
}

impl Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        self.events.poll_recv(cx)
    }
}

/// Starts a turn. Must be called from within a tokio runtime, on which the turn is spawned.
pub fn run_turn(mut plan: TurnPlan) -> TurnRun {
    let (events_tx, events_rx) = mpsc::channel(EVENT_BUFFER);
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let stop = plan.cancel.child_token();
    let stop_on_drop = stop.clone().drop_guard();
    let span = tracing::info_span!("turn", turn_id = %plan.turn_id, model = %plan.model_id);
    let admission = plan.admission.take();
    let plan_tasks = plan.tasks.clone();
    let turn = async move {
        let _admission = admission;
        let outcome = turn::Turn::new(plan, events_tx, stop).run().await;
        tracing::info!(
            status = outcome.status.as_str(),
            steps = outcome.steps,
            upstream_requests = outcome.upstream_requests,
            total_tokens = outcome.usage_total.total_tokens,
            "turn ended"
        );
        // The caller may have stopped caring about the outcome; nothing to do then.
        let _ = outcome_tx.send(outcome);
    };
    let tasks = plan_tasks;
    tasks.spawn(turn.instrument(span));
    TurnRun {
        events: TurnStream {
            events: events_rx,
            _stop_on_drop: stop_on_drop,
        },
        outcome: outcome_rx,
    }
}
