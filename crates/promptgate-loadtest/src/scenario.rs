//! The scenarios: what is sent direct to the upstream and what through the gateway, back to back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use promptgate_llm::scripted::{rendered, text};
use serde_json::json;

use crate::error::LoadError;
use crate::gateway::{BENCH_MODEL, GatewayProcess, Memory, Placement, UPSTREAM_MODEL};
use crate::load::{RunResult, Target, client, drive, drive_stretch, pooled};
use crate::steal::CpuTicks;
use crate::wire::{BenchUpstream, Pacing, hold_open};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// `POST /v1/chat/completions`, JSON answer.
    FacadeJson,
    /// `POST /v1/chat/completions` with `stream: true`.
    FacadeStream,
    /// `POST /v1/responses` (not kept), JSON answer.
    ResponsesJson,
    /// `POST /v1/responses` (not kept) with `stream: true`.
    ResponsesStream,
    /// `POST /v1/messages` (the Anthropic Messages API), JSON answer.
    MessagesJson,
    /// `POST /v1/messages` with `stream: true`.
    MessagesStream,
    /// `POST /v1/chat` (useChat body) over SQLite.
    SendSqlite,
    /// `POST /v1/chat` (useChat body) over Postgres.
    SendPostgres,
    /// `POST /v1/chat` over Postgres to two gateway instances on the same database, sends
    /// alternating between them as a round-robin load balancer would.
    SendPostgresTwo,
    /// The highest facade rate (JSON, then streamed) with p99 under the bound and no errors.
    Capacity,
    /// Memory per turn in flight: many sends held open by an upstream that never finishes.
    HeldTurns,
    /// Memory after a burst of sends (SQLite): idle before, right after, and after a quiet spell
    /// (`--burst-idle`, a minute by default; not in the default set).
    Burst,
    /// A send's first token for users with 0 to 50 MCP servers and projects of 100 to 100,000
    /// chats, SQLite and (with a URL) Postgres; not in the default set. See `scale::mcp`.
    ScaleMcp,
    /// A send's first byte and peak memory against its thread's length (10 to 20,000 messages),
    /// on SQLite and, with a URL, Postgres (not in the default set).
    ScaleThreads,
    /// The step test past saturation for `POST /v1/chat/completions`, JSON answer: the offered
    /// rate from below what the gateway carries to several times it (not in the default set).
    OverloadJson,
    /// The step test for `POST /v1/chat/completions` with `stream: true`.
    OverloadStream,
    /// The step test for sends (`POST /v1/chat`, SQLite).
    OverloadSend,
}

impl Scenario {
    /// The scenarios compared with the direct upstream on one SQLite gateway (which the capacity
    /// probe reuses).
    pub const COMPARED_ON_SQLITE: [Scenario; 7] = [
        Scenario::FacadeJson,
        Scenario::FacadeStream,
        Scenario::ResponsesJson,
        Scenario::ResponsesStream,
        Scenario::MessagesJson,
        Scenario::MessagesStream,
        Scenario::SendSqlite,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Scenario::FacadeJson => "facade JSON",
            Scenario::FacadeStream => "facade stream",
            Scenario::ResponsesJson => "responses JSON",
            Scenario::ResponsesStream => "responses stream",
            Scenario::MessagesJson => "messages JSON",
            Scenario::MessagesStream => "messages stream",
            Scenario::SendSqlite => "send, SQLite",
            Scenario::SendPostgres => "send, Postgres",
            Scenario::SendPostgresTwo => "send, Postgres, 2 instances",
            Scenario::Capacity => "capacity",
            Scenario::HeldTurns => "held turns",
            Scenario::Burst => "burst",
            Scenario::ScaleMcp => "scale: MCP servers and projects",
            Scenario::ScaleThreads => "long threads",
            Scenario::OverloadJson => "chat completions, JSON",
            Scenario::OverloadStream => "chat completions, streamed",
            Scenario::OverloadSend => "sends, SQLite",
        }
    }

    fn default_rate(self) -> f64 {
        match self {
            Scenario::SendSqlite | Scenario::SendPostgres | Scenario::SendPostgresTwo => 200.0,
            _ => 1000.0,
        }
    }
}

