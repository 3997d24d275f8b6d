//! The `promptgate-loadtest` command: parses its options, runs the scenarios and prints their
//! Markdown report (or, as `serve-gateway`, is the gateway process a run measures).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use promptgate_loadtest::scenario::{BurstShape, Options, Scenario, StreamShape};
use promptgate_loadtest::wire::Pacing;
use tracing_subscriber::EnvFilter;

/// Measures what promptgate adds to a zero-delay upstream, at a fixed request rate (open loop).
#[derive(Debug, Parser)]
#[command(name = "promptgate-loadtest")]
struct Cli {
    /// Scenarios to run (repeat the flag); default: all, with Postgres only when a URL is known.
    #[arg(long = "scenario", value_enum)]
    scenarios: Vec<Scenario>,
    /// Requests per second for every comparison (default: 1000 for the facade, 200 for sends).
    #[arg(long)]
    rate: Option<f64>,
    /// Seconds each measured run lasts (direct and gateway each); default 5, or 30 with `--sustained`.
    #[arg(long)]
    duration: Option<f64>,
    /// Sustained mode: one continuous measured window per path (direct, then gateway, each after its
    /// own warm-up) instead of rounds of slices, and an upstream that sends every SSE event in its
    /// own chunked frame. What a busy server lives through, tails included.
    #[arg(long)]
    sustained: bool,
    /// Content chunks per streamed upstream answer; default 5 (one frame), or 20 with `--sustained`.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    chunks: Option<u16>,
    /// Milliseconds before the upstream's first stream event, as a model's time to first token.
    /// Setting it (or `--chunk-every-ms`) sends every event in its own frame.
    #[arg(long, default_value_t = 0.0)]
    first_chunk_ms: f64,
    /// Milliseconds between the upstream's stream events after the first, as a model's token pace.
    #[arg(long, default_value_t = 0.0)]
    chunk_every_ms: f64,
    /// Rounds the measured time is split into, each direct then through the gateway (each slice
    /// after a short unmeasured lead-in); the samples of each path are pooled, so noise from the
    /// machine falls on both alike.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Seconds of unmeasured load before each measured run.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    #[arg(long, env = "PROMPTGATE_TEST_POSTGRES_URL")]
    postgres_url: Option<String>,
    /// Rates the capacity probe steps through, in order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "500,1000,2000,3000,4000,5000,6000,8000"
    )]
    capacity_rates: Vec<f64>,
    /// Seconds per capacity step.
    #[arg(long, default_value_t = 2.0)]
    capacity_step: f64,
    /// Run the gateway on these CPUs only (a `taskset -c` list such as `1`), so it does not share a
    /// core with the driver and the upstream; pin the driver itself with `taskset -c 0 …`.
    #[arg(long)]
    gateway_cpus: Option<String>,
    /// Worker threads of the gateway's async runtime (default: one per CPU it may use); with
    /// `--gateway-cpus 1`, `--gateway-workers 1` measures the gateway on one core.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    gateway_workers: Option<u16>,
    /// In the gateway's place, run a bare proxy made of the same HTTP parts (the server's accept
    /// loop, the model client's reqwest) that forwards facade requests to the upstream, asking for
    /// a stream as the gateway does (a whole answer is read to its end and sent in one body): the
    /// floor under the facade's cost on this machine. Facade scenarios only.
    #[arg(long)]
    bare_proxy: bool,
    /// In the gateway's place, run a server that answers every request with a fixed 503 and
    /// nothing else: on one thread with epoll (the default; the kernel's floor under a refusal on
    /// this machine), on the gateway's runtime (`tokio`), or through the gateway's HTTP stack
    /// (`hyper`). For the overload scenarios, whose table then shows its CPU per request.
    #[arg(long, conflicts_with = "bare_proxy", num_args = 0..=1, default_missing_value = "epoll")]
    bare_refuser: Option<promptgate_loadtest::bare_refuser::RefuserStack>,
    /// Worker threads of the driver's own runtime (its client and the upstream). One leaves the
    /// other core of a 2-core machine to the gateway, as a client and a provider on other machines
    /// would.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    driver_workers: u16,
    /// Sends the held-turns scenario keeps in flight at once (at most 1000, under the gateway's
    /// default limit of turns in flight).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u16).range(1..=1000))]
    held_turns: u16,
    /// Sends of the burst scenario, all within 100 ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u16).range(1..=5000))]
    burst_turns: u16,
    /// Seconds the burst scenario leaves the gateway idle before reading its memory again.
    #[arg(long, default_value_t = 60.0)]
    burst_idle: f64,
    /// Sends measured at each point of a scale curve (after two unmeasured ones).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    scale_sends: u16,
    /// Milliseconds between one scale send's end and the next one's start.
    #[arg(long, default_value_t = 250)]
    scale_pace_ms: u64,
    /// The largest project the scale scenario fills, in chats (points above it are skipped).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    scale_max_threads: u32,
    /// Run this `promptgate` executable as the gateway (`serve --config`), to measure another build
    /// (an earlier commit, say) with this driver.
    #[arg(long)]
    gateway_exe: Option<PathBuf>,
    /// The bench model's context window in the long-threads scenario (`scale-threads`), in tokens.
    #[arg(long, default_value_t = 128_000)]
    context_window: u64,
    /// Thread lengths of the long-threads scenario, in messages.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,5000,20000")]
    thread_sizes: Vec<usize>,
    /// The overload scenarios' steps, as multiples of `--rate` (else of each path's usual capacity
    /// on one core).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,1.5,2,3")]
    step_multiples: Vec<f64>,
    /// Seconds each overload step is measured.
    #[arg(long, default_value_t = 10.0)]
    step_secs: f64,
    /// Runs the overload scenarios with `[admission] adaptive = false`: the gateway as it was
    /// before the adaptive limit, for the comparison.
    #[arg(long)]
    adaptive_admission_off: bool,
    /// A key of the gateway's `[admission]` table for the overload scenarios, such as
    /// `delay_tolerance_ms = 2` (repeat the flag for more).
    #[arg(long = "admission")]
    admission: Vec<String>,
    /// A capacity step passes only with total-time p99 at or under this many milliseconds.
    #[arg(long, default_value_t = 10.0)]
    p99_bound_ms: f64,
    #[command(subcommand)]
    command: Option<Mode>,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Runs the gateway from a config file (what the driver starts as its child process).
    #[command(hide = true)]
    ServeGateway { config: PathBuf },
    /// Fills users with 100 to 100,000 threads on SQLite (and Postgres with `--postgres-url`) and
    /// times the thread list's first page, message pages and search for each; prints a table.
    ScaleLists {
        /// Threads of each user, all in one database.
        #[arg(long, value_delimiter = ',', default_value = "100,1000,10000,100000")]
        sizes: Vec<u64>,
        /// Timed runs of each call (after one unmeasured run).
        #[arg(long, default_value_t = 30)]
        reps: usize,
    },
    /// Runs the bare proxy in the gateway's place (`--bare-proxy`).
    #[command(hide = true)]
    ServeBareProxy {
        listen: String,
        upstream_base_url: String,
    },
    /// Runs the bare refuser in the gateway's place (`--bare-refuser`).
    #[command(hide = true)]
    ServeBareRefuser {
        listen: String,
        #[arg(value_enum)]
        stack: promptgate_loadtest::bare_refuser::RefuserStack,
    },
}

