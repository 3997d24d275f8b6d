//! This instance's part in the turns every instance on one database shares (see
//! `promptgate_store::turn_claims`): a claim row per running turn, renewed by one heartbeat for all of
//! them; stop requests and follow requests heard from other instances; the retry state saved with
//! each ended turn.
//!
//! The in-memory claim (`live`) stays the first check, so a second send to a busy thread on the same
//! instance is refused without a round trip; the store's claim is what holds across instances.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptgate_core::budget::WebBudget;
use promptgate_core::sources::SourceRegistry;
use promptgate_store::{ClaimOutcome, NewTurnClaim, RetryLookup, RetrySave, Store, StoreCall, TurnSignal};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::hooks::TurnState;
use super::live::{Continuation, Slot};
use super::{Service, ServiceError};
use promptgate_core::tools::ToolOutput;
use promptgate_turn::engine::{RequestBudget, ToolCache, TurnLimits};
use serde_json::Value;

/// How long a claim holds its thread without a renewal; past it the turn's owner is taken for dead.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// How often an instance renews the leases of its running turns (and sweeps expired ones).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);
/// How long after a turn ended a retry of it (`retry_of`) is accepted.
pub const DEFAULT_RETRY_WINDOW: Duration = Duration::from_secs(600);
/// While other instances' signals go unheard, how often the requests marked on this instance's
/// claims are read.
const UNHEARD_REQUESTS_EVERY: Duration = Duration::from_millis(500);

/// Lease, heartbeat and retry window of this instance.
#[derive(Debug, Clone, Copy)]
pub struct InstanceConfig {
    pub lease: Duration,
    pub heartbeat: Duration,
    pub retry_window: Duration,
}

impl Default for InstanceConfig {
    fn default() -> Self {
        Self {
            lease: DEFAULT_LEASE,
            heartbeat: DEFAULT_HEARTBEAT,
            retry_window: DEFAULT_RETRY_WINDOW,
        }
    }
}

/// This process among the instances sharing the database.
pub(crate) struct Instance {
    pub(crate) id: String,
    /// The heartbeat and the signal listener, started with the first send.
    started: AtomicBool,
    background: TaskTracker,
    quit: CancellationToken,
    /// Turns whose frames this instance writes to the store for readers elsewhere.
    pub(crate) mirrored: Mutex<HashSet<String>>,
}

impl Default for Instance {
    fn default() -> Self {
        Self {
            id: format!("inst_{}", uuid::Uuid::now_v7().simple()),
            started: AtomicBool::new(false),
            background: TaskTracker::new(),
            quit: CancellationToken::new(),
            mirrored: Mutex::new(HashSet::new()),
        }
    }
}

/// What a retry carries over, as stored with the ended turn.
#[derive(Serialize, Deserialize)]
struct StoredRetry {
    budget: WebBudget,
    sources: SourceRegistry,
    requests_consumed: u32,
    elapsed_ms: u64,
    /// The results of the web calls the budget admitted, so a retry's repeat of one is answered
    /// with what the first attempt saw. States saved before they were kept have none.
    #[serde(default)]
    results: Vec<StoredResult>,
}

/// One web call's result, by its budget key.
#[derive(Serialize, Deserialize)]
struct StoredResult {
    key: String,
    output: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_text: Option<String>,
}

/// The most result bytes one retry state keeps. A result past it is left out, and a retry's
/// repeat of that call runs again, uncharged.
const MAX_STORED_RESULT_BYTES: usize = 2 * 1024 * 1024;

/// The turn's web results, largest left out first when they do not all fit.
fn stored_results(cache: &ToolCache) -> Vec<StoredResult> {
    let mut results: Vec<(usize, StoredResult)> = cache
        .budget_results()
        .into_iter()
        .map(|(key, output)| {
            let size = key.len()
                + output.output.to_string().len()
                + output.model_text.as_ref().map_or(0, String::len);
            let result = StoredResult {
                key,
                output: output.output,
                model_text: output.model_text,
            };
            (size, result)
        })
        .collect();
    results.sort_by_key(|(size, _)| *size);
    let mut total = 0;
    results
        .into_iter()
        .take_while(|(size, _)| {
            total += size;
            total <= MAX_STORED_RESULT_BYTES
        })
        .map(|(_, result)| result)
        .collect()
}

fn encode(continuation: &Continuation) -> Option<String> {
    let stored = StoredRetry {
        budget: continuation.state.budget().clone(),
        sources: continuation.state.sources().clone(),
        requests_consumed: continuation.requests.consumed(),
        elapsed_ms: u64::try_from(continuation.requests.elapsed().as_millis()).unwrap_or(u64::MAX),
        results: stored_results(&continuation.tool_cache),
    };
    serde_json::to_string(&stored)
        .inspect_err(|err| tracing::error!(error = %err, "cannot encode a turn's retry state"))
        .ok()
}

