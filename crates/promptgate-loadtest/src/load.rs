//! The open-loop driver: requests start on a fixed schedule, whatever the server's answers do, so a
//! slow server shows up as latency instead of quietly lowering the offered rate.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::Client;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::LoadError;
use crate::stats::Percentiles;

/// No single run sends more than this, whatever the flags say.
pub const MAX_REQUESTS_PER_RUN: u64 = 200_000;
/// A request that takes longer than this counts as an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The end-of-stream marker both the upstream and the gateway send.
const DONE_MARKER: &[u8] = b"data: [DONE]";

/// Makes the body of the `n`th request of a run (so each send can name a new thread).
pub type BodyFn = Arc<dyn Fn(u64) -> Bytes + Send + Sync>;

/// Where requests go and what a complete answer looks like.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub body: BodyFn,
    /// The answer is an SSE stream that must end with `data: [DONE]`.
    pub streamed: bool,
}

/// One request's outcome. Times run from the moment the request was handed to the client.
#[derive(Debug, Clone)]
pub struct Sample {
    pub first_byte: Duration,
    pub total: Duration,
    pub error: Option<String>,
}

/// What one run at one rate measured.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub offered_rate: f64,
    pub sent: u64,
    pub ok: u64,
    pub errors: u64,
    /// The first error seen, to tell a refusal from a timeout in the report.
    pub first_error: Option<String>,
    /// Successful answers per second over the whole run (first start to last answer).
    pub achieved_rate: f64,
    /// How far behind schedule the driver itself fell at worst; large values mean the client, not
    /// the server, limited the run.
    pub max_schedule_lag: Duration,
    pub first_byte: Percentiles,
    pub total: Percentiles,
}

/// The number of requests `rate` for `duration` means, checked against the per-run bound.
pub fn planned_requests(rate: f64, duration: Duration) -> Result<u64, LoadError> {
    if !rate.is_finite() || rate <= 0.0 {
        return Err(LoadError::BadRate(rate));
    }
    let count = (rate * duration.as_secs_f64()).round().max(1.0) as u64;
    if count > MAX_REQUESTS_PER_RUN {
        return Err(LoadError::TooManyRequests {
            rate,
            duration,
            count,
            max: MAX_REQUESTS_PER_RUN,
        });
    }
    Ok(count)
}

/// A client for load runs: loopback only, no proxy, connections kept and reused.
pub fn client() -> Result<Client, LoadError> {
    Client::builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .pool_idle_timeout(Duration::from_secs(30))
        .tcp_nodelay(true)
        .build()
        .map_err(LoadError::Client)
}

/// Sends `rate` requests per second to `target` for `duration`, on a fixed schedule.
pub async fn drive(
    client: &Client,
    target: &Target,
    rate: f64,
    duration: Duration,
) -> Result<RunResult, LoadError> {
    let count = planned_requests(rate, duration)?;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    let mut samples = Vec::with_capacity(count as usize);
    let mut max_lag = Duration::ZERO;
    for n in 0..count {
        let due = start + interval.mul_f64(n as f64);
        tokio::time::sleep_until(due).await;
        max_lag = max_lag.max(Instant::now().saturating_duration_since(due));
        let request = client
            .post(&target.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body((target.body)(n));
        tasks.spawn(measure(request, target.streamed));
        // Reap what has finished so a long run holds only its in-flight tasks.
        while let Some(done) = tasks.try_join_next() {
            samples.push(done?);
        }
    }
    while let Some(done) = tasks.join_next().await {
        samples.push(done?);
    }
    let elapsed = start.elapsed();
    Ok(summarize(rate, samples, elapsed, max_lag))
}

fn summarize(rate: f64, samples: Vec<Sample>, elapsed: Duration, max_lag: Duration) -> RunResult {
    let sent = samples.len() as u64;
    let first_error = samples.iter().find_map(|s| s.error.clone());
    let good: Vec<&Sample> = samples.iter().filter(|s| s.error.is_none()).collect();
    let ok = good.len() as u64;
    RunResult {
        offered_rate: rate,
        sent,
        ok,
        errors: sent - ok,
        first_error,
        achieved_rate: if elapsed.is_zero() {
            0.0
        } else {
            ok as f64 / elapsed.as_secs_f64()
        },
        max_schedule_lag: max_lag,
        first_byte: Percentiles::of(good.iter().map(|s| s.first_byte).collect()),
        total: Percentiles::of(good.iter().map(|s| s.total).collect()),
    }
}

async fn measure(request: reqwest::RequestBuilder, streamed: bool) -> Sample {
    let begun = Instant::now();
    let mut first_byte = None;
    let outcome = read_answer(request, streamed, begun, &mut first_byte).await;
    let total = begun.elapsed();
    Sample {
        first_byte: first_byte.unwrap_or(total),
        total,
        error: outcome.err(),
    }
}

async fn read_answer(
    request: reqwest::RequestBuilder,
    streamed: bool,
    begun: Instant,
    first_byte: &mut Option<Duration>,
) -> Result<(), String> {
    let mut response = request.send().await.map_err(|e| describe(&e))?;
    let status = response.status();
    // Only the last few bytes matter for the end marker; a long answer must not be buffered whole.
    let mut tail: Vec<u8> = Vec::with_capacity(64);
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if first_byte.is_none() {
            *first_byte = Some(begun.elapsed());
        }
        tail.extend_from_slice(&chunk);
        if tail.len() > 64 {
            tail.drain(..tail.len() - 64);
        }
    }
    if !status.is_success() {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&tail)));
    }
    if streamed && !tail.windows(DONE_MARKER.len()).any(|w| w == DONE_MARKER) {
        return Err("the stream ended without data: [DONE]".to_owned());
    }
    Ok(())
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        format!("timed out after {REQUEST_TIMEOUT:?}")
    } else if error.is_connect() {
        format!("cannot connect: {error}")
    } else {
        error.to_string()
    }
}
