//! What an operator sees: Prometheus metrics, request ids, one access line per request and one
//! summary line per turn.
//!
//! Metric names (all prefixed `promptgate_`):
//! - `http_requests_total{route,method,status}`, `http_request_duration_seconds{route,method,status}`
//!   (time to the response head; a stream's body is measured by the turn metrics)
//! - `connections_evicted_total` (idle connections closed to make room at the cap; see `listen`)
//!
//! A client chooses the method and the path of its request, so neither becomes a label as it was
//! sent: a method outside HTTP's standard ones is `other`, a path no route matches is `unmatched`.
//! Every other label comes from the server's own vocabulary (route templates, statuses, tool and
//! provider names from the config, error kinds), so the number of series stays bounded whatever
//! clients send.
//! - `turns_total{outcome}`, `turn_duration_seconds{outcome}`, `turns_in_flight`
//! - `turn_tool_calls_total{outcome}` as a turn's stream shows them
//! - `prompt_tokens_total`, `prompt_cached_tokens_total`, `completion_tokens_total` (cached tokens are
//!   the upstream's prompt cache hits)
//! - `store_errors_total` (store failures that reached a client as 500)
//! - the turn engine adds `upstream_*`, `tool_*` and `web_budget_denials_total`; the MCP hub adds
//!   `mcp_discovery_failures_total{kind}`.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{Counter, Gauge, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use promptgate_service::events::{TurnEvent, UiChunk};
use serde_json::Value;
use tracing::Instrument;

use crate::error::FailureLog;

/// The header a request id travels in, both ways.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Bytes a request id may use besides ASCII letters and digits: enough for UUIDs, hex, base64 and
/// `prefix_id` or `a:b` styles, and nothing that could end a log field or start a new one.
const REQUEST_ID_PUNCTUATION: &[u8] = b"-_.:+/=";

/// Sets the request's id before anything else sees it: a client's `x-request-id` is kept when it is
/// at most `max_len` bytes of letters, digits and [`REQUEST_ID_PUNCTUATION`], so it can be logged,
/// echoed and put into error bodies as it is; any other value is replaced by a fresh UUID (the
/// client sees which in the response's `x-request-id`).
pub fn assign_request_id(max_len: usize) -> impl Fn(Request) -> Request + Clone {
    move |mut request: Request| {
        let kept = request
            .headers()
            .get(&REQUEST_ID)
            .is_some_and(|id| acceptable_request_id(id.as_bytes(), max_len));
        if !kept {
            let fresh = uuid::Uuid::new_v4().to_string();
            if let Ok(value) = HeaderValue::from_str(&fresh) {
                request.headers_mut().insert(REQUEST_ID, value);
            }
        }
        request
    }
}

fn acceptable_request_id(id: &[u8], max_len: usize) -> bool {
    !id.is_empty()
        && id.len() <= max_len
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || REQUEST_ID_PUNCTUATION.contains(b))
}

tokio::task_local! {
    static CURRENT_REQUEST_ID: String;
}

/// Runs `f` as a part of the request `id`, for an answer made before the request's scope begins
/// (the admission gate's refusals): error bodies made in it carry the id.
pub fn with_request_id<R>(id: String, f: impl FnOnce() -> R) -> R {
    CURRENT_REQUEST_ID.sync_scope(id, f)
}

/// The id of the request being handled on this task, for error bodies.
pub fn current_request_id() -> Option<String> {
    CURRENT_REQUEST_ID.try_with(Clone::clone).ok()
}

/// The trace id of the request being handled here, when traces are exported: its server span is
/// attached while it is handled.
pub fn current_trace_id() -> Option<String> {
    promptgate_service::trace::current_trace_id()
}

/// The process's Prometheus recorder. Installed once; every server in the process (tests start many)
/// reports into it.
pub fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let latency = [
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
        ];
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &latency)
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics may stay empty");
        }
        handle
    })
}