/// How a whole run is shaped.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenarios: Vec<Scenario>,
    /// Overrides each scenario's own rate (1,000/s for the facade, 200/s for sends).
    pub rate: Option<f64>,
    pub duration: Duration,
    /// The measured time is split into this many rounds of direct-then-gateway, whose samples are
    /// pooled per path, so a burst of noise from the machine lands on both paths alike.
    pub rounds: u32,
    /// Requests at the measured rate before measuring, so connections exist and caches are warm.
    pub warmup: Duration,
    pub postgres_url: Option<String>,
    pub capacity_rates: Vec<f64>,
    pub capacity_step: Duration,
    pub p99_bound: Duration,
    /// Where the gateway process runs.
    pub gateway: Placement,
    /// How many sends the held-turns scenario keeps in flight at once.
    pub held_turns: usize,
    /// The burst scenario's sends, and how long it then leaves the gateway idle.
    pub burst: BurstShape,
    /// Worker threads of the driver's runtime, for the report.
    pub driver_workers: u16,
    /// One continuous window of `duration` per path (direct, then gateway) instead of rounds of
    /// slices: what a busy server lives through, tails and all.
    pub sustained: bool,
    /// What the upstream's streams look like.
    pub stream: StreamShape,
    /// How the scale scenarios measure each point.
    pub scale: crate::scale::ScaleShape,
    /// The bench model's context window in the long-threads scenario, in tokens.
    pub context_window: u64,
    /// Thread lengths of the long-threads scenario; empty: [`crate::scale::threads::SIZES`].
    pub thread_sizes: Vec<usize>,
    /// The steps of the overload scenarios.
    pub overload: crate::overload::StepShape,
}

/// The burst scenario: `turns` sends within [`BURST_WINDOW`], then `idle` without traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurstShape {
    pub turns: usize,
    pub idle: Duration,
}

impl Default for BurstShape {
    fn default() -> Self {
        Self {
            turns: 500,
            idle: Duration::from_secs(60),
        }
    }
}

/// The upstream's streamed answer: how many content chunks, and how they are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamShape {
    pub chunks: usize,
    /// One chunked frame and one write per SSE event, on `pacing`'s schedule; otherwise the whole
    /// stream goes out in one frame (the quick checks' upstream).
    pub framed: bool,
    pub pacing: Pacing,
}

impl Default for StreamShape {
    fn default() -> Self {
        Self {
            chunks: 5,
            framed: false,
            pacing: Pacing::default(),
        }
    }
}

/// One scenario's pair of runs.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub scenario: Scenario,
    pub direct: RunResult,
    pub gateway: RunResult,
    /// Share of the machine's CPU time the host took while the comparison ran, when known.
    pub steal_percent: Option<f64>,
    /// CPU time the gateway process(es) used while the gateway path was measured, when known.
    pub gateway_cpu: Option<Duration>,
    /// Wall time of the measured gateway path (its slices added up).
    pub gateway_wall: Duration,
    /// Content chunks per streamed answer; `None` for JSON answers.
    pub chunks: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct CapacityStep {
    pub streamed: bool,
    pub result: RunResult,
    pub passed: bool,
}

/// The gateway process's memory at three moments.
#[derive(Debug, Clone)]
pub struct MemoryReport {
    pub backend: &'static str,
    pub idle_at_start: Memory,
    pub after_load: Memory,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub comparisons: Vec<Comparison>,
    pub capacity: Vec<CapacityStep>,
    pub memory: Vec<MemoryReport>,
    pub p99_bound: Duration,
    /// Where the gateway ran, printed with the numbers it explains.
    pub gateway: Placement,
    pub rounds: u32,
    pub driver_workers: u16,
    pub held: Option<HeldReport>,
    pub burst: Option<BurstReport>,
    pub sustained: Option<Duration>,
    pub stream: StreamShape,
    pub scale_mcp: Option<crate::scale::mcp::McpScaleReport>,
    /// Markdown sections of the scale scenarios, printed after the rest.
    pub sections: Vec<String>,
}

