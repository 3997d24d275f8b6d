//! The open-loop driver: requests start on a fixed schedule, whatever the server's answers do, so a
//! slow server shows up as latency instead of quietly lowering the offered rate.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::Client;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::LoadError;
use crate::stats::Percentiles;
use crate::wire::WireClient;

/// No single run sends more than this, whatever the flags say.
pub const MAX_REQUESTS_PER_RUN: u64 = 200_000;
/// A request that takes longer than this counts as an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The end-of-stream marker both the upstream and the gateway's completion streams send.
const DONE_MARKER: &[u8] = b"data: [DONE]";

/// Makes the body of the `n`th request of a run (so each send can name a new thread).
pub type BodyFn = Arc<dyn Fn(u64) -> Bytes + Send + Sync>;

/// Where requests go and what a complete answer looks like.
#[derive(Clone)]
pub struct Target {
    client: Arc<WireClient>,
    /// More servers answering the same path (instances behind a load balancer): request `n` goes
    /// to `[client, others...][n % count]`, as a round-robin balancer would send it.
    others: Vec<Arc<WireClient>>,
    path: String,
    pub body: BodyFn,
    /// The answer is an SSE stream that must end with [`Target::end_marker`].
    pub streamed: bool,
    /// What a streamed answer carries at its end: `data: [DONE]` unless said otherwise.
    pub end_marker: &'static [u8],
}

impl Target {
    /// `url` is a plain `http://IP:PORT/path` on loopback; its connections are kept per target.
    pub fn new(url: &str, body: BodyFn, streamed: bool) -> Result<Self, LoadError> {
        let (addr, path) = loopback(url)?;
        Ok(Self {
            client: Arc::new(WireClient::new(addr)),
            others: Vec::new(),
            path,
            body,
            streamed,
            end_marker: DONE_MARKER,
        })
    }

    /// A streamed answer ends with `marker` instead of `data: [DONE]` (the Responses API's streams
    /// end with their terminal event).
    pub fn ending_with(mut self, marker: &'static [u8]) -> Self {
        self.end_marker = marker;
        self
    }

    /// Also sends to `url` (the same path on another server), in turn with the servers before it.
    pub fn and(mut self, url: &str) -> Result<Self, LoadError> {
        let (addr, path) = loopback(url)?;
        if path != self.path {
            return Err(LoadError::BadUrl(url.to_owned()));
        }
        self.others.push(Arc::new(WireClient::new(addr)));
        Ok(self)
    }

    /// The server request `n` goes to.
    fn client_for(&self, n: u64) -> &Arc<WireClient> {
        let count = 1 + self.others.len() as u64;
        match (n % count) as usize {
            0 => &self.client,
            i => &self.others[i - 1],
        }
    }
}

/// The address and path of a plain `http://IP:PORT/path` URL.
fn loopback(url: &str) -> Result<(SocketAddr, String), LoadError> {
    let bad = || LoadError::BadUrl(url.to_owned());
    let parsed = reqwest::Url::parse(url).map_err(|_| bad())?;
    if parsed.scheme() != "http" {
        return Err(bad());
    }
    let host = parsed.host_str().ok_or_else(bad)?;
    let port = parsed.port_or_known_default().ok_or_else(bad)?;
    let addr: SocketAddr = format!("{host}:{port}").parse().map_err(|_| bad())?;
    Ok((addr, parsed.path().to_owned()))
}

impl Target {
    pub fn addr(&self) -> SocketAddr {
        self.client.addr()
    }

    /// The whole request bytes of the `n`th request.
    pub fn request(&self, n: u64) -> Vec<u8> {
        self.client.post_json(&self.path, &(self.body)(n))
    }
}

/// One request's outcome. Times run from the moment the request was handed to the client.
#[derive(Debug, Clone)]
pub struct Sample {
    pub first_byte: Duration,
    pub total: Duration,
    /// `total` up to the answer's arrival in the kernel (`Answer::wire_total`).
    pub wire_total: Option<Duration>,
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
    /// Requests refused with 503 (the gateway's answer when it is over its limit), and how long
    /// those refusals took.
    pub refused: u64,
    pub refusal: Percentiles,
    /// `total` and `refusal` as the kernel's receive stamps have them: without the driver's own
    /// wait to read an answer that has arrived (over the samples that got a stamp).
    pub total_wire: Percentiles,
    pub refusal_wire: Percentiles,
}

