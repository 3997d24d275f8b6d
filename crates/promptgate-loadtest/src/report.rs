//! The Markdown tables a run prints.

use std::fmt::Write;
use std::time::Duration;

use crate::load::RunResult;
use crate::scenario::Report;
use crate::stats::Percentiles;

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// Milliseconds to the tenth, the precision of the overload and scale tables.
pub(crate) fn ms_tenths(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn signed(v: f64) -> String {
    format!("{v:+.3}")
}

fn row(out: &mut String, label: &str, path: &str, r: &RunResult) {
    let cells = |p: &Percentiles| format!("{} | {} | {} | {}", ms(p.p50), ms(p.p90), ms(p.p99), ms(p.max));
    let _ = writeln!(
        out,
        "| {label} | {path} | {:.0} | {:.0} | {} | {} | {} | {} |",
        r.offered_rate,
        r.achieved_rate,
        r.ok,
        r.errors,
        cells(&r.first_byte),
        cells(&r.total),
    );
}

/// What the gateway's CPU spent on the measured gateway path: per answered request and, for
/// streams, per content chunk (all of one request's work divided over its chunks).
fn cpu_table(out: &mut String, report: &Report) {
    out.push_str(
        "\n### Gateway CPU while the gateway path was measured\n\n\
         | scenario | answered | CPU time (s) | share of one core | µs per request | µs per content chunk |\n\
         |---|---|---|---|---|---|\n",
    );
    for c in &report.comparisons {
        let Some(cpu) = c.gateway_cpu else {
            let _ = writeln!(
                out,
                "| {} | {} | n/a | n/a | n/a | n/a |",
                c.scenario.label(),
                c.gateway.ok
            );
            continue;
        };
        let answered = c.gateway.ok.max(1) as f64;
        let per_request = cpu.as_secs_f64() * 1e6 / answered;
        let share = if c.gateway_wall.is_zero() {
            0.0
        } else {
            100.0 * cpu.as_secs_f64() / c.gateway_wall.as_secs_f64()
        };
        let per_chunk = c.chunks.map_or_else(
            || "—".to_owned(),
            |n| format!("{:.1}", per_request / n.max(1) as f64),
        );
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {share:.0}% | {per_request:.0} | {per_chunk} |",
            c.scenario.label(),
            c.gateway.ok,
            cpu.as_secs_f64(),
        );
    }
}