fn decode(turn_id: &str, limits: &TurnLimits, json: &str) -> Option<Continuation> {
    let stored: StoredRetry = serde_json::from_str(json)
        .inspect_err(
            |err| tracing::warn!(turn = turn_id, error = %err, "a stored retry state does not parse"),
        )
        .ok()?;
    let answered: HashSet<&str> = stored.results.iter().map(|r| r.key.as_str()).collect();
    let state = TurnState::restored(stored.budget, stored.sources, &answered);
    let tool_cache = ToolCache::with_budget_results(stored.results.into_iter().map(|r| {
        let output = ToolOutput {
            output: r.output,
            model_text: r.model_text,
        };
        (r.key, output)
    }));
    Some(Continuation {
        turn_id: turn_id.to_owned(),
        state: Arc::new(state),
        requests: Arc::new(RequestBudget::resumed(
            limits,
            stored.requests_consumed,
            Duration::from_millis(stored.elapsed_ms),
        )),
        tool_cache,
    })
}

/// A turn's claim in the store. Ended explicitly when its answer is stored ([`Slot::end`]); a
/// send that fails before its turn starts drops it, which frees the thread in the background.
pub(crate) struct StoreClaim {
    store: Store,
    user_id: String,
    thread_id: String,
    turn_id: String,
    /// The turn this one retries, whose saved state this turn's end brings up to date.
    retried: Option<String>,
    retry_window: Duration,
    /// How long a release the store refuses is tried again.
    release_for: Duration,
    tasks: TaskTracker,
    armed: bool,
}

impl StoreClaim {
    /// Releases the claim (saving what a retry carries over), trying again while the store is
    /// away: a claim left behind would hold the thread until this instance stops, since its
    /// heartbeat renews every claim it owns. True when a reader elsewhere asked to follow the turn.
    async fn end(mut self, continuation: Option<&Continuation>) -> bool {
        self.armed = false;
        let state = continuation.and_then(encode);
        let retry = state.as_deref().map(|state| RetrySave {
            state,
            window: self.retry_window,
            retried: self.retried.as_deref(),
        });
        crate::store_retry::until_stored(
            self.release_for,
            "releasing the turn's claim",
            &self.turn_id,
            || {
                self.store
                    .end_turn(&self.user_id, &self.thread_id, &self.turn_id, retry)
            },
        )
        .await
        .unwrap_or(false)
    }
}

impl Drop for StoreClaim {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let claim = StoreClaim {
            store: self.store.clone(),
            user_id: std::mem::take(&mut self.user_id),
            thread_id: std::mem::take(&mut self.thread_id),
            turn_id: std::mem::take(&mut self.turn_id),
            retried: None,
            retry_window: self.retry_window,
            release_for: self.release_for,
            tasks: self.tasks.clone(),
            armed: false,
        };
        self.tasks.spawn_on(
            async move {
                claim.end(None).await;
            },
            &runtime,
        );
    }
}

/// What taking over a dead instance's turn did to its answer, for the log.
fn took_over(answer_interrupted: bool) -> &'static str {
    if answer_interrupted {
        "its answer, left streaming, is now marked interrupted"
    } else {
        "its answer was not left streaming (already stored with its end), so nothing was marked"
    }
}

impl Slot {
    /// Frees the thread in the store, saving what a retry of the turn carries over; this
    /// instance's hold ends when the slot is dropped. True when a reader elsewhere asked to follow
    /// the turn, so the caller can still write its frames while the turn is known here.
    pub(crate) async fn end(&mut self, continuation: &Continuation) -> bool {
        match self.store_claim.take() {
            Some(claim) => claim.end(Some(continuation)).await,
            None => false,
        }
    }
}

impl Service {
    /// Claims the thread in the store, so no other instance runs a turn there meanwhile.
    pub(crate) async fn claim_in_store(
        &self,
        slot: &mut Slot,
        user_id: &str,
        thread_id: &str,
        turn_id: &str,
        message_id: &str,
        retry_of: Option<&str>,
    ) -> Result<(), ServiceError> {
        self.start_instance();
        let claim = NewTurnClaim {
            user_id,
            thread_id,
            turn_id,
            message_id,
            instance_id: &self.instance.id,
        };
        let claimed = self.store.claim_turn(&claim, self.config.instance.lease);
        match self.store.traced(StoreCall::ClaimTurn, claimed).await? {
            ClaimOutcome::Claimed => {}
            ClaimOutcome::TookOver {
                interrupted_turn,
                answer_interrupted,
            } => {
                tracing::warn!(
                    thread = thread_id, turn = %interrupted_turn, answer_interrupted,
                    "the thread's previous turn lost its instance (its lease ran out): {}",
                    took_over(answer_interrupted)
                );
            }
            ClaimOutcome::Busy => return Err(ServiceError::Busy(thread_id.to_owned())),
        }
        slot.store_claim = Some(Box::new(StoreClaim {
            store: self.store.clone(),
            user_id: user_id.to_owned(),
            thread_id: thread_id.to_owned(),
            turn_id: turn_id.to_owned(),
            retried: retry_of.map(str::to_owned),
            retry_window: self.config.instance.retry_window,
            release_for: self.config.save_retry,
            tasks: self.instance.background.clone(),
            armed: true,
        }));
        Ok(())
    }