/// The start of a sample's error when the server refused it as overloaded.
const REFUSED: &str = "HTTP 503";

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

/// The client that waits for the gateway to come up: loopback only, no proxy.
pub fn client() -> Result<Client, LoadError> {
    Client::builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .tcp_nodelay(true)
        .build()
        .map_err(LoadError::Client)
}

/// Sends `rate` requests per second to `target` for `duration`, on a fixed schedule.
pub async fn drive(target: &Target, rate: f64, duration: Duration) -> Result<RunResult, LoadError> {
    Ok(pooled(rate, vec![drive_stretch(target, rate, duration).await?]))
}

/// The samples of one stretch of load, kept apart so stretches of the same target can be pooled.
#[derive(Debug, Default)]
pub struct Stretch {
    samples: Vec<Sample>,
    elapsed: Duration,
    max_lag: Duration,
}

impl Stretch {
    /// Wall time from the first request's start to the last answer.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// Like [`drive`], leaving the summary to [`pooled`].
pub async fn drive_stretch(target: &Target, rate: f64, duration: Duration) -> Result<Stretch, LoadError> {
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
        let client = target.client_for(n);
        let request = client.post_json(&target.path, &(target.body)(n));
        let end = target.streamed.then_some(target.end_marker);
        tasks.spawn(measure(Arc::clone(client), request, end));
        // Reap what has finished so a long run holds only its in-flight tasks.
        while let Some(done) = tasks.try_join_next() {
            samples.push(done?);
        }
    }
    while let Some(done) = tasks.join_next().await {
        samples.push(done?);
    }
    Ok(Stretch {
        samples,
        elapsed: start.elapsed(),
        max_lag,
    })
}

/// One result from stretches at the same rate: their samples together, their times added.
pub fn pooled(rate: f64, stretches: Vec<Stretch>) -> RunResult {
    let elapsed: Duration = stretches.iter().map(|s| s.elapsed).sum();
    let max_lag = stretches.iter().map(|s| s.max_lag).max().unwrap_or_default();
    let samples: Vec<Sample> = stretches.into_iter().flat_map(|s| s.samples).collect();
    let sent = samples.len() as u64;
    let first_error = samples.iter().find_map(|s| s.error.clone());
    let good: Vec<&Sample> = samples.iter().filter(|s| s.error.is_none()).collect();
    let ok = good.len() as u64;
    let refusals: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.error.as_deref().is_some_and(|e| e.starts_with(REFUSED)))
        .collect();
    RunResult {
        refused: refusals.len() as u64,
        refusal: Percentiles::of(refusals.iter().map(|s| s.total).collect()),
        refusal_wire: Percentiles::of(refusals.iter().filter_map(|s| s.wire_total).collect()),
        total_wire: Percentiles::of(good.iter().filter_map(|s| s.wire_total).collect()),
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

/// Sends one request; a streamed answer must carry `end` in its tail.
async fn measure(client: Arc<WireClient>, request: Vec<u8>, end: Option<&'static [u8]>) -> Sample {
    let begun = Instant::now();
    let answer = tokio::time::timeout(REQUEST_TIMEOUT, client.send(&request, begun)).await;
    let failed = |error: String| Sample {
        first_byte: begun.elapsed(),
        total: begun.elapsed(),
        wire_total: None,
        error: Some(error),
    };
    let answer = match answer {
        Err(_) => return failed(format!("timed out after {REQUEST_TIMEOUT:?}")),
        Ok(Err(error)) => return failed(error),
        Ok(Ok(answer)) => answer,
    };
    let error = if !(200..300).contains(&answer.status) {
        Some(format!(
            "HTTP {}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.tail)
        ))
    } else if let Some(end) = end
        && !answer.tail.windows(end.len()).any(|w| w == end)
    {
        Some(format!(
            "the stream ended without {}",
            String::from_utf8_lossy(end)
        ))
    } else {
        None
    };
    Sample {
        first_byte: answer.first_byte,
        total: answer.total,
        wire_total: answer.wire_total,
        error,
    }
}