/// The gateway's memory with many turns in flight.
#[derive(Debug, Clone)]
pub struct HeldReport {
    pub turns: usize,
    /// After start-up and a first, smaller batch of held turns (so one-time growth is not counted).
    pub before: Memory,
    pub holding: Memory,
    /// Once every held turn has ended.
    pub after: Memory,
}

impl HeldReport {
    /// Resident memory added per turn in flight, in KiB.
    pub fn per_turn_kib(&self) -> f64 {
        self.holding.rss_kib.saturating_sub(self.before.rss_kib) as f64 / self.turns.max(1) as f64
    }
}

/// The gateway's memory around a burst of sends. A server lives through bursts; what it keeps
/// resident afterwards is what it costs between them.
#[derive(Debug, Clone)]
pub struct BurstReport {
    pub turns: usize,
    pub answered: u64,
    pub errors: u64,
    /// Right after start-up, before any send.
    pub at_start: Memory,
    /// After a few warm-up sends and a pause (one-time growth: connections, caches, code pages).
    pub before: Memory,
    /// Once every send of the burst was answered.
    pub right_after: Memory,
    /// After `idle` without traffic, the driver's connections still open.
    pub after_idle: Memory,
    /// Once the driver closed its connections, [`HANG_UP_SETTLE`] later.
    pub after_hang_up: Memory,
    pub idle: Duration,
}

impl BurstReport {
    /// Resident memory above the warmed-up idle at `then`, in KiB.
    pub fn kept_kib(&self, then: Memory) -> i64 {
        then.rss_kib as i64 - self.before.rss_kib as i64
    }
}

const QUESTION: &str = "Say hello.";
/// Unmeasured load before each measured slice of a round.
const ROUND_LEAD_IN: Duration = Duration::from_millis(300);

pub(crate) fn completion_target(
    url: String,
    model: &'static str,
    streamed: bool,
) -> Result<Target, LoadError> {
    let body = Bytes::from(
        json!({
            "model": model,
            "messages": [{"role": "user", "content": QUESTION}],
            "stream": streamed,
        })
        .to_string(),
    );
    Target::new(&url, Arc::new(move |_| body.clone()), streamed)
}

/// How a Responses stream ends: its terminal event's data carries the type after the whole response
/// object, so the tail the driver keeps of an answer holds it.
const RESPONSE_COMPLETED: &[u8] = b"\"type\":\"response.completed\"";

/// A Responses API request not kept (`store: false`), as a chat completion keeps nothing either:
/// the comparison is of the facade's work alone.
fn responses_target(url: String, streamed: bool) -> Result<Target, LoadError> {
    let body = Bytes::from(
        json!({"model": BENCH_MODEL, "input": QUESTION, "stream": streamed, "store": false}).to_string(),
    );
    Ok(Target::new(&url, Arc::new(move |_| body.clone()), streamed)?.ending_with(RESPONSE_COMPLETED))
}

/// How a Messages stream ends: Anthropic's last event, `message_stop`, whose data is only its type.
const MESSAGE_STOP: &[u8] = b"{\"type\":\"message_stop\"}";

/// An Anthropic Messages API request as its SDKs send one (`max_tokens` is required there; the
/// gateway leaves it to the model's configuration). Nothing of it is stored, as for a completion.
fn messages_target(url: String, streamed: bool) -> Result<Target, LoadError> {
    let body = Bytes::from(
        json!({
            "model": BENCH_MODEL,
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": QUESTION}],
            "stream": streamed,
        })
        .to_string(),
    );
    Ok(Target::new(&url, Arc::new(move |_| body.clone()), streamed)?.ending_with(MESSAGE_STOP))
}