/// `GET /metrics` in Prometheus' text format.
pub async fn metrics_endpoint() -> Response {
    let handle = prometheus();
    handle.run_upkeep();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        handle.render(),
    )
        .into_response()
}

/// Serves `/metrics` alone on its own listener (`[server] metrics_listen`) until `stopping` fires.
/// Everything else there is a 404: the scrape port offers nothing of the API.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    stopping: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    let router = axum::Router::new().route("/metrics", axum::routing::get(metrics_endpoint));
    axum::serve(listener, router)
        .with_graceful_shutdown(stopping.cancelled_owned())
        .await
}

/// Counts and times every request, logs one access line, and runs the handler inside a span that
/// carries the request id (set by [`assign_request_id`] before this runs). Error bodies
/// that are not JSON yet are made JSON here (one layer fewer for every request to pass).
pub async fn track_request(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let request_id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let method = method_label(request.method());
    let path = request.uri().path().to_owned();
    let span = tracing::info_span!(
        "request",
        request_id = %request_id,
        method,
        route = tracing::field::Empty,
        trace_id = tracing::field::Empty,
    );
    let (server_trace, trace_id) = crate::telemetry::server_span(&request, method, &path).unzip();
    if let Some(trace_id) = &trace_id {
        span.record("trace_id", trace_id.as_str());
    }
    // Error bodies become JSON inside the request's scope, so they carry its id.
    let answer = async { crate::boundary::json_errors(next.run(request).await).await };
    // The log span is the current one inside (the turn records its id there); the server span is
    // attached around it, the parent of the spans made while the request is handled.
    let answer = CURRENT_REQUEST_ID.scope(request_id, answer.instrument(span.clone()));
    let response = promptgate_service::trace::in_context(
        server_trace.as_ref().map(crate::telemetry::ServerTrace::context),
        answer,
    )
    .await;
    // Unknown paths share one label, so a scan cannot blow up the number of series.
    let route = response
        .extensions()
        .get::<RouteLabel>()
        .map_or_else(|| "unmatched".to_owned(), |r| r.0.clone());
    span.record("route", route.as_str());
    let status = response.status().as_u16();
    crate::telemetry::record_response(server_trace.as_ref(), method, &route, status);
    let elapsed = start.elapsed();
    request_series(route, method, status).record(elapsed);
    span.in_scope(|| {
        tracing::info!(
            target: "promptgate::access",
            %path,
            status,
            duration_ms = millis(elapsed),
            "request"
        );
    });
    response
}

/// A request's method as a label: one of HTTP's standard methods, else `other`.
fn method_label(method: &Method) -> &'static str {
    const STANDARD: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::HEAD, "HEAD"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::CONNECT, "CONNECT"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::TRACE, "TRACE"),
        (Method::PATCH, "PATCH"),
    ];
    STANDARD
        .iter()
        .find(|(standard, _)| standard == method)
        .map_or("other", |(_, label)| label)
}