    /// What a retry of `previous` carries over, from the store (whichever instance ran it).
    pub(crate) async fn recall_retry(
        &self,
        user_id: &str,
        thread_id: &str,
        previous: &str,
    ) -> Result<Continuation, ServiceError> {
        match self.store.retry_state(user_id, thread_id, previous).await? {
            RetryLookup::Found(json) => decode(previous, &self.config.limits, &json)
                .ok_or_else(|| ServiceError::UnknownTurn(previous.to_owned())),
            RetryLookup::Expired => Err(ServiceError::RetryExpired(
                previous.to_owned(),
                self.config.instance.retry_window.as_secs(),
            )),
            RetryLookup::Unknown => Err(ServiceError::UnknownTurn(previous.to_owned())),
        }
    }

    /// Stops the thread's running turn on whichever instance runs it. True when a turn was asked
    /// to stop. Without the store, only a turn of this instance can be reached.
    pub async fn stop(&self, user_id: &str, thread_id: &str) -> bool {
        if self.live.stop(user_id, thread_id) {
            // The stopped call cancels the question it waits on as it goes; this makes sure without
            // making Stop wait for the store (it must not, in an outage).
            self.cancel_questions_later(user_id, thread_id);
            return true;
        }
        match self.store.request_turn_stop(user_id, thread_id).await {
            Ok(Some(running)) => {
                tracing::info!(thread = thread_id, turn = %running.turn_id, owner = %running.instance_id, "stop sent to the turn's instance");
                // An answer sent from now on is refused, not taken by a call that is going away.
                if let Err(err) = self.store.cancel_questions(user_id, thread_id).await {
                    tracing::warn!(thread = thread_id, error = %err, "cannot cancel the thread's waiting questions");
                }
                true
            }
            // No turn runs; the thread may wait for an approval, which Stop cancels.
            Ok(None) => match self.cancel_waiting(user_id, thread_id).await {
                Ok(cancelled) => cancelled,
                Err(err) => {
                    tracing::warn!(thread = thread_id, error = %err, "cannot cancel the thread's waiting approvals");
                    false
                }
            },
            Err(err) => {
                tracing::warn!(thread = thread_id, error = %err, "cannot reach the store to stop a turn of another instance");
                false
            }
        }
    }

    /// Cancels the questions the thread's calls wait on, in the background.
    fn cancel_questions_later(&self, user_id: &str, thread_id: &str) {
        let (store, user_id, thread_id) = (self.store.clone(), user_id.to_owned(), thread_id.to_owned());
        self.tasks.spawn(async move {
            if let Err(err) = store.cancel_questions(&user_id, &thread_id).await {
                tracing::warn!(thread = %thread_id, error = %err, "cannot cancel the thread's waiting questions");
            }
        });
    }

    /// Starts this instance's heartbeat (renewing its turns' leases, sweeping the expired claims of
    /// instances that died) and its signal listener. Idempotent; the server calls it at start-up,
    /// and the first send does if nobody did.
    pub fn start_instance(&self) {
        if self.instance.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let service = self.clone();
        self.instance.background.spawn(
            // A root span: the task outlives the request that happens to start it, and a span
            // keeps its parent open for as long as it lives.
            async move { service.heartbeat().await }
                .instrument(tracing::info_span!(parent: None, "turn_heartbeat")),
        );
        let service = self.clone();
        let signals = self.store.turn_signals();
        self.instance
            .background
            .spawn(async move { service.hear_signals(signals).await });
    }

    /// Ends the heartbeat and the listener; run once every turn has ended and been released.
    pub(crate) async fn stop_instance(&self, deadline: Duration) {
        self.instance.quit.cancel();
        self.instance.background.close();
        let _ = tokio::time::timeout(deadline, self.instance.background.wait()).await;
    }