/// Every send opens a new thread, so each one pays for creating it and storing both messages, and no
/// send waits on another's turn (a second send to a busy thread is refused).
pub(crate) fn send_target(url: String) -> Result<Target, LoadError> {
    let run = uuid::Uuid::new_v4().simple().to_string();
    // Counted across every run of this target, so the warm-up's threads are never reused.
    let sends = AtomicU64::new(0);
    Target::new(
        &url,
        Arc::new(move |_| {
            let n = sends.fetch_add(1, Ordering::Relaxed);
            Bytes::from(
                json!({
                    "id": format!("bench-{run}-{n}"),
                    "messages": [{"id": format!("u-{n}"), "role": "user",
                                  "parts": [{"type": "text", "text": QUESTION}]}],
                    "trigger": "submit-message",
                    "model": BENCH_MODEL,
                })
                .to_string(),
            )
        }),
        true,
    )
}

/// Runs the chosen scenarios and gathers their numbers.
pub async fn run(options: &Options) -> Result<Report, LoadError> {
    let wants = |s: Scenario| options.scenarios.contains(&s);
    let postgres_url = if wants(Scenario::SendPostgres) || wants(Scenario::SendPostgresTwo) {
        Some(options.postgres_url.clone().ok_or(LoadError::NoPostgresUrl)?)
    } else {
        None
    };

    let words: Vec<String> = if options.stream.chunks == 5 {
        ["Hello", " from", " the", " scripted", " upstream."]
            .map(str::to_owned)
            .to_vec()
    } else {
        (0..options.stream.chunks.max(1))
            .map(|n| format!("w{n} "))
            .collect()
    };
    let (sse, completion) = rendered(&text(words)).ok_or(LoadError::UnplayableScript)?;
    let upstream = if options.stream.framed {
        BenchUpstream::start_paced(&sse, &completion, options.stream.pacing).await
    } else {
        BenchUpstream::start(&sse, &completion).await
    }
    .map_err(LoadError::Upstream)?;
    let http = client()?;
    let direct_url = format!("{}/chat/completions", upstream.base_url());
    let mut report = Report {
        p99_bound: options.p99_bound,
        gateway: options.gateway.clone(),
        rounds: options.rounds.max(1),
        driver_workers: options.driver_workers,
        sustained: options.sustained.then_some(options.duration),
        stream: options.stream,
        ..Report::default()
    };

    if Scenario::COMPARED_ON_SQLITE.iter().any(|s| wants(*s)) || wants(Scenario::Capacity) {
        let gateway = GatewayProcess::start(&http, &upstream.base_url(), None, &options.gateway).await?;
        let idle_at_start = gateway.memory();
        tracing::info!(pid = gateway.pid(), "gateway on SQLite is ready");
        for scenario in Scenario::COMPARED_ON_SQLITE {
            if wants(scenario) {
                let (direct, through) = targets(scenario, &direct_url, &gateway)?;
                report
                    .comparisons
                    .push(compare(scenario, &direct, &through, &[&gateway], options).await?);
            }
        }
        if wants(Scenario::Capacity) {
            for streamed in [false, true] {
                let through = completion_target(gateway.url("/v1/chat/completions"), BENCH_MODEL, streamed)?;
                report
                    .capacity
                    .extend(probe_capacity(&through, streamed, options).await?);
            }
        }
        report.memory.push(MemoryReport {
            backend: "SQLite",
            idle_at_start,
            after_load: gateway.memory(),
        });
    }

    if let Some(url) = postgres_url.as_deref()
        && wants(Scenario::SendPostgres)
    {
        let gateway = GatewayProcess::start(&http, &upstream.base_url(), Some(url), &options.gateway).await?;
        let idle_at_start = gateway.memory();
        let (direct, through) = targets(Scenario::SendPostgres, &direct_url, &gateway)?;
        report
            .comparisons
            .push(compare(Scenario::SendPostgres, &direct, &through, &[&gateway], options).await?);
        report.memory.push(MemoryReport {
            backend: "Postgres",
            idle_at_start,
            after_load: gateway.memory(),
        });
    }
    if let Some(url) = postgres_url.as_deref()
        && wants(Scenario::SendPostgresTwo)
    {
        // Each instance claims its turns in the database, so the pair pays for the shared state.
        let first = GatewayProcess::start(&http, &upstream.base_url(), Some(url), &options.gateway).await?;
        let second = GatewayProcess::start(&http, &upstream.base_url(), Some(url), &options.gateway).await?;
        let (direct, through) = targets(Scenario::SendPostgresTwo, &direct_url, &first)?;
        let through = through.and(&second.url("/v1/chat"))?;
        report.comparisons.push(
            compare(
                Scenario::SendPostgresTwo,
                &direct,
                &through,
                &[&first, &second],
                options,
            )
            .await?,
        );
    }
    for scenario in [
        Scenario::OverloadJson,
        Scenario::OverloadStream,
        Scenario::OverloadSend,
    ] {
        if wants(scenario) {
            report
                .sections
                .push(overload(&http, &upstream.base_url(), scenario, options).await?);
        }
    }
    if wants(Scenario::HeldTurns) {
        report.held = Some(held_turns(&http, options).await?);
    }
    if wants(Scenario::Burst) {
        report.burst = Some(burst(&http, &upstream.base_url(), options).await?);
    }
    if wants(Scenario::ScaleMcp) {
        let postgres = options.postgres_url.as_deref();
        let scale = crate::scale::mcp::run(&http, postgres, &options.gateway, options.scale).await?;
        report.scale_mcp = Some(scale);
    }
    if wants(Scenario::ScaleThreads) {
        let sizes = if options.thread_sizes.is_empty() {
            crate::scale::threads::SIZES.to_vec()
        } else {
            options.thread_sizes.clone()
        };
        let threads = crate::scale::threads::ThreadsOptions {
            sizes,
            rounds: options.rounds.max(1),
            context_window: options.context_window,
            placement: options.gateway.clone(),
            postgres_url: options.postgres_url.clone(),
        };
        report
            .sections
            .push(crate::scale::threads::run(&http, &upstream.base_url(), &threads).await?);
    }
    Ok(report)
}