fn seconds(value: f64, flag: &str) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        value.is_finite() && (0.0..=600.0).contains(&value),
        "--{flag} must be between 0 and 600 seconds, got {value}"
    );
    Ok(Duration::from_secs_f64(value))
}

async fn drive(cli: Cli) -> anyhow::Result<()> {
    let scenarios = if cli.scenarios.is_empty() {
        let mut all = Scenario::COMPARED_ON_SQLITE.to_vec();
        all.extend([Scenario::Capacity, Scenario::HeldTurns]);
        if cli.postgres_url.is_some() {
            all.extend([Scenario::SendPostgres, Scenario::SendPostgresTwo]);
        }
        all
    } else {
        cli.scenarios
    };
    anyhow::ensure!(cli.capacity_rates.len() <= 32, "at most 32 capacity rates");
    anyhow::ensure!(
        cli.step_multiples.len() <= 32 && cli.step_multiples.iter().all(|m| *m > 0.0 && m.is_finite()),
        "at most 32 step multiples, each positive"
    );
    let pacing = Pacing {
        first: seconds(cli.first_chunk_ms / 1000.0, "first-chunk-ms (in seconds)")?,
        every: seconds(cli.chunk_every_ms / 1000.0, "chunk-every-ms (in seconds)")?,
    };
    let stream = StreamShape {
        chunks: usize::from(cli.chunks.unwrap_or(if cli.sustained { 20 } else { 5 })),
        framed: cli.sustained || pacing != Pacing::default() || cli.chunks.is_some(),
        pacing,
    };
    let duration = cli.duration.unwrap_or(if cli.sustained { 30.0 } else { 5.0 });
    let options = Options {
        scenarios,
        rate: cli.rate,
        duration: seconds(duration, "duration")?,
        sustained: cli.sustained,
        stream,
        rounds: cli.rounds,
        warmup: seconds(cli.warmup, "warmup")?,
        postgres_url: cli.postgres_url,
        capacity_rates: cli.capacity_rates,
        capacity_step: seconds(cli.capacity_step, "capacity-step")?,
        p99_bound: Duration::from_secs_f64(cli.p99_bound_ms.max(0.0) / 1000.0),
        held_turns: usize::from(cli.held_turns),
        burst: BurstShape {
            turns: usize::from(cli.burst_turns),
            idle: seconds(cli.burst_idle, "burst-idle")?,
        },
        driver_workers: cli.driver_workers,
        context_window: cli.context_window,
        thread_sizes: cli.thread_sizes,
        overload: promptgate_loadtest::overload::StepShape {
            multiples: cli.step_multiples,
            step: seconds(cli.step_secs, "step-secs")?,
            rest: seconds(cli.step_secs.min(2.0), "step-secs")?,
            adaptive_off: cli.adaptive_admission_off,
            admission: cli.admission,
        },
        gateway: promptgate_loadtest::gateway::Placement {
            cpus: cli.gateway_cpus,
            workers: cli.gateway_workers.map(usize::from),
            bare_proxy: cli.bare_proxy,
            bare_refuser: cli.bare_refuser,
            exe: cli.gateway_exe,
        },
        scale: promptgate_loadtest::scale::ScaleShape {
            sends: usize::from(cli.scale_sends),
            pace: seconds(cli.scale_pace_ms as f64 / 1000.0, "scale-pace-ms (in seconds)")?,
            max_threads: cli.scale_max_threads as usize,
        },
    };
    let report = promptgate_loadtest::scenario::run(&options).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", promptgate_loadtest::report::markdown(&report))?;
    out.flush()?;
    Ok(())
}

