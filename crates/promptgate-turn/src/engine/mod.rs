//! The model/tool loop of one send, independent of any transport.
//!
//! [`run_turn`] spawns the turn on the runtime and hands back its events and, separately, its
//! outcome. The outcome arrives however the turn ends (answer, error, Stop, or the consumer
//! dropping the event stream, which counts as Stop), so the caller can always persist it.
//! [`run_turn_in_reader`] is for turns that keep nothing: the reader of the events runs the turn.

mod approval;
mod call_scope;
mod citation_review;
mod failover;
mod handoff;
mod output;
mod plan;
mod reasoning;
mod span_content;
mod spans;
mod step;
mod tool_images;
mod tools;
mod turn;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::DropGuard;
use tracing::Instrument;

pub use call_scope::{CallScope, UserWait};
pub use failover::{AnsweredBy, Breakers, Failover, RetryPolicy, Route};
pub use plan::{
    AnswerRecorder, ApprovalAnswer, CitationReview, Floor, Gate, NoHooks, Nudges, PendingApproval,
    RequestBudget, Resume, RunnableTool, SourceRef, StepPolicy, ToolTitles, TurnEnd, TurnHooks, TurnLimits,
    TurnOutcome, TurnPlan, TurnStatus, UsageSoFar,
};
pub use span_content::CONTENT_TARGET;
pub use tools::ToolCache;
pub use turn::{
    CONTEXT_TOO_LONG, CONTEXT_TOO_LONG_TEXT, EMPTY_ANSWER_TEXT, NOT_STORED_TEXT, PROVIDER_OVERLOADED,
    PROVIDER_RATE_LIMITED, REQUEST_REFUSED,
};

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
    /// The turn itself when the reader runs it ([`run_turn_in_reader`]); done once it ended.
    turn: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    _stop_on_drop: DropGuard,
}

impl Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        let this = &mut *self;
        let Some(turn) = this.turn.as_mut() else {
            return this.events.poll_recv(cx);
        };
        // Here only the turn sends, and only while it is polled right here, so the channel is read
        // without leaving a waker: every send would ring it and poll this task once more for
        // nothing. The turn runs until it waits for something (the model, a tool, room in the
        // buffer, which reading here makes); what it sent meanwhile is read right away.
        if let Ok(event) = this.events.try_recv() {
            return Poll::Ready(Some(event));
        }
        if turn.as_mut().poll(cx).is_ready() {
            // Dropping the finished turn drops its sender, so the channel ends once drained.
            this.turn = None;
        }
        match this.events.try_recv() {
            Ok(event) => Poll::Ready(Some(event)),
            Err(mpsc::error::TryRecvError::Disconnected) => Poll::Ready(None),
            Err(mpsc::error::TryRecvError::Empty) if this.turn.is_some() => Poll::Pending,
            // Ended, yet its sender lives on somewhere: wait for the channel like a spawned turn's reader.
            Err(mpsc::error::TryRecvError::Empty) => this.events.poll_recv(cx),
        }
    }
}

/// Starts a turn. Must be called from within a tokio runtime, on which the turn is spawned.
pub fn run_turn(plan: TurnPlan) -> TurnRun {
    let (turn, run) = prepare_run(plan);
    turn.tasks.spawn(turn.future);
    run
}

/// Starts a turn that runs only while its events are read, inside the reader's task: each model
/// event reaches the reader without waking another task. Only for turns whose answer is not
/// kept (the OpenAI facade), as a reader that stops reading stops the turn at once; dropped before
/// the end, the turn sends no outcome.
pub fn run_turn_in_reader(plan: TurnPlan) -> TurnRun {
    let (turn, mut run) = prepare_run(plan);
    run.events.turn = Some(turn.future);
    run
}

struct PendingRun {
    future: Pin<Box<dyn Future<Output = ()> + Send>>,
    tasks: tokio_util::task::TaskTracker,
}

fn prepare_run(mut plan: TurnPlan) -> (PendingRun, TurnRun) {
    let (events_tx, events_rx) = mpsc::channel(EVENT_BUFFER);
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let stop = plan.cancel.child_token();
    let stop_on_drop = stop.clone().drop_guard();
    let span = tracing::info_span!("turn", turn_id = %plan.turn_id, model = %plan.model_id);
    // The parent of the turn's calls' spans, not entered around its polls (see `Turn`).
    let agent = spans::agent(&plan);
    let admission = plan.admission.take();
    let tasks = plan.tasks.clone();
    let turn = async move {
        let _admission = admission;
        // Boxed apart: the run's future is large, and this block is moved into its instrumented
        // box; holding it inline copied it whole once more per turn.
        let run = Box::pin(turn::Turn::new(plan, events_tx, stop, agent.clone()).run());
        let outcome = run.await;
        tracing::info!(
            status = outcome.status.as_str(),
            steps = outcome.steps,
            upstream_requests = outcome.upstream_requests,
            total_tokens = outcome.usage_total.total_tokens,
            "turn ended"
        );
        spans::record_outcome(&agent, &outcome);
        // The caller may have stopped caring about the outcome; nothing to do then.
        let _ = outcome_tx.send(outcome);
    };
    let prepared = PendingRun {
        future: Box::pin(turn.instrument(span)),
        tasks,
    };
    let run = TurnRun {
        events: TurnStream {
            events: events_rx,
            turn: None,
            _stop_on_drop: stop_on_drop,
        },
        outcome: outcome_rx,
    };
    (prepared, run)
}