/// The held-turns and burst scenarios measure the memory of a given number of turns at once, more
/// than the adaptive admission limit lets in before it has grown; only `turn.max_in_flight` bounds
/// them.
const MEMORY_ONLY: &str = "[admission]\nadaptive = false\n";

/// Runs the overload step test of `scenario` on a fresh gateway (SQLite) and returns its table.
async fn overload(
    http: &reqwest::Client,
    upstream_url: &str,
    scenario: Scenario,
    options: &Options,
) -> Result<String, LoadError> {
    let shape = &options.overload;
    let extra = crate::overload::extra_toml(scenario, shape);
    let gateway = GatewayProcess::start_with(http, upstream_url, None, &options.gateway, &extra).await?;
    let target = crate::overload::target(scenario, &gateway)?;
    let rate = options
        .rate
        .unwrap_or_else(|| crate::overload::base_rate(scenario));
    let results = crate::overload::steps(&target, &gateway, rate, options).await?;
    Ok(crate::overload::markdown(scenario, rate, shape, &results))
}

/// Holds `options.held_turns` sends open (each on a new thread) against an upstream that never
/// finishes, and reads the gateway's memory before, during and after.
async fn held_turns(http: &reqwest::Client, options: &Options) -> Result<HeldReport, LoadError> {
    const WARM_UP_TURNS: usize = 50;
    let role = b"data: {\"id\":\"held\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n";
    let upstream = BenchUpstream::start_holding(role)
        .await
        .map_err(LoadError::Upstream)?;
    let gateway =
        GatewayProcess::start_with(http, &upstream.base_url(), None, &options.gateway, MEMORY_ONLY).await?;
    let target = send_target(gateway.url("/v1/chat"))?;
    let hold = |count: usize| {
        let target = &target;
        async move {
            let held = hold_open(target.addr(), count, |n| target.request(n as u64))
                .await
                .map_err(LoadError::Held)?;
            Ok::<_, LoadError>(held)
        }
    };
    let settle = |calls: usize| {
        let upstream = &upstream;
        async move {
            // Every turn has reached the upstream, and the gateway has had a moment to settle.
            for _ in 0..300 {
                if upstream.calls() >= calls {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let warm = hold(WARM_UP_TURNS).await?;
    settle(WARM_UP_TURNS).await;
    drop(warm);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = gateway.memory();
    let turns = options.held_turns.max(1);
    let held = hold(turns).await?;
    settle(WARM_UP_TURNS + turns).await;
    if upstream.calls() < WARM_UP_TURNS + turns {
        return Err(LoadError::Held(format!(
            "only {} of {turns} held turns reached the upstream",
            upstream.calls() - WARM_UP_TURNS
        )));
    }
    let holding = gateway.memory();
    drop(held);
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(HeldReport {
        turns,
        before,
        holding,
        after: gateway.memory(),
    })
}

/// How long the burst scenario takes to send all its sends: short enough that most of them are in
/// flight at once.
pub const BURST_WINDOW: Duration = Duration::from_millis(100);
/// How long after its clients hung up the gateway's memory is read again.
pub const HANG_UP_SETTLE: Duration = Duration::from_secs(7);

/// Sends `options.burst.turns` new-thread sends within [`BURST_WINDOW`] to a fresh gateway (SQLite),
/// then leaves it idle, reading its memory at each step.
async fn burst(
    http: &reqwest::Client,
    upstream_url: &str,
    options: &Options,
) -> Result<BurstReport, LoadError> {
    const WARM_UP_TURNS: usize = 20;
    let gateway = GatewayProcess::start_with(http, upstream_url, None, &options.gateway, MEMORY_ONLY).await?;
    let at_start = gateway.memory();
    let target = send_target(gateway.url("/v1/chat"))?;
    let warm = WARM_UP_TURNS.min(options.burst.turns.max(1));
    drive(&target, warm as f64, Duration::from_secs(1)).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = gateway.memory();
    let turns = options.burst.turns.max(1);
    tracing::info!(turns, "burst of sends");
    let result = drive(&target, turns as f64 / BURST_WINDOW.as_secs_f64(), BURST_WINDOW).await?;
    let right_after = gateway.memory();
    tracing::info!(
        idle_secs = options.burst.idle.as_secs_f64(),
        "gateway idle after the burst"
    );
    tokio::time::sleep(options.burst.idle).await;
    let after_idle = gateway.memory();
    // The driver keeps its connections open like a browser would; the gateway closes them after its
    // idle timeout. Here they close at once, and the gateway gets a moment to notice.
    drop(target);
    tokio::time::sleep(HANG_UP_SETTLE).await;
    Ok(BurstReport {
        turns,
        answered: result.ok,
        errors: result.errors,
        at_start,
        before,
        right_after,
        after_idle,
        after_hang_up: gateway.memory(),
        idle: options.burst.idle,
    })
}

/// The direct request and the gateway request a scenario compares. A send streams, so its direct
/// counterpart is the upstream's own stream.
fn targets(
    scenario: Scenario,
    direct_url: &str,
    gateway: &GatewayProcess,
) -> Result<(Target, Target), LoadError> {
    let facade = gateway.url("/v1/chat/completions");
    Ok(match scenario {
        Scenario::FacadeJson => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, false)?,
            completion_target(facade, BENCH_MODEL, false)?,
        ),
        // Capacity, held turns, bursts and scale curves compare nothing; where asked, they stand for
        // the streamed facade.
        Scenario::FacadeStream
        | Scenario::Capacity
        | Scenario::HeldTurns
        | Scenario::Burst
        | Scenario::ScaleMcp
        | Scenario::ScaleThreads
        | Scenario::OverloadJson
        | Scenario::OverloadStream
        | Scenario::OverloadSend => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, true)?,
            completion_target(facade, BENCH_MODEL, true)?,
        ),
        Scenario::ResponsesJson => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, false)?,
            responses_target(gateway.url("/v1/responses"), false)?,
        ),
        Scenario::ResponsesStream => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, true)?,
            responses_target(gateway.url("/v1/responses"), true)?,
        ),
        Scenario::MessagesJson => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, false)?,
            messages_target(gateway.url("/v1/messages"), false)?,
        ),
        Scenario::MessagesStream => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, true)?,
            messages_target(gateway.url("/v1/messages"), true)?,
        ),
        Scenario::SendSqlite | Scenario::SendPostgres | Scenario::SendPostgresTwo => (
            completion_target(direct_url.to_owned(), UPSTREAM_MODEL, true)?,
            send_target(gateway.url("/v1/chat"))?,
        ),
    })
}

