//! The gate in front of every route that starts a turn (sends, the chat completions, Responses and
//! Messages facades): past the adaptive limit (`[admission]`, see `promptgate_core::admission`) a
//! request is refused at once with 503 `overloaded` and `Retry-After`, before its user is looked up
//! and before any database or upstream work. Every other route (health, metrics, Stop, lists) never
//! passes it.
//!
//! The limit follows a probe: a task that wakes at fixed times, puts itself at the back of its
//! worker's run queue and measures how long it waited there. On a saturated core every ready piece
//! of work waits its turn in that queue, so the wait is how long the gateway's own work queues,
//! whatever the models upstream take.

mod refuse;

pub use refuse::Refuse;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Ready;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use futures::future::Either;
use metrics::{Counter, Gauge};
use promptgate_core::admission::{AdaptiveLimit, LimitSettings, Load, Refusal, Usage, decide};
use promptgate_service::WriteWaits;
use tokio::time::Instant;
use tower::{Layer, Service};
use tower_http::cors::{Cors, CorsLayer, ResponseFuture as CorsFuture};

use crate::config::Config;

/// The limits, what runs under them, and who runs it.
pub struct Gate {
    /// Every request that starts a turn, limited by how long work waits in the run queue.
    turns: Lane,
    /// The sends that store their answers, limited again by how long writes wait for the
    /// database: a store that cannot keep up queues them where the run queue shows nothing.
    stores: Lane,
    write_waits: Arc<WriteWaits>,
    retry_after: HeaderValue,
    started: Instant,
    /// Requests refused since the probe last said how many.
    refused_unlogged: AtomicU64,
}

/// One adaptive limit and the requests under it.
struct Lane {
    limiter: Mutex<AdaptiveLimit>,
    /// The limiter's current value, read by every request without taking its lock.
    limit: AtomicUsize,
    ceiling: usize,
    running: Mutex<Running>,
    /// Whether a request was refused for the limit since the last probe: the limit binds even when
    /// the probe finds few in flight (arrivals come in bursts).
    refused_since_probe: AtomicBool,
    /// What a refusal past this lane's share is called.
    saturated: Refusal,
    series: Series,
}

#[derive(Default)]
struct Running {
    in_flight: usize,
    /// Requests admitted per client (a hash of its credential), for the fair share.
    clients: HashMap<u64, usize>,
}

/// A lane's metrics, looked up in the recorder once.
struct Series {
    limit: Gauge,
    in_flight: Gauge,
    delay: Gauge,
    saturated: Counter,
    ceiling: Counter,
}

/// The names of a lane's gauges.
struct SeriesNames {
    limit: &'static str,
    in_flight: &'static str,
    delay: &'static str,
}

const TURN_SERIES: SeriesNames = SeriesNames {
    limit: "promptgate_admission_limit",
    in_flight: "promptgate_admission_in_flight",
    delay: "promptgate_admission_delay_seconds",
};

const STORE_SERIES: SeriesNames = SeriesNames {
    limit: "promptgate_admission_store_limit",
    in_flight: "promptgate_admission_store_in_flight",
    delay: "promptgate_admission_store_delay_seconds",
};

impl Series {
    fn new(names: &SeriesNames, saturated: Refusal) -> Self {
        let refused = |reason: Refusal| metrics::counter!("promptgate_admission_refused_total", "reason" => reason.label());
        Self {
            limit: metrics::gauge!(names.limit),
            in_flight: metrics::gauge!(names.in_flight),
            delay: metrics::gauge!(names.delay),
            saturated: refused(saturated),
            ceiling: refused(Refusal::Ceiling),
        }
    }

    fn refused(&self, reason: Refusal) -> &Counter {
        match reason {
            Refusal::Ceiling => &self.ceiling,
            Refusal::Saturated | Refusal::StoreBusy => &self.saturated,
        }
    }
}

impl Lane {
    fn new(settings: LimitSettings, ceiling: usize, names: &SeriesNames, saturated: Refusal) -> Self {
        let limiter = AdaptiveLimit::new(settings);
        let limit = limiter.limit();
        let series = Series::new(names, saturated);
        series.limit.set(limit as f64);
        Self {
            limiter: Mutex::new(limiter),
            limit: AtomicUsize::new(limit),
            ceiling,
            running: Mutex::new(Running::default()),
            refused_since_probe: AtomicBool::new(false),
            saturated,
            series,
        }
    }

