//! What a running tool call may reach of its turn: which call it is, a way to show the user a part
//! of the answer while it runs (a question it waits on), and the clock of the user's time.
//!
//! The engine runs each call inside its [`CallScope`] (a task-local), so an executor that needs the
//! user mid-call finds it with [`CallScope::current`] without every executor taking a context. The
//! time a call spends waiting for a person is counted apart: the tool timeout leaves it out, since
//! the tool is not slow while someone reads a form.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use promptgate_outbound::call_time;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::ui::UiChunk;

tokio::task_local! {
    static CALL: CallScope;
}

/// How many parts the calls of one step may have queued for the stream before a call waits.
pub(super) const SHOWN_BUFFER: usize = 16;

/// One tool call of a running turn, as its executor sees it.
#[derive(Clone)]
pub struct CallScope {
    pub turn_id: String,
    /// The assistant message the turn writes.
    pub message_id: String,
    pub tool_call_id: String,
    /// The client can show a question and has a way to answer it (an AI SDK 6+ UI stream).
    pub can_ask: bool,
    shown: mpsc::Sender<UiChunk>,
    user_time: Arc<UserTime>,
}

impl CallScope {
    pub(super) fn new(
        turn_id: &str,
        message_id: &str,
        tool_call_id: &str,
        can_ask: bool,
        shown: mpsc::Sender<UiChunk>,
    ) -> Self {
        Self {
            turn_id: turn_id.to_owned(),
            message_id: message_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            can_ask,
            shown,
            user_time: Arc::default(),
        }
    }

    /// The call this code runs in, if it runs in one.
    pub fn current() -> Option<CallScope> {
        CALL.try_with(Clone::clone).ok()
    }

    /// Runs `work` as this call.
    pub(super) fn run<F: Future>(self, work: F) -> impl Future<Output = F::Output> {
        CALL.scope(self, work)
    }

    /// Adds a part to the answer (stream and stored message). False when the turn no longer reads
    /// them (it ended).
    pub async fn show(&self, chunk: UiChunk) -> bool {
        self.shown.send(chunk).await.is_ok()
    }

    /// Counts the user's time until the returned guard is dropped.
    pub fn waiting_for_user(&self) -> UserWait {
        self.user_time.begin();
        UserWait(Arc::clone(&self.user_time))
    }

    /// How long this call has waited for the user so far.
    pub fn user_time(&self) -> Duration {
        self.user_time.total()
    }
}

/// The time a call waited for a person: what is over, and since when a wait runs.
#[derive(Default)]
struct UserTime {
    state: Mutex<UserClock>,
}

#[derive(Default)]
struct UserClock {
    over: Duration,
    waits: u32,
    since: Option<Instant>,
}

impl UserTime {
    fn lock(&self) -> MutexGuard<'_, UserClock> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn begin(&self) {
        let mut clock = self.lock();
        if clock.waits == 0 {
            clock.since = Some(Instant::now());
        }
        clock.waits += 1;
    }

    fn end(&self) {
        let mut clock = self.lock();
        clock.waits = clock.waits.saturating_sub(1);
        if clock.waits == 0
            && let Some(since) = clock.since.take()
        {
            clock.over += since.elapsed();
        }
    }

    fn total(&self) -> Duration {
        let clock = self.lock();
        clock.over + clock.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

/// A wait for the user; its time stops counting when dropped.
pub struct UserWait(Arc<UserTime>);

impl Drop for UserWait {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Awaits `work` for `timeout` of the call's own time: the deadline moves by whatever the call in
/// scope spent waiting for the user. `None` when the time ran out.
pub(super) async fn within_call_time<F: Future>(timeout: Duration, work: F) -> Option<F::Output> {
    let user_time = || CallScope::current().map_or(Duration::ZERO, |call| call.user_time());
    call_time::within(timeout, user_time, work).await
}