/// `http_requests_total` and `http_request_duration_seconds` of a route, method and status.
fn request_series(route: String, method: &'static str, status: u16) -> Timed {
    static SERIES: LazyLock<TimedSeries<(String, &'static str, u16)>> = LazyLock::new(TimedSeries::default);
    SERIES.get((route, method, status), |(route, method, status)| {
        let labels = [
            ("route", route.clone()),
            ("method", (*method).to_owned()),
            ("status", status.to_string()),
        ];
        Timed {
            count: metrics::counter!("promptgate_http_requests_total", &labels),
            seconds: metrics::histogram!("promptgate_http_request_duration_seconds", &labels),
        }
    })
}

/// A count of things and a histogram of how long each took.
#[derive(Clone)]
struct Timed {
    count: Counter,
    seconds: Histogram,
}

impl Timed {
    fn record(&self, took: std::time::Duration) {
        self.count.increment(1);
        self.seconds.record(took.as_secs_f64());
    }
}

/// A [`Timed`] pair for each combination of label values, registered with the recorder the first
/// time the combination is seen: finding a series by its name and labels on every request and turn
/// cost more than the rest of their bookkeeping.
struct TimedSeries<K>(Mutex<HashMap<K, Timed>>);

impl<K> Default for TimedSeries<K> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + std::hash::Hash> TimedSeries<K> {
    fn get(&self, labels: K, register: impl FnOnce(&K) -> Timed) -> Timed {
        let mut made = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        made.entry(labels).or_insert_with_key(register).clone()
    }
}

/// The matched route's template, carried out to [`track_request`] on the response.
#[derive(Clone)]
struct RouteLabel(String);

/// Runs right around every route's handler: copies the matched route's template
/// (`/v1/threads/{id}`) onto the response, and writes the log line of a failure on our side that an
/// error response carries ([`FailureLog`]), in the handler's own spans, where the error was made.
pub async fn after_route(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if let Some(failure) = response.extensions_mut().remove::<FailureLog>() {
        failure.log();
    }
    if let Some(matched) = matched {
        response
            .extensions_mut()
            .insert(RouteLabel(matched.as_str().to_owned()));
    }
    response
}

/// Watches a turn's events on their way to the client; when the stream ends (finished, failed, or
/// dropped because the client left) it records the turn's metrics and logs its summary line.
pub struct TurnWatch {
    start: Instant,
    span: tracing::Span,
    kind: &'static str,
    turn_id: String,
    model: String,
    steps: u64,
    tool_calls: u64,
    tool_errors: u64,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    outcome: &'static str,
}

impl TurnWatch {
    /// `kind` is `chat`, `completion` or `response`. Call inside the request's span so the summary
    /// carries its id.
    pub fn start(kind: &'static str, turn_id: &str, model: &str) -> Self {
        TURN_SERIES.in_flight.increment(1.0);
        Self {
            start: Instant::now(),
            span: tracing::Span::current(),
            kind,
            turn_id: turn_id.to_owned(),
            model: model.to_owned(),
            steps: 0,
            tool_calls: 0,
            tool_errors: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            // Until a finish or error arrives, the client went away first.
            outcome: "disconnected",
        }
    }

    pub fn see(&mut self, event: &TurnEvent) {
        let TurnEvent::Chunk(chunk) = event else {
            return;
        };
        match chunk {
            UiChunk::FinishStep => self.steps += 1,
            UiChunk::ToolInputAvailable { .. } => self.tool_calls += 1,
            UiChunk::ToolOutputError { .. } => self.tool_errors += 1,
            UiChunk::MessageMetadata { message_metadata } => self.usage(message_metadata),
            UiChunk::Finish { message_metadata, .. } => {
                if let Some(meta) = message_metadata {
                    self.usage(meta);
                }
                if self.outcome == "disconnected" {
                    self.outcome = "completed";
                }
            }
            UiChunk::Abort { .. } => self.outcome = "stopped",
            UiChunk::Error { .. } => self.outcome = "error",
            _ => {}
        }
    }

    /// Usage snapshots are the turn's running totals, so the last one wins.
    fn usage(&mut self, meta: &Value) {
        let Some(usage) = meta.get("usage") else {
            return;
        };
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = count("inputTokens") {
            self.input_tokens = n;
        }
        if let Some(n) = count("outputTokens") {
            self.output_tokens = n;
        }
        if let Some(n) = count("cachedInputTokens") {
            self.cached_tokens = n;
        }
    }
}

/// The turn metrics' series, each looked up in the recorder once (see [`TimedSeries`]). Made on
/// the first turn, after [`prometheus`] installed the recorder.
struct TurnSeries {
    in_flight: Gauge,
    tool_calls_ok: Counter,
    tool_calls_error: Counter,
    prompt_tokens: Counter,
    prompt_cached_tokens: Counter,
    completion_tokens: Counter,
    /// `turns_total` and `turn_duration_seconds` for each kind and outcome seen so far.
    ended: TimedSeries<(&'static str, &'static str)>,
}

static TURN_SERIES: LazyLock<TurnSeries> = LazyLock::new(|| TurnSeries {
    in_flight: metrics::gauge!("promptgate_turns_in_flight"),
    tool_calls_ok: metrics::counter!("promptgate_turn_tool_calls_total", "outcome" => "ok"),
    tool_calls_error: metrics::counter!("promptgate_turn_tool_calls_total", "outcome" => "error"),
    prompt_tokens: metrics::counter!("promptgate_prompt_tokens_total"),
    prompt_cached_tokens: metrics::counter!("promptgate_prompt_cached_tokens_total"),
    completion_tokens: metrics::counter!("promptgate_completion_tokens_total"),
    ended: TimedSeries::default(),
});

impl TurnSeries {
    fn ended(&self, kind: &'static str, outcome: &'static str) -> Timed {
        self.ended.get((kind, outcome), |&(kind, outcome)| {
            let labels = [("kind", kind), ("outcome", outcome)];
            Timed {
                count: metrics::counter!("promptgate_turns_total", &labels),
                seconds: metrics::histogram!("promptgate_turn_duration_seconds", &labels),
            }
        })
    }
}

impl Drop for TurnWatch {
    fn drop(&mut self) {
        let elapsed = self.start.elapsed();
        let series = &*TURN_SERIES;
        series.in_flight.decrement(1.0);
        series.ended(self.kind, self.outcome).record(elapsed);
        let ok = self.tool_calls.saturating_sub(self.tool_errors);
        series.tool_calls_ok.increment(ok);
        series.tool_calls_error.increment(self.tool_errors);
        series.prompt_tokens.increment(self.input_tokens);
        series.prompt_cached_tokens.increment(self.cached_tokens);
        series.completion_tokens.increment(self.output_tokens);
        self.span.in_scope(|| {
            tracing::info!(
                target: "promptgate::turn",
                kind = self.kind,
                turn_id = %self.turn_id,
                model = %self.model,
                steps = self.steps,
                tool_calls = self.tool_calls,
                tool_errors = self.tool_errors,
                input_tokens = self.input_tokens,
                output_tokens = self.output_tokens,
                cached_tokens = self.cached_tokens,
                status = self.outcome,
                duration_ms = millis(elapsed),
                "turn finished"
            );
        });
    }
}

/// Wraps a turn's event stream so a [`TurnWatch`] sees every event and is dropped with the stream.
pub fn watch_turn<S>(mut watch: TurnWatch, events: S) -> impl futures::Stream<Item = TurnEvent> + Send
where
    S: futures::Stream<Item = TurnEvent> + Send,
{
    use futures::StreamExt;
    events.map(move |event| {
        watch.see(&event);
        event
    })
}

/// Milliseconds with microsecond precision, so log lines stay short.
fn millis(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use axum::body::Body;
    use axum::routing::get;
    use promptgate_service::{ServiceError, StoreError};
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;
    use crate::error::ApiError;

    /// Log output kept in memory.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_failure_on_our_side_is_logged_once_with_its_detail() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(move || writer.clone())
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        let app = axum::Router::new()
            .route(
                "/threads",
                get(|| async {
                    let outage = StoreError::Unavailable("pool timed out".to_owned());
                    Err::<(), ApiError>(ServiceError::Store(outage).into())
                }),
            )
            .route_layer(axum::middleware::from_fn(after_route));
        let request = Request::get("/threads").body(Body::empty()).unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            response.extensions().get::<FailureLog>().is_none(),
            "the note stays on the server"
        );
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(lines[0]["target"], "promptgate_server::error");
        assert_eq!(lines[0]["fields"]["message"], "store unavailable");
        assert_eq!(lines[0]["fields"]["error"], "pool timed out");
    }
}