    /// Counts a request of `client` in, or says why not.
    fn enter(&self, client: u64) -> Result<(), Refusal> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let own = running.clients.get(&client).copied().unwrap_or(0);
        let clients = running.clients.len() + usize::from(own == 0);
        let decision = decide(Load {
            in_flight: running.in_flight,
            limit: self.limit.load(Ordering::Relaxed),
            ceiling: self.ceiling,
            own,
            clients,
        });
        if let Err(reason) = decision {
            let reason = match reason {
                Refusal::Ceiling => Refusal::Ceiling,
                Refusal::Saturated | Refusal::StoreBusy => {
                    self.refused_since_probe.store(true, Ordering::Relaxed);
                    self.saturated
                }
            };
            self.series.refused(reason).increment(1);
            return Err(reason);
        }
        running.in_flight += 1;
        *running.clients.entry(client).or_insert(0) += 1;
        self.series.in_flight.set(running.in_flight as f64);
        Ok(())
    }

    fn leave(&self, client: u64) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.in_flight = running.in_flight.saturating_sub(1);
        if let Some(own) = running.clients.get_mut(&client) {
            *own -= 1;
            if *own == 0 {
                running.clients.remove(&client);
            }
        }
        self.series.in_flight.set(running.in_flight as f64);
    }

    /// One measurement of how late this lane's work runs, `since_start` into the gate's life.
    fn measure(&self, delay: Duration, since_start: Duration) {
        let usage = Usage {
            in_flight: self
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .in_flight,
            refused: self.refused_since_probe.swap(false, Ordering::Relaxed),
        };
        let limit = self
            .limiter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(delay, usage, since_start);
        if self.limit.swap(limit, Ordering::Relaxed) != limit {
            self.series.limit.set(limit as f64);
        }
        self.series.delay.set(delay.as_secs_f64());
    }
}

impl Gate {
    /// The gate `config` asks for, reading how long `write_waits` says writes wait; none when
    /// `[admission] adaptive = false` (then only `turn.max_in_flight` bounds turns, in the service).
    pub fn new(config: &Config, write_waits: Arc<WriteWaits>) -> Option<Arc<Self>> {
        let admission = &config.admission;
        if !admission.adaptive {
            return None;
        }
        crate::observe::prometheus();
        let ceiling = config.turn.max_in_flight.max(1);
        let turns = Lane::new(
            admission.limit_settings(ceiling),
            ceiling,
            &TURN_SERIES,
            Refusal::Saturated,
        );
        let stores = Lane::new(
            admission.store_limit_settings(ceiling),
            ceiling,
            &STORE_SERIES,
            Refusal::StoreBusy,
        );
        Some(Arc::new(Self {
            turns,
            stores,
            write_waits,
            retry_after: HeaderValue::from(admission.retry_after_secs.max(1)),
            started: Instant::now(),
            refused_unlogged: AtomicU64::new(0),
        }))
    }

    /// Counts a request of `client` in (`stores`: a send that stores its answer), or says why not.
    fn enter(self: &Arc<Self>, client: u64, stores: bool) -> Result<Admitted, Refusal> {
        self.turns.enter(client)?;
        if stores && let Err(reason) = self.stores.enter(client) {
            self.turns.leave(client);
            return Err(reason);
        }
        Ok(Admitted {
            gate: Arc::clone(self),
            client,
            stores,
        })
    }

    /// One probe's wait in the run queue, taken at `at`; and the writes' longest wait since the
    /// probe before.
    fn measure(&self, delay: Duration, at: Instant) {
        let since_start = at.saturating_duration_since(self.started);
        self.turns.measure(delay, since_start);
        let writes = self.write_waits.longest_since_last(at.into_std());
        self.stores.measure(writes, since_start);
    }

    /// Starts the probe on the current runtime; it ends once the gate is dropped. Without a runtime
    /// (nothing can be served then) the limit stays where it started.
    pub fn start_probe(self: &Arc<Self>, every: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Not on the service's tracker: a shutdown waits for that one, and the probe only ends when
        // the router holding the gate is gone.
        runtime.spawn(probe(Arc::downgrade(self), every));
    }
}

/// Every `every`, measures how long the run queue holds a task, while the gate lives; and at most
/// once a second says how many requests were refused since it last did.
async fn probe(gate: Weak<Gate>, every: Duration) {
    let mut said_at = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let queued = Instant::now();
        BackOfTheQueue(false).await;
        let now = Instant::now();
        let Some(gate) = gate.upgrade() else {
            return;
        };
        gate.measure(now.saturating_duration_since(queued), now);
        if now.saturating_duration_since(said_at) >= REFUSALS_SAID_EVERY {
            gate.say_refusals(now.saturating_duration_since(said_at));
            said_at = now;
        }
    }
}

/// How often the refusals are summed up in the log while they go on.
const REFUSALS_SAID_EVERY: Duration = Duration::from_secs(1);

impl Gate {
    /// One log line for the requests refused in the last `over`, when there were any: a line per
    /// refusal would cost the overloaded server more than the refusal itself.
    fn say_refusals(&self, over: Duration) {
        let refused = self.refused_unlogged.swap(0, Ordering::Relaxed);
        if refused > 0 {
            tracing::warn!(
                target: "promptgate::access",
                refused,
                over_ms = u64::try_from(over.as_millis()).unwrap_or(u64::MAX),
                limit = self.turns.limit.load(Ordering::Relaxed),
                "requests refused past the admission limit (503 overloaded)"
            );
        }
    }
}

