//! The citation check of one turn with 30 sources and a 2,000-word answer that cites every one of
//! them about three times, half of the claims taken from the cited page and half made up: the
//! answer scanned as it streams and its citations checked at its end. Three turns: 4 or 8 pages read
//! at the default 16,000 characters, the other sources seen as search snippets (an auto turn's
//! budget reads at most 4 pages; a research turn more), and a heavier one with 20 pages of 12,000
//! characters and 10 snippets.
//!
//! The figure is the CPU time of the benchmarking thread (Linux's `/proc/thread-self/schedstat`),
//! not the wall clock: the machines this runs on are shared, and a busy neighbour would otherwise
//! count as the check's cost. Where that file is missing, the wall clock is used.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use promptgate_core::citations::check::{SeenSource, check_citations};
use promptgate_core::citations::markers::MarkerScanner;
use promptgate_core::citations::passages::ReadText;

const FUNCTION_WORDS: [&str; 12] = [
    "the", "of", "and", "in", "to", "is", "was", "for", "on", "with", "as", "by",
];

/// A small deterministic generator, so every run checks the same texts.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below
    }
}

fn vocabulary(rng: &mut Lcg) -> Vec<String> {
    (0..4_000)
        .map(|_| {
            let len = 4 + rng.next(7);
            (0..len).map(|_| (b'a' + rng.next(26) as u8) as char).collect()
        })
        .collect()
}

fn sentence(rng: &mut Lcg, words: &[String]) -> String {
    let len = 12 + rng.next(14);
    let mut out = String::new();
    for at in 0..len {
        if at > 0 {
            out.push(' ');
        }
        match rng.next(10) {
            0..=3 => out.push_str(FUNCTION_WORDS[rng.next(FUNCTION_WORDS.len())]),
            4 => out.push_str(&(rng.next(5_000)).to_string()),
            _ => out.push_str(&words[rng.next(words.len())]),
        }
    }
    out.push('.');
    out
}

fn page(rng: &mut Lcg, words: &[String], chars: usize) -> String {
    let mut out = String::new();
    while out.len() < chars {
        out.push_str(&sentence(rng, words));
        out.push(' ');
    }
    out.truncate(chars);
    out
}

/// The answer: sentences taken from the cited page (supported) or made up (unsupported), each
/// closed by its citation, until 2,000 words.
fn answer(rng: &mut Lcg, words: &[String], pages: &[String]) -> String {
    let mut out = String::new();
    let mut count = 0;
    while count < 2_000 {
        let n = rng.next(pages.len());
        let claim = if rng.next(2) == 0 {
            let sentences: Vec<&str> = pages[n].split(". ").collect();
            sentences[rng.next(sentences.len())].to_owned()
        } else {
            sentence(rng, words).trim_end_matches('.').to_owned()
        };
        count += claim.split_whitespace().count();
        out.push_str(&claim);
        out.push_str(&format!(" [{}]. ", n + 1));
    }
    out
}

/// CPU time this thread has used so far, when the system says.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// Runs `work` `iters` times and returns the CPU time it took (or the wall time).
fn measure(iters: u64, mut work: impl FnMut()) -> Duration {
    let (cpu, wall) = (thread_cpu(), Instant::now());
    for _ in 0..iters {
        work();
    }
    match (cpu, thread_cpu()) {
        (Some(start), Some(end)) => end.saturating_sub(start),
        _ => wall.elapsed(),
    }
}

/// Benches one turn: `read` pages of `page_chars` characters, the rest of the 30 sources snippets.
/// With `read_on_arrival` the pages were read when they were fetched (as a turn does), so the
/// answer's end only indexes them.
fn bench_turn(c: &mut Criterion, name: &str, read: usize, page_chars: usize, read_on_arrival: bool) {
    let mut rng = Lcg(7);
    let words = vocabulary(&mut rng);
    let pages: Vec<String> = (0..30)
        .map(|n| page(&mut rng, &words, if n < read { page_chars } else { 200 }))
        .collect();
    let readings: Vec<Option<ReadText>> = pages
        .iter()
        .enumerate()
        .map(|(n, text)| (read_on_arrival && n < read).then(|| ReadText::new(text)))
        .collect();
    let sources: Vec<SeenSource<'_>> = pages
        .iter()
        .zip(&readings)
        .enumerate()
        .map(|(n, (text, reading))| SeenSource {
            index: n as u32 + 1,
            url: "https://example.org/page",
            title: "A page",
            text,
            fetched: n < read,
            read: reading.as_ref(),
        })
        .collect();
    let text = answer(&mut rng, &words, &pages);
    // The answer arrives in deltas of a few words, as a model streams it.
    let deltas: Vec<&str> = text.split_inclusive(' ').collect();
    // Few, long samples: the thread's CPU time advances in scheduler ticks (a few milliseconds).
    let mut group = c.benchmark_group("citation check");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(12));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            measure(iters, || {
                let mut scanner = MarkerScanner::new((1..=30).collect());
                let mut shown = String::with_capacity(text.len());
                for delta in &deltas {
                    shown.push_str(&scanner.push(delta));
                }
                shown.push_str(&scanner.finish());
                black_box(check_citations(&shown, 0, scanner.markers(), &sources));
            })
        })
    });
    group.finish();
}

/// Reading one page when it is fetched, off the answer's end.
fn bench_page_reading(c: &mut Criterion) {
    let mut rng = Lcg(7);
    let words = vocabulary(&mut rng);
    let text = page(&mut rng, &words, 16_000);
    let mut group = c.benchmark_group("citation check");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    group.bench_function("reading one 16,000-character page on arrival", |b| {
        b.iter_custom(|iters| measure(iters, || drop(black_box(ReadText::new(&text)))))
    });
    group.finish();
}

fn bench_citation_check(c: &mut Criterion) {
    bench_turn(c, "30 sources (4 read), 2,000-word answer", 4, 16_000, false);
    bench_turn(c, "30 sources (8 read), 2,000-word answer", 8, 16_000, false);
    bench_turn(c, "30 sources (20 read), 2,000-word answer", 20, 12_000, false);
    bench_turn(c, "pages read on arrival: 30 sources (4 read)", 4, 16_000, true);
    bench_turn(c, "pages read on arrival: 30 sources (8 read)", 8, 16_000, true);
    bench_turn(c, "pages read on arrival: 30 sources (20 read)", 20, 12_000, true);
    bench_page_reading(c);
}

criterion_group!(benches, bench_citation_check);
criterion_main!(benches);
