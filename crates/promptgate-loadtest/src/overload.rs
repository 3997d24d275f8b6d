//! The step test past saturation: one gateway per path, the offered rate stepped from below what
//! it carries to several times that, each step one continuous window. What it reports per step is
//! what a client sees: how many answers per second came back (goodput), how fast the answered
//! requests were, and how fast the refused ones were told so.

use std::fmt::Write as _;
use std::time::Duration;

use crate::error::LoadError;
use crate::gateway::{BENCH_MODEL, GatewayProcess};
use crate::load::{RunResult, Target, drive};
use crate::report::ms_tenths;
use crate::scenario::{Options, Scenario};

/// The steps, as multiples of the path's rate (`--rate`, else [`base_rate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StepShape {
    pub multiples: Vec<f64>,
    pub step: Duration,
    /// Pause between steps, so one step's backlog does not count against the next.
    pub rest: Duration,
    /// `[admission] adaptive = false` on the gateway: the behaviour before the adaptive limit.
    pub adaptive_off: bool,
    /// Keys of the gateway's `[admission]` table (`delay_tolerance_ms = 2`, say), to compare settings.
    pub admission: Vec<String>,
}

impl Default for StepShape {
    fn default() -> Self {
        Self {
            multiples: vec![0.5, 1.0, 1.5, 2.0, 3.0],
            step: Duration::from_secs(10),
            rest: Duration::from_secs(2),
            adaptive_off: false,
            admission: Vec::new(),
        }
    }
}

/// About what one core carries on each path with the admission gate's defaults (the step tests in
/// docs/benchmarks.md), the multiples' unit when `--rate` is not given.
pub fn base_rate(scenario: Scenario) -> f64 {
    match scenario {
        Scenario::OverloadStream => 2200.0,
        Scenario::OverloadSend => 400.0,
        _ => 2500.0,
    }
}

/// What the gateway's config gets for a run of `scenario`: its `[admission]` table, and for sends
/// no thread quota (every send starts a thread, and the higher steps start more than the default
/// quota allows one user).
pub fn extra_toml(scenario: Scenario, shape: &StepShape) -> String {
    let mut keys = shape.admission.clone();
    if shape.adaptive_off {
        keys.push("adaptive = false".to_owned());
    }
    let quotas = if scenario == Scenario::OverloadSend {
        "[quotas]\nmax_threads = 0\n"
    } else {
        ""
    };
    format!("[admission]\n{}\n{quotas}", keys.join("\n"))
}

/// The target of an overload scenario on `gateway`.
pub fn target(scenario: Scenario, gateway: &GatewayProcess) -> Result<Target, LoadError> {
    match scenario {
        Scenario::OverloadSend => crate::scenario::send_target(gateway.url("/v1/chat")),
        streamed => crate::scenario::completion_target(
            gateway.url("/v1/chat/completions"),
            BENCH_MODEL,
            streamed == Scenario::OverloadStream,
        ),
    }
}

/// One step's run, and the CPU time the gateway spent over it.
pub struct Step {
    pub run: RunResult,
    pub gateway_cpu: Option<Duration>,
}

/// Runs every step against `target` on `gateway`, the rate rising.
pub async fn steps(
    target: &Target,
    gateway: &GatewayProcess,
    rate: f64,
    options: &Options,
) -> Result<Vec<Step>, LoadError> {
    let shape = &options.overload;
    let mut results = Vec::new();
    for multiple in &shape.multiples {
        let offered = rate * multiple;
        tracing::info!(offered, "overload step");
        // A short lead-in at the step's rate opens its connections outside the measured window.
        drive(target, offered, options.warmup.min(Duration::from_millis(500))).await?;
        let (run, gateway_cpu) =
            GatewayProcess::cpu_spent_during(&[gateway], drive(target, offered, shape.step)).await;
        results.push(Step {
            run: run?,
            gateway_cpu,
        });
        tokio::time::sleep(shape.rest).await;
    }
    Ok(results)
}

/// The Markdown table of one path's steps.
pub fn markdown(scenario: Scenario, rate: f64, shape: &StepShape, steps: &[Step]) -> String {
    let peak = steps.iter().map(|s| s.run.achieved_rate).fold(0.0, f64::max);
    let mut out = String::new();
    let limiter = if shape.adaptive_off {
        "adaptive admission off".to_owned()
    } else if shape.admission.is_empty() {
        "adaptive admission on".to_owned()
    } else {
        format!("adaptive admission on, {}", shape.admission.join(", "))
    };
    let _ = writeln!(
        out,
        "## Past saturation: {} ({limiter}; unit {rate:.0}/s, {:.0} s per step)\n",
        scenario.label(),
        shape.step.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| offered /s | × unit | sent | answered | refused (503) | other errors | goodput /s | of peak | answered p50 / p99 ms | refusal p50 / p99 ms | on the wire: answered / refusal p99 ms | driver lag ms | gateway CPU: core / µs a request |"
    );
    let _ = writeln!(
        out,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|"
    );
    for Step { run: r, gateway_cpu } in steps {
        let _ = writeln!(
            out,
            "| {:.0} | {:.1} | {} | {} | {} | {} | {:.0} | {:.0}% | {} / {} | {} / {} | {} / {} | {} | {} |",
            r.offered_rate,
            r.offered_rate / rate,
            r.sent,
            r.ok,
            r.refused,
            r.errors - r.refused,
            r.achieved_rate,
            if peak > 0.0 {
                100.0 * r.achieved_rate / peak
            } else {
                0.0
            },
            ms_tenths(r.total.p50),
            ms_tenths(r.total.p99),
            ms_tenths(r.refusal.p50),
            ms_tenths(r.refusal.p99),
            ms_tenths(r.total_wire.p99),
            ms_tenths(r.refusal_wire.p99),
            ms_tenths(r.max_schedule_lag),
            cpu_share(*gateway_cpu, shape.step, r.sent),
        );
    }
    if let Some(error) = steps
        .iter()
        .filter_map(|s| s.run.first_error.as_deref())
        .find(|e| !e.starts_with("HTTP 503"))
    {
        let _ = writeln!(out, "\nFirst error other than a refusal: {error}");
    }
    out
}

/// The gateway's CPU over a step as a share of one core and per request sent, or a dash without
/// /proc. Ticks are 10 ms, so a step of a few seconds reads to a fraction of a percent.
fn cpu_share(cpu: Option<Duration>, step: Duration, sent: u64) -> String {
    match cpu {
        Some(cpu) if sent > 0 && !step.is_zero() => format!(
            "{:.0}% / {:.1}",
            100.0 * cpu.as_secs_f64() / step.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / sent as f64
        ),
        _ => "–".to_owned(),
    }
}