/// Wakes itself once and yields. tokio runs a task woken by a timer or a socket next (its "LIFO
/// slot"), which would hide the queue; a task that wakes itself while it runs goes to the back of
/// the run queue instead, so it runs again only after everything that was ready before it.
struct BackOfTheQueue(bool);

impl Future for BackOfTheQueue {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A request's place under the limits, given back when its answer has been written.
pub struct Admitted {
    gate: Arc<Gate>,
    client: u64,
    stores: bool,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.gate.turns.leave(self.client);
        if self.stores {
            self.gate.stores.leave(self.client);
        }
    }
}

/// Who a request counts against for the fair share: its credential (hashed; not kept; Anthropic's
/// clients send theirs as `x-api-key`), or no one in particular when it has none (single-user
/// mode: one client).
fn client_of(headers: &HeaderMap) -> u64 {
    let mut hasher = DefaultHasher::new();
    headers
        .get(header::AUTHORIZATION)
        .or_else(|| headers.get(crate::routes::messages::API_KEY))
        .map(HeaderValue::as_bytes)
        .hash(&mut hasher);
    hasher.finish()
}

/// The gate as a layer of the whole request path, placed just inside the request id's layers and
/// outside everything else. Why there: under overload most requests are refused, and a refusal that
/// went through the access log, the request's spans, routing and the other layers cost about a
/// tenth of an answered completion (82k instructions, measured), which at three times capacity ate
/// a quarter of the core. Here a refusal costs what hyper and the answer's few bytes cost. Refusals
/// keep the CORS headers a browser needs to read them and the shape of their API; they are not
/// logged one by one (the probe logs how many, once a second, while it goes on) and are counted in
/// `promptgate_admission_refused_total`, not in the request histogram.
#[derive(Clone)]
pub struct AdmissionLayer {
    gate: Arc<Gate>,
    cors: CorsLayer,
}

impl AdmissionLayer {
    /// The layer for `gate`; refusals get the CORS headers `cors` gives every other answer.
    pub fn new(gate: Arc<Gate>, cors: CorsLayer) -> Self {
        Self { gate, cors }
    }
}

impl<S> Layer<S> for AdmissionLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Admission<S> {
        Admission {
            inner,
            gate: Arc::clone(&self.gate),
            refusals: self.cors.layer(Refuse::new(self.gate.retry_after.clone())),
        }
    }
}

/// The gate in front of `S`: requests that start a turn are counted in or refused.
#[derive(Clone)]
pub struct Admission<S> {
    inner: S,
    gate: Arc<Gate>,
    refusals: Cors<Refuse>,
}

impl<S> Service<Request> for Admission<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<CorsFuture<Ready<Result<Response, Infallible>>>, Held<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let (method, path) = (req.method(), req.uri().path());
        if !crate::user_limits::is_send(method, path) {
            return Either::Right(Held {
                inner: Box::pin(self.inner.call(req)),
                admitted: None,
            });
        }
        let stores = crate::user_limits::stores_answer(method, path);
        match self.gate.enter(client_of(req.headers()), stores) {
            Ok(admitted) => Either::Right(Held {
                inner: Box::pin(self.inner.call(req)),
                admitted: Some(admitted),
            }),
            Err(reason) => {
                self.gate.refused_unlogged.fetch_add(1, Ordering::Relaxed);
                req.extensions_mut().insert(reason);
                Either::Left(self.refusals.call(req))
            }
        }
    }
}

/// An admitted request's answer, whose body keeps its place under the limits until it ends.
pub struct Held<F> {
    inner: Pin<Box<F>>,
    admitted: Option<Admitted>,
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Held<F> {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(res) = std::task::ready!(self.inner.as_mut().poll(cx));
        Poll::Ready(Ok(match self.admitted.take() {
            Some(admitted) => res.map(|body| crate::listen::hold_until_body_ends(body, admitted)),
            None => res,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A log writer that keeps what is written.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Kept {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn refusals_are_summed_up_in_one_line_and_a_quiet_second_says_nothing() {
        let config = Config::parse(crate::config::EMBEDDED_DEFAULT).unwrap();
        let gate = Gate::new(&config, Arc::default()).unwrap();
        let kept = Kept::default();
        let writer = kept.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..3 {
                gate.refused_unlogged.fetch_add(1, Ordering::Relaxed);
            }
            gate.say_refusals(Duration::from_millis(1000));
            gate.say_refusals(Duration::from_millis(1000));
        });
        let log = String::from_utf8(kept.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 1, "{log}");
        assert!(lines[0].contains("WARN"), "{log}");
        assert!(lines[0].contains("refused=3"), "{log}");
        assert!(lines[0].contains("over_ms=1000"), "{log}");
    }
}