    /// Renews this instance's leases and sweeps expired claims every heartbeat. While signals from
    /// other instances cannot be heard (the listener reconnecting after an outage), the stop and
    /// follow requests marked on this instance's claims are read every [`UNHEARD_REQUESTS_EVERY`]
    /// instead of only at the heartbeat: a reader elsewhere is waiting for them.
    async fn heartbeat(&self) {
        let every = self.config.instance.heartbeat.max(Duration::from_millis(50));
        let mut next_beat = tokio::time::Instant::now() + every;
        let mut gaps_seen = self.store.turn_signals_heard().1;
        loop {
            let look = tokio::time::Instant::now() + UNHEARD_REQUESTS_EVERY;
            tokio::select! {
                () = self.instance.quit.cancelled() => return,
                () = tokio::time::sleep_until(next_beat.min(look)) => {}
            }
            if tokio::time::Instant::now() >= next_beat {
                next_beat = tokio::time::Instant::now() + every;
                self.renew_leases().await;
                self.sweep_expired().await;
                continue;
            }
            let (heard, gaps) = self.store.turn_signals_heard();
            let missed = !heard || gaps != gaps_seen;
            gaps_seen = gaps;
            if missed && !self.live.is_empty() {
                self.renew_leases().await;
            }
        }
    }

    /// Renews the leases of this instance's turns and acts on what other instances asked of them.
    async fn renew_leases(&self) {
        match self
            .store
            .renew_turn_claims(&self.instance.id, self.config.instance.lease)
            .await
        {
            Ok(requests) => {
                for turn_id in requests.stop {
                    self.live.stop_turn(&turn_id);
                }
                for turn_id in requests.follow {
                    self.mirror(&turn_id);
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "renewing the leases of this instance's turns failed")
            }
        }
    }

    /// Frees the threads of claims whose instance died.
    async fn sweep_expired(&self) {
        match self.store.expire_turn_claims().await {
            Ok(expired) => {
                for turn in expired {
                    tracing::warn!(
                        user = %turn.user_id, thread = %turn.thread_id, turn = %turn.turn_id,
                        answer_interrupted = turn.answer_interrupted,
                        "a turn's instance stopped renewing its lease: {}",
                        took_over(turn.answer_interrupted)
                    );
                }
            }
            Err(err) => tracing::warn!(error = %err, "sweeping expired turn claims failed"),
        }
    }

    async fn hear_signals(&self, mut signals: tokio::sync::broadcast::Receiver<TurnSignal>) {
        loop {
            let signal = tokio::select! {
                () = self.instance.quit.cancelled() => return,
                signal = signals.recv() => signal,
            };
            match signal {
                Ok(TurnSignal::Stop { turn_id }) => {
                    if self.live.stop_turn(&turn_id) {
                        tracing::info!(turn = %turn_id, "turn stopped at another instance's request");
                    }
                }
                Ok(TurnSignal::Follow { turn_id }) => self.mirror(&turn_id),
                Ok(TurnSignal::Frames { .. } | TurnSignal::Answered { .. }) => {}
                // Missed signals: stop and follow requests are also read by the heartbeat.
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use promptgate_core::budget::{Admission, WebIntent};
    use promptgate_core::sources::SearchHit;
    use serde_json::json;

    use super::*;

    fn hit(url: &str) -> SearchHit {
        SearchHit {
            title: url.to_owned(),
            url: url.to_owned(),
            ..SearchHit::default()
        }
    }

    /// A retry on another instance sees the budget, dedupe keys and source numbers the first
    /// attempt left, as the stored JSON carries them.
    #[test]
    fn a_stored_retry_state_comes_back_as_the_turn_left_it() {
        let mut budget = WebBudget::new(WebIntent::Search, false);
        let search = json!({"query": "rust async"});
        assert!(matches!(budget.admit("search", &search), Admission::Run { .. }));
        let state = Arc::new(TurnState::new(budget));
        state
            .sources()
            .register_search(&[hit("https://a.example/"), hit("https://b.example/")]);
        let limits = TurnLimits::default();
        let requests = Arc::new(RequestBudget::from_limits(&limits));
        requests.try_consume();
        let continuation = Continuation {
            turn_id: "turn_1".to_owned(),
            state,
            requests,
            tool_cache: Default::default(),
        };

        let json = encode(&continuation).unwrap();
        let back = decode("turn_1", &limits, &json).unwrap();
        assert_eq!(back.state.budget().consumed(), 1);
        assert_eq!(back.state.budget().intent(), WebIntent::Search);
        assert_eq!(back.requests.consumed(), 1);
        let sources = back.state.sources();
        assert_eq!(sources.index_of("https://b.example/"), Some(2));
        drop(sources);
        assert_eq!(
            back.state.sources().register_search(&[hit("https://c.example/")]),
            vec![3],
            "numbering continues where the first attempt stopped"
        );
        // The same search again is not charged twice.
        let mut budget = back.state.budget();
        assert!(matches!(budget.admit("search", &search), Admission::Reuse { .. }));
        assert_eq!(budget.consumed(), 1);
    }

    #[test]
    fn a_retry_state_that_does_not_parse_is_no_state() {
        assert!(decode("turn_1", &TurnLimits::default(), "{\"budget\": 1}").is_none());
    }
}
