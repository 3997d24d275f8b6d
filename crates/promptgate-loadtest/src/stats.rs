//! Percentiles over one run's samples.

use std::time::Duration;

/// The latency distribution of one measure (time to first byte, or total time).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles; an empty set gives zeros.
    pub fn of(mut values: Vec<Duration>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_unstable();
        let rank = |p: f64| {
            let index = ((p / 100.0) * values.len() as f64).ceil() as usize;
            values[index.clamp(1, values.len()) - 1]
        };
        Self {
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: values[values.len() - 1],
        }
    }

    /// What `self` adds over `base` at each percentile, in signed milliseconds (noise can make it negative).
    pub fn added_over(&self, base: &Percentiles) -> [f64; 4] {
        let diff = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1000.0;
        [
            diff(self.p50, base.p50),
            diff(self.p90, base.p90),
            diff(self.p99, base.p99),
            diff(self.max, base.max),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: impl IntoIterator<Item = u64>) -> Vec<Duration> {
        values.into_iter().map(Duration::from_millis).collect()
    }

    #[test]
    fn nearest_rank_picks_real_samples() {
        let p = Percentiles::of(ms((1..=100).rev()));
        assert_eq!(p.p50, Duration::from_millis(50));
        assert_eq!(p.p90, Duration::from_millis(90));
        assert_eq!(p.p99, Duration::from_millis(99));
        assert_eq!(p.max, Duration::from_millis(100));
    }

    #[test]
    fn a_single_slow_request_shows_in_p99_of_a_small_run() {
        let mut values = ms([1; 10]);
        values.push(Duration::from_millis(40));
        let p = Percentiles::of(values);
        assert_eq!(p.p50, Duration::from_millis(1));
        assert_eq!(p.p99, Duration::from_millis(40));
    }

    #[test]
    fn overhead_is_the_difference_at_the_same_percentile() {
        let direct = Percentiles::of(ms([1, 2, 3]));
        let gateway = Percentiles::of(ms([2, 4, 6]));
        let added = gateway.added_over(&direct);
        assert!((added[0] - 2.0).abs() < 1e-9, "{added:?}");
        assert!((added[3] - 3.0).abs() < 1e-9, "{added:?}");
    }

    #[test]
    fn no_samples_means_zeros_not_a_crash() {
        assert_eq!(Percentiles::of(Vec::new()), Percentiles::default());
    }
}
