//! The admission decisions on the request path: `decide` runs for every send and facade request, and
//! `observe` once per probe. Both must cost next to nothing beside the ~350 µs a completion takes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use promptgate_core::admission::{AdaptiveLimit, LimitSettings, Load, Usage, decide};

fn settings() -> LimitSettings {
    LimitSettings {
        initial: 64,
        min: 8,
        max: 1024,
        tolerance: Duration::from_millis(5),
        baseline_window: Duration::from_secs(10),
        smoothing: 0.2,
    }
}

fn bench(c: &mut Criterion) {
    c.bench_function("admission: decide at the limit", |b| {
        let load = Load {
            in_flight: 64,
            limit: 64,
            ceiling: 1024,
            own: 3,
            clients: 12,
        };
        b.iter(|| decide(black_box(load)));
    });
    c.bench_function("admission: observe one probe", |b| {
        let mut limit = AdaptiveLimit::new(settings());
        let mut at = Duration::ZERO;
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            at += Duration::from_millis(10);
            // Alternating on-time and late probes keep the limit moving both ways.
            let delay = Duration::from_micros(if n.is_multiple_of(2) { 500 } else { 12_000 });
            black_box(limit.observe(delay, Usage::admitted(40), at))
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