/// Renders every table of the report.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let workers = report
        .gateway
        .workers
        .map_or_else(|| "one per CPU".to_owned(), |n| n.to_string());
    let cpus = report.gateway.cpus.as_deref().unwrap_or("all");
    let how = match report.sustained {
        Some(window) => format!(
            "Sustained: each comparison ran one continuous window of {:.1} s per path, direct then \
             gateway, each after its own warm-up.",
            window.as_secs_f64()
        ),
        None => format!(
            "Each comparison ran in {} rounds of direct then gateway (each slice after a short \
             unmeasured lead-in), samples pooled per path.",
            report.rounds
        ),
    };
    let shape = &report.stream;
    let upstream = if shape.framed {
        format!(
            "Upstream streams: {} content chunks, every SSE event in its own chunked frame, the first \
             after {} ms, then one every {} ms.",
            shape.chunks,
            ms(shape.pacing.first),
            ms(shape.pacing.every)
        )
    } else {
        format!(
            "Upstream streams: {} content chunks, the whole stream in one frame.",
            shape.chunks
        )
    };
    let what = if report.gateway.bare_proxy {
        "In the gateway's place: the bare proxy (the server's accept loop and reqwest, asking the \
         upstream for a stream as the gateway does and forwarding it; the floor under the facade's \
         cost). "
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{what}Gateway process: runtime worker threads {workers}, CPUs {cpus}. Driver (client and \
         upstream): {} worker thread(s). {how} {upstream}\n",
        report.driver_workers
    );
    if !report.comparisons.is_empty() {
        out.push_str("### Latency, direct and through the gateway (ms)\n\n");
        out.push_str(
            "| scenario | path | offered/s | achieved/s | ok | errors | TTFB p50 | TTFB p90 | TTFB p99 | TTFB max | total p50 | total p90 | total p99 | total max |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for c in &report.comparisons {
            row(&mut out, c.scenario.label(), "direct", &c.direct);
            row(&mut out, c.scenario.label(), "gateway", &c.gateway);
        }
        out.push_str("\n### Added by the gateway (ms, gateway minus direct at the same percentile)\n\n");
        out.push_str(
            "| scenario | rate/s | TTFB p50 | TTFB p90 | TTFB p99 | total p50 | total p90 | total p99 | total p99 on the wire | host steal |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        for c in &report.comparisons {
            let ttfb = c.gateway.first_byte.added_over(&c.direct.first_byte);
            let total = c.gateway.total.added_over(&c.direct.total);
            let wire = c.gateway.total_wire.added_over(&c.direct.total_wire);
            let _ = writeln!(
                out,
                "| {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.scenario.label(),
                c.gateway.offered_rate,
                signed(ttfb[0]),
                signed(ttfb[1]),
                signed(ttfb[2]),
                signed(total[0]),
                signed(total[1]),
                signed(total[2]),
                signed(wire[2]),
                c.steal_percent
                    .map_or_else(|| "n/a".to_owned(), |p| format!("{p:.1}%")),
            );
        }
        cpu_table(&mut out, report);
        for c in &report.comparisons {
            for (path, r) in [("direct", &c.direct), ("gateway", &c.gateway)] {
                if let Some(error) = &r.first_error {
                    let _ = writeln!(out, "\n{} {path}: first error: {error}", c.scenario.label());
                }
            }
        }
        out.push('\n');
    }
    if !report.capacity.is_empty() {
        let _ = writeln!(
            out,
            "### Capacity through the facade (pass: no errors, total p99 ≤ {} ms, ≥ 95% of the offered rate answered)\n",
            ms(report.p99_bound)
        );
        out.push_str(
            "| answer | offered/s | achieved/s | errors | total p50 | total p99 | driver lag max | verdict |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for step in &report.capacity {
            let r = &step.result;
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.0} | {} | {} | {} | {} | {} |",
                if step.streamed { "stream" } else { "JSON" },
                r.offered_rate,
                r.achieved_rate,
                r.errors,
                ms(r.total.p50),
                ms(r.total.p99),
                ms(r.max_schedule_lag),
                if step.passed { "pass" } else { "fail" },
            );
        }
        for streamed in [false, true] {
            let best = report
                .capacity
                .iter()
                .filter(|s| s.streamed == streamed && s.passed)
                .map(|s| s.result.offered_rate)
                .fold(None, |best: Option<f64>, r| Some(best.map_or(r, |b| b.max(r))));
            let kind = if streamed { "streams" } else { "JSON requests" };
            let _ = match best {
                Some(rate) => writeln!(out, "\nHighest passing rate, {kind}: {rate:.0}/s"),
                None => writeln!(out, "\nNo step passed for {kind}."),
            };
        }
        out.push('\n');
    }
    if let Some(held) = &report.held {
        out.push_str(
            "### Memory per turn in flight (SQLite; sends held open by an upstream that never finishes)\n\n\
             | turns held | RSS before (MiB) | RSS holding (MiB) | added per turn (KiB) | RSS after they end (MiB) |\n\
             |---|---|---|---|---|\n",
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {} |\n",
            held.turns,
            mib(held.before.rss_kib),
            mib(held.holding.rss_kib),
            held.per_turn_kib(),
            mib(held.after.rss_kib),
        );
    }
    if let Some(burst) = &report.burst {
        let _ = writeln!(
            out,
            "### Memory after a burst (SQLite; {} new-thread sends within {} ms, then {:.0} s idle, then the driver closes its connections)\n\n\
             | sends | answered | errors | RSS at start (MiB) | RSS before the burst (MiB) | RSS right after (MiB) | RSS after idle (MiB) | kept after idle (MiB) | RSS {:.0} s after hang-up (MiB) | kept after hang-up (MiB) | peak RSS (MiB) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|",
            burst.turns,
            crate::scenario::BURST_WINDOW.as_millis(),
            burst.idle.as_secs_f64(),
            crate::scenario::HANG_UP_SETTLE.as_secs_f64(),
        );
        let kept = |then| format!("{:+.1}", burst.kept_kib(then) as f64 / 1024.0);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            burst.turns,
            burst.answered,
            burst.errors,
            mib(burst.at_start.rss_kib),
            mib(burst.before.rss_kib),
            mib(burst.right_after.rss_kib),
            mib(burst.after_idle.rss_kib),
            kept(burst.after_idle),
            mib(burst.after_hang_up.rss_kib),
            kept(burst.after_hang_up),
            mib(burst.after_hang_up.peak_kib),
        );
    }
    if let Some(scale) = &report.scale_mcp {
        crate::scale::mcp::markdown(scale, &mut out);
    }
    if !report.memory.is_empty() {
        out.push_str("### Gateway process memory (MiB)\n\n| database | RSS idle after start | RSS after load | peak RSS |\n|---|---|---|---|\n");
        for m in &report.memory {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                m.backend,
                mib(m.idle_at_start.rss_kib),
                mib(m.after_load.rss_kib),
                mib(m.after_load.peak_kib),
            );
        }
    }
    for section in &report.sections {
        out.push_str(section);
    }
    out
}