async fn scale_lists(sizes: Vec<u64>, reps: usize, postgres_url: Option<String>) -> anyhow::Result<()> {
    anyhow::ensure!(!sizes.is_empty() && sizes.len() <= 8, "one to eight sizes");
    anyhow::ensure!(
        sizes.iter().all(|s| (1..=1_000_000).contains(s)),
        "sizes from 1 to 1,000,000"
    );
    anyhow::ensure!((1..=1000).contains(&reps), "reps from 1 to 1000");
    let options = promptgate_loadtest::scale::lists::ListsOptions {
        sizes,
        reps,
        postgres_url,
    };
    let timings = promptgate_loadtest::scale::lists::run(&options).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", promptgate_loadtest::scale::lists::markdown(&timings))?;
    out.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    let serving = matches!(
        std::env::args().nth(1).as_deref(),
        Some("serve-gateway" | "serve-bare-proxy" | "serve-bare-refuser")
    );
    // The scale scenario's MCP servers run in the driver; rmcp's notes on each session are noise here.
    let default_filter = if serving { "warn" } else { "info,rmcp=warn" };
    let filter = EnvFilter::try_from_env("PROMPTGATE_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    promptgate_loadtest::init_tls();

    let cli = Cli::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    // The gateway child takes its worker count from TOKIO_WORKER_THREADS, which the driver sets.
    if cli.command.is_none() {
        runtime.worker_threads(usize::from(cli.driver_workers));
    } else {
        // What the gateway's binary sets, so a floor measured on this runtime is the gateway's.
        runtime.event_interval(promptgate_server::listen::EVENT_INTERVAL);
    }
    let runtime = match runtime.enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(error = %err, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Some(Mode::ServeGateway { config }) => promptgate_loadtest::gateway::serve(&config).await,
            Some(Mode::ServeBareProxy {
                listen,
                upstream_base_url,
            }) => promptgate_loadtest::bare_proxy::serve(&listen, &upstream_base_url).await,
            Some(Mode::ServeBareRefuser { listen, stack }) => {
                promptgate_loadtest::bare_refuser::serve(&listen, stack).await
            }
            Some(Mode::ScaleLists { sizes, reps }) => scale_lists(sizes, reps, cli.postgres_url).await,
            None => drive(cli).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