async fn compare(
    scenario: Scenario,
    direct: &Target,
    through: &Target,
    gateways: &[&GatewayProcess],
    options: &Options,
) -> Result<Comparison, LoadError> {
    let rate = options.rate.unwrap_or_else(|| scenario.default_rate());
    tracing::info!(
        scenario = scenario.label(),
        rate,
        "measuring direct, then through the gateway"
    );
    if !options.sustained {
        warm_up(direct, rate, options.warmup).await?;
        warm_up(through, rate, options.warmup).await?;
    }
    let ticks_at_start = CpuTicks::now();
    // Sustained: one window per path, each right after its own warm-up, so neither starts cold.
    let rounds = if options.sustained {
        1
    } else {
        options.rounds.max(1)
    };
    let slice = options.duration / rounds;
    let (mut direct_runs, mut gateway_runs) = (Vec::new(), Vec::new());
    // A path that sat idle while the other ran starts its slice cold (parked threads, a halted
    // virtual CPU); real traffic at this rate never idles, so each slice gets a short lead-in.
    let lead_in = if options.sustained {
        options.warmup
    } else {
        options.warmup.min(ROUND_LEAD_IN)
    };
    let mut cpu = Some(Duration::ZERO);
    for _ in 0..rounds {
        warm_up(direct, rate, lead_in).await?;
        direct_runs.push(drive_stretch(direct, rate, slice).await?);
        warm_up(through, rate, lead_in).await?;
        let (run, used) =
            GatewayProcess::cpu_spent_during(gateways, drive_stretch(through, rate, slice)).await;
        gateway_runs.push(run?);
        cpu = cpu.zip(used).map(|(sum, used)| sum + used);
    }
    let gateway_wall = gateway_runs.iter().map(|r| r.elapsed()).sum();
    let direct = pooled(rate, direct_runs);
    let gateway = pooled(rate, gateway_runs);
    let steal_percent = ticks_at_start
        .zip(CpuTicks::now())
        .and_then(|(start, end)| start.steal_percent_until(&end));
    Ok(Comparison {
        scenario,
        direct,
        gateway,
        steal_percent,
        gateway_cpu: cpu,
        gateway_wall,
        chunks: through.streamed.then_some(options.stream.chunks),
    })
}

async fn warm_up(target: &Target, rate: f64, warmup: Duration) -> Result<(), LoadError> {
    if !warmup.is_zero() {
        drive(target, rate, warmup).await?;
    }
    Ok(())
}

/// Steps the rate up until a step fails: an error, p99 total time over the bound, or fewer answers
/// per second than 95% of the offered rate.
async fn probe_capacity(
    target: &Target,
    streamed: bool,
    options: &Options,
) -> Result<Vec<CapacityStep>, LoadError> {
    let mut steps = Vec::new();
    for &rate in &options.capacity_rates {
        tracing::info!(rate, streamed, "capacity step");
        // Connections for the higher rate are opened in the lead-in, not inside the measured step.
        warm_up(target, rate, options.warmup.min(ROUND_LEAD_IN)).await?;
        let result = drive(target, rate, options.capacity_step).await?;
        let passed = result.errors == 0
            && result.total.p99 <= options.p99_bound
            && result.achieved_rate >= 0.95 * rate;
        steps.push(CapacityStep {
            streamed,
            result,
            passed,
        });
        if !passed {
            break;
        }
        // Let queued work drain so one step's backlog does not count against the next.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(steps)
}
